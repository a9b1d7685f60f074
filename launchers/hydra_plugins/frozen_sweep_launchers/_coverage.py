"""The data a fine-tuning job waiting for its base will read, prepared at plan time: its task under the vocabulary
the base's run will have, which is the one the base's own data is prepared with (prepared now too; the base's run
then opens it). So the plan checks the base's vocabulary's coverage of the task (_plan._check_coverage) before the
base trains, not once it has."""

from pathlib import Path

from omegaconf import OmegaConf

from ._planned import PlannedJob


def waiting_data(job: PlannedJob) -> Path:
    """The prepared directory of `job`'s task under its base's vocabulary (OSError or ValueError for bad data)."""
    from frozen_sweep.data.preparation import prepare  # numpy and SentencePiece: only when a sweep launches
    from frozen_sweep.data.vocab import prepared_vocab_file

    task = OmegaConf.merge(job.checked_task, {})  # a copy: the job's own task stays as checked
    task.vocab = str(prepared_vocab_file(prepare(job.waits_for.checked_task)))
    return prepare(task)
