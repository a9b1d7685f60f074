"""One runner per job directory: a job holds an exclusive lock (flock) on `job.lock` in its directory while it runs,
and writes who it is (host, pid, SLURM job id) into it. The kernel drops the lock when the process ends, however it
ends, so a held lock means a live runner, and a `running` record without one means a dead run. No torch here."""

import contextlib
import fcntl
import json
import os
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional

from frozen_sweep.run.directory import LOCK_FILE


class JobAlreadyRunning(RuntimeError):
    """Another process runs this job directory now: `runner` says who (its lock record)."""

    def __init__(self, message: str, runner: dict):
        super().__init__(message)
        self.runner = runner


def describe_runner(runner: dict) -> str:
    """What is known of a runner: "pid 12 on node1, SLURM job 7_3, since …" once it runs; a job still queued (or
    starting) has no pid yet: "pending, SLURM job 7_3"."""
    host = f" on {runner['host']}" if runner.get("host") else ""
    if runner.get("state") and runner.get("state") != "RUNNING" or runner.get("pid") is None:
        pids = f" (pid {runner['pid']})" if runner.get("pid") is not None else ""
        parts = [f"{str(runner.get('state') or 'unknown state').lower()}{host}{pids}"]
    else:
        parts = [f"pid {runner['pid']}{host}"]
    if runner.get("slurm_job_id"):
        parts.append(f"SLURM job {runner['slurm_job_id']}")
    if runner.get("started"):
        parts.append(f"since {runner['started']}")
    return ", ".join(parts)


def this_runner() -> dict:
    slurm = os.environ.get("SLURM_JOB_ID")
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        slurm = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID')}"
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "slurm_job_id": slurm,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


_held: dict[str, list] = {}  # lock path → [file descriptor, depth]: the launcher's task and the job share one lock


@contextlib.contextmanager
def exclusive_run(run_dir: Path) -> Iterator[None]:
    """Hold the directory's lock while the block runs; JobAlreadyRunning, naming the runner, if another holds it."""
    path = str(Path(run_dir).absolute() / LOCK_FILE)
    if path in _held:
        _held[path][1] += 1
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            runner = _read_runner(Path(path))
            raise JobAlreadyRunning(
                f"{run_dir} is already being run by {describe_runner(runner)}: one runner per job directory. "
                f"Wait for it, or stop it ({_how_to_stop(runner)}) and run again to resume from its checkpoint",
                runner,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(this_runner()).encode(), 0)
        _held[path] = [fd, 1]
    try:
        yield
    finally:
        _held[path][1] -= 1
        if not _held[path][1]:
            os.close(_held.pop(path)[0])  # closing the descriptor drops the lock


def live_runner(run_dir: Path) -> Optional[dict]:
    """Who runs the job in `run_dir` now (host, pid, SLURM job id, started), or None when nobody holds its lock."""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_runner(path)
    finally:
        os.close(fd)
    return None


def _read_runner(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # the runner has the lock but has not written its name yet
        return {}


def _how_to_stop(runner: dict) -> str:
    """SIGINT, which a job handles by recording itself failed (interrupted); SIGTERM does too (system/signals.py)."""
    if runner.get("slurm_job_id"):
        return f"scancel --signal=INT {runner['slurm_job_id']}"
    return f"kill -INT {runner.get('pid')}"


def remove_if_unused(directory: Path, expected: set[str], existed: Optional[Path] = None) -> None:
    """Remove `directory` if it holds nothing but the `expected` names (what Hydra writes before a job starts), and
    the empty folders above it up to the working directory; never `existed` or a folder above it (the deepest one
    that existed before the command made any: the tool removes only what it made)."""
    directory = Path(directory).absolute()
    if not directory.is_dir() or {p.name for p in directory.iterdir()} - expected:
        return
    if existed is not None and Path(existed).absolute() not in directory.parents:
        return
    shutil.rmtree(directory)
    cwd = Path.cwd().absolute()
    for parent in directory.parents:
        if cwd not in parent.parents or any(parent.iterdir()):
            break
        if existed is not None and Path(existed).absolute() not in parent.parents:
            break
        parent.rmdir()


def deepest_existing(directory: Path) -> Path:
    """`directory`, or its deepest ancestor that exists: what a command found before it made any folder."""
    directory = Path(directory).absolute()
    return next(p for p in (directory, *directory.parents) if p.exists())
