"""A micro training run in the test process, for the metrics and tracking tests that inspect what it logs."""

import pytest
import torch

from frozen_sweep.data import load_task
from frozen_sweep.system import cpu
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model
from tests.conftest import compose_config

LOGGING = ["trainer.loggers=[jsonl,tensorboard]", "trainer.log_every_steps=2", "trainer.validate_every_steps=4",
           "trainer.valid_bleu_sentences=10", "model.dropout=0"]  # fmt: skip


class Killed(Exception):
    """Raised from a validation callback: the run dies there, as a killed job would."""


@pytest.fixture(autouse=True)
def one_thread():
    """As a job with trainer=quick runs (trainer.threads=1): on a busy 2-core machine, several times faster.
    Autouse in every test module that imports it."""
    threads = torch.get_num_threads()
    cpu.set_threads(1)
    yield
    cpu.set_threads(threads)


def fit(run_dir, micro_overrides, *extra, on_validation=None) -> Trainer:
    cfg = compose_config(*micro_overrides, *LOGGING, *extra)
    data = load_task(cfg.task)
    model = build_model(cfg, len(data.vocab))
    trainer = Trainer(cfg, data, model, torch.device("cpu"), run_dir, on_validation=on_validation)
    trainer.resume_if_possible()
    trainer.fit()
    return trainer
