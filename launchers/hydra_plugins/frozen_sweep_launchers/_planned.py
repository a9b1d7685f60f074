"""One job of a sweep, planned before any starts: its config (composed now, or at its launch), its directory, its
checks and what its directory holds."""

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import ConfigError, StudyName
from frozen_sweep.job.job_config import absolute_paths, job_config
from frozen_sweep.run.directory import LAST_CHECKPOINT, completed_runs, is_completed, previous_record, read_record
from frozen_sweep.run.lock import live_runner

from ._compose import JobComposer
from ._seeds import Checked, SeedShare, Uncomposed, task_config


class SweepConfigError(CompactHydraException):
    """A job of the sweep cannot run as configured; raised before anything starts."""


@dataclass(eq=False)  # a job is itself, not its field values
class PlannedJob:
    num: int  # hydra.job.num
    overrides: list[str]
    composed: Optional[DictConfig]  # the job's config, hydra node included (its output_dir is job_dir); see `config`
    job_dir: Path
    previous: Optional[dict]  # the result record the directory held before the sweep started
    runner: Optional[dict] = None  # who runs the job now (an earlier launcher's job, still live), else None
    label: str = ""  # what sets this job apart in the sweep, for progress lines
    refused: Optional[str] = None  # why the job cannot run (a dry run plans every job; a real sweep stops at one)
    same_run: Optional[Path] = None  # another directory of the sweep that holds (or will hold) this job's result
    waits_for: Optional["PlannedJob"] = None  # the base run this job starts from, not completed yet (_bases.py)
    checked_task: Optional[DictConfig] = None  # the task of the config the job runs (job_config), once checked
    checked_fingerprint: Optional[dict] = None
    passed: Sequence[str] = ()  # the overrides the user gave (`overrides` less the launcher's), for what Hydra prints
    deferred: Optional[Callable[[], DictConfig]] = None  # composes the config of a job planned from its class's checks
    class_force: bool = False  # `force` and `trainer.devices` of such a job, from its class (_seeds.py)
    class_devices: int = 1

    @property
    def config(self) -> DictConfig:
        """The composed job config; a job planned from its seed class's checks is composed when first asked for
        (its launch), a dry run composes none of them."""
        if self.composed is None and self.deferred is not None:
            self.composed = self.deferred()
        return self.composed

    @property
    def force(self) -> bool:
        return bool(self.composed.force) if self.composed is not None else self.class_force

    @property
    def devices(self) -> int:
        return self.composed.trainer.devices if self.composed is not None else self.class_devices

    @property
    def already_completed(self) -> bool:
        """Completed in its own directory, or in another one with the same fingerprint: not run again."""
        return (is_completed(self.previous) or self.same_run is not None) and not self.force

    def completed_record(self) -> dict:
        """The completed record this job's result is in ({} when there is none yet)."""
        record = self.previous if is_completed(self.previous) else self.same_run and read_record(self.same_run)
        return record if is_completed(record) else {}

    @property
    def resumes(self) -> bool:
        return (self.job_dir / LAST_CHECKPOINT).exists() and not self.force


def plan_job(
    num: int,
    overrides: list[str],
    config: DictConfig,
    runs: "SameRuns",
    refuse_each: bool,
    passed: Sequence[str],
    seeds: Optional[SeedShare] = None,
    has_base: bool = False,
) -> PlannedJob:
    """One composed job, checked as the job will check itself, with what its directory holds; a refusal names the
    overrides the user `passed` (not those the launcher adds). `seeds`: the checks of the jobs planned before it,
    which it shares when it differs from one only in its seed (_seeds.py)."""
    job_dir = place(config, num)
    job = PlannedJob(num, overrides, config, job_dir, None)
    return _checked(job, lambda: (seeds or SeedShare()).check(config, overrides, job_dir, has_base), runs,
                    refuse_each, passed)  # fmt: skip


def plan_uncomposed(
    num: int,
    overrides: list[str],
    shared: Uncomposed,
    composer: JobComposer,
    runs: "SameRuns",
    refuse_each: bool,
    passed: Sequence[str],
) -> PlannedJob:
    """A job of a seed or value class whose directory follows from its overrides (_seeds.py): planned from the
    class's checks, its config composed when the launcher first reads it."""
    job_dir = shared.place.job_dir(overrides)
    deferred = functools.partial(_compose_placed, composer, overrides, num, job_dir)
    job = PlannedJob(num, overrides, None, job_dir, None, deferred=deferred, class_force=shared.force,
                     class_devices=shared.devices)  # fmt: skip
    return _checked(job, shared.check, runs, refuse_each, passed)


