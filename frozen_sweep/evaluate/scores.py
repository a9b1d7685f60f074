"""What a test or validation set scores: sacrebleu BLEU/chrF for translations, per-token loss, perplexity and
accuracy for language models (masked positions only for a masked LM), accuracy and macro-F1 for classifiers."""

import math
from typing import Iterable, Optional

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


def macro_f1(predicted: Tensor, gold: Tensor, num_classes: int) -> float:
    """Unweighted mean over classes of F1 = 2·TP / (2·TP + FP + FN), over the classes that occur in `gold` or in
    `predicted` (scikit-learn's f1_score(average="macro") with its default labels)."""
    tp = torch.bincount(gold[predicted == gold], minlength=num_classes).double()  # (C,)
    support, guessed = torch.bincount(gold, minlength=num_classes), torch.bincount(predicted, minlength=num_classes)
    present = (support + guessed) > 0
    f1 = 2 * tp / (support + guessed).clamp(min=1)
    return f1[present].mean().item() if present.any() else 0.0


@torch.no_grad()
def label_scores(model: Transformer, batches: Iterable, device, num_classes: int) -> dict:
    """A classifier's mean NLL per example, accuracy, macro-F1, and its predicted class ids with their
    probabilities (in the batches' example order)."""
    model.eval()
    nll, predicted, probability, gold, order = [], [], [], [], []
    for batch in batches:
        batch = batch.to(device)
        logits = model(None, batch.tgt_in).float()  # (B, C)
        nll.append(F.cross_entropy(logits, batch.tgt_out, reduction="sum"))
        best = logits.softmax(-1).max(-1)  # (B,) each
        predicted.append(best.indices), probability.append(best.values), gold.append(batch.tgt_out)
        order.append(torch.as_tensor(batch.indices))
    predicted, gold = torch.cat(predicted).cpu(), torch.cat(gold).cpu()  # (N,) each
    n = max(len(gold), 1)
    return {
        "loss": torch.stack(nll).sum().item() / n,
        "accuracy": (predicted == gold).sum().item() / n,
        "f1": macro_f1(predicted, gold, num_classes),
        "predicted": predicted[torch.cat(order).argsort()].tolist(),
        "probability": torch.cat(probability).cpu()[torch.cat(order).argsort()].tolist(),
    }
