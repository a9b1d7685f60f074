"""One job: data → model → freeze → train (resuming) → test → result.json. Launcher-independent.

The pipeline is the same for every study; the job's study (frozen_sweep.study, named by the config's `study`) makes
the model and adds to the record at fixed points. A data-parallel job (trainer.devices > 1) runs the pipeline in every
rank (frozen_sweep.parallel.distributed): rank 0 holds the directory and writes its files, the others train beside it; a job
started alone spawns its ranks and watches them."""

import ctypes
import logging
import time
import traceback
from pathlib import Path

import torch
from omegaconf import OmegaConf, open_dict

from frozen_sweep.config import ConfigError, Device, TaskKind
from frozen_sweep.config.report import LABEL_METRICS, NUMBER_METRICS, reported
from frozen_sweep.data import TaskData, load_task
from frozen_sweep.job.how_it_runs import how_it_runs, job_threads, versions
from frozen_sweep.job.job_data import prepare_checked
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import BUDGETS, job_config
from frozen_sweep.job.test_set import evaluate_test
from frozen_sweep.metrics import efficiency
from frozen_sweep.parallel import distributed
from frozen_sweep.parallel.world import SINGLE, World, check_world, launched_world
from frozen_sweep.run.directory import (
    BEST_CHECKPOINT,
    CONFIG_FILE,
    LAST_CHECKPOINT,
    is_completed,
    previous_record,
    read_record,
    recorded,
    result_of,
    write_result,
)
from frozen_sweep.run.lock import exclusive_run
from frozen_sweep.run.record import RunResult
from frozen_sweep.study import for_config
from frozen_sweep.system import cpu
from frozen_sweep.system.signals import ignore_stops
from frozen_sweep.system.files import write_text_atomic  # fmt: skip
from frozen_sweep.metrics import clock
from frozen_sweep.train.progress_report import EvaluationReport
from frozen_sweep.train.stopping import Diverged
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights import freeze
from frozen_sweep.weights.checkpoint import load_checkpoint

log = logging.getLogger(__name__)

# the record's metric_name: valid_metric and test_metric, whatever trainer.stop_metric picks the best validation by
METRIC_NAMES = {TaskKind.translation: "bleu", TaskKind.lm: "ppl", TaskKind.mlm: "mlm_ppl",
                TaskKind.classify: "accuracy", TaskKind.regression: "pearson"}  # fmt: skip


def pick_device(cfg) -> torch.device:
    wanted = cfg.trainer.device
    if wanted == Device.cuda and not torch.cuda.is_available():
        raise RuntimeError("trainer.device=cuda but no CUDA device is visible; allowed here: auto, cpu")
    if wanted == Device.cpu or not torch.cuda.is_available():
        return torch.device("cpu")
    devices = cfg.trainer.devices
    if launched_world() is None and devices > torch.cuda.device_count():
        raise ConfigError(
            f"trainer.devices={devices}: this job sees {torch.cuda.device_count()} GPU(s) (CUDA_VISIBLE_DEVICES); "
            f"allowed: 1 … {torch.cuda.device_count()}, or trainer.device=cpu"
        )
    return torch.device("cuda")


