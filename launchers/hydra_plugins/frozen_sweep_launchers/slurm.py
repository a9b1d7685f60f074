"""`hydra/launcher=slurm`: a sweep as one SLURM job array, submitted through submitit's SlurmExecutor.

Each job runs a Checkpointable task (_task.py): on preemption or time-out submitit requeues it (at most
`max_num_timeout` time-outs) and the job resumes from its own checkpoint. The launcher asks sacct for the jobs'
states, so a job that dies without a result (scancel, time-out, out of memory, node loss) is recorded as failed as
soon as its processes are gone, while the others keep running.
"""

import logging
import math
import subprocess
import time
from typing import Any, Optional, Sequence

from omegaconf import OmegaConf

from frozen_sweep.job.estimate import duration
from frozen_sweep.run.directory import SUBMISSION_FILES

from ._base import SweepLauncher
from ._cost import SweepCost
from ._held import released
from ._kill_point import kill_point
from ._outcome import settle, settle_adopted
from ._plan import PlannedJob, SweepConfigError, check_devices
from ._progress import Progress
from ._status import StatusBoard, check_status_every
from ._submission import describe_tasks, new_comment, prune_submissions, queued_tasks, read_submissions
from ._submission import record_submissions, tasks_of

log = logging.getLogger(__name__)

TIMEOUT_MARGIN = 1.5  # timeout_min=null: this × the longest job's estimate (docs/performance.md: its errors)
RESULT_CHECK_S = 0.5  # result files are cheap to look for; sacct is asked every poll_interval_s
# how long a job without a result must stay ended (sacct) and unlisted (squeue) before it counts as dead: a preempted
# job exits and is requeued, PENDING again, seconds later on a loaded controller (more than a second seen here)
GONE_CONFIRM_S = 10.0
STATE_MEANINGS = {
    "CANCELLED": "scancel, or preempted without requeue",
    "TIMEOUT": "time limit reached with no requeue left",
    "OUT_OF_MEMORY": "out of memory",
    "NODE_FAIL": "node failure",
    "BOOT_FAIL": "node failed to boot",
}


