"""Stopping a local sweep's jobs when its launcher is told to stop (SIGTERM, SIGINT, SIGHUP), as SLURM's scancel of an
array or Ray's `ray stop` stop what they started: every process this launcher started for the sweep's jobs, or an
earlier launcher that has ended, gets SIGTERM, which a job handles by recording itself `failed` (interrupted) beside
its last checkpoint; whatever still runs after the grace is killed and its record marked. Nothing it started
outlives the launcher (a second signal meanwhile is only answered: _base.py); the jobs of another launcher that
still runs beside it (the same sweep started twice) are that launcher's, and go on."""

import logging
import os
import signal
import time
from pathlib import Path

from frozen_sweep.run.directory import mark_failed
from frozen_sweep.run.lock import live_runner

from ._plan import PlannedJob
from ._submission import local_processes, ours

log = logging.getLogger(__name__)

GRACE_S = 20.0  # for the jobs to record themselves and exit; then SIGKILL (the whole stop stays within 30 s)
CONTROLLER = b"submitit.local._local"  # submitit's controller of a local job: it forwards SIGTERM to its task


def stop_jobs(jobs: list[PlannedJob], why: str, grace_s: float = GRACE_S) -> list[PlannedJob]:
    """Stop every process started for `jobs` by this launcher or by one that has ended (not by one that runs beside
    it); returns the jobs that ran."""
    by_dir = {str(job.job_dir): job for job in jobs}
    live = _processes(by_dir)
    stopped = [by_dir[directory] for directory in live]
    if not stopped:
        return []
    log.info(f"Stopping {len(stopped)} jobs ({why}): {', '.join(job.label for job in stopped)}")
    signalled: set[int] = set()
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        for directory, pids in live.items():
            _interrupt(directory, pids, signalled)
        time.sleep(0.2)
        live = _processes(by_dir)
    for pids in live.values():  # past the grace: killed, recorded below
        for pid in pids:
            _send(pid, signal.SIGKILL)
    while live and time.monotonic() < deadline + 5:
        time.sleep(0.1)
        live = _processes(by_dir)
    for job in stopped:  # the job's own record when it wrote one; else, killed before it could, it is marked here
        mark_failed(job.job_dir, f"KeyboardInterrupt: {why}; the sweep's launcher stopped the job", job.overrides,
                    stale=True)  # fmt: skip
    return stopped


def _interrupt(directory: str, pids: list[int], signalled: set[int]) -> None:
    """SIGTERM, once, to the job's own process: the lock holder, or before it holds the lock every process of the
    job but submitit's controller (which would forward a second SIGTERM to the same task)."""
    runner = live_runner(Path(directory))
    targets = [runner["pid"]] if runner and runner.get("pid") in pids else [p for p in pids if not _is_controller(p)]
    for pid in targets:
        if pid not in signalled:
            signalled.add(pid)
            _send(pid, signal.SIGTERM)


def _processes(by_dir: dict[str, PlannedJob]) -> dict[str, list[int]]:
    """The processes of `by_dir`'s jobs that are this launcher's to stop."""
    started = local_processes(launched_by=ours)
    return {directory: pids for directory, pids in started.items() if directory in by_dir}


def _is_controller(pid: int) -> bool:
    try:
        return CONTROLLER in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _send(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
