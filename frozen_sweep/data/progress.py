"""Progress of a long pass over a corpus: tqdm's bar on a terminal; without one (a sweep's log, SLURM, `nohup`), a log
line every few seconds with the lines done, the rate and, when the total is known, the time left, so that a
preparation of minutes is never silent."""

import logging
import sys
import time
from typing import Optional

from tqdm import tqdm

log = logging.getLogger(__name__)

EVERY_S = 5.0


class LogProgress:
    def __init__(self, desc: str, total: Optional[int], every_s: float = EVERY_S):
        self.desc, self.total, self.every_s = desc, total, every_s
        self.done = 0
        self.started = self.last = time.perf_counter()

    def update(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self.last >= self.every_s:
            self.last = now
            log.info(self.line(now))

    def line(self, now: float) -> str:
        rate = self.done / max(now - self.started, 1e-9)
        of = f" of {self.total:,}" if self.total else ""
        left = f", {(self.total - self.done) / rate:.0f} s left" if self.total and rate else ""
        return f"{self.desc}: {self.done:,} lines{of}, {rate:,.0f} lines/s{left}"

    def __enter__(self) -> "LogProgress":
        return self

    def __exit__(self, *exc) -> None:
        pass


def progress(desc: str, total: Optional[int] = None):
    """A context manager with update(n): a bar on a terminal, log lines otherwise."""
    if sys.stderr.isatty():
        return tqdm(desc=desc, total=total, unit=" lines", unit_scale=True)
    return LogProgress(desc, total)
