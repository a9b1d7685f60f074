"""Layer reset and relearn: take a finished run, re-draw one layer (or some of its parts), freeze everything else at
the trained weights, train on, and measure how many training examples the layer needs to recover.

- The job adopts the base run's task, model and freeze pattern (from its config.yaml): the vocabulary and the
  architecture must be the base's. A pretrained decoder as the base (a save_pretrained directory or a hub name,
  frozen_sweep.job.pretrained_base) gives its model, and its tokenizer reads the job's own corpus; its validation
  before the reset is the pretrained model's own on that corpus, and examples to recover are counted in training
  sentences (its pretraining's are not known here).
- The reset re-draws each parameter with the freeze patterns' inits (`relearn.reset_init`) from a generator seeded by
  (job seed, "relearn/" + name): reproducible, and never the base run's own initial values, even with the same seed.
- Frozen here means the base run's trained weights, not a function of the seed: every model of the job (training,
  resume, test) is made by `RelearnStudy.make_model` — a copy of the base model, then the reset — before a relearn
  checkpoint, which holds the trainable parameters only, is loaded onto it and its frozen ones verified against the
  saved hashes. The base run (record, config, best checkpoint) is loaded once per job.
- Thresholds: the validation loss has recovered "within x" once it is at most (1 + x) × the pre-reset loss; BLEU
  once it is at least (1 − x) × the pre-reset BLEU. Examples to recover are the training sentences (and target
  tokens) seen at the first validation that meets the threshold — the right-after-reset validation counts as 0 —,
  also as a fraction of the sentences the base run had seen at its own best validation. With validations every N
  steps they are upper bounds, N steps coarse. `recovered`: every threshold met before the budget ran out.
"""

import copy
import logging
from functools import cached_property
from typing import Optional

from frozen_sweep.config import Init, ResetParts
from frozen_sweep.config.stack_layout import parse_reset_layer
from frozen_sweep.data import TaskData
from frozen_sweep.data.checkpoint_files import is_checkpoint_source
from frozen_sweep.model import Transformer
from frozen_sweep.run.record import RunResult
from frozen_sweep.study.freeze import FreezeStudy
from frozen_sweep.study.relearn_bases import PretrainedBase, base_summary
from frozen_sweep.study.reservoir import describe_reservoirs
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.finished_run import FinishedRun, load_run
from frozen_sweep.weights.reset import layer_parameters, reset

log = logging.getLogger(__name__)

METRICS = (("loss", "valid_loss"), ("bleu", "valid_bleu"))


class RelearnStudy(FreezeStudy):
    @cached_property
    def base(self) -> FinishedRun | PretrainedBase:
        """The base, loaded on first use and never trained: a run's model has the weights of its best validation, a
        pretrained checkpoint's its own."""
        source = self.cfg.relearn.base_checkpoint
        if is_checkpoint_source(source):
            return PretrainedBase.load(source, self.cfg.model.max_positions)
        return load_run(source)

    def make_model(self, data: TaskData) -> Transformer:
        """The base's weights with the layer reset, all else frozen (the job's vocabulary is the base's)."""
        model = copy.deepcopy(self.base.model)
        reset(model, self.cfg.relearn, self.cfg.seed)
        return model

    def describe(self, model: Transformer, result: RunResult) -> None:
        if self.cfg.reservoir.name != "none":  # adopted from a reservoir base run
            result.reservoir = describe_reservoirs(self.cfg, model)

    def before_training(self, trainer: Trainer, result: RunResult) -> None:
        """Record the base run and the validations before and right after the reset in `result.relearn`."""
        r, base = self.cfg.relearn, self.base
        stack, index = parse_reset_layer(r.reset_layer)
        pre = trainer.validation_scores(copy.deepcopy(base.model).to(trainer.device))
        post = {"train_sentences": 0, "train_tokens": 0, **trainer.validation_scores()}
        result.relearn = {
            **base_summary(base),
            "stack": stack,
            "layer": index,
            "parts": ResetParts(r.reset_parts).value,
            "init": Init(r.reset_init).value,
            "train_neighbours": r.train_neighbours,
            "reset_parameters": layer_parameters(trainer.model, stack, index, ResetParts(r.reset_parts)),
            "thresholds": list(r.thresholds),
            "pre_reset": pre,
            "post_reset": post,
        }
        log.info(
            "relearn %s.%d (%s) from %s: valid loss %.3f before the reset, %.3f right after",
            stack, index, result.relearn["parts"], base.path, pre["valid_loss"], post["valid_loss"],
        )  # fmt: skip

    def after_training(self, result: RunResult) -> None:
        finish(result)


def finish(result: RunResult) -> None:
    """Add the final validation, examples to recover and `recovered` to `result.relearn`, from its history."""
    rl = result.relearn
    curve = [rl["post_reset"], *result.history]
    base_sentences = (rl["base_examples_to_best"] or {}).get("sentences")  # None: a pretrained base's are unknown
    recovery = examples_to_recover(curve, rl["pre_reset"], rl["thresholds"], base_sentences)
    last = result.history[-1]
    rl["final"] = {k: last[k] for k in ("train_sentences", "train_tokens", "valid_loss", "valid_ppl", "valid_bleu")}
    rl["budget_fraction"] = last["train_sentences"] / base_sentences if base_sentences else None
    rl["examples_to_recover"] = recovery
    rl["recovered"] = all(e["sentences"] is not None for e in recovery)


def examples_to_recover(curve: list[dict], pre: dict, thresholds: list[float],
                        base_sentences: Optional[int]) -> list[dict]:  # fmt: skip
    """For each metric that was measured before the reset (loss; BLEU for translation) and each threshold x: the
    first point of `curve` within x of the pre-reset value (module docstring); sentences, tokens and fraction are
    None when no point gets there (fraction also without `base_sentences`: a pretrained base's)."""
    out = []
    for metric, key in METRICS:
        if pre.get(key) is None:
            continue
        for x in thresholds:
            target = pre[key] * (1 + x) if metric == "loss" else pre[key] * (1 - x)
            hit = _first_within(curve, metric, key, target)
            out.append({
                "metric": metric,
                "threshold": x,
                "target": target,
                "sentences": hit and hit["train_sentences"],
                "tokens": hit and hit.get("train_tokens"),
                "fraction": hit and base_sentences and hit["train_sentences"] / base_sentences,
            })  # fmt: skip
    return out


def _first_within(curve: list[dict], metric: str, key: str, target: float) -> Optional[dict]:
    for point in curve:
        value = point.get(key)
        if value is not None and (value <= target if metric == "loss" else value >= target):
            return point
    return None


STUDY = RelearnStudy
