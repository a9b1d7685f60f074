"""An epoch's batches cut into updates, and each data-parallel rank's share of one: the same global stream of batches,
whatever the number of devices.

The plan of an epoch (a pure function of seed and epoch) is one list of batches. An update takes
`devices × update_freq` consecutive batches of it: rank r takes batches r·update_freq … (r+1)·update_freq − 1 of the
update and accumulates their gradients; the update's loss is normalised by the target tokens of all its batches, which
every rank counts from the plan, without communication. So N devices, one device accumulating N batches and one process
given their union make the same update (up to the order of floating-point sums).

The batches at the end of an epoch that do not fill an update are dropped, on every rank alike (every rank runs the same
number of steps; a partial update would give some ranks nothing to compute): at most devices × update_freq − 1 of an
epoch's batches, different ones each epoch since the plan is reshuffled. With one device and update_freq 1 nothing is
dropped.
"""

from typing import Sequence, TypeVar

Batch = TypeVar("Batch")


class TooFewBatches(ValueError):
    """An epoch holds fewer batches than one update takes."""


def updates_in_epoch(n_batches: int, batches_per_update: int) -> int:
    """Whole updates in an epoch of `n_batches`; TooFewBatches when there is not even one."""
    if n_batches < batches_per_update:
        raise TooFewBatches(
            f"an epoch has {n_batches} batches, fewer than one update takes (trainer.devices × trainer.update_freq = "
            f"{batches_per_update}): lower them, or trainer.max_tokens"
        )
    return n_batches // batches_per_update


def update_batches(plan: Sequence[Batch], update: int, batches_per_update: int) -> Sequence[Batch]:
    """The batches of update `update` (0-based, within the epoch) of the epoch's plan."""
    return plan[update * batches_per_update : (update + 1) * batches_per_update]


def rank_share(batches: Sequence[Batch], rank: int, update_freq: int) -> Sequence[Batch]:
    """Rank `rank`'s batches of one update: `update_freq` consecutive ones."""
    return batches[rank * update_freq : (rank + 1) * update_freq]
