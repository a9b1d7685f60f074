"""Every job of a sweep composed and validated before any starts, with its directory and what it already holds."""

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import ConfigError, validate
from frozen_sweep.results import RESULT_FILE, load_result

RESUME_CHECKPOINT = "checkpoint_last.pt"  # frozen_sweep.checkpoint.LAST, named here to keep torch out of plugin scans


class SweepConfigError(CompactHydraException):
    """A job of the sweep cannot run as configured; raised before anything starts."""


@dataclass(eq=False)  # a job is itself, not its field values
class PlannedJob:
    num: int  # hydra.job.num
    overrides: list[str]
    config: DictConfig  # the composed job config, hydra node included; hydra.runtime.output_dir is the job's dir
    job_dir: Path
    previous: Optional[dict]  # the result record the directory held before the sweep started
    label: str = ""  # what sets this job apart in the sweep, for progress lines

    @property
    def already_completed(self) -> bool:
        return bool(self.previous) and self.previous["status"] == "completed" and not self.config.force

    @property
    def resumes(self) -> bool:
        return (self.job_dir / RESUME_CHECKPOINT).exists() and not self.config.force


def plan_jobs(
    hydra_context: HydraContext,
    sweep_config: DictConfig,
    job_overrides: Sequence[Sequence[str]],
    initial_job_idx: int,
    launcher_overrides: Sequence[str] = (),
) -> list[PlannedJob]:
    """Compose and validate each job; a bad config in any job stops the sweep here, naming the job and the key.

    `launcher_overrides` (e.g. the thread count a launcher gives each job) apply unless a job sets the same key.
    """
    jobs = []
    for num, overrides in enumerate(job_overrides, start=initial_job_idx):
        overrides = list(overrides) + [o for o in launcher_overrides if _key(o) not in {_key(x) for x in overrides}]
        config = hydra_context.config_loader.load_sweep_config(sweep_config, overrides)
        try:
            validate(config)
        except (ConfigError, OmegaConfBaseException) as e:  # e.g. a mandatory value left unset
            raise SweepConfigError(f"job #{num} ({' '.join(overrides)}): {e}. No job was started.") from e
        with open_dict(config.hydra.job):
            config.hydra.job.num = num
            config.hydra.job.id = f"job_id_for_{num}"  # the submitit job id replaces it once the job runs
        job_dir = _job_dir(config)
        with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
            config.hydra.runtime.output_dir = str(job_dir)
        jobs.append(PlannedJob(num, overrides, config, job_dir, _previous_result(job_dir)))
    _check_distinct_dirs(jobs)
    shared = set.intersection(*(set(job.overrides) for job in jobs))
    for job in jobs:
        job.label = " ".join(o for o in job.overrides if o not in shared) or job.job_dir.name
    return jobs


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _job_dir(config: DictConfig) -> Path:
    """hydra.sweep.dir/hydra.sweep.subdir, evaluated as Hydra's run_job does (with the job's HydraConfig set)."""
    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg
    hydra_config.set_config(config)
    try:
        return Path(str(config.hydra.sweep.dir), str(config.hydra.sweep.subdir)).absolute()
    finally:
        hydra_config.cfg = previous


def _previous_result(job_dir: Path) -> Optional[dict]:
    try:
        return load_result(job_dir / RESULT_FILE)
    except ValueError:  # missing or unreadable: the job runs
        return None


def _check_distinct_dirs(jobs: list[PlannedJob]) -> None:
    """Two jobs in one directory would overwrite each other's checkpoints and results."""
    seen: dict[Path, PlannedJob] = {}
    for job in jobs:
        other = seen.setdefault(job.job_dir, job)
        if other is not job:
            excluded = OmegaConf.to_container(job.config.hydra.job.config.override_dirname.exclude_keys)
            raise SweepConfigError(
                f"jobs #{other.num} and #{job.num} would share the directory {job.job_dir}: they differ only in "
                f"keys left out of directory names ({', '.join(excluded)}). No job was started."
            )