def run_job(cfg, run_dir: Path, overrides: list[str]) -> RunResult:
    """Run one job in `run_dir`, resuming from its checkpoint; write result.json whatever happens.

    Config errors (ConfigError, FingerprintMismatch, data that cannot be prepared) and a second runner
    (JobAlreadyRunning) stop it before it writes anything."""
    cfg = job_config(cfg, overrides)
    world = launched_world()  # torchrun, or a multi-task SLURM job: every rank runs this
    check_world(world, cfg.trainer.devices)
    pick_device(cfg)  # no GPU, or fewer than trainer.devices: stop before anything is written
    distributed.stop_on_sigterm(world)
    run_fingerprint = fingerprint(cfg)
    run_dir = Path(run_dir)
    if cfg.force or not is_completed(previous_record(run_dir, run_fingerprint, cfg.force)):
        prepare_checked(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    if world is not None and not world.is_main:  # rank 0 holds the directory; this rank makes the same decision
        previous = previous_record(run_dir, run_fingerprint, cfg.force)
        if is_completed(previous) and not cfg.force:
            return result_of(previous)
        with cpu.threads_for_job(*job_threads(cfg)):
            return _train_and_test(cfg, run_dir, RunResult(), world)
    with exclusive_run(run_dir):
        previous = previous_record(run_dir, run_fingerprint, cfg.force)
        if is_completed(previous) and not cfg.force:
            log.info("%s already holds a completed result; skipping (force=true reruns)", run_dir)
            return result_of(previous)
        if cfg.force:
            for stale in (LAST_CHECKPOINT, BEST_CHECKPOINT):
                (run_dir / stale).unlink(missing_ok=True)
        return _run(cfg, run_dir, overrides, run_fingerprint, world)


def _run(cfg, run_dir: Path, overrides: list[str], run_fingerprint: dict, world: World | None) -> RunResult:
    result = RunResult(
        study=cfg.study.value,
        task=cfg.task.name,
        model=cfg.model.name,
        freeze=freeze.describe(cfg.freeze),
        row=freeze.paper_row(cfg.freeze),
        seed=cfg.seed,
        metric_name=METRIC_NAMES[cfg.task.kind],
        stop_metric=cfg.trainer.stop_metric.value,
        report=reported(cfg.task.report, METRIC_NAMES[cfg.task.kind], cfg.trainer.stop_metric.value),
        budgets={budget: cfg.trainer[budget] for budget in BUDGETS},
        overrides=list(overrides),
        fingerprint=recorded(run_fingerprint),
        versions=versions(),
    )
    write_text_atomic(run_dir / CONFIG_FILE, OmegaConf.to_yaml(cfg))
    write_result(run_dir, result)
    spawns = world is None and cfg.trainer.devices > 1
    try:
        if spawns:  # the ranks write the record as they go (rank 0); it is read back when they end
            ranks_args = (_picklable(cfg), run_dir, result, distributed.log_files())
            distributed.run_ranks(_rank, cfg.trainer.devices, ranks_args)
            result = result_of(read_record(run_dir))
        else:
            with cpu.threads_for_job(*job_threads(cfg)):  # fixed, unless trainer.follow_free_cores
                _train_and_test(cfg, run_dir, result, world or SINGLE)
        result.status = "completed"
    except BaseException as e:  # KeyboardInterrupt and SystemExit too: the record must say the job did not finish
        if isinstance(e, KeyboardInterrupt):
            ignore_stops()
        if spawns:  # the curve rank 0 recorded before the job failed
            result = result_of(read_record(run_dir) or result.to_dict())
        result.status = "failed"
        result.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-8)}"
        write_result(run_dir, result)
        raise
    write_result(run_dir, result)
    return result


def stop_cause(cfg, stopped_reason: str) -> str:
    """What ended training, with the budget's key and value: "trainer.max_steps=400", "early stopping (patience 5)"."""
    if stopped_reason == "early_stop":
        return f"early stopping (trainer.patience={cfg.trainer.patience})"
    budget = {"max_time": "max_time_s"}.get(stopped_reason, stopped_reason)
    return f"trainer.{budget}={cfg.trainer[budget]}"


def keep_freed_memory() -> None:
    """Stop glibc from handing big freed tensors back to the OS after every step.

    By default each (B, T, V) logits tensor is mmap'ed and unmapped again: ~28k page faults per demo step. Serving
    everything from the heap and never trimming it makes CPU steps ~15% faster (benchmarked side by side).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    libc.mallopt(M_MMAP_MAX, 0)
    libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def _picklable(cfg):
    """The job's config for the spawned ranks: without Hydra's node, whose resolvers live in the launching process."""
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.pop("hydra", None)
    return cfg


def _rank(world: World, cfg, run_dir: Path, result: RunResult, log_files: list[str]) -> None:
    """A rank the job spawned: its share of the job's threads (trainer.threads, else OMP_NUM_THREADS or the cores)."""
    distributed.log_as_rank(world, log_files)
    with cpu.threads_for_job(*job_threads(cfg, world.size)):
        _train_and_test(cfg, run_dir, result, world)


def _train_and_test(cfg, run_dir: Path, result: RunResult, world: World) -> RunResult:
    """Train on every rank; rank 0 then tests, with the ranks' process group gone."""
    device = distributed.rank_device(pick_device(cfg), world)
    with distributed.process_group(world, device, cfg.trainer.dist_timeout_s):
        data, study = _train(cfg, run_dir, result, world, device)
    if world.is_main:
        _test(cfg, run_dir, result, data, study, device)
    return result


