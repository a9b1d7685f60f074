"""`hydra/sweeper=frozen_sweep` (the default): Hydra's basic sweeper, less its composition of every job before the
launcher runs: a frozen_sweep launcher composes and checks each job itself before any starts (_plan.py), so
Hydra's check would compose every job a second time. With another launcher it checks as Hydra does."""

from typing import Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


class FrozenSweepSweeper(BasicSweeper):
    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from ._base import SweepLauncher

        if not isinstance(self.launcher, SweepLauncher):
            super().validate_batch_is_legal(batch)
