"""The sweep's live status, as a cluster tool's status table: per running job its step / budget, latest validation
score, tokens/s and ETA (read from the progress.json each job keeps in its directory: frozen_sweep.train.
progress_report; on SLURM through the shared file system), and for the sweep done / running / queued / failed with an
ETA from the finished jobs' wall times. On a terminal one block redrawn in place (the launcher's log lines print
above it); elsewhere (a pipe, a log file) the same as plain lines every `hydra.launcher.status_every_s`."""

import json
import logging
import shutil
import sys
import time
from typing import Optional, TextIO

from frozen_sweep.run.directory import PROGRESS_FILE

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
        self.first_seen: dict[int, tuple[float, float]] = {}  # job → (when, done fraction) at its first report
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
        jobs = [(job, self.job_eta(job, report := read_json(job.job_dir / PROGRESS_FILE)), report) for job in running]
        p = self.progress
        done, failed = p.count("completed") + p.count("skipped"), p.count("failed")
        eta = self.sweep_eta([eta for _, eta, _ in jobs], queued)
        head = (f"status: {done} done, {len(running)} running, {queued} queued, {failed} failed of {len(p.jobs)}"
                f" | sweep ETA {_duration(eta)}")  # fmt: skip
        return [head, *(f"  {job.label}: {_describe(report)} | ETA {_duration(eta)}" for job, eta, report in jobs)]

    def job_eta(self, job: PlannedJob, report: dict) -> Optional[float]:
        """Seconds left to the job's first budget at the pace it has kept since this launcher first saw it report."""
        done = report.get("done")
        if done is None:
            return None
        when, first = self.first_seen.setdefault(job.num, (time.monotonic(), done))
        return (time.monotonic() - when) * (1 - done) / (done - first) if done > first else None

    def sweep_eta(self, running: list[Optional[float]], queued: int) -> Optional[float]:
        """The queued jobs, each as long as the mean finished one, fill the slots as the running ones free them."""
        for outcome in self.progress.outcomes.values():
            if outcome.status == "completed" and outcome.job.num not in self.walls:
                self.walls[outcome.job.num] = attempt_wall(outcome.job) or 0.0
        walls = [wall for wall in self.walls.values() if wall]
        if None in running or (queued and not walls):
            return None
        mean = sum(walls) / len(walls) if walls else 0.0
        free_at = sorted(running + [0.0] * max(0, self.slots - len(running)))
        for _ in range(queued):
            free_at[0] += mean
            free_at.sort()
        return max(free_at, default=0.0)

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


def _describe(report: dict) -> str:
    if not report:
        return "starting"
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


def read_json(path) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):  # not written yet
        return {}
    return value if isinstance(value, dict) else {}