def _train(cfg, run_dir: Path, result: RunResult, world: World, device: torch.device):
    keep_freed_memory()
    how_it_runs(cfg, result)
    torch.manual_seed(cfg.seed)
    result.device = str(device) if device.type == "cpu" else torch.cuda.get_device_name(device)
    if world.size > 1:
        result.device += f" × {world.size}"
    record = (lambda: write_result(run_dir, result)) if world.is_main else (lambda: None)  # rank 0 alone writes

    with distributed.main_first(world):  # rank 0 prepares (caches) the data, the others then read it
        data = load_task(cfg.task)
    result.data = data.stats
    study = for_config(cfg)
    model = study.make_model(data)  # the same weights on every rank: the same seed
    if world.rank:  # each rank its own dropout masks (rank 0 keeps a one-device run's)
        torch.manual_seed(cfg.seed + 1_000_003 * world.rank)
    for key, value in freeze.parameter_counts(model).items():
        setattr(result, key, value)
    study.describe(model, result)
    log.info(
        "%s | %s | freeze %s (row %s) | %d parameters, %.1f%% trainable | %s",
        cfg.task.name,
        cfg.model.name,
        cfg.freeze.name,
        result.row,
        result.params_total,
        100 * result.trainable_ratio,
        result.device,
    )
    record()

    def report_progress(state) -> None:  # the record shows the curve while the job runs
        result.history = state.history
        record()

    trainer = Trainer(cfg, data, model.to(device), device, run_dir, on_validation=report_progress, world=world)
    result.precision = trainer.loss.precision
    result.validation = trainer.validation.settings()
    study.before_training(trainer, result)  # before resuming: the trainer's model is still the fresh one
    trainer.resume_if_possible()
    started = time.perf_counter()
    try:
        state = trainer.fit()
    except Diverged:  # the run fails; its record keeps the curve and says why it stopped
        result.history, result.stopped_reason = trainer.state.history, trainer.state.stopped_reason
        record()
        raise
    if not world.is_main:
        return data, study
    log.info("training stopped by %s after %.0f s", stop_cause(cfg, state.stopped_reason), time.perf_counter() - started)

    best = state.history[state.best_index]
    result.history = state.history
    result.best_epoch = best["epoch"]
    result.best_metric = best["valid_metric"]
    result.epochs_to_convergence = best["epoch"] if state.stopped_reason == "early_stop" else None
    result.stopped_reason = state.stopped_reason
    result.steps = state.step
    result.wall_time_s = round(state.train_time_s, 3)
    result.train_tokens_per_s = state.train_tokens / max(state.step_time_s, 1e-9)
    step_time_s = cfg.trainer.step_time_s
    result.clock, result.step_time_s = clock.clock_name(step_time_s), step_time_s
    result.calibrated_time_s = clock.calibrated_time(state.step, step_time_s).get(clock.CALIBRATED)
    result.aucc_cutoff_s = cfg.trainer.aucc_cutoff_s or result.calibrated_time_s or result.wall_time_s
    # perplexity of a uniform guess; 0 BLEU, 0 accuracy, 0 correlation
    untrained = len(data.vocab) if cfg.task.kind in (TaskKind.lm, TaskKind.mlm) else 0.0
    if all(h["valid_metric"] is not None for h in state.history):  # null when validation BLEU is off
        on_clock = clock.time_key(vars(result))
        result.aucc = efficiency.aucc(state.history, result.aucc_cutoff_s, untrained, time_key=on_clock)
    study.after_training(result)
    record()
    return data, study


def _test(cfg, run_dir: Path, result: RunResult, data: TaskData, study, device: torch.device) -> None:
    model = study.make_model(data)
    load_checkpoint(run_dir / BEST_CHECKPOINT, model)  # a fresh model: its frozen parameters are in place, and verified
    test = evaluate_test(cfg, data, model.to(device), device, run_dir, EvaluationReport(run_dir))
    result.test_metric = test["metric"]
    result.test_chrf = test.get("chrf")
    result.test_loss = test.get("loss")
    for name in (*LABEL_METRICS, *NUMBER_METRICS, "mse"):  # a classifier's or a regression's (a masked LM's accuracy)
        setattr(result, f"test_{name}", test.get(name))
    result.sacrebleu_signature = test.get("signature")
    result.decoding = test.get("decoding", {})
    log.info("test %s = %.2f%s", result.metric_name, result.test_metric, floor(result, data.stats))
    write_result(run_dir, result)


def floor(result: RunResult, stats: dict) -> str:
    """What a classifier's or a regression's test result is printed beside: the majority class's accuracy, or the
    mean predictor's squared error."""
    if "majority" in stats:
        return (f" (majority class {stats['majority']['test']:.2f}; f1 {result.test_f1:.2f}, macro-F1 "
                f"{result.test_macro_f1:.2f}, mcc {result.test_mcc:.2f})")  # fmt: skip
    if "mean_predictor" in stats:
        return (f" (spearman {result.test_spearman:.2f}; mse {result.test_mse:.3f}, the mean predictor's "
                f"{stats['mean_predictor']['test']:.3f})")  # fmt: skip
    return ""
