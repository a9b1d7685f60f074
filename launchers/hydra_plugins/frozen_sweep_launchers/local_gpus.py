"""`hydra/launcher=local_gpus`: a sweep on this machine, at most `jobs_per_gpu` jobs per GPU at a time (small models
leave most of a GPU idle: several share it), each pinned to its GPU with CUDA_VISIBLE_DEVICES, the rest queued;
without a GPU, `max_parallel` jobs that share the CPU cores. Each job gets the cores // jobs at a time as its threads,
fixed for its life (frozen_sweep.system.cpu), so its numbers do not depend on what else runs.

Jobs are submitit.LocalExecutor jobs: `visible_gpus` is set before each submit, which AutoExecutor (and so Hydra's
submitit_local) does not allow.
"""

import contextlib
import logging
import os
import signal
import socket
import time
from collections import deque
from pathlib import Path
from typing import Iterator, Optional, Sequence

from omegaconf import OmegaConf

from frozen_sweep.run.lock import live_runner
from frozen_sweep.run.record import JOBS_AT_A_TIME_VARIABLE

from ._base import SweepLauncher
from ._gpus import check_usable, visible_gpus
from ._held import taken
from ._kill_point import kill_point
from ._outcome import last_attempt, settle, settle_adopted
from ._plan import PlannedJob, check_devices
from ._progress import Progress
from ._status import StatusBoard, check_status_every
from ._stop import stop_jobs
from ._submission import JOB_DIR_VARIABLE, LAUNCHER_VARIABLE, launcher_mark, local_processes, ours

log = logging.getLogger(__name__)

KILLED = "the job's process died without a result (killed: kill -9, out of memory, …)"
NO_TIME_LIMIT_MIN = 60 * 24 * 365  # local jobs have none, but submitit's LocalExecutor needs one (2 min by default)
# the slot of a job that another live launcher runs: waited for without taking one of this launcher's slots, which
# start its other jobs meanwhile (waiting is not running)
ELSEWHERE = "elsewhere"