def _checked(job: PlannedJob, check: Callable[[], Checked], runs: "SameRuns", refuse_each: bool,
             passed: Sequence[str]) -> PlannedJob:  # fmt: skip
    """The job with its checks' results and what its directory holds, or refused (SweepConfigError unless
    `refuse_each`)."""
    try:
        checked = check()
        job.previous = previous_record(job.job_dir, checked.fingerprint, checked.force)
    except (ConfigError, OmegaConfBaseException) as e:  # e.g. a mandatory value left unset
        if not refuse_each:
            raise SweepConfigError(f"job #{job.num} ({' '.join(passed)}): {e}. No job was started.") from e
        job.previous, job.refused = None, str(e)
        return job
    job.runner = live_runner(job.job_dir)
    job.checked_task, job.checked_fingerprint = checked.task, checked.fingerprint
    if not checked.force and not is_completed(job.previous):
        job.same_run = runs.find(checked.fingerprint["sha256"], job.job_dir)
    return job


def plan_waiting(num: int, overrides: list[str], config: DictConfig, base: PlannedJob, refuse_each: bool,
                 passed: Sequence[str]) -> PlannedJob:  # fmt: skip
    """A job whose base has not completed: a fine-tuning job is checked now against its base's planned config (the
    model and reservoir it will adopt, its own overrides of them, the base's task kind; its task's coverage by the
    base's vocabulary once the data is prepared, _plan.py), so that what would refuse it once the base has run
    stops the sweep before the base trains; every job is checked in full once its base ran."""
    job = PlannedJob(num, overrides, config, job_dir_of(config), None, waits_for=base)
    if StudyName(config.study) != StudyName.finetune:
        return job
    try:
        checked = job_config(task_config(config), list(overrides), copied=True, planned_base=task_config(base.config))
        job.checked_task = checked.task  # its data under its base's vocabulary: checked with the plan's
    except (ConfigError, OmegaConfBaseException) as e:
        if not refuse_each:
            raise SweepConfigError(f"job #{num} ({' '.join(passed)}): {e}. No job was started.") from e
        job.refused = str(e)
    return job


def place(config: DictConfig, num: int) -> Path:
    """Set the job's number, id and output directory in its config, its paths made absolute; its directory."""
    with open_dict(config.hydra.job):
        config.hydra.job.num = num
        config.hydra.job.id = f"job_id_for_{num}"  # the submitit job id replaces it once the job runs
    job_dir = job_dir_of(config)
    with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
        config.hydra.runtime.output_dir = str(job_dir)
    absolute_paths(config, Path(config.hydra.runtime.cwd))  # checked here, read by the job: the same files
    return job_dir


def _compose_placed(composer: JobComposer, overrides: list[str], num: int, job_dir: Path) -> DictConfig:
    config = composer.compose(overrides)
    if place(config, num) != job_dir:  # the class's rule was checked on its second job: this cannot differ
        raise SweepConfigError(f"job #{num} ({' '.join(overrides)}): its directory is not {job_dir} as planned")
    return config


class SameRuns:
    """Where each fingerprint's run is: a completed record under the sweep's folder (read once, when a job first
    needs it), else the first job of this plan that runs it."""

    def __init__(self, sweep_dir: Path):
        self.sweep_dir = sweep_dir
        self.completed: Optional[dict[str, Path]] = None
        self.planned: dict[str, Path] = {}

    def find(self, sha256: str, job_dir: Path) -> Optional[Path]:
        if self.completed is None:
            self.completed = completed_runs(self.sweep_dir)
        found = self.completed.get(sha256) or self.planned.setdefault(sha256, job_dir)
        return None if found == job_dir else found


def job_dir_of(config: DictConfig) -> Path:
    """hydra.sweep.dir/hydra.sweep.subdir, evaluated as Hydra's run_job does (with the job's HydraConfig set when they
    use the `hydra:` resolver; setting it copies the hydra node, a third of a job's plan)."""
    sweep = config.hydra.sweep
    if "${hydra:" not in f"{OmegaConf.to_container(sweep, resolve=False)}":
        return Path(str(sweep.dir), str(sweep.subdir)).absolute()
    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg
    hydra_config.set_config(config)
    try:
        return Path(str(config.hydra.sweep.dir), str(config.hydra.sweep.subdir)).absolute()
    finally:
        hydra_config.cfg = previous
