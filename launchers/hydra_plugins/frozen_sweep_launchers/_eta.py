"""How long jobs and the sweep have left: a running job from its current attempt's reports (progress.json), the
sweep from the running jobs' time left and an estimate for each queued job (sweep_eta, which takes them as given)."""

import time
from typing import Optional, Sequence

from ._outcome import last_attempt
from ._plan import PlannedJob


def sweep_eta(running_left: Sequence[float], queued_each: Sequence[float], slots: int) -> float:
    """Seconds until the last job ends: each queued job, taking its estimate, starts in the slot that frees first."""
    free_at = sorted([*running_left, *[0.0] * max(0, slots - len(running_left))])
    for each in queued_each:
        free_at[0] += each
        free_at.sort()
    return max(free_at, default=0.0)


def current_attempt(job: PlannedJob, since: float) -> dict:
    """The job's attempt now running ({} while none is): its latest entry in the attempts record, not ended, and
    started since `since` (this launcher's start, on the wall clock) unless the job was running before (adopted)."""
    attempt = last_attempt(job)
    started = attempt.get("started")
    if not isinstance(started, (int, float)) or "ended" in attempt or (started < since and not job.runner):
        return {}
    return attempt


def current_report(report: dict, attempt: dict) -> dict:
    """The job's progress report if its current attempt wrote it ({} for a killed attempt's, left in the directory)."""
    at = report.get("at")
    return report if attempt and isinstance(at, (int, float)) and at >= attempt["started"] else {}


class Pace:
    """Each running job's time left at the pace it has kept since this launcher first saw its current attempt's
    current phase report (training, then testing), and the whole time it is likely to take."""

    def __init__(self):
        self.first_seen: dict[tuple, tuple[float, float]] = {}  # (job, attempt, phase) → (when, done) first seen

    def left(self, job: PlannedJob, attempt: dict, report: dict) -> Optional[float]:
        done = report.get("done")
        if done is None:
            return None
        key = (job.num, attempt["started"], report.get("phase", "training"))
        when, first = self.first_seen.setdefault(key, (time.monotonic(), done))
        return (time.monotonic() - when) * (1 - done) / (done - first) if done > first else None

    @staticmethod
    def whole(attempt: dict, left: Optional[float], report: dict) -> Optional[float]:
        """The attempt's time so far plus its training's time left (None unless it is training at a known pace)."""
        if left is None or report.get("phase", "training") != "training":
            return None
        return time.time() - attempt["started"] + left
