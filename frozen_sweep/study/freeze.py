"""The freeze study, and every job's default: the model of the config (seeded init, the freeze pattern applied),
trained and tested with nothing added. The other studies subclass it."""

from frozen_sweep.data import TaskData
from frozen_sweep.model import Transformer
from frozen_sweep.run.record import RunResult
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model


class FreezeStudy:
    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def make_model(self, data: TaskData) -> Transformer:
        return build_model(self.cfg, len(data.vocab), data.head_outputs, data.vocab.specials.pad)

    def describe(self, model: Transformer, result: RunResult) -> None:
        pass

    def before_training(self, trainer: Trainer, result: RunResult) -> None:
        pass

    def after_training(self, result: RunResult) -> None:
        pass


STUDY = FreezeStudy
