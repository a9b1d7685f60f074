"""A job's data, prepared (or found) and checked before the job writes anything: what a sweep's plan does for its
jobs, done by a single job for itself."""

from pathlib import Path

from frozen_sweep.config import SCRATCH, ConfigError, StudyName
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.labelled import unk_rates
from frozen_sweep.data.prepared import longest_held_out, read_manifest


def prepare_checked(cfg) -> None:
    """The job's data prepared (or found) before its directory is written: bad content (a file and line), a
    held-out example longer than the model's positions, or a base's vocabulary that does not cover the task, is a
    config error, reported in one line with nothing left behind, as a sweep's plan reports it."""
    try:
        directory = prepare(cfg.task)
    except (OSError, ValueError) as e:
        raise ConfigError(f"preparing its data: {e}") from e
    subwords, where, row = longest_held_out(directory)
    if subwords + 2 > cfg.model.max_positions:  # scored whole, with bos and eos
        raise ConfigError(f"{where} example {row} has {subwords} subwords (+ bos, eos), more than model.max_positions="
                          f"{cfg.model.max_positions}: raise model.max_positions to at least {subwords + 2}")  # fmt: skip
    check_vocabulary_coverage(cfg, directory)


def check_vocabulary_coverage(cfg, directory: Path) -> None:
    """A fine-tuning job from a base reads its task with the base's vocabulary, which cannot learn new pieces: a
    split with more than finetune.max_unk_rate <unk> pieces is refused, naming the split, its rate and the limit."""
    if StudyName(cfg.study) != StudyName.finetune or cfg.finetune.base_checkpoint == SCRATCH:
        return
    most = cfg.finetune.max_unk_rate
    for split, rate in unk_rates(read_manifest(directory)).items():
        if rate > most:
            raise ConfigError(
                f"finetune.max_unk_rate={most}: {rate:.2%} of the {split} split's pieces of task={cfg.task.name} are "
                f"<unk> under the vocabulary of finetune.base_checkpoint={cfg.finetune.base_checkpoint}, which does "
                "not cover the task; allowed: a base whose vocabulary covers it, or a higher finetune.max_unk_rate"
            )
