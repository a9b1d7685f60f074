"""A job's test: its best validation's weights on the test set: accuracy, F1 and Matthews correlation for a
classifier, Pearson, Spearman and the mean squared error for a regression, perplexity for a language model (a masked
LM's on its masked positions), beam search and sacrebleu for translation, whose hypotheses, references and sources
are saved beside the result for significance tests and to use the run on its test set again."""

import logging
from pathlib import Path
from typing import Optional

from frozen_sweep.config import TaskKind
from frozen_sweep.config.report import LABEL_METRICS, NUMBER_METRICS
from frozen_sweep.data import TaskData, make_batches
from frozen_sweep.data.masking import held_out_batches
from frozen_sweep.evaluate.decode import translate
from frozen_sweep.evaluate.scores import (
    bleu_chrf,
    label_scores,
    number_scores,
    perplexity,
    token_scores,
)  # fmt: skip
from frozen_sweep.model import Transformer
from frozen_sweep.run.directory import TEST_HYPOTHESES, TEST_REFERENCES, TEST_SOURCES
from frozen_sweep.system.files import write_text_atomic
from frozen_sweep.train.progress_report import EvaluationReport

log = logging.getLogger(__name__)


def evaluate_test(cfg, data: TaskData, model: Transformer, device, run_dir: Path,
                  progress: Optional[EvaluationReport] = None) -> dict:  # fmt: skip
    """Test metrics with the weights of the best validation; hypotheses and references are saved beside the result.
    `progress` (the job's progress.json) shows the test phase: decoding's sentences, then scoring."""
    if progress is not None:
        progress.testing()
    if data.num_classes:  # a classifier: accuracy (a fraction, its metric), f1, macro_f1, mcc
        scores = label_scores(model, make_batches(data.test, cfg.trainer.max_tokens, False), device, data.num_classes)
        return {"metric": scores["accuracy"], **{name: scores[name] for name in LABEL_METRICS}}
    if data.regression:  # Pearson (its metric), Spearman, the mean squared error
        scores = number_scores(model, make_batches(data.test, cfg.trainer.max_tokens, False), device)
        return {"metric": scores["pearson"], **{name: scores[name] for name in ("mse", *NUMBER_METRICS)}}
    if cfg.task.kind.monolingual:  # perplexity; a masked LM's on its masked positions, with their accuracy
        batches = held_out_batches(data.test, "test", cfg.task, len(data.vocab), cfg.trainer.max_tokens)
        nll, accuracy = token_scores(model, batches, device)
        return {"metric": perplexity(nll), "accuracy": accuracy if cfg.task.kind == TaskKind.mlm else None}
    capped: list[int] = []
    sources = data.test.sources()
    on_batch = progress.counter(len(sources)) if progress is not None else None
    hyps = translate(model, sources, data.vocab, device, cfg.eval, capped=capped, on_batch=on_batch)
    if progress is not None:
        progress.scoring()
    saved = ((TEST_HYPOTHESES, hyps), (TEST_REFERENCES, data.test.tgt_text), (TEST_SOURCES, data.test.src_text))
    for name, lines in saved:  # for significance tests, and to translate or score the test set again
        write_text_atomic(run_dir / name, "".join(line + "\n" for line in lines))
    scores = bleu_chrf(hyps, data.test.tgt_text)
    batches = held_out_batches(data.test, "test", cfg.task, len(data.vocab), cfg.trainer.max_tokens)
    loss, _ = token_scores(model, batches, device)  # the references' NLL per token: what score's force-decoding gives
    e = cfg.eval
    decoding = {"beam": e.beam, "len_penalty": e.len_penalty, "max_len_a": e.max_len_a, "max_len_b": e.max_len_b,
                "sentences": len(hyps), "at_length_cap": len(capped)}  # fmt: skip
    if len(capped) > 0.1 * len(hyps):
        log.warning(
            "%d of %d test hypotheses ran to the length cap (eval.max_len_a=%g × source + eval.max_len_b=%d) without "
            "ending: the model rarely predicts end-of-sentence (undertrained?)", len(capped), len(hyps), e.max_len_a,
            e.max_len_b,
        )  # fmt: skip
    return {"metric": scores["bleu"], "chrf": scores["chrf"], "loss": loss, "signature": scores["signature"],
            "decoding": decoding}  # fmt: skip
