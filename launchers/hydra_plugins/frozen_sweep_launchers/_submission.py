"""What a launcher submitted for each job directory, recorded *before* it submits, and what runs now.

A launcher can be killed at any instant, between any two of its steps. So a job directory's submission record says
what was about to be submitted before sbatch (or the local process start) is called, and the submission itself
carries a mark that leads back to it: on SLURM the array's `--comment` (`frozen_sweep:<sweep key>:<token>`, one token
per sbatch call; a job is task `array_index` of it), on this machine an environment variable naming the job's
directory, which every process of the job inherits. The next launcher asks squeue (or /proc) for these marks and
adopts what it finds, so no live job is ever submitted twice.

Each sbatch call writes a record file of its own (`submission.<token>.json`): two launchers that submit the same job
at once keep both records, so a third finds both submissions and cancels neither as unclaimed. A launcher removes
its record once it has seen its task end; `submission.json`, one record per directory, is what earlier versions
wrote, and is read as one more record.
"""

import hashlib
import json
import os
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from frozen_sweep.run.directory import SUBMISSION_FILES
from frozen_sweep.system.files import write_json_atomic

from ._plan import PlannedJob, SweepConfigError

COMMENT_PREFIX = "frozen_sweep"
JOB_DIR_VARIABLE = "FROZEN_SWEEP_JOB_DIR"  # set in the environment of a local job's processes: its directory
LAUNCHER_VARIABLE = "FROZEN_SWEEP_LAUNCHER"  # and which launcher started them (launcher_mark)
PENDING_STATES = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED")


def read_submissions(job_dir: Path) -> list[dict]:
    """The job directory's submission records, one per submission of it still on record (unreadable ones left out)."""
    records = []
    for path in sorted(Path(job_dir).glob(SUBMISSION_FILES)):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):  # removed meanwhile, or not a record
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def submission_file(job_dir: Path, comment: str) -> Path:
    """The record file of one sbatch call's submission of the job, named by the call's token."""
    return Path(job_dir) / f"submission.{comment.rsplit(':', 1)[-1]}.json"


def record_submissions(jobs: list[PlannedJob], state: str, comment: str, **fields) -> None:
    """Write each job's record of this submission (`comment`): `state` "submitting" before it, "submitted" after;
    `array_index` is the job's place in the submission, `slurm_job_id` a callable of it once SLURM gave the id."""
    launcher = {"host": socket.gethostname(), "pid": os.getpid()}
    slurm_id = fields.pop("slurm_job_id", None)
    for index, job in enumerate(jobs):
        job.job_dir.mkdir(parents=True, exist_ok=True)
        record = {"state": state, "comment": comment, **fields, "array_index": index, "launcher": launcher,
                  "at": time.time()}  # fmt: skip
        if slurm_id:
            record["slurm_job_id"] = slurm_id(index)
        write_json_atomic(submission_file(job.job_dir, comment), record)


