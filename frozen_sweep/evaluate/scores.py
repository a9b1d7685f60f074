"""What a test or validation set scores: sacrebleu BLEU/chrF for translations, per-token loss, perplexity and
accuracy for language models (masked positions only for a masked LM), GLUE's metrics for classifiers (accuracy, F1,
Matthews correlation) and regressions (Pearson, Spearman), in numpy."""

import math
from typing import Iterable, Optional

import numpy as np
import sacrebleu
import torch
import torch.nn.functional as F
from torch import Tensor

from frozen_sweep.model import Transformer


def bleu_chrf(hypotheses: list[str], references: list[str]) -> dict:
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    return {
        "bleu": bleu.corpus_score(hypotheses, [references]).score,
        "chrf": chrf.corpus_score(hypotheses, [references]).score,
        "signature": str(bleu.get_signature()),
    }


def perplexity(nll: float) -> float:
    """exp of a per-token NLL, capped so that an untrained model's loss does not overflow."""
    return math.exp(min(nll, 50.0))


def token_nll(model: Transformer, batches: Iterable, device) -> float:
    """Mean negative log-likelihood per target token (eos included, padding excluded, no label smoothing)."""
    return token_scores(model, batches, device)[0]


@torch.no_grad()
def token_scores(model: Transformer, batches: Iterable, device, sentence_nll: Optional[dict] = None
                 ) -> tuple[float, float]:  # fmt: skip
    """(mean NLL, accuracy of the arg-max prediction) per target token; padding in `tgt_out` is skipped, so for a
    masked LM both count the masked positions only. `sentence_nll`, a dict, receives each example's (summed NLL,
    target tokens), keyed by its index (the score command's lines)."""
    model.eval()
    total = torch.zeros((), device=device)  # summed on the device: one read at the end, not one per batch
    correct, count = torch.zeros((), device=device, dtype=torch.long), 0
    for batch in batches:
        batch = batch.to(device)
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        total += F.cross_entropy(
            logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=model.pad_id, reduction="sum"
        )
        correct += ((logits.argmax(-1) == batch.tgt_out) & (batch.tgt_out != model.pad_id)).sum()
        count += batch.n_tokens
        if sentence_nll is not None:
            nll = F.cross_entropy(logits.float().transpose(1, 2), batch.tgt_out, ignore_index=model.pad_id,
                                  reduction="none")  # (B, T), zero at padding  # fmt: skip
            tokens = (batch.tgt_out != model.pad_id).sum(1)  # (B,)
            for example, summed, n in zip(batch.indices.tolist(), nll.sum(1).tolist(), tokens.tolist()):
                sentence_nll[example] = (summed, n)
    return total.item() / max(count, 1), correct.item() / max(count, 1)


def _as_array(x) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _f1(tp: np.ndarray, support: np.ndarray, guessed: np.ndarray) -> np.ndarray:
    """2·TP / (2·TP + FP + FN) = 2·TP / (support + guessed) per class; 0 where a class is neither given nor guessed."""
    return 2 * tp / np.maximum(support + guessed, 1)


