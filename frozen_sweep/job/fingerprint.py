"""A job's fingerprint: what determines its result. Its resolved config less config.NEUTRAL_KEYS (where or how it runs,
not what it computes) and DATA_LOCATION_KEYS, plus the identity of its data: the corpus files' content hashes and the
key of the prepared dataset they give (frozen_sweep.data.identity).
A job directory's result is reused or resumed only by a job with the same fingerprint (frozen_sweep.run.directory).
Data-parallel jobs: `trainer.devices` and `trainer.update_freq` enter it only as their product, the batches per update
(frozen_sweep.train.updates): 4 devices and 1 device accumulating 4 batches make the same updates.
How the CPU computes enters it too (frozen_sweep.system.kernels): the job's thread count, torch's CPU kernel level and
the precision a CPU job trains in, since each changes the numbers; where the job runs (the machine, the load) does
not. `trainer.amp_cpu` enters as the precision it gives: null on a CPU without native bf16 and false are one run.
Records from before the kernels and the precision entered (`legacy`) stay the run of a job that their config gives
the same precision here, when they were made on this CPU model (the same kernels; directory.same_job).
"""

import hashlib
import json
import math
import os

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import NEUTRAL_KEYS, SCRATCH
from frozen_sweep.config.trainer import quick_validation_cap
from frozen_sweep.run.base_run import load_base_run
from frozen_sweep.run.directory import BEFORE_CPU, BEST_CHECKPOINT, LEGACY, flatten
from frozen_sweep.system.kernels import KERNELS_VARIABLE, cpu_identity, cpu_precision
from frozen_sweep.system.threads import job_threads

# where the data (and a fine-tuning job's base run and vocabulary) are: their content is fingerprinted
DATA_LOCATION_KEYS = frozenset({"task.path", "task.sword_dir", "task.vocab", "finetune.base_checkpoint"})
# keys added after records were written: left out of the fingerprint at these defaults, so that older jobs keep theirs
# (task.header: false before null, detect, was its default; both read a file without a header line the same way)
LATER_DEFAULTS = {"freeze.head.frozen": (False,), "freeze.head.init": ("random",), "task.header": (False, None),
                  "task.bible_labels": ("division",), "finetune.frozen": ("keep",), "finetune.freeze_from": ("base",),
                  "finetune.max_unk_rate": (0.01,), "finetune.frozen_layers": (None,), "finetune.reinit_top": (0,),
                  "model.pooling": ("first",),
                  "finetune.scratch_model": ("bases", "own"),  # never: the model it picks enters as itself
                  **{f"task.{key}": (None,) for key in ("dataset", "dataset_config", "revision", "data_files",
                                                        "text_column", "text_pair_column", "label_column",
                                                        "src_column", "tgt_column", "builder_kwargs")},
                  "task.train_split": ("train",), "task.valid_split": ("validation",), "task.test_split": ("test",),
                  "task.valid_from_train": (0,), "freeze.gate.frozen": (False,), "freeze.gate.init": ("random",),
                  "model.ffn": ("mlp",), "model.positions": ("sinusoidal",), "model.rope_base": (10000.0,),
                  "model.kv_heads": (None,), "model.bias": (True,), "model.norm_eps": (1e-05,),
                  "model.qkv_bias": (False,), "model.rope_fraction": (1.0,),
                  "model.parallel": (False,),
                  "model.position_offset": (0,), "model.token_types": (0,), "model.embed_norm": (False,),
                  "model.mlm_head": (False,),
                  "trainer.step_time_s": (None,), "trainer.compile_scope": ("step",)}  # fmt: skip
# ...and those of them that the fingerprint held at their (first) default for a while before (records of that time
# hashed them in): a job at that default is looked up by that hash too (`legacy`), so those records stay its runs
ONCE_HELD_KEYS = ("trainer.step_time_s",)  # held 2026-11-26 23:29 to 2026-11-27 09:00
# `study` only labels the record's table; it stays in directory names (study=freeze and study=reservoir runs never
# share one), and records from before the key existed keep their fingerprint
LABEL_KEYS = frozenset({"study"})
# bumped when the same config and data give other results: 2 = batches planned by numpy's PCG64 (data/batching.py)
# 3 = a job's threads fixed for its life (frozen_sweep.system.cpu), not following the load
FINGERPRINT_RECIPE = 3
COMPILE_SCOPE = "trainer.compile_scope"
AMP_CPU = "trainer.amp_cpu"  # enters as the precision it gives (cpu.precision); records before that hashed it
WORLD_KEYS = ("trainer.devices", "trainer.update_freq")  # fingerprinted as their product, BATCHES_PER_UPDATE
BATCHES_PER_UPDATE = "trainer.batches_per_update"
QUICK_VALIDATION = "trainer.quick_validation_examples"  # the validation examples a quick job uses

def fingerprint(cfg: DictConfig) -> dict:
    """{"sha256": ..., "config": {dotted key: value}, "data": {file: sha256}, "prepared": the prepared dataset's key}:
    what determines the job's result."""
    return sealed(*fingerprint_recipe(cfg))


