"""What a launcher submitted for each job directory, recorded *before* it submits, and what runs now.

A launcher can be killed at any instant, between any two of its steps. So each job directory's submission.json says
what was about to be submitted before sbatch (or the local process start) is called, and the submission itself
carries a mark that leads back to it: on SLURM the array's `--comment` (`frozen_sweep:<sweep key>:<token>`, one token
per sbatch call; a job is task `array_index` of it), on this machine an environment variable naming the job's
directory, which every process of the job inherits. The next launcher asks squeue (or /proc) for these marks and
adopts what it finds, so no live job is ever submitted twice.
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
from typing import Optional

from frozen_sweep.run.directory import SUBMISSION_FILE
from frozen_sweep.system.files import write_json_atomic

from ._plan import PlannedJob, SweepConfigError

COMMENT_PREFIX = "frozen_sweep"
JOB_DIR_VARIABLE = "FROZEN_SWEEP_JOB_DIR"  # set in the environment of a local job's processes: its directory
PENDING_STATES = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED")


def read_submission(job_dir: Path) -> dict:
    """The job directory's submission record, {} when it has none (or an unreadable one)."""
    try:
        record = json.loads((Path(job_dir) / SUBMISSION_FILE).read_text())
        return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}


def record_submissions(jobs: list[PlannedJob], state: str, **fields) -> None:
    """Write each job's submission record: `state` "submitting" before the submission, "submitted" after it;
    `array_index` is the job's place in the submission, `slurm_job_id` a callable of it once SLURM gave the id."""
    launcher = {"host": socket.gethostname(), "pid": os.getpid()}
    slurm_id = fields.pop("slurm_job_id", None)
    for index, job in enumerate(jobs):
        job.job_dir.mkdir(parents=True, exist_ok=True)
        record = {"state": state, **fields, "array_index": index, "launcher": launcher, "at": time.time()}
        if slurm_id:
            record["slurm_job_id"] = slurm_id(index)
        write_json_atomic(job.job_dir / SUBMISSION_FILE, record)


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


def task_of(record: dict, tasks: list[QueuedTask]) -> Optional[QueuedTask]:
    """The listed task a job's submission record points to: by its SLURM id once recorded, else by comment and
    place (a launcher killed between sbatch and the records)."""
    for task in tasks:
        if record.get("slurm_job_id") == task.job_id or (
            record.get("comment") == task.comment and record.get("array_index") == task.index
        ):
            return task
    return None


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


def local_processes() -> dict[str, list[int]]:
    """Job directory → pids of the live processes (other than this one) started for it by a local_gpus launcher."""
    marker = f"{JOB_DIR_VARIABLE}=".encode()
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
        for variable in environ.split(b"\0"):
            if variable.startswith(marker):
                found.setdefault(variable[len(marker):].decode(errors="replace"), []).append(int(entry.name))
    return found
