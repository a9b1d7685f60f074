"""Studies: what one kind of experiment adds to a job (docs/studies.md, "How to add a study").

Every job runs the same pipeline (frozen_sweep.job.runner) and calls its study's hooks at fixed points. The config's
`study` key names the module here that supplies them: `STUDY`, a class built from the job's config. The freeze
study (freeze.py) adds nothing; the others subclass it and override the hooks they need.
"""

import importlib
from typing import Protocol

from frozen_sweep.config import StudyName
from frozen_sweep.data import TaskData
from frozen_sweep.model import Transformer
from frozen_sweep.run.record import RunResult
from frozen_sweep.train.trainer import Trainer


class Study(Protocol):
    def __init__(self, cfg) -> None: ...

    def make_model(self, data: TaskData) -> Transformer:
        """A fresh model for the job: the one it trains, and the one it tests (the best checkpoint is loaded onto
        it, its frozen parameters verified), so both must come out the same."""

    def describe(self, model: Transformer, result: RunResult) -> None:
        """Add what the study's table needs to know about the model to the record, before training."""

    def before_training(self, trainer: Trainer, result: RunResult) -> None:
        """Called before the trainer resumes from a checkpoint: `trainer.model` is still the fresh model."""

    def after_training(self, result: RunResult) -> None:
        """Complete the record from the finished training (`result.history`, before the test)."""


def for_config(cfg) -> Study:
    """The study `cfg.study` names (the schema's StudyName lists them), built from the job's config."""
    return importlib.import_module(f"{__name__}.{StudyName(cfg.study).value}").STUDY(cfg)
