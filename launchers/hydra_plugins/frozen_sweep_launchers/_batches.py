"""A sweep that Hydra's sweeper hands to the launcher in batches (`hydra.sweeper.max_batch_size`, Optuna and other
sweepers that launch a batch, read its results, then choose the next).

Hydra's basic sweeper fixes every batch in advance: the first batch's launch plans the whole sweep, so a bad job in
the last batch stops the command before the first one starts, as an unbatched sweep does. Other sweepers choose each
batch from the results of the ones before: each batch is checked whole before any of its jobs starts, and a job may
not take a directory that a job of an earlier batch, with other overrides, claimed.
"""

from typing import Optional

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import HydraContext
from omegaconf import DictConfig

from ._plan import PlannedJob, SweepConfigError, check_distinct_dirs

BASIC_SWEEPERS = (
    "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
    "hydra_plugins.frozen_sweep_launchers.sweeper.FrozenSweepSweeper",  # the basic one, composing each job once
)
LATER_BATCH = "No job of this batch was started; the jobs of the earlier batches ran."


def whole_sweep(sweep_config: DictConfig, hydra_context: HydraContext) -> Optional[list[list[str]]]:
    """Every job's overrides, in the order the basic sweeper launches them; None for another sweeper."""
    if sweep_config.hydra.sweeper.get("_target_") not in BASIC_SWEEPERS:
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    params = [f"{key}={value}" for key, value in (sweep_config.hydra.sweeper.get("params") or {}).items()]
    parser = OverridesParser.create(config_loader=hydra_context.config_loader)
    overrides = parser.parse_overrides(params + list(sweep_config.hydra.overrides.task))
    return BasicSweeper.split_arguments(overrides, None)[0]


def check_claims(earlier: list[PlannedJob], batch: list[PlannedJob]) -> None:
    """SweepConfigError when a job of `batch` would share a directory with a job of an earlier batch that has other
    overrides (the same overrides again, as Optuna may choose, is the same job: skipped once completed)."""
    again = {tuple(job.overrides) for job in batch}
    check_distinct_dirs([job for job in earlier if tuple(job.overrides) not in again] + batch, LATER_BATCH)


def later_batch(error: SweepConfigError) -> SweepConfigError:
    """The error of a batch after the first, saying that the earlier batches ran."""
    return SweepConfigError(str(error).replace("No job was started.", LATER_BATCH))
