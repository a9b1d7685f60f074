"""Validation scores of a model during training: loss and perplexity on the validation set, whose batches are copied
to the device once, greedy BLEU on its first `trainer.valid_bleu_sentences` sentences (translation only), for a
masked LM the loss, perplexity and accuracy on its masked positions (the same masks at every validation), and a
classifier's or regression's GLUE metrics (evaluate/scores.py), each a possible trainer.stop_metric.

A quick job validates quickly: a translation or language model under a `trainer.max_steps` budget of fewer than
QUICK_STEPS (100) updates scores (and decodes for BLEU) at most one validation example per update (trainer=quick
decodes 50 sentences of its own), so that validating a 20-step job does not take longer than training it
(docs/training.md). The cap enters the job's fingerprint (job/fingerprint.py)."""

from typing import Optional

from torch import nn

from frozen_sweep.config import TaskKind
from frozen_sweep.config.report import LABEL_METRICS, NUMBER_METRICS
from frozen_sweep.config.trainer import quick_validation_cap
from frozen_sweep.data import TaskData
from frozen_sweep.data.masking import held_out_batches
from frozen_sweep.evaluate.decode import translate
from frozen_sweep.evaluate.scores import (
    bleu_chrf,
    label_scores,
    number_scores,
    perplexity,
    token_scores,
)  # fmt: skip


VALID_BEAM = 1  # validation BLEU is greedy


def bleu_sentences(cfg) -> Optional[int]:
    """How many validation sentences are decoded for BLEU: trainer.valid_bleu_sentences (null: all, 0: none), at most
    the quick cap."""
    n, cap = cfg.trainer.valid_bleu_sentences, quick_validation_cap(cfg)
    return n if cap is None or n == 0 else cap if n is None else min(n, cap)


class Validation:
    def __init__(self, cfg, data: TaskData, device):
        self.cfg, self.tr, self.data, self.device = cfg, cfg.trainer, data, device
        self.monolingual, self.is_mlm = cfg.task.kind.monolingual, cfg.task.kind == TaskKind.mlm
        self.classes, self.regression = data.num_classes, data.regression  # a head's: GLUE's metrics
        tr = self.tr
        self.valid = data.valid.head(quick_validation_cap(cfg))
        valid = held_out_batches(self.valid, "valid", cfg.task, len(data.vocab), tr.max_tokens, tr.length_multiple)
        self.batches = [batch.to(device) for batch in valid]  # copied to the device once, for every validation

    def scores(self, model: nn.Module) -> dict:
        """valid_loss, valid_ppl, valid_bleu (None for LM or when disabled), valid_metric of `model`; a masked LM's
        valid_accuracy; a classifier's valid_accuracy (its valid_metric), valid_f1, valid_macro_f1 and valid_mcc; a
        regression's valid_pearson (its valid_metric; valid_loss is its mean squared error, no perplexity) and
        valid_spearman."""
        if self.classes:
            scores = label_scores(model, self.batches, self.device, self.classes)
            return {"valid_loss": scores["loss"], "valid_ppl": perplexity(scores["loss"]), "valid_bleu": None,
                    "valid_metric": scores["accuracy"], **{f"valid_{k}": scores[k] for k in LABEL_METRICS}}  # fmt: skip
        if self.regression:
            scores = number_scores(model, self.batches, self.device)
            return {"valid_loss": scores["loss"], "valid_ppl": None, "valid_bleu": None,
                    "valid_metric": scores["pearson"], **{f"valid_{k}": scores[k] for k in NUMBER_METRICS}}  # fmt: skip
        valid_loss, valid_accuracy = token_scores(model, self.batches, self.device)
        valid_bleu = self.bleu(model) if self.settings()["bleu_sentences"] else None
        valid_ppl = perplexity(valid_loss)
        scores = {
            "valid_loss": valid_loss,
            "valid_ppl": valid_ppl,
            "valid_bleu": valid_bleu,
            "valid_metric": valid_ppl if self.monolingual else valid_bleu,
        }
        return scores | {"valid_accuracy": valid_accuracy} if self.is_mlm else scores

    def settings(self) -> dict:
        """What a validation uses, for the record: the validation examples scored, the sentences decoded for BLEU (0
        without validation BLEU) and their beam."""
        if self.monolingual or self.classes or self.regression:
            return {"examples": len(self.valid), "bleu_sentences": 0, "beam": None}
        n, held_out = bleu_sentences(self.cfg), len(self.valid)
        return {"examples": held_out, "bleu_sentences": held_out if n is None else min(n, held_out), "beam": VALID_BEAM}

    def bleu(self, model: nn.Module) -> float:
        """Greedy-decoded BLEU on the validation set (or its first `bleu_sentences`)."""
        valid = self.valid
        sources = valid.sources(bleu_sentences(self.cfg))
        refs = valid.tgt_text[: len(sources)]
        hyps = translate(model, sources, self.data.vocab, self.device, self.cfg.eval, beam=VALID_BEAM)
        return bleu_chrf(hyps, refs)["bleu"]
