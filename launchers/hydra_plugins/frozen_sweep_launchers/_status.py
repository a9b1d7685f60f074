"""The sweep's live status, as a cluster tool's status table: per running job its step / budget, latest validation
score, tokens/s and ETA, or its test's progress (read from the progress.json each job keeps in its directory, when
its current attempt wrote it: frozen_sweep.train.progress_report; on SLURM through the shared file system), and for
the sweep done / running / queued / failed with an ETA (_eta.py: each queued job as long as the finished ones took,
or before any has finished, as the running ones are on course to take). On a terminal one block redrawn in place
(the launcher's log lines print above it); elsewhere (a pipe, a log file) the same as plain lines every
`hydra.launcher.status_every_s`."""

import logging
import shutil
import sys
import time
from typing import Optional, TextIO

from frozen_sweep.run.directory import PROGRESS_FILE
from frozen_sweep.train.progress_report import read_report

from ._eta import Pace, current_attempt, current_report, sweep_eta
from ._outcome import attempt_wall
from ._plan import PlannedJob
from ._progress import Progress

log = logging.getLogger(__name__)

REDRAW_S = 1.0  # on a terminal


def check_status_every(seconds: float) -> None:
    """Refused as the launcher is built, before any job starts."""
    if not seconds > 0:
        raise ValueError(f"hydra.launcher.status_every_s={seconds}: must be > 0 (seconds between status lines)")


class StatusBoard:
    def __init__(self, progress: Progress, every_s: float, slots: int, stream: Optional[TextIO] = None):
        self.progress, self.every_s, self.slots = progress, every_s, slots
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.shown = time.monotonic() if not self.live else float("-inf")  # plain lines: the first after every_s
        self.drawn = 0  # lines of the block on the terminal now
        self.since = time.time()  # an attempt started before this (and not adopted) is a killed one
        self.pace = Pace()
        self.walls: dict[int, float] = {}  # finished job → its wall time
        self.eraser = _EraseFirst(self)
        if self.live:
            for handler in logging.getLogger().handlers:
                handler.addFilter(self.eraser)

    def show(self, running: list[PlannedJob], queued: int) -> None:
        """Redraw (a terminal, once a second) or log (every `every_s`) the status of `running` and the sweep."""
        now = time.monotonic()
        if now - self.shown < (REDRAW_S if self.live else self.every_s):
            return
        self.shown = now
        lines = self.lines(running, queued)
        if not self.live:
            for line in lines:
                log.info(line)
            return
        self.erase()
        width = shutil.get_terminal_size().columns - 1  # a wrapped line would break the redraw's line count
        self.stream.write("".join(f"{line[:width]}\n" for line in lines))
        self.stream.flush()
        self.drawn = len(lines)

    def lines(self, running: list[PlannedJob], queued: int) -> list[str]:
        jobs, left, whole = [], [], []
        for job in running:
            attempt = current_attempt(job, self.since)
            report = current_report(read_report(job.job_dir / PROGRESS_FILE), attempt)
            eta = self.pace.left(job, attempt, report) if report else None
            jobs.append((job, eta, report))
            left.append((eta, attempt))
            whole.append(Pace.whole(attempt, eta, report) if report else None)
        p = self.progress
        done, failed = p.count("completed") + p.count("skipped"), p.count("failed")
        each = self.job_estimate([w for w in whole if w is not None])
        eta = None
        if each is not None or not queued and None not in (e for e, _ in left):
            running_left = [e if e is not None else _rest(each, attempt) for e, attempt in left]
            # a queued job's own estimate (_cost.py: the dry run's), else the finished or running jobs' mean
            queued_each = [self.progress.estimates.get(job.num, each) for job in self.queued(running, queued)]
            eta = sweep_eta(running_left, queued_each, self.slots)
        head = (f"status: {done} done, {len(running)} running, {queued} queued, {failed} failed of {len(p.jobs)}"
                f" | sweep ETA {_duration(eta)}")  # fmt: skip
        return [head, *(f"  {job.label}: {_describe(report)} | ETA {_duration(eta)}" for job, eta, report in jobs)]

    def queued(self, running: list[PlannedJob], count: int) -> list[PlannedJob]:
        """The `count` jobs that wait to start: neither finished nor running, in the sweep's order."""
        done = self.progress.outcomes
        return [job for job in self.progress.jobs if job.num not in done and job not in running][:count]

    def job_estimate(self, running_whole: list[float]) -> Optional[float]:
        """A job's whole time: the mean finished job's wall time, else the mean of what the running ones are on
        course to take (None before either is known)."""
        for outcome in self.progress.outcomes.values():
            if outcome.status == "completed" and outcome.job.num not in self.walls:
                self.walls[outcome.job.num] = attempt_wall(outcome.job) or 0.0
        walls = [wall for wall in self.walls.values() if wall] or running_whole
        return sum(walls) / len(walls) if walls else None

    def erase(self) -> None:
        """Remove the block from the terminal (before a log line prints, and before each redraw)."""
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.stream.flush()
            self.drawn = 0
            self.shown = float("-inf")  # drawn again at the next look, below the new line

    def close(self) -> None:
        self.erase()
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self.eraser)


class _EraseFirst(logging.Filter):
    """Erases the status block before a log line is written to the terminal, so that it prints above the block."""

    def __init__(self, board: StatusBoard):
        super().__init__()
        self.board = board

    def filter(self, record: logging.LogRecord) -> bool:
        self.board.erase()
        return True


def _rest(each: Optional[float], attempt: dict) -> float:
    """A running job without a pace yet: the estimate less the time its attempt has run."""
    ran = time.time() - attempt["started"] if attempt else 0.0
    return max(0.0, (each or 0.0) - ran)


def _describe(report: dict) -> str:
    if not report:
        return "starting"
    if report.get("phase") in ("testing", "scoring"):
        tested = report.get("tested")
        what = "scoring" if report["phase"] == "scoring" else (
            f"decoded {tested[0]:,}/{tested[1]:,}" if tested else "running the test set")  # fmt: skip
        return f"testing: {what} (trained {report.get('step', '?')} steps)"
    if report.get("max_steps"):
        where = f"step {report['step']}/{report['max_steps']}"
    elif report.get("max_epochs"):
        where = f"step {report['step']}, epoch {report['epoch']:.1f}/{report['max_epochs']}"
    else:
        where = f"step {report['step']}"
    valid = f"valid {report['valid'][0]} {report['valid'][1]:.2f}" if report.get("valid") else "not validated yet"
    return f"{where} | {valid} | {report.get('tokens_per_s', 0):,} tok/s"


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

