"""How a job ended, read from its result.json first: a job that died without recording it is recorded as failed."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from hydra.core.utils import JobReturn

from frozen_sweep.run.directory import ATTEMPTS_FILE, is_completed, mark_failed, read_record
from frozen_sweep.run.lock import describe_runner, live_runner

from ._held import HandedOver
from ._plan import PlannedJob

TRACE_RULE = "-" * 22  # submitit frames a failed job's traceback with this line


@dataclass
class Outcome:
    job: PlannedJob
    status: str  # completed | skipped | failed, or held: another launcher has the job, wait for it (_held.py)
    reason: Optional[str] = None  # why it failed, one line
    logs: tuple[Path, ...] = ()
    job_return: Optional[JobReturn] = None  # what the job's process returned, when it returned
    by_another: bool = False  # run by another launcher, which this one waited for


def skipped(job: PlannedJob) -> Outcome:
    return Outcome(job, "skipped")


def settle(job: PlannedJob, submitit_job: Any, died: Optional[str]) -> Outcome:
    """The outcome of a submitit job that has stopped.

    `died` says why it stopped when it may have left no result behind (killed, cancelled, timed out); None when it
    ended on its own, in which case its result file is waited for (a shared file system can show it late). A job
    whose task found another launcher's run in its directory is `held` (its runner set) or that run's outcome.
    """
    logs = (job.job_dir / f"{job.config.hydra.job.name}.log", Path(submitit_job.paths.stderr))
    job_return, error = None, None
    returned = submitit_job.paths.result_pickle.exists()
    if died is None or returned:
        try:
            job_return = submitit_job.result()
        except Exception as e:  # the job raised (its record says why), or it left no result at all
            error = _why(e)
    if returned:  # the job's own process said how it ended: `died` (a guess from outside) does not apply
        died = None
    if isinstance(job_return, HandedOver) and job_return.runner is None:
        return settle_adopted(job, by_another=True)
    runner = live_runner(job.job_dir)
    if runner or isinstance(job_return, HandedOver):  # another runner has the directory: its record is not ours
        job.runner = runner or job_return.runner
        return Outcome(job, "held", logs=logs)
    return _from_record(job, died or error or "the job returned without writing a completed result record", logs,
                        job_return)


def settle_adopted(job: PlannedJob, by_another: bool) -> Outcome:
    """The outcome of a job whose runner this launcher waited for, once it has let go of the directory:
    `by_another` launcher (an earlier one, or one beside it), or this launcher's own job that outlived its wrapper."""
    logs = (job.job_dir / f"{job.config.hydra.job.name}.log",)
    runner = describe_runner(job.runner or {})
    reason = f"its runner ({runner}) ended without a result record (killed?)"
    return _from_record(job, reason, logs, None, by_another)


def _from_record(job: PlannedJob, reason: str, logs: tuple, job_return: Optional[JobReturn],
                 by_another: bool = False) -> Outcome:  # fmt: skip
    """Completed or failed as the job's record says; without one written by this run, failed for `reason`."""
    record = read_record(job.job_dir)
    if record == job.previous and not job.runner:  # not written by this run: the job died before it started
        record = None
    ran = "run by another launcher: " * by_another
    if is_completed(record):
        return Outcome(job, "completed", logs=logs, job_return=job_return, by_another=by_another)
    if record and record["status"] == "failed" and record.get("error"):
        return Outcome(job, "failed", ran + _first_line(record["error"]), logs, by_another=by_another)
    mark_failed(job.job_dir, reason, job.overrides)
    return Outcome(job, "failed", ran + reason, logs, by_another=by_another)


def _why(error: Exception) -> str:
    """The exception line of a failed job's traceback, else the first line of the error."""
    text = str(error)
    parts = text.split(TRACE_RULE)
    if len(parts) >= 3:
        return _first_line(parts[1].strip().splitlines()[-1])
    return _first_line(text)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text)


def attempts(job: PlannedJob) -> list[dict]:
    """The job's attempts record (written by the job's own process, one entry a run of it); [] when there is none."""
    try:
        entries = json.loads((job.job_dir / ATTEMPTS_FILE).read_text())
        return entries if isinstance(entries, list) else []
    except (OSError, ValueError):
        return []


def last_attempt(job: PlannedJob) -> dict:
    """The job's latest entry in its attempts record; {} when there is none."""
    return (attempts(job) or [{}])[-1]


def attempt_wall(job: PlannedJob) -> Optional[float]:
    """The wall time of the job's latest attempt (start to end of its process's run), None while unknown."""
    return wall_of(last_attempt(job))


def wall_of(attempt: dict) -> Optional[float]:
    """An attempt's wall time, from its entry in the attempts record; None while unknown."""
    ended, started = attempt.get("ended"), attempt.get("started")
    return ended - started if isinstance(ended, (int, float)) and isinstance(started, (int, float)) else None