def fingerprint_recipe(cfg: DictConfig) -> tuple[dict, dict]:
    """(what the fingerprint hashes before the CPU's part, the CPU's part): kept by a sweep's plan so that jobs that
    differ only in their seed get theirs from one serialisation (`reseeded`)."""
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    container.pop("hydra", None)
    container.pop("bases", None)  # how the launcher finds a base: the base itself enters below, by its identity
    container["trainer"].pop("step_times", None)  # a calibration's table: only the step_time_s it gave counts
    neutral = NEUTRAL_KEYS | DATA_LOCATION_KEYS | LABEL_KEYS | {AMP_CPU}
    config = {
        key: value for key, value in flatten(container).items()
        if key not in neutral and value not in LATER_DEFAULTS.get(key, ())
    }  # fmt: skip
    if not container["trainer"]["compile"]:  # how a job compiles counts only if it compiles; compiled records from
        config.pop(COMPILE_SCOPE, None)  # before the key compiled the whole step, its value absent from the hash
    batches = math.prod(config.pop(key, 1) for key in WORLD_KEYS)
    if batches > 1:  # absent at 1, so that the fingerprints of jobs from before these keys stay the same
        config[BATCHES_PER_UPDATE] = batches
    cap = quick_validation_cap(cfg)
    if cap is not None:  # a quick job validates on fewer examples; absent otherwise, as for the batches above
        config[QUICK_VALIDATION] = cap
    from frozen_sweep.data.checkpoint_files import is_checkpoint_source
    from frozen_sweep.data.identity import prepared_key  # the data package: imported when a fingerprint is asked for
    from frozen_sweep.job.pretrained_base import checkpoint_identity

    key, data, _ = prepared_key(cfg.task)  # the key also covers the code's tokenisation (format, SentencePiece)
    recipe = {"config": config, "data": data, "prepared": key, "recipe": FINGERPRINT_RECIPE}
    base = cfg.finetune.base_checkpoint
    if base is not None:  # what the job starts from: a changed base run is another job
        recipe["base"] = (SCRATCH if base == SCRATCH else checkpoint_identity(base, cfg.task.cache_dir)
                          if is_checkpoint_source(base) else base_identity(base, cfg.task.cache_dir))  # fmt: skip
    if cfg.relearn.name != "none" and is_checkpoint_source(cfg.relearn.base_checkpoint):  # a pretrained base: its
        recipe["base"] = checkpoint_identity(cfg.relearn.base_checkpoint, cfg.task.cache_dir)  # commit and files
    tr = cfg.trainer
    return recipe, cpu_identity(job_threads(tr.threads, tr.follow_free_cores), tr.amp, tr.amp_cpu)


def sealed(recipe: dict, cpu: dict) -> dict:
    """The fingerprint of a recipe and its CPU's part, with its hash without that part (BEFORE_CPU) and the hashes that
    records from before its kernels and precision may hold (`legacy`)."""
    before_cpu = digest(recipe)
    config = {**recipe["config"], **cpu}
    sealed = {"sha256": digest({**recipe, "config": config}), "config": config, "data": recipe["data"],
              "prepared": recipe["prepared"], "recipe": FINGERPRINT_RECIPE, BEFORE_CPU: before_cpu}  # fmt: skip
    held = {key: LATER_DEFAULTS[key][0] for key in ONCE_HELD_KEYS if key not in config}
    sealed[LEGACY] = legacy(recipe, cpu, held)
    return sealed


def legacy(recipe: dict, cpu: dict, held: dict, environ=os.environ) -> dict:
    """The sha256s that records from before cpu.kernels and cpu.precision may hold as this job's run: the config as
    that code hashed it, with each trainer.amp_cpu that gives this job's precision on this CPU, its CPU part then (the
    threads and ATEN_CPU_CAPABILITY where set) and, for records from while ONCE_HELD_KEYS were hashed, those;
    "before_cpu": the same without the CPU part, for records from before it (their threads are checked)."""
    amp = recipe["config"].get("trainer.amp", True)
    then = [{**recipe["config"], AMP_CPU: amp_cpu} for amp_cpu in (None, False, True)
            if cpu_precision(amp, amp_cpu) == cpu["cpu.precision"]]  # fmt: skip
    cpu_then = {"cpu.threads": cpu["cpu.threads"]}
    if environ.get(KERNELS_VARIABLE):
        cpu_then["cpu.aten_cpu_capability"] = environ[KERNELS_VARIABLE]
    held_then = [{}, held] if held else [{}]
    return {
        "sha256": [digest({**recipe, "config": {**config, **cpu_then, **h}}) for config in then for h in held_then],
        "before_cpu": [digest({**recipe, "config": config}) for config in then],
    }


def reseeded(recipe: dict, cpu: dict, seed: int) -> dict:
    """The fingerprint of the recipe's job with another seed: what `fingerprint` gives that job, when its seed enters
    no other key (a sweep's plan checks that on a second job before it relies on it)."""
    return sealed({**recipe, "config": {**recipe["config"], "seed": seed}}, cpu)


def digest(recipe: dict) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def base_identity(path: str, cache_dir: str) -> dict:
    """A fine-tuning job's base run as the fingerprint sees it: its record's fingerprint and its best checkpoint's
    content hash."""
    from frozen_sweep.data.file_hashes import file_sha256

    base = load_base_run(path)
    checkpoint = file_sha256(base.path / BEST_CHECKPOINT, cache_dir)
    return {"fingerprint": (base.record.get("fingerprint") or {}).get("sha256"), "checkpoint": checkpoint}
