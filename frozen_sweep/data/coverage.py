"""Whether a fine-tuning base's vocabulary covers the task: at most finetune.max_unk_rate of the task's training
pieces may be <unk> under it. A sweep's plan checks it once it has prepared the task's data with that vocabulary,
before any job starts (a base still to train included: its vocabulary is prepared with its data); the job checks it
again as it builds its model (a single job, or a base whose vocabulary changed since)."""

from typing import Optional

from frozen_sweep.config import SCRATCH, StudyName

COVERED_SPLIT = "train"  # the split the rule reads: what the model learns from


def coverage_rule(cfg) -> Optional[tuple[float, str]]:
    """(finetune.max_unk_rate, finetune.base_checkpoint) of a fine-tuning job that starts from a base; None for any
    other job (nothing to cover)."""
    f = cfg.finetune
    if StudyName(cfg.study) != StudyName.finetune or f.base_checkpoint in (None, SCRATCH):
        return None
    return f.max_unk_rate, str(f.base_checkpoint)


def unk_rates(manifest: dict) -> dict[str, float]:
    """<unk> pieces per split of a prepared dataset, as a fraction of its text's pieces ({} where none are counted:
    data without labels)."""
    return {split: c["unk"] / max(c["tokens"]["text"], 1) for split, c in manifest["splits"].items() if "unk" in c}


def uncovered(rates: dict[str, float], most: float, task: str, base: str) -> Optional[str]:
    """Why the base's vocabulary does not cover the task (`rates`: unk_rates under it), None when it does."""
    rate = rates.get(COVERED_SPLIT, 0.0)
    if rate <= most:
        return None
    return (
        f"finetune.max_unk_rate={most}: {rate:.1%} of the {COVERED_SPLIT} split's pieces of task={task} are <unk> "
        f"under the vocabulary of finetune.base_checkpoint={base}, which does not cover it; start from a base whose "
        "vocabulary covers the task, or raise finetune.max_unk_rate"
    )
