"""What a test or validation set scores: sacrebleu BLEU/chrF for translations, per-token loss, perplexity and
accuracy for language models (masked positions only for a masked LM)."""

import math
from typing import Iterable, Optional

import sacrebleu
import torch
import torch.nn.functional as F

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
