"""A job that another launcher has (the same sweep started twice, or another sweep naming the same base): it holds
the job's directory now, or completed it after this launcher planned the job. Such a job is waited for and reported
with the other launcher's outcome; it is never started a second time, and a completed directory gets no new attempt.

Both the launcher (before it starts a job) and the job's task (once it has started, under the directory's lock: two
launchers may start the same job at the same instant) ask; the task hands back a HandedOver instead of running."""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from frozen_sweep.run.directory import is_completed, read_record
from frozen_sweep.run.lock import live_runner


@dataclass(frozen=True)
class HandedOver:
    """What a job's task returns when it did not run the job: `runner` (the lock's holder record) held the
    directory, or, when None, another run had completed it since the plan."""

    runner: Optional[dict]


def completed_since_plan(job_dir: Path, planned: Optional[dict]) -> bool:
    """Whether the directory holds a completed record other than `planned` (the one it held at plan time): another
    launcher ran the job meanwhile. A forced rerun of a completed job starts from that same record: it runs."""
    record = read_record(job_dir)
    return is_completed(record) and record != planned


def taken(job_dir: Path, planned: Optional[dict], starting: dict[str, list[int]]) -> Optional[HandedOver]:
    """The job's HandedOver when another launcher holds its directory (or is starting processes for it: `starting`,
    _submission.local_processes()) or has completed it since the plan; None when it is this launcher's to run."""
    runner = live_runner(job_dir)
    if runner is None and str(job_dir) in starting:
        runner = {"pid": " ".join(map(str, starting[str(job_dir)])), "state": "starting"}
    if runner is not None:
        return HandedOver(runner)
    return HandedOver(None) if completed_since_plan(job_dir, planned) else None



def released(jobs: list, poll_s: float) -> Iterator:
    """Each planned job of `jobs` (held by another launcher) as its runner lets go of the directory: nobody holds
    its lock, and no process of a local launcher is starting for it."""
    from ._submission import local_processes  # not in the job's task, which imports this module too

    waiting = list(jobs)
    while waiting:
        starting = local_processes()
        for job in [job for job in waiting if live_runner(job.job_dir) is None and str(job.job_dir) not in starting]:
            waiting.remove(job)
            yield job
        if waiting:
            time.sleep(poll_s)
