"""How fast a run learns, from its validation history: AUCC and time to reach a target.

AUCC (area under the convergence curve, Shen et al. 2021), as computed here:
- The curve is the validation metric against the run's clock: training wall-clock time (`wall_time_s` of each
  history entry, validation time included), or on the calibrated clock `calibrated_time_s` (updates × the row's
  calibrated step time, frozen_sweep.metrics.clock), the same at any load. It starts at (0, `initial`) — the metric
  of the untrained model: 0 BLEU, or for perplexity the vocabulary size (a uniform guess) — and joins the recorded
  validations with straight lines.
- A run that stopped before the cut-off T̂ keeps its last value up to T̂ (it is done: that is what it delivers).
- AUCC = (1/T̂) ∫₀^T̂ metric(t) dt: in the metric's own unit, so it reads as "the average BLEU (or perplexity) over
  the first T̂ seconds". Higher is better for BLEU, lower for perplexity.
- The default T̂ is the run's own training time; runs compare only under the same T̂ (`trainer.aucc_cutoff_s`).

Time to target: the time (on the given clock) of the first validation whose metric reaches `target` (≥ for BLEU, ≤ for
perplexity), None when none does; the collector sets the target as a fraction of the best all-trainable run.
"""

from typing import Optional

import numpy as np

WALL = "wall_time_s"  # a history entry's wall-clock time; frozen_sweep.metrics.clock.CALIBRATED the other clock


def curve(
    history: list[dict], initial: float, key: str = "valid_metric", time_key: str = WALL
) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) of the convergence curve, starting at (0, initial); entries without the key are skipped."""
    points = [(h[time_key], h[key]) for h in history if h.get(key) is not None and h.get(time_key) is not None]
    times, values = zip(*([(0.0, initial)] + points))
    return np.asarray(times, dtype=float), np.asarray(values, dtype=float)


def aucc(
    history: list[dict], cutoff_s: float, initial: float, key: str = "valid_metric", time_key: str = WALL
) -> float:
    """Area under the curve up to `cutoff_s`, divided by `cutoff_s` (see the module docstring)."""
    if cutoff_s <= 0:
        raise ValueError(f"AUCC cut-off must be > 0 s, got {cutoff_s}")
    times, values = curve(history, initial, key, time_key)
    inside = times < cutoff_s
    end_value = np.interp(cutoff_s, times, values)  # interpolated inside the curve, the last value beyond it
    t = np.append(times[inside], cutoff_s)
    v = np.append(values[inside], end_value)
    return float(np.sum((t[1:] - t[:-1]) * (v[1:] + v[:-1]) / 2) / cutoff_s)


def time_to_target(
    history: list[dict], target: float, higher_is_better: bool, key: str = "valid_metric", time_key: str = WALL
) -> Optional[float]:
    """Seconds (on `time_key`'s clock) of the first validation that reaches `target`, or None."""
    for h in history:
        value = h.get(key)
        if value is not None and (value >= target if higher_is_better else value <= target):
            return h[time_key]
    return None
