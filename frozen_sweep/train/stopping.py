"""What a run carries from validation to validation (and across resumes), and the rules that end it: early stopping
on the stop metric, and the divergence guard (docs/training.md). Torch-free: plain numbers from the history."""

import math
from dataclasses import dataclass, field
from typing import Optional

from frozen_sweep.config import StopMetric


@dataclass
class TrainState:
    """Everything besides weights and optimiser that a resumed run needs to continue exactly."""

    step: int = 0
    epoch: int = 0  # completed epochs
    batch_in_epoch: int = 0  # batches of the current epoch already trained on
    train_time_s: float = 0.0
    step_time_s: float = 0.0  # time in the training loop (steps, batch preparation), validation excluded
    train_tokens: int = 0  # target tokens trained on (all epochs, resumes included)
    train_sentences: int = 0  # training examples trained on
    history: list = field(default_factory=list)
    best_index: Optional[int] = None  # index into history of the best validation
    bad_validations: int = 0
    diverging_validations: int = 0  # consecutive bad validations with a loss above diverge_ratio × the best loss
    stopped_reason: Optional[str] = None


class Diverged(RuntimeError):
    """The loss blew up; the message names the learning rate and warmup that caused it."""


def score(entry: dict, tr) -> float:
    """Higher is better: minus the validation loss, or the validation entry's trainer.stop_metric (BLEU, accuracy,
    F1, Matthews correlation, Pearson or Spearman: valid_<name>)."""
    if tr.stop_metric == StopMetric.loss:
        return -entry["valid_loss"]
    return entry[f"valid_{StopMetric(tr.stop_metric).value}"]


def add_validation(s: TrainState, entry: dict, tr) -> bool:
    """Append `entry` to the history and count it towards patience; True if it is the best so far."""
    best = s.best_index is None or score(entry, tr) > score(s.history[s.best_index], tr)
    s.history.append(entry)
    if best:
        s.best_index, s.bad_validations = len(s.history) - 1, 0
    else:
        s.bad_validations += 1
    return best


def best_loss(s: TrainState) -> float:
    return min((e["valid_loss"] for e in s.history if math.isfinite(e["valid_loss"])), default=math.inf)


def diverging(s: TrainState, entry: dict, best: bool, tr, guess_loss: float, relative: bool = True) -> bool:
    """A non-finite validation loss, or the diverge_validations-th validation in a row far above the best loss
    (and no improvement; only when `relative`) or far above `guess_loss`, the loss of a guess that knows nothing
    (uniform over the outcomes: ln of their number). A classifier's or a regression's is not `relative`: its
    validation loss grows as it overfits while its accuracy or correlation holds."""
    loss = entry["valid_loss"]
    far_above = (relative and not best and loss > tr.diverge_ratio * best_loss(s)) or (
        loss > tr.diverge_uniform_ratio * guess_loss
    )
    s.diverging_validations = s.diverging_validations + 1 if far_above else 0
    return not math.isfinite(loss) or s.diverging_validations >= tr.diverge_validations
