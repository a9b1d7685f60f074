"""Using a finished run from Python (frozen_sweep.load_run) and, through the same calls, from the commands."""

from frozen_sweep.use.run import Run, load_run

__all__ = ["Run", "load_run"]