class SlurmLauncher(SweepLauncher):
    def configure(
        self,
        *,
        submitit_folder: str,
        partition: Optional[str],
        gpus_per_node: Optional[int],
        cpus_per_task: int,
        nodes: int = 1,
        tasks_per_node: int = 1,
        gpus_per_task: Optional[int] = None,
        mem_gb: Optional[float],
        timeout_min: Optional[int],
        max_num_timeout: int,
        signal_delay_s: int,
        array_parallelism: int,
        job_name: str,
        setup: Sequence[str],
        additional_parameters: dict[str, Any],
        poll_interval_s: float,
        status_every_s: float = 60,
        cancel_on_exit: bool = False,
    ):
        if gpus_per_node is not None and gpus_per_node > 1:  # nothing would use the others: refuse, not waste them
            raise ValueError(
                f"hydra.launcher.gpus_per_node={gpus_per_node}: a job's rank trains on one GPU, so {gpus_per_node - 1} "
                "would sit idle; allowed: null (no GPU) or 1; a job on N GPUs is N ranks: trainer.devices=N with "
                "hydra.launcher.tasks_per_node=N and gpus_per_task=1"
            )
        self.submitit_folder = submitit_folder
        self.cpus_per_task = cpus_per_task
        self.max_num_timeout = max_num_timeout
        self.timeout_min, self.signal_delay_s = timeout_min, signal_delay_s
        self.poll_interval_s = poll_interval_s
        self.cancel_on_exit = cancel_on_exit
        check_status_every(status_every_s)
        self.status_every_s, self.array_parallelism = status_every_s, array_parallelism
        self.ranks = nodes * tasks_per_node  # each job's trainer.devices
        threads = f"export OMP_NUM_THREADS={cpus_per_task}"  # MKL follows it (frozen_sweep.system.cpu)
        sbatch = {
            "job_name": job_name,
            "partition": partition,
            "gpus_per_node": gpus_per_node,
            "cpus_per_task": cpus_per_task,
            "nodes": nodes if nodes > 1 else None,
            "ntasks_per_node": tasks_per_node if tasks_per_node > 1 else None,
            "gpus_per_task": gpus_per_task,
            # a rank that dies ends the job's other tasks at once: they would wait for it until a collective times out
            "srun_args": ["--kill-on-bad-exit=1"] if self.ranks > 1 else None,
            "mem": None if mem_gb is None else f"{int(mem_gb * 1024)}M",
            "time": timeout_min,  # null: set from the estimates (check_cost)
            "signal_delay_s": signal_delay_s,
            "array_parallelism": array_parallelism,
            "setup": [threads, *_plain(setup)],
            "additional_parameters": _plain(additional_parameters),
        }
        self.sbatch = {key: value for key, value in sbatch.items() if value is not None}

    def threads_per_job(self) -> int:
        return self.cpus_per_task

    def jobs_at_a_time(self) -> int:
        return self.array_parallelism

    def unprobed(self) -> Optional[str]:
        """The probe runs where the launcher runs: GPU jobs are not probed on a machine without a GPU."""
        import torch  # the estimate imports it anyway

        if (self.sbatch.get("gpus_per_node") or self.sbatch.get("gpus_per_task")) and not torch.cuda.is_available():
            return "no estimate: the job trains on a GPU and the launcher's machine has none to probe its step on"
        return None

    def check_cost(self, cost: Optional[SweepCost]) -> None:
        """Set the time limit from the estimates (timeout_min=null), or name the jobs whose estimate exceeds it."""
        if self.timeout_min is None:
            longest = cost and cost.longest_s()
            if longest is None:
                raise SweepConfigError(
                    "hydra.launcher.timeout_min=null takes each job's time limit from the estimates, but "
                    f"{'estimate=false' if cost is None else 'no job has one'}; set hydra.launcher.timeout_min "
                    "(minutes) or estimate=true. No job was started."
                )
            self.sbatch["time"] = math.ceil((TIMEOUT_MARGIN * longest + self.signal_delay_s) / 60)
            how = f"{TIMEOUT_MARGIN} × the longest estimate + signal_delay_s"
            log.info(f"slurm: time limit {self.sbatch['time']} min per job ({how})")
            return
        over = cost.over(self.timeout_min * 60) if cost else []
        if over:
            named = ", ".join(f"{job.label or job.job_dir.name} ({duration(e.total_s)})" for job, e in over)
            log.warning(
                f"slurm: {len(over)} job{'s' * (len(over) != 1)} estimated longer than hydra.launcher.timeout_min="
                f"{self.timeout_min}: {named}; each is requeued at its limit and resumes (at most max_num_timeout="
                f"{self.max_num_timeout} times): raise timeout_min, or set it null to take it from the estimates"
            )

    def check(self, jobs: list[PlannedJob]) -> None:
        check_devices(jobs, self.ranks, "hydra.launcher.nodes × hydra.launcher.tasks_per_node (one rank per task)")

    def adopt(self, jobs: list[PlannedJob], dry_run: bool = False) -> None:
        """Adopt every job SLURM still lists for its directory (found through its submission records, however early
        the launcher that submitted it was killed); cancel listed jobs of this sweep that no directory claims (a dry
        run only says it would). A job two live launchers submitted has both tasks claimed: neither is cancelled."""
        asked = time.time()
        tasks = queued_tasks(self.sweep_dir)
        self.listed = (tasks, asked)  # what a submission's records are pruned by (_submission.prune_submissions)
        claimed = set()
        for job in jobs:
            listed = tasks_of(read_submissions(job.job_dir), tasks)
            claimed.update(listed)
            if listed and not job.already_completed and not job.runner:
                job.runner = listed[0].runner()
        for directory in {path.parent for path in self.sweep_dir.rglob(SUBMISSION_FILES)}:  # outside this batch too
            claimed.update(tasks_of(read_submissions(directory), tasks))
        orphans = [task.job_id for task in tasks if task not in claimed]
        if orphans:
            if not dry_run:
                subprocess.run(["scancel", *orphans], capture_output=True, text=True, timeout=120)
            log.warning(
                f"slurm: {'would cancel' if dry_run else 'cancelled'} {' '.join(orphans)}: queued by an earlier launch "
                "of this sweep for directories that hold no record of it (removed since)"
            )

    def run(self, jobs: list[PlannedJob], adopted: list[PlannedJob], progress: Progress) -> None:
        import submitit

        executor = submitit.SlurmExecutor(folder=self.submitit_folder, max_num_timeout=self.max_num_timeout)
        executor.update_parameters(**self.sbatch)
        submitted = []
        if jobs:
            comment = new_comment(self.sweep_dir)  # leads squeue back to the records, whenever the launcher dies
            executor.update_parameters(comment=comment)
            kill_point("before_records")
            for job in jobs:
                prune_submissions(job.job_dir, *self.listed)
            record_submissions(jobs, "submitting", comment=comment)
            kill_point("before_sbatch")
            with executor.batch():
                submitted = [executor.submit(self.task(job)) for job in jobs]
            kill_point("after_sbatch")
            record_submissions(jobs, "submitted", comment=comment, slurm_job_id=lambda i: submitted[i].job_id)
            kill_point("after_records")
            options = ", ".join(f"{key}={value}" for key, value in self.sbatch.items() if value not in ([], {}))
            log.info(f"slurm: submitted {len(jobs)} jobs as job {submitted[0].job_id.split('_')[0]} ({options})")
        held = [job for job in adopted if not job.runner.get("slurm_job_id")]  # run outside SLURM: its lock tells
        reattached = [submitit.SlurmJob(self.submitit_folder, job.runner["slurm_job_id"]) for job in adopted
                      if job not in held]  # fmt: skip
        waiting = list(zip(jobs, submitted)) + list(zip([job for job in adopted if job not in held], reattached))
        board = StatusBoard(progress, self.status_every_s, self.array_parallelism)
        try:
            if waiting:
                self._wait(waiting, waiting[0][1].watcher, progress, board, held)
            for job in released(held, self.poll_interval_s):  # another launcher's runs: their outcomes
                progress.finished(settle_adopted(job, by_another=True), running=0)
        finally:
            board.close()

    def _wait(self, waiting: list, watcher: Any, progress: Progress, board: StatusBoard, held: list) -> None:
        """Settle each job as it ends (its result, or SLURM's word that it died); the status board shows the rest.
        `watcher`: shared by all jobs, one sacct call per poll. A job whose task found another launcher's run in
        its directory goes to `held`, waited for after the others."""
        asked = float("-inf")
        gone_since: dict[str, float] = {}  # job id → when sacct and squeue first both said it had ended
        while waiting:
            time.sleep(RESULT_CHECK_S)
            returned = [entry for entry in waiting if entry[1].paths.result_pickle.exists()]
            if returned or time.monotonic() - asked >= self.poll_interval_s:
                watcher.update()  # fresh states for the progress line, and news of jobs that died without a result
                asked = time.monotonic()
            died = [
                (job, sjob)
                for job, sjob in waiting
                if (job, sjob) not in returned and _gone(sjob, gone_since, max(self.poll_interval_s, GONE_CONFIRM_S))
            ]
            if died:
                watcher.update()  # the state SLURM gave the job once it ended, not one read while it still ran
            for job, sjob in returned + died:
                waiting.remove((job, sjob))
                running = sum(watcher.get_state(other.job_id, mode="cache") == "RUNNING" for _, other in waiting)
                state = watcher.get_state(sjob.job_id, mode="cache")
                adopted = bool(job.runner)  # submitted by another launcher: its outcome is reported as the other's
                outcome = settle(job, sjob, died=_died(state))
                outcome.by_another = outcome.by_another or adopted
                if outcome.status == "held":
                    held.append(job)
                else:
                    progress.finished(outcome, running=running)
            live = [job for job, sjob in waiting if watcher.get_state(sjob.job_id, mode="cache") == "RUNNING"]
            board.show(live, len(waiting) - len(live))

    def interrupted(self, why: str) -> str:
        """What SLURM lists for this sweep now (asked afresh: the launcher may have been interrupted anywhere). The
        array belongs to the cluster and stays, unless hydra.launcher.cancel_on_exit=true: then it is cancelled."""
        tasks = queued_tasks(self.sweep_dir)
        arrays = sorted({t.array_id for t in tasks})
        if tasks and self.cancel_on_exit:
            for command in stop_command(arrays).split("; "):
                subprocess.run(command.split(), capture_output=True, text=True, timeout=120)
            return (
                f"Stopped ({why}; hydra.launcher.cancel_on_exit=true): cancelled {describe_tasks(tasks)}; each running "
                "job records failed (interrupted) beside its last checkpoint. Run the same command again to resume."
            )
        if not tasks:
            return (
                "Interrupted: SLURM lists no job of this sweep, nothing is queued or running. Run the same command "
                "again to start (completed jobs are skipped)."
            )
        return (
            f"Interrupted ({why}): {describe_tasks(tasks)} stay on the cluster; their results land in their "
            "directories. Run the same command again to reattach (completed jobs are skipped, queued and running ones "
            f"adopted: nothing is submitted twice), or stop them: {stop_command(arrays)} "
            "(or hydra.launcher.cancel_on_exit=true: a stopped launcher cancels its array)"
        )


