"""A fine-tuning job's task checked against its base's vocabulary at plan time (frozen_sweep.data.coverage): the
task's data prepared with that vocabulary tells its <unk> rate before any job starts. For a base that has not run,
its vocabulary is the one its own data is prepared with, which the plan prepares now (the base's run then opens it):
a refusal comes before the base trains, not once it has."""

import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.data.coverage import uncovered, unk_rates

from ._planned import PlannedJob, SweepConfigError


def check_coverage(jobs: list[PlannedJob], refuse_each: bool) -> None:
    """Refuse each fine-tuning job whose base's vocabulary leaves more of its task <unk> than finetune.max_unk_rate
    allows: SweepConfigError naming the job, the key, the split and the rate, or with `refuse_each` (a dry run) the
    job marked refused."""
    for job in jobs:
        if job.coverage is None or job.refused is not None or job.already_completed or job.checked_task is None:
            continue
        try:
            problem = _uncovered(job)
        except (OSError, ValueError) as e:
            problem = f"preparing its data with its base's vocabulary: {e}"
        if problem is None:
            continue
        if not refuse_each:
            raise SweepConfigError(f"job #{job.num} ({' '.join(job.passed)}): {problem}. No job was started.")
        job.refused = problem


def _uncovered(job: PlannedJob) -> str | None:
    from frozen_sweep.data.preparation import prepare  # numpy and SentencePiece: only when a sweep launches
    from frozen_sweep.data.prepared import MANIFEST
    from frozen_sweep.data.vocab import prepared_vocab_file

    task = job.checked_task
    if job.waits_for is not None:  # the vocabulary the base's run will have: its data's, prepared now
        task = _with_vocab(task, prepared_vocab_file(prepare(job.waits_for.checked_task)))
    manifest = json.loads((Path(prepare(task)) / MANIFEST).read_text(encoding="utf-8"))
    most, base = job.coverage
    return uncovered(unk_rates(manifest), most, task.name, base)


def _with_vocab(task: DictConfig, vocab: Path) -> DictConfig:
    task = OmegaConf.merge(task, {})  # a copy: the job's own task stays as checked
    task.vocab = str(vocab)
    return task
