"""A job's data, prepared (or found) and checked before the job writes anything: what a sweep's plan does for its
jobs, done by a single job for itself."""

from frozen_sweep.config import ConfigError
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.prepared import longest_held_out


def prepare_checked(cfg) -> None:
    """The job's data prepared (or found) before its directory is written: bad content (a file and line), or a
    held-out example longer than the model's positions, is a config error, reported in one line with nothing left
    behind, as a sweep's plan reports it."""
    try:
        directory = prepare(cfg.task)
    except (OSError, ValueError) as e:
        raise ConfigError(f"preparing its data: {e}") from e
    subwords, where, row = longest_held_out(directory)
    if subwords + 2 > cfg.model.max_positions:  # scored whole, with bos and eos
        raise ConfigError(f"{where} example {row} has {subwords} subwords (+ bos, eos), more than model.max_positions="
                          f"{cfg.model.max_positions}: raise model.max_positions to at least {subwords + 2}")  # fmt: skip