class LocalGpusLauncher(SweepLauncher):
    def configure(
        self,
        *,
        submitit_folder: str,
        gpus: Optional[Sequence[int]],
        max_parallel: int,
        poll_interval_s: float,
        jobs_per_gpu: int = 1,
        gpus_per_job: int = 1,
        status_every_s: float = 60,
    ):
        for key, value in (("max_parallel", max_parallel), ("jobs_per_gpu", jobs_per_gpu), ("gpus_per_job", gpus_per_job)):
            if value < 1:
                raise ValueError(f"hydra.launcher.{key}={value}: must be >= 1")
        if jobs_per_gpu > 1 and gpus_per_job > 1:
            raise ValueError(
                f"hydra.launcher.jobs_per_gpu={jobs_per_gpu} with gpus_per_job={gpus_per_job}: a GPU is either shared by "
                "jobs or one of a job's several; allowed: one of them > 1"
            )
        self.submitit_folder = submitit_folder
        self.gpus = visible_gpus(OmegaConf.to_container(gpus) if OmegaConf.is_config(gpus) else gpus)
        check_usable(self.gpus, visible_gpus(None) if gpus is not None else self.gpus, max_parallel, jobs_per_gpu)
        if self.gpus and gpus_per_job > len(self.gpus):
            raise ValueError(f"hydra.launcher.gpus_per_job={gpus_per_job}: only {len(self.gpus)} GPUs {self.gpus} to use")
        self.jobs_per_gpu, self.gpus_per_job = jobs_per_gpu, gpus_per_job
        # jobs_per_gpu slots per GPU, GPUs in turn (a sweep spreads over them first), or disjoint sets of gpus_per_job
        # GPUs (a slot: the GPU ids a job sees); or max_parallel CPU slots (None)
        sets = [tuple(self.gpus[i : i + gpus_per_job]) for i in range(0, len(self.gpus) - gpus_per_job + 1, gpus_per_job)]
        gpu_slots = [gpu_set for _ in range(jobs_per_gpu) for gpu_set in sets]
        self.slots: list[Optional[tuple[int, ...]]] = gpu_slots or [None] * max_parallel
        self.poll_interval_s = poll_interval_s
        check_status_every(status_every_s)
        self.status_every_s = status_every_s

    def threads_per_job(self) -> int:
        """The cores // jobs at a time, fixed for each job's life, on GPUs and on the CPU alike: a job's numbers then
        do not depend on what else runs (frozen_sweep.system.cpu). A sweep's tail runs on its share too (one thread of
        two cores on the demo's two jobs at a time); trainer.follow_free_cores=true lets it take the free cores."""
        return max(1, len(os.sched_getaffinity(0)) // len(self.slots))

    def jobs_at_a_time(self) -> int:
        return len(self.slots)

    def check(self, jobs: list[PlannedJob]) -> None:
        if self.gpus:  # on the CPU a job's ranks are processes, as many as it asks for
            check_devices(jobs, self.gpus_per_job, "hydra.launcher.gpus_per_job")
        else:
            warn_oversubscribed(jobs, len(self.slots))

    def adopt(self, jobs: list[PlannedJob], dry_run: bool = False) -> None:
        """Also the jobs whose processes an earlier launcher started and that do not hold their lock yet."""
        processes = local_processes()
        for job in jobs:
            pids = processes.get(str(job.job_dir))
            if pids and not job.already_completed and not job.runner:
                job.runner = {"pid": " ".join(map(str, pids)), "host": socket.gethostname(), "state": "starting"}

    def run(self, jobs: list[PlannedJob], adopted: list[PlannedJob], progress: Progress) -> None:
        import submitit

        threads = str(self.threads_per_job())
        where = f"GPUs {self.gpus}, {self.jobs_per_gpu} job(s) each" if self.gpus else "CPU"
        where += f", {len(self.slots)} jobs at a time"
        own = sorted({o.split("=", 1)[1] for job in jobs for o in job.passed if o.startswith("trainer.threads=")})
        told = f"{', '.join(own)} (trainer.threads; the cores' share: {threads})" if own else threads
        log.info(f"local_gpus: {where}; threads per job: {told}")
        # submitit's controller of each local job makes the folder as named, `%j` unexpanded, and leaves it empty
        unexpanded = Path(self.submitit_folder) if "%j" in self.submitit_folder else None
        made_here = unexpanded is not None and not unexpanded.exists()
        executor = submitit.LocalExecutor(folder=self.submitit_folder, max_num_timeout=0)
        free = list(self.slots)
        queue = deque(jobs)
        # (slot, planned job, submitit job; None for an adopted job, whose slot is taken until its runner lets go:
        # ELSEWHERE when another live launcher runs it)
        mine = local_processes(launched_by=ours)
        self.running = [(take_slot(free, job) if str(job.job_dir) in mine else ELSEWHERE, job, None) for job in adopted]
        self.jobs, self.ended = [*adopted, *jobs], []  # what a stop must stop, and what ended before it
        self.outlived: set[int] = set()  # this launcher's jobs whose own process outlived their wrapper (by num)
        self.board = StatusBoard(progress, self.status_every_s, len(self.slots))
        try:
            self._run_all(executor, threads, queue, free, progress)
        finally:
            self.board.close()
        if made_here:
            with contextlib.suppress(OSError):  # not empty: not submitit's stray folder after all
                unexpanded.rmdir()

    def _run_all(self, executor, threads: str, queue: deque, free: list, progress: Progress) -> None:
        """Start queued jobs as slots free up until every job has ended; the status board shows them meanwhile."""
        running = self.running
        while queue or running:
            while queue and free:
                job = queue.popleft()
                if self._handed_over(job, progress):
                    continue
                kill_point("before_submit")  # after the check: two launchers here at once both start the job
                slot = free.pop(0)
                executor.update_parameters(
                    timeout_min=NO_TIME_LIMIT_MIN,
                    gpus_per_node=0 if slot is None else len(slot),
                    visible_gpus=() if slot is None else list(slot),
                )
                # OMP_NUM_THREADS: read by the job at start; MKL follows it (frozen_sweep.system.cpu). The job directory:
                # marks every process of the job from its start, so that a next launcher finds it (_submission.py);
                # the record's jobs_at_a_time: the jobs running as it starts, itself and those starting with it
                together = sum(entry[0] != ELSEWHERE for entry in running) + 1 + min(len(queue), len(free))
                variables = {JOB_DIR_VARIABLE: str(job.job_dir), LAUNCHER_VARIABLE: launcher_mark(),
                             JOBS_AT_A_TIME_VARIABLE: str(together)}  # fmt: skip
                with environment(OMP_NUM_THREADS=threads, **variables), sigint_ignored():
                    running.append((slot, job, executor.submit(self.task(job))))
                kill_point("after_submit")
            time.sleep(self.poll_interval_s)
            processes = local_processes() if any(entry[2] is None for entry in running) else {}
            for entry in [entry for entry in running if _ended(*entry[1:], processes)]:
                running.remove(entry)
                slot, job, submitit_job = entry
                if submitit_job and (runner := outlived_wrapper(job, submitit_job)):
                    job.runner = runner  # waited for as an adopted job: settled once it lets go
                    self.outlived.add(job.num)
                    running.append((slot, job, None))
                    continue
                if submitit_job:
                    outcome = settle(job, submitit_job, died=KILLED)
                else:
                    outcome = settle_adopted(job, by_another=job.num not in self.outlived)
                if slot != ELSEWHERE:
                    free.append(slot)
                if outcome.status == "held":  # another launcher's run took the directory first: waited for
                    running.append((ELSEWHERE, job, None))
                    continue
                self.ended.append(job)
                progress.finished(outcome, running=len(running))
            self.board.show([job for _, job, _ in running], len(queue))

    def _handed_over(self, job: PlannedJob, progress: Progress) -> bool:
        """Whether another launcher has `job` (_held.py): reported if it has completed it, else waited for as an
        adopted job, without a slot of this launcher's."""
        handed = taken(job.job_dir, job.previous, local_processes())
        if handed is None:
            return False
        if handed.runner is None:
            self.ended.append(job)
            progress.finished(settle_adopted(job, by_another=True), running=len(self.running))
        else:
            job.runner = handed.runner
            self.running.append((ELSEWHERE, job, None))
        return True

    def interrupted(self, why: str) -> str:
        """Stop every job this launcher started or adopted from an ended launcher (each records `failed`,
        interrupted), then say so; jobs that another live launcher runs go on."""
        jobs = getattr(self, "jobs", [])
        if hasattr(self, "board"):
            self.board.close()
        stopped = stop_jobs(jobs, why)
        live = local_processes()
        others = [job for job in jobs if str(job.job_dir) in live or live_runner(job.job_dir)]
        queued = len(jobs) - len(stopped) - len(others) - len(getattr(self, "ended", []))
        names = f": {', '.join(job.label for job in stopped)}" if stopped else ""
        left = (f"; {len(others)} run by another launcher go on ({', '.join(job.label for job in others)})"
                if others else ". Nothing of the sweep runs now")  # fmt: skip
        return (
            f"Stopped ({why}): {len(stopped)} running jobs stopped{names}, each recorded failed (interrupted) beside "
            f"its last checkpoint; {max(queued, 0)} queued jobs not started{left}. Run the same command again to "
            "resume them from their checkpoints and run the rest; completed jobs are skipped."
        )


def _ended(job: PlannedJob, submitit_job, processes: dict[str, list[int]]) -> bool:
    """A job this launcher started: when its submitit job is done; an adopted one: when nobody holds its lock and
    no process started for it is left (`processes`: local_processes())."""
    if submitit_job:
        return submitit_job.done()
    return live_runner(job.job_dir) is None and str(job.job_dir) not in processes


def outlived_wrapper(job: PlannedJob, submitit_job) -> Optional[dict]:
    """The job's own process (its runner record) when it still holds the directory after its submitit wrapper
    ended: the wrapper was killed alone, or both were and the kernel has not yet let go of the job's lock. Settled
    then, a job that goes on to complete would be reported failed, and a killed one left `running`."""
    attempt = last_attempt(job)
    if attempt.get("job_id") != str(submitit_job.job_id):
        return None
    runner = live_runner(job.job_dir)
    return runner if runner and runner.get("pid") == attempt.get("pid") else None


def take_slot(free: list, job: PlannedJob) -> Optional[tuple[int, ...]]:
    """The slot an adopted job uses: its GPUs (from its attempts record) when they are free, else any free slot."""
    gpus = last_attempt(job).get("cuda_visible_devices")
    slot = next((s for s in free if s is not None and ",".join(map(str, s)) == gpus), free[0] if free else None)
    if slot in free:
        free.remove(slot)
    return slot


def warn_oversubscribed(jobs: list[PlannedJob], at_a_time: int) -> None:
    """Say so when the jobs' ranks, at `at_a_time` jobs at a time, outnumber this machine's cores: each rank is a
    process training on its own threads, and ranks sharing a core each train slower than the whole job would."""
    cores = len(os.sched_getaffinity(0))
    ranks = max((job.devices for job in jobs), default=1)
    if at_a_time * ranks > cores:
        log.warning(
            f"{at_a_time} jobs at a time (hydra.launcher.max_parallel) × {ranks} ranks each (trainer.devices) = "
            f"{at_a_time * ranks} training processes on {cores} CPU cores: they share the cores, and each runs "
            f"slower than fewer would; {max(1, cores // ranks)} jobs at a time of {ranks} ranks, or trainer.devices="
            f"{max(1, cores // at_a_time)}, fit"
        )


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a job's controller starts, which inherits it so: a Ctrl-C on the terminal reaches the
    whole foreground group, and submitit's controller would die of it with a traceback; the launcher stops the job
    itself (_stop.py), and the job's own process handles SIGINT again (frozen_sweep.system.signals)."""
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)


@contextlib.contextmanager
def environment(**variables: str) -> Iterator[None]:
    """Set environment variables for the processes started inside the block (submitit copies os.environ)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
