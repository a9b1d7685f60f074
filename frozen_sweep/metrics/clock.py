"""The calibrated clock: time budgets and AUCC that compare models, not machine loads.

On the wall clock a time-budgeted run makes as many updates as the load allowed, so rows run at different loads (or
beside other jobs) compare loads. With `trainer.step_time_s` set, a run's clock is `updates × step_time_s`: the
budget `trainer.max_time_s` ends it after exactly ⌈max_time_s / step_time_s⌉ updates and its AUCC is computed on
that clock, the same at any load; the wall clock is still recorded beside it (`wall_time_s`).

Where the step times come from: a stated calibration — each row's seconds per update on a named machine, measured
side by side (benchmarks/reservoir_step.py times every row's real training step in one process, rotated, medians),
set per row as `trainer.step_time_s`. No torch here.
"""

from typing import Optional

from frozen_sweep.metrics.efficiency import WALL

CALIBRATED = "calibrated_time_s"  # a history entry's time on the calibrated clock
CLOCK_NOTES = {  # what a table says of its clock
    "wall": "wall-clock training time (validation included): it depends on the machine and its load",
    "calibrated": "calibrated, updates × each row's trainer.step_time_s (validation not counted): the same at any load",
}


def calibrated_time(steps: int, step_time_s: Optional[float]) -> dict:
    """{calibrated_time_s: steps × step_time_s} for a history entry or record; {} on the wall clock."""
    return {} if step_time_s is None else {CALIBRATED: round(steps * step_time_s, 6)}


def clock_name(step_time_s: Optional[float]) -> str:
    return "wall" if step_time_s is None else "calibrated"


def time_key(record: dict) -> str:
    """The history key a record's budget and AUCC were counted on."""
    return CALIBRATED if record.get("clock") == "calibrated" else WALL
