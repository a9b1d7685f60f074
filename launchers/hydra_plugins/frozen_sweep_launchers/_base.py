"""The life cycle both launchers share: plan every job, skip completed ones, run the rest, summarise."""

import logging
from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext
from omegaconf import DictConfig

from ._outcome import skipped
from ._plan import PlannedJob, plan_jobs
from ._progress import Progress

log = logging.getLogger(__name__)


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
    def run(self, jobs: list[PlannedJob], progress: Progress) -> None:
        """Run the jobs to their end, reporting each outcome to `progress` as it comes."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        jobs = plan_jobs(
            self.hydra_context,
            self.config,
            job_overrides,
            initial_job_idx,
            [f"trainer.threads={self.threads_per_job()}"],
        )
        progress = Progress(jobs, Path(str(self.config.hydra.sweep.dir)).absolute())
        todo = [job for job in jobs if not job.already_completed]
        for job in jobs:
            if job.already_completed:
                progress.finished(skipped(job), running=0)
        resuming = sum(job.resumes for job in todo)
        log.info(
            f"{len(jobs)} jobs: {len(todo)} to run ({resuming} resuming from a checkpoint), "
            f"{len(jobs) - len(todo)} already completed (skipped; force=true reruns them)"
        )
        if todo:
            self.run(todo, progress)
        progress.summarise()
        return progress.job_returns()

    def task(self, job: PlannedJob) -> Any:
        """The callable a submitit job runs for `job` (imported here: Hydra's plugin scan stays free of submitit)."""
        from ._task import JobTask

        return JobTask(self.task_function, self.hydra_context, job.config)
