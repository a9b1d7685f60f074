"""The sweep's progress, printed as each job finishes, and its summary: what completed, what was skipped, what
failed and why, with log paths. Failed jobs make the multirun exit non-zero, after every other job has run."""

import logging
import shlex
import time
from pathlib import Path
from typing import Optional

from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import CompactHydraException

from frozen_sweep.run.directory import read_record

from ._outcome import Outcome, attempts, wall_of
from ._plan import PlannedJob

log = logging.getLogger(__name__)


class SweepFailed(CompactHydraException):
    """Raised by Hydra's sweeper when it reads a failed job's return value: the multirun exits with status 1."""


def ended(record: dict, wall_s: Optional[float] = None, tries: int = 1) -> str:
    """How a completed job ended: "test bleu 23.61, 3.2 epochs (max_steps), 64 s wall (training 41 s)": the wall
    time of its attempt (start-up, data, tests included) and the record's training time (validations included).
    A job resumed from a checkpoint says so: its last attempt's wall time, and training time summed over `tries`."""
    metric = record.get("test_metric")
    score = f"test {record.get('metric_name')} {metric:.2f}" if metric is not None else "no test score"
    epochs = (record.get("history") or [{}])[-1].get("epoch")  # at the last validation
    trained = f"{epochs:.2f} epochs" if epochs is not None else "epochs unknown"
    stop = f" ({record['stopped_reason']})" if record.get("stopped_reason") else ""
    training = f"training {record['wall_time_s']:.0f} s" if record.get("wall_time_s") is not None else "training ?"
    if tries > 1:
        training += f" over its {tries} attempts"
    last = " in its last attempt" * (tries > 1)
    took = f"{wall_s:.0f} s wall{last} ({training})" if wall_s is not None else f"wall time unknown ({training})"
    return f"{score}, {trained}{stop}, {took}"


class Progress:
    def __init__(self, jobs: list[PlannedJob], sweep_dir: Path):
        self.jobs = jobs
        self.sweep_dir = sweep_dir
        self.outcomes: dict[int, Outcome] = {}
        self.started = time.perf_counter()
        self.estimates: dict[int, float] = {}  # job num → its estimated whole time (_cost.py), for the status's ETA

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes.values())

    def by_another(self) -> str:
        """' (2 by another launcher)' when another launcher ran some of the completed jobs (this one waited)."""
        waited = sum(o.status == "completed" and o.by_another for o in self.outcomes.values())
        return f" ({waited} by another launcher)" if waited else ""

    def finished(self, outcome: Outcome, running: int) -> None:
        """Record a job's outcome; `running`: how many jobs still run (the rest not yet started are queued)."""
        self.outcomes[outcome.job.num] = outcome
        if outcome.status == "skipped":
            return
        done, failed = self.count("completed") + self.count("skipped"), self.count("failed")
        queued = len(self.jobs) - len(self.outcomes) - running
        if outcome.status == "failed":
            what = f"FAILED {outcome.job.label}: {outcome.reason}"
        else:
            tries, record = attempts(outcome.job) or [{}], read_record(outcome.job.job_dir) or {}
            by = "completed by another launcher: " * outcome.by_another
            what = f"{outcome.job.label}: {by}{ended(record, wall_of(tries[-1]), len(tries))}"
        log.info(
            f"[{len(self.outcomes)}/{len(self.jobs)}] {what} | "
            f"done {done}, failed {failed}, running {running}, queued {queued}"
        )

    def summarise(self, collect: bool = True) -> None:
        failed = [o for o in self.outcomes.values() if o.status == "failed"]
        log.info(
            f"Sweep {self.sweep_dir}: {len(self.jobs)} jobs in {time.perf_counter() - self.started:.1f} s: "
            f"{self.count('completed')} completed{self.by_another()}, "
            f"{self.count('skipped')} skipped (completed before), "
            f"{len(failed)} failed"
        )
        for outcome in failed:
            log.info(f"  FAILED {outcome.job.label}: {outcome.reason}")
            log.info(f"    logs: {', '.join(str(p) for p in outcome.logs)}")
        if collect:
            log.info(f"Tables: python -m frozen_sweep.collect {shlex.quote(str(self.sweep_dir))}")

    def job_returns(self) -> list[JobReturn]:
        """One JobReturn per job, in sweep order; a failed job's return value is the sweep's SweepFailed error."""
        failed = self.count("failed")
        error = SweepFailed(f"{failed} of {len(self.jobs)} jobs failed; the summary above says which and why")
        returns = []
        for job in self.jobs:
            outcome = self.outcomes[job.num]
            if outcome.status == "failed":
                returns.append(JobReturn(overrides=list(job.passed), status=JobStatus.FAILED, _return_value=error))
            elif outcome.job_return is not None:
                returns.append(outcome.job_return)
            else:  # skipped, completed by another launcher, or without a return value: the record holds it
                record = job.completed_record() if outcome.status == "skipped" else read_record(job.job_dir) or {}
                value = record.get("test_metric")
                returns.append(JobReturn(overrides=job.overrides, status=JobStatus.COMPLETED, _return_value=value))
        return returns