def prune_submissions(job_dir: Path, listed: list["QueuedTask"], listed_at: float) -> None:
    """Remove the job's records of submissions that had ended when squeue gave `listed` (asked at `listed_at`): made
    before it, with a SLURM id it does not list. A job is submitted again only when none of its tasks is listed, so
    its records stay as few as its live submissions (an earlier version's `submission.json` is left as it is)."""
    ids = {task.job_id for task in listed}
    for path in Path(job_dir).glob("submission.*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("slurm_job_id") and record["slurm_job_id"] not in ids and record.get("at", 0) < listed_at:
            path.unlink(missing_ok=True)


# ---- SLURM: the array's comment leads back to the records -----------------------------------------------------------


def sweep_key(sweep_dir: Path) -> str:
    return hashlib.sha256(str(Path(sweep_dir).absolute()).encode()).hexdigest()[:12]


def new_comment(sweep_dir: Path) -> str:
    """A comment unique to one sbatch call of the sweep in `sweep_dir`."""
    return f"{COMMENT_PREFIX}:{sweep_key(sweep_dir)}:{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class QueuedTask:
    job_id: str  # "123_4" for task 4 of array 123, "123" for a job submitted alone
    array_id: str
    index: int  # the task's place in its submission (0 for a job submitted alone)
    comment: str
    state: str  # PENDING, RUNNING, COMPLETING, …
    node: str  # where it runs, "" while pending

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    def runner(self) -> dict:
        """The job as a runner record (frozen_sweep.run.directory.describe_runner) before it holds its directory's lock."""
        return {"slurm_job_id": self.job_id, "state": self.state, "host": self.node or None}


def queued_tasks(sweep_dir: Path) -> list[QueuedTask]:
    """Every job of this user's that squeue lists (pending, running, completing) with this sweep's comment, one per
    array task. SweepConfigError when squeue does not answer: without its answer no job can safely be submitted."""
    squeue = subprocess.run(
        ["squeue", "--me", "-h", "-r", "-o", "%i|%F|%K|%k|%T|%N"], capture_output=True, text=True, timeout=120
    )
    if squeue.returncode != 0:
        raise SweepConfigError(
            f"squeue failed ({squeue.stderr.strip()}): without it the launcher cannot tell which jobs of this sweep "
            "are already queued. No job was submitted; run again once the SLURM controller answers."
        )
    prefix = f"{COMMENT_PREFIX}:{sweep_key(sweep_dir)}:"
    tasks = []
    for line in squeue.stdout.splitlines():
        job_id, array_id, index, comment, state, node = (line.split("|") + [""] * 6)[:6]
        if comment.startswith(prefix):
            tasks.append(QueuedTask(job_id, array_id, int(index) if index.isdigit() else 0, comment, state, node))
    return tasks


def tasks_of(records: list[dict], tasks: list[QueuedTask]) -> list[QueuedTask]:
    """The listed tasks a job's submission records point to, running ones first: each by its SLURM id once
    recorded, else by comment and place (a launcher killed between sbatch and the records)."""
    found = [
        task
        for task in tasks
        for record in records
        if record.get("slurm_job_id") == task.job_id
        or (record.get("comment") == task.comment and record.get("array_index") == task.index)
    ]
    return sorted(dict.fromkeys(found), key=lambda task: task.pending)


def describe_tasks(tasks: list[QueuedTask]) -> str:
    """'SLURM job 123 (2 running, 16 pending)', one entry per array."""
    arrays: dict[str, list[QueuedTask]] = {}
    for task in tasks:
        arrays.setdefault(task.array_id, []).append(task)
    parts = []
    for array_id, members in sorted(arrays.items()):
        pending = sum(task.pending for task in members)
        parts.append(f"SLURM job {array_id} ({len(members) - pending} running, {pending} pending)")
    return ", ".join(parts)


# ---- this machine: the job's processes carry its directory in their environment ------------------------------------


def launcher_mark(pid: Optional[int] = None) -> str:
    """Who started a local job (LAUNCHER_VARIABLE): its launcher's pid and the time that process started, so that a
    pid the kernel hands to another process later is not taken for the launcher."""
    pid = pid or os.getpid()
    return f"{pid}:{_start_time(pid)}"


def launcher_alive(mark: str) -> bool:
    """Whether the launcher of `mark` still runs ("": a job started unmarked, by an earlier version, counts as not)."""
    pid, _, started = mark.partition(":")
    return pid.isdigit() and started != "" and _start_time(int(pid)) == started


def ours(mark: str) -> bool:
    """Whether a local job's processes (marked `mark`) are this launcher's to stop and to count in its slots: it
    started them, or the launcher that did has ended. Those of another launcher that still runs are that one's."""
    return mark == launcher_mark() or not launcher_alive(mark)


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks after boot, /proc/<pid>/stat's 22nd field); "" when it has ended."""
    try:  # the command may hold spaces and parentheses: the fields follow its closing one
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def local_processes(launched_by: Optional[Callable[[str], bool]] = None) -> dict[str, list[int]]:
    """Job directory → pids of the live processes (other than this one) started for it by a local_gpus launcher;
    only those whose launcher's mark (launcher_mark, "" when unmarked) `launched_by` accepts, when given."""
    marker, launcher = f"{JOB_DIR_VARIABLE}=".encode(), f"{LAUNCHER_VARIABLE}=".encode()
    found: dict[str, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):  # ended meanwhile, or not ours to read
            continue
        if "Z" in state.split()[1]:  # a zombie has ended: its parent has not reaped it yet
            continue
        variables = environ.split(b"\0")
        directory = next((v[len(marker):] for v in variables if v.startswith(marker)), None)
        if directory is None:
            continue
        if launched_by is not None:
            mark = next((v[len(launcher):] for v in variables if v.startswith(launcher)), b"")
            if not launched_by(mark.decode(errors="replace")):
                continue
        found.setdefault(directory.decode(errors="replace"), []).append(int(entry.name))
    return found