def _counts(predicted, gold, num_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class (C,): true positives, gold count (support), predicted count."""
    predicted, gold = _as_array(predicted).astype(np.int64), _as_array(gold).astype(np.int64)
    tp = np.bincount(gold[predicted == gold], minlength=num_classes).astype(np.float64)
    return tp, np.bincount(gold, minlength=num_classes), np.bincount(predicted, minlength=num_classes)


def macro_f1(predicted, gold, num_classes: int) -> float:
    """Unweighted mean over classes of F1 = 2·TP / (2·TP + FP + FN), over the classes that occur in `gold` or in
    `predicted` (scikit-learn's f1_score(average="macro") with its default labels)."""
    tp, support, guessed = _counts(predicted, gold, num_classes)
    present = (support + guessed) > 0
    return float(_f1(tp, support, guessed)[present].mean()) if present.any() else 0.0


def positive_f1(predicted, gold) -> float:
    """F1 of the positive class, label id 1 (GLUE's F1 for MRPC and QQP); 0 when it is neither given nor guessed."""
    tp, support, guessed = _counts(predicted, gold, 2)
    return float(_f1(tp, support, guessed)[1])


def mcc(predicted, gold, num_classes: int) -> float:
    """Matthews correlation, the multiclass form (Gorodkin's R_K, scikit-learn's matthews_corrcoef): (c·s − t·p) /
    √((s² − p·p)(s² − t·t)) with c correct, s examples, t and p the gold and predicted count per class; 0 when the
    denominator is (one class given or guessed throughout: GLUE's CoLA reports 0 then too)."""
    tp, t, p = _counts(predicted, gold, num_classes)
    t, p = t.astype(np.float64), p.astype(np.float64)
    c, s = tp.sum(), t.sum()
    denominator = (s * s - p @ p) * (s * s - t @ t)
    return float((c * s - t @ p) / np.sqrt(denominator)) if denominator > 0 else 0.0


def pearson(predicted, gold) -> float:
    """Pearson's correlation; 0 when either side is constant (undefined: no linear relation to speak of)."""
    x, y = (_as_array(v).astype(np.float64) for v in (predicted, gold))
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(np.clip(x @ y / denominator, -1.0, 1.0)) if denominator > 0 else 0.0


def average_ranks(values) -> np.ndarray:
    """1-based ranks, ties sharing the mean of the ranks they span (scipy's rankdata(method="average"))."""
    values = _as_array(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # first position of each run of ties
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)  # mean of the 1-based ranks start+1 … end
    return ranks


def spearman(predicted, gold) -> float:
    """Spearman's rank correlation: Pearson's of the average ranks (ties averaged); 0 when either side is constant."""
    return pearson(average_ranks(predicted), average_ranks(gold))


def mse(predicted, gold) -> float:
    x, y = (_as_array(v).astype(np.float64) for v in (predicted, gold))
    return float(np.mean((x - y) ** 2)) if len(x) else 0.0


def label_metrics(predicted, gold, num_classes: int) -> dict:
    """A classifier's (config.report.LABEL_METRICS): accuracy, f1 (the positive class's with two labels, else
    macro-F1), macro_f1, mcc."""
    predicted, gold = _as_array(predicted), _as_array(gold)
    return {
        "accuracy": float((predicted == gold).mean()) if len(gold) else 0.0,
        "f1": positive_f1(predicted, gold) if num_classes == 2 else macro_f1(predicted, gold, num_classes),
        "macro_f1": macro_f1(predicted, gold, num_classes),
        "mcc": mcc(predicted, gold, num_classes),
    }


def number_metrics(predicted, gold) -> dict:
    """A regression's: mse, pearson, spearman (config.report.NUMBER_METRICS)."""
    return {"mse": mse(predicted, gold), "pearson": pearson(predicted, gold), "spearman": spearman(predicted, gold)}


@torch.no_grad()
def _outputs(model: Transformer, batches: Iterable, device) -> tuple[Tensor, Tensor]:
    """The head's outputs (N, C) or (N,) and the targets (N,) of every example, in float32 on the CPU, in example
    order."""
    model.eval()
    outputs, gold, order = [], [], []
    for batch in batches:
        batch = batch.to(device)
        outputs.append(model(None, batch.tgt_in).float())  # (B, C) or (B,)
        gold.append(batch.tgt_out)
        order.append(torch.as_tensor(batch.indices))
    back = torch.cat(order).argsort()
    return torch.cat(outputs).cpu()[back], torch.cat(gold).cpu()[back]


def label_scores(model: Transformer, batches: Iterable, device, num_classes: int) -> dict:
    """A classifier's mean NLL per example, label_metrics, and its predicted class ids with their probabilities (in
    example order)."""
    logits, gold = _outputs(model, batches, device)  # (N, C), (N,)
    best = logits.softmax(-1).max(-1)  # (N,) each
    loss = F.cross_entropy(logits, gold, reduction="sum").item() / max(len(gold), 1)
    return {"loss": loss, **label_metrics(best.indices, gold, num_classes), "predicted": best.indices.tolist(),
            "probability": best.values.tolist()}  # fmt: skip


def number_scores(model: Transformer, batches: Iterable, device) -> dict:
    """A regression's loss (the mean squared error), number_metrics, and its predictions (in example order)."""
    predicted, gold = _outputs(model, batches, device)  # (N,) each
    scores = number_metrics(predicted, gold)
    return {"loss": scores["mse"], **scores, "predicted": predicted.tolist()}