def stop_command(ids: list[str]) -> str:
    """Cancel the pending jobs, and interrupt the running ones at once (SIGINT: each records `failed` and its attempt
    `interrupted`; a plain scancel's SIGTERM does the same after the job's 2 s wait for a preemption's USR2)."""
    return f"scancel --state=PENDING {' '.join(ids)}; scancel --signal=INT {' '.join(ids)}"


def _gone(sjob: Any, gone_since: dict[str, float], confirm_after_s: float) -> bool:
    """Whether a job without a result has ended for good: sacct says it ended and squeue no longer lists it, and
    both still say so `confirm_after_s` (at least a poll interval: a fresh sacct) later. A preempted job exits and is
    requeued (PENDING again) a moment later; one look in between, or two a second apart on a loaded machine, took it
    for dead."""
    if not sjob.watcher.is_done(sjob.job_id, mode="cache") or _listed(sjob.job_id):
        gone_since.pop(sjob.job_id, None)
        return False
    first_seen = gone_since.setdefault(sjob.job_id, time.monotonic())
    return time.monotonic() - first_seen > confirm_after_s


def _listed(job_id: str) -> bool:
    """Whether squeue still lists the job: a cancelled job stays COMPLETING until its processes are gone, and
    until then they may still write its result record. Only squeue's own answer that it no longer knows the id
    means no: when squeue fails (the controller busy or unreachable), the job counts as listed, so that a
    launcher never records a running job as dead nor submits a live one twice."""
    squeue = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    if squeue.returncode != 0:
        return "Invalid job id" not in squeue.stderr
    return bool(squeue.stdout.strip())


def _died(state: str) -> Optional[str]:
    """Why a job that SLURM says has ended may have left no result; None for one that ended on its own."""
    if state.startswith("COMPLETED"):
        return None
    meaning = next((words for prefix, words in STATE_MEANINGS.items() if state.startswith(prefix)), None)
    return f"SLURM ended the job without a result: {state}" + (f" ({meaning})" if meaning else "")


def _plain(value: Any) -> Any:
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
