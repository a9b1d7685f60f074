"""The life cycle both launchers share: plan every job, skip completed ones, run the rest, summarise."""

import functools
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

from frozen_sweep.job.dry_run import same_run_message
from frozen_sweep.run.directory import is_completed
from frozen_sweep.run.lock import deepest_existing, describe_runner, remove_if_unused
from frozen_sweep.system.files import write_atomic
from frozen_sweep.system.signals import answer_stops, signal_name

from ._batches import check_claims, later_batch, whole_sweep
from ._bases import Bases
from ._cost import SweepCost
from ._outcome import Outcome, skipped
from ._plan import PlannedJob, SweepConfigError, dry_run, plan_jobs
from ._progress import Progress
from ._sweep_values import check_sweep_values

log = logging.getLogger(__name__)
MULTIRUN_FILE = "multirun.yaml"  # what Hydra's sweeper writes into the sweep's folder before the launcher runs


class SweepInterrupted(CompactHydraException):
    """Ctrl-C on the launcher: the message says what became of the jobs (no traceback)."""


class SweepLauncher(Launcher):
    """A Hydra launcher; subclasses say how many threads a job gets and how the jobs run."""

    def __init__(self, **settings: Any) -> None:
        """Built by Hydra from hydra.launcher.*: a setting out of range (ValueError) is kept, and refused in setup()
        as one line (what a plugin's constructor raises, Hydra wraps in three lines of its own)."""
        self.refused = None
        try:
            self.configure(**settings)
        except ValueError as e:
            self.refused = str(e)

    @abstractmethod
    def configure(self, **settings: Any) -> None:
        """Check and keep the launcher's settings; ValueError, naming the key and what is allowed, for a bad one."""

    def setup(self, *, hydra_context: HydraContext, task_function: Callable, config: DictConfig) -> None:
        if self.refused:
            raise SweepConfigError(f"{self.refused}. No job was started.")
        self.hydra_context = hydra_context
        self.task_function = task_function
        self.config = config
        # what existed before the sweeper made the sweep's folder: a dry run or a refused sweep removes only what it made
        self.existed = deepest_existing(Path(str(config.hydra.sweep.dir)))
        multirun = Path(str(config.hydra.sweep.dir), MULTIRUN_FILE)  # an earlier sweep's, put back by a refused one
        self.multirun_before = multirun.read_bytes() if multirun.is_file() else None

    @abstractmethod
    def threads_per_job(self) -> int:
        """CPU threads each job gets: passed as trainer.threads unless the command line sets it."""

    @abstractmethod
    def run(self, jobs: list[PlannedJob], adopted: list[PlannedJob], progress: Progress) -> None:
        """Run the jobs to their end, and wait for the adopted ones (started by an earlier launcher, still live),
        reporting each outcome to `progress` as it comes."""

    @abstractmethod
    def jobs_at_a_time(self) -> int:
        """How many of the sweep's jobs run at once: what its wall time is estimated at."""

    def check(self, jobs: list[PlannedJob]) -> None:
        """SweepConfigError for a job this launcher could not run as configured (before any job starts)."""

    def costed(self, jobs: list[PlannedJob]) -> Optional[SweepCost]:
        """The jobs' estimated cost (_cost.py), checked against the launcher's limits; None with estimate=false."""
        if not OmegaConf.select(self.config, "estimate", default=True):
            self.check_cost(None)
            return None
        cost = SweepCost(jobs, self.jobs_at_a_time(), self.sweep_dir, self.unprobed())
        self.check_cost(cost)
        return cost

    def unprobed(self) -> Optional[str]:
        """Why the jobs' steps cannot be probed where the launcher runs (None: they train on this machine's kind)."""
        return None

    def check_cost(self, cost: Optional[SweepCost]) -> None:
        """What the launcher does with the jobs' estimates before any starts (SLURM: its time limit)."""

    def adopt(self, jobs: list[PlannedJob], dry_run: bool = False) -> None:
        """Set `job.runner` for each job that is not completed and that an earlier launcher started and still runs:
        its directory's lock holder (set by the plan), or a submission that has not taken the lock yet. A dry run
        changes nothing on the cluster."""

    @abstractmethod
    def interrupted(self, why: str) -> str:
        """Stop or leave the started jobs when the launcher is interrupted (`why`: by which signal), and say what
        became of them and what to do next."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        sweep_dir = self.sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        self.singleton_state = Singleton.get_state()  # Hydra's config store, resolvers, ...: each job restores them
        dry = bool(OmegaConf.select(self.config, "dry_run", default=False))
        threads = [f"trainer.threads={self.threads_per_job()}"]
        bases = Bases(self.hydra_context, self.config, threads)
        plan = functools.partial(plan_jobs, self.hydra_context, self.config, refuse_each=dry, base_of=bases.resolve)
        try:
            if initial_job_idx == 0:  # a new sweep; the basic sweeper's batches are all planned now (_batches.py)
                check_sweep_values(self.config.hydra.overrides.task, self.hydra_context.config_loader.get_group_options)
                whole = whole_sweep(self.config, self.hydra_context)
                self.claimed: list[PlannedJob] = []
                if whole and len(whole) > len(job_overrides):
                    self.claimed = plan(whole, 0, threads)
            jobs = plan(job_overrides, initial_job_idx, threads)
            check_claims(self.claimed, jobs)
            pending = bases.pending(jobs)  # bases to train before the jobs that start from them
            self.check(pending + [job for job in jobs if not job.refused and not job.waits_for])
            if dry:  # the whole sweep once, at its first batch; nothing is started or cancelled
                if initial_job_idx == 0:
                    shown = self.claimed or jobs
                    shown = bases.pending(shown) + shown
                    self.adopt(shown, dry_run=True)
                    dry_run(shown, self.costed(shown))
                return []
            if pending:
                self.run_bases(pending)
                bases.forget()
                jobs = plan(job_overrides, initial_job_idx, threads)  # the dependent jobs are checked now
        except Exception as error:  # ours, or Hydra's own (e.g. a config group option that does not exist)
            if initial_job_idx and not dry:
                raise later_batch(error) if isinstance(error, SweepConfigError) else error from error
            self.restore_multirun(sweep_dir)  # written by Hydra's sweeper: a refused sweep leaves the folder as it was
            remove_if_unused(sweep_dir, set(), self.existed)
            raise
        finally:
            self.sweep_dir = sweep_dir
            if dry:  # the dry run's multirun.yaml goes too, and so does the sweep's folder if nothing else is there
                self.restore_multirun(sweep_dir)
                remove_if_unused(sweep_dir, set(), self.existed)
        self.claimed += jobs
        progress = Progress(jobs, sweep_dir)
        for job in jobs:
            if job.waits_for is not None:  # its base failed: reported under the bases
                progress.finished(Outcome(job, "failed", f"its base {job.waits_for.label} did not complete"), running=0)
        self.run_phase([job for job in jobs if job.waits_for is None], progress)
        progress.summarise()
        return progress.job_returns()

    def restore_multirun(self, sweep_dir: Path) -> None:
        """The sweep folder's multirun.yaml as it was before Hydra's sweeper wrote this sweep's (none if none)."""
        if self.multirun_before is None:
            (sweep_dir / MULTIRUN_FILE).unlink(missing_ok=True)
        else:
            before = self.multirun_before
            write_atomic(sweep_dir / MULTIRUN_FILE, lambda f: f.write(before))

    def run_bases(self, bases: list[PlannedJob]) -> None:
        """Run the bases the sweep's jobs start from, each folder of them as a sweep of its own (a SLURM launcher
        finds its submissions again by the folder, should it be interrupted)."""
        folders = {job.job_dir.parent: None for job in bases}
        log.info(f"{len(bases)} bases to train first: {', '.join(job.label for job in bases)}")
        for folder in folders:
            self.sweep_dir = folder
            phase = [job for job in bases if job.job_dir.parent == folder]
            progress = Progress(phase, folder)
            self.run_phase(phase, progress)
            progress.summarise(collect=False)

    def run_phase(self, jobs: list[PlannedJob], progress: Progress) -> None:
        """Skip the completed jobs, adopt the ones an earlier launcher still runs, run the rest."""
        for job in jobs:
            if job.already_completed:
                job.runner = None
                progress.finished(skipped(job), running=0)
                if job.same_run and not is_completed(job.previous):
                    log.info(f"  skipped {job.label}: {same_run_message(job.same_run)}")
        try:  # a Ctrl-C may come at any point from here: the message asks what runs now
            self.adopt(jobs)
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
            cost = self.costed(todo) if todo else None
            if cost and cost.summary:
                log.info(cost.summary)
                progress.estimates = cost.seconds()
            if todo or adopted:
                self.run(todo, adopted, progress)
        except KeyboardInterrupt as interrupt:
            answer_stops(lambda name: log.warning(
                f"Already stopping ({name} ignored): within 30 s the launcher says what it stopped and how to resume"))
            raise SweepInterrupted(self.interrupted(f"the launcher got {signal_name(interrupt)}")) from None

    def task(self, job: PlannedJob) -> Any:
        """The callable a submitit job runs for `job` (imported here: Hydra's plugin scan stays free of submitit)."""
        from ._task import JobTask

        return JobTask(self.task_function, self.hydra_context, job.config, self.singleton_state, job.previous)
