"""A short measured probe of a job's own step on the hardware it runs on, with its threads and precision: the
trainer's step on a few batches of the job's own plan, its validation scoring on a few held-out examples, greedy and
beam decoding of a few sentences. What frozen_sweep.job.estimate turns into a job's cost.

Probes are cached in `<task.cache_dir>/step_probes.json` (written atomically), keyed by everything that changes what
a step costs: the job's fingerprint less the keys that do not (estimate.COST_NEUTRAL_KEYS: seed, budgets, learning
rate, ...), so the model's shape, what is frozen, the batch size, the precision, the threads and the data; and the
device (the CPU's model or the GPU's name) and torch's version. A cached probe is never used for another of these.

Decoding is timed on the probe's barely trained model, which runs its hypotheses to the length cap: an upper bound
on a trained model's decoding.
"""

import copy
import dataclasses
import functools
import hashlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import torch
from omegaconf import DictConfig, open_dict

from frozen_sweep.config import TaskKind
from frozen_sweep.config.trainer import quick_validation_cap
from frozen_sweep.data import load_task
from frozen_sweep.evaluate.decode import translate
from frozen_sweep.job.estimate import COST_NEUTRAL_KEYS, Probe
from frozen_sweep.job.how_it_runs import job_threads
from frozen_sweep.system import cpu
from frozen_sweep.system.files import write_json_atomic
from frozen_sweep.system.kernels import cpu_model
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.train.validation import Validation, bleu_sentences

CACHE_FILE = "step_probes.json"
PROBE_BATCHES = 5  # timed training batches, after the first (which pays one-off costs)
PROBE_EXAMPLES = 16  # held-out examples scored
PROBE_SENTENCES = 2  # sentences decoded, greedily and with eval.beam


def probe_key(fingerprint: dict, device: str) -> str:
    """What makes two jobs' steps cost the same: see the module's docstring."""
    config = {key: value for key, value in fingerprint["config"].items() if key not in COST_NEUTRAL_KEYS}
    kept = {"config": config, "prepared": fingerprint["prepared"], "device": device, "torch": torch.__version__}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def device_name(device: torch.device) -> str:
    return cpu_model() if device.type == "cpu" else torch.cuda.get_device_name(device)


def cached_probe(cfg: DictConfig, fingerprint: dict, device: torch.device) -> Probe:
    """The job's probe from the cache, else measured now and cached."""
    path = Path(cfg.task.cache_dir).expanduser() / CACHE_FILE
    key, started = probe_key(fingerprint, device_name(device)), startup_key()
    cache = read_cache(path)
    if key in cache:
        return Probe(**cache[key])
    imports_s = cache.get(started) or timed_imports()
    measured = measure(cfg, device, imports_s)
    cache = read_cache(path)  # another process may have added its own meanwhile
    cache[key], cache[started] = dataclasses.asdict(measured), imports_s
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, cache)
    return measured


def startup_key() -> str:
    """The cache's key of a job process's imports: this interpreter and torch."""
    return "imports " + hashlib.sha256(f"{sys.executable} {torch.__version__}".encode()).hexdigest()


def timed_imports() -> float:
    """Seconds a fresh interpreter takes to import what a job runs (torch and the trainer), measured once per cache."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import frozen_sweep.job.runner"], check=True, capture_output=True)
    return time.perf_counter() - started


def read_cache(path: Path) -> dict:
    """The cache's entries; a missing or unreadable cache is an empty one (probes are measured again)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(entries, dict):
        return {}
    fields = {f.name for f in dataclasses.fields(Probe)}
    probes = {key: entry for key, entry in entries.items() if isinstance(entry, dict) and set(entry) == fields}
    imports = {key: entry for key, entry in entries.items() if key.startswith("imports ") and isinstance(entry, float)}
    return probes | imports


def measure(cfg: DictConfig, device: torch.device, imports_s: float) -> Probe:
    """Time the job's start (`imports_s`, then its data and model), step, validation scoring and decoding, with the
    job's threads; nothing is written but a temporary directory."""
    from frozen_sweep.study import for_config  # the studies import the trainer's whole job machinery

    cfg = quiet(cfg)
    rng = torch.get_rng_state(), random.getstate()
    try:
        with cpu.threads_for_job(*job_threads(cfg)), tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(cfg.seed)
            started = time.perf_counter()
            data = load_task(cfg.task)
            model = for_config(cfg).make_model(data).to(device)
            startup_s = imports_s + time.perf_counter() - started
            trainer = Trainer(cfg, data, model, device, Path(tmp))
            plan = trainer._plan(0)
            picked = plan[:: max(1, len(plan) // (PROBE_BATCHES + 1))][: PROBE_BATCHES + 1]
            batches = [trainer._collate(group) for group in picked]
            first_s = timed(lambda: trainer._train_step(batches[0]), device)
            # the median batch: one slowed by other work on a shared machine does not set the estimate
            steps = [functools.partial(trainer._train_step, batch) for batch in batches[1:] or batches]
            batch_s = statistics.median(timed(step, device) for step in steps)
            few = dataclasses.replace(data, valid=data.valid.head(PROBE_EXAMPLES))
            scoring = Validation(scoring_only(cfg), few, device)
            valid_example_s = timed(lambda: scoring.scores(model), device) / len(few.valid)
            translation = cfg.task.kind == TaskKind.translation
            sources = data.valid.sources(PROBE_SENTENCES) if translation else []
            greedy = with_beam(cfg.eval, 1)
            greedy_s = timed(lambda: translate(model, sources, data.vocab, device, greedy), device) if sources else 0.0
            beam_s = timed(lambda: translate(model, sources, data.vocab, device, cfg.eval), device) if sources else 0.0
            threads = torch.get_num_threads() if device.type == "cpu" else 1
    finally:
        torch.set_rng_state(rng[0])
        random.setstate(rng[1])
    valid = data.valid.head(quick_validation_cap(cfg))
    decoded = bleu_sentences(cfg) if translation else 0
    where = f"{device.type}, {threads} thread{'s' * (threads != 1)}, {device_name(device)}"
    return Probe(
        startup_s=startup_s, batch_s=batch_s, first_step_s=first_s, valid_example_s=valid_example_s,
        greedy_sentence_s=greedy_s / max(1, len(sources)), beam_sentence_s=beam_s / max(1, len(sources)),
        batches_per_epoch=len(plan), valid_examples=len(valid),
        bleu_sentences=len(valid) if decoded is None else min(decoded, len(valid)), test_examples=len(data.test),
        test_sentences=len(data.test) if translation else 0, device=where,
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )  # fmt: skip


def timed(work: Callable[[], object], device: torch.device) -> float:
    """Seconds `work` takes, the device's queue drained before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    work()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


def quiet(cfg: DictConfig) -> DictConfig:
    """The job's config for a probe: no metrics loggers, no progress bar."""
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        cfg.trainer.loggers, cfg.trainer.progress = [], False
    return cfg


def scoring_only(cfg: DictConfig) -> DictConfig:
    """The config whose validation scores without decoding (decoding is timed on its own)."""
    cfg = copy.deepcopy(cfg)
    cfg.trainer.valid_bleu_sentences = 0
    return cfg


def with_beam(eval_cfg: DictConfig, beam: int) -> DictConfig:
    eval_cfg = copy.deepcopy(eval_cfg)
    eval_cfg.beam = beam
    return eval_cfg
