"""The life cycle both launchers share: plan every job, skip completed ones, run the rest, summarise."""

import logging
from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn
from hydra.errors import CompactHydraException
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.run_dir import describe_runner, remove_if_unused

from ._outcome import skipped
from ._plan import PlannedJob, SweepConfigError, dry_run, plan_jobs
from ._progress import Progress

log = logging.getLogger(__name__)


class SweepInterrupted(CompactHydraException):
    """Ctrl-C on the launcher: the message says what became of the jobs (no traceback)."""


class SweepLauncher(Launcher):
    """A Hydra launcher; subclasses say how many threads a job gets and how the jobs run."""

    def setup(self, *, hydra_context: HydraContext, task_function: Callable, config: DictConfig) -> None:
        self.hydra_context = hydra_context
        self.task_function = task_function
        self.config = config

    @abstractmethod
    def threads_per_job(self) -> int:
        """CPU threads each job gets: passed as trainer.threads unless the command line sets it."""

    @abstractmethod
    def run(self, jobs: list[PlannedJob], adopted: list[PlannedJob], progress: Progress) -> None:
        """Run the jobs to their end, and wait for the adopted ones (started by an earlier launcher, still live),
        reporting each outcome to `progress` as it comes."""

    def live_elsewhere(self, job: PlannedJob) -> Optional[dict]:
        """Who runs the job now outside this launcher (its directory's lock holder), or None."""
        return job.runner

    @abstractmethod
    def interrupted(self) -> str:
        """What became of the started jobs when the launcher was interrupted, and how to reattach or stop them."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        self.singleton_state = Singleton.get_state()  # Hydra's config store, resolvers, ...: each job restores them
        dry = bool(OmegaConf.select(self.config, "dry_run", default=False))
        try:
            jobs = plan_jobs(
                self.hydra_context, self.config, job_overrides, initial_job_idx,
                [f"trainer.threads={self.threads_per_job()}"], refuse_each=dry,
            )  # fmt: skip
            if dry:
                dry_run(jobs, self.live_elsewhere)
                return []
        except SweepConfigError:
            remove_if_unused(sweep_dir, {"multirun.yaml"})  # written by Hydra's sweeper: a config error leaves nothing
            raise
        finally:
            if dry:  # the dry run's multirun.yaml goes too, and so does the sweep's folder if nothing else is there
                (sweep_dir / "multirun.yaml").unlink(missing_ok=True)
                remove_if_unused(sweep_dir, set())
        progress = Progress(jobs, sweep_dir)
        for job in jobs:
            job.runner = None if job.already_completed else self.live_elsewhere(job)
            if job.already_completed:
                progress.finished(skipped(job), running=0)
        adopted = [job for job in jobs if job.runner]
        todo = [job for job in jobs if not job.already_completed and not job.runner]
        resuming = sum(job.resumes for job in todo)
        log.info(
            f"{len(jobs)} jobs: {len(todo)} to run ({resuming} resuming from a checkpoint), "
            f"{len(jobs) - len(todo) - len(adopted)} already completed (skipped; force=true reruns them)"
            + (f", {len(adopted)} still running from an earlier launch (adopted: waited for, not run again)"
               if adopted else "")
        )  # fmt: skip
        for job in adopted:
            log.info(f"  still running: {job.label} ({describe_runner(job.runner)})")
        try:
            if todo or adopted:
                self.run(todo, adopted, progress)
        except KeyboardInterrupt:
            raise SweepInterrupted(self.interrupted()) from None
        progress.summarise()
        return progress.job_returns()

    def task(self, job: PlannedJob) -> Any:
        """The callable a submitit job runs for `job` (imported here: Hydra's plugin scan stays free of submitit)."""
        from ._task import JobTask

        return JobTask(self.task_function, self.hydra_context, job.config, self.singleton_state)
