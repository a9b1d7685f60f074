"""Beam search with a key/value cache, and the translation of a test set in batches (greedy is beam 1)."""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from frozen_sweep.data.batching import pad_sequences
from frozen_sweep.data.vocab import BOS, EOS
from frozen_sweep.model import Transformer


def _select_rows(caches: list[dict[str, Tensor]], rows: Tensor, keys=("self_k", "self_v", "cross_k", "cross_v")) -> None:
    for cache in caches:
        for key in keys:
            cache[key] = cache[key].index_select(0, rows)


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: Tensor,  # (B, S) source ids + eos, padded
    beam: int,
    bos: int,
    eos: int,
    max_len_a: float = 1.2,
    max_len_b: int = 10,
    len_penalty: float = 1.0,
    cache: bool = True,
) -> list[list[int]]:
    """Best hypothesis per sentence (ids without bos/eos). Beam 1 is greedy search.

    A hypothesis' score is its summed log-probability (eos included) divided by length ** len_penalty. At every step
    the 2·beam best continuations are ranked; those ending in eos within the top `beam` are finished, the best `beam`
    others stay live. A sentence is done when it has `beam` finished hypotheses or reaches
    max_len_a · source length + max_len_b tokens; done sentences leave the batch. `cache=False` runs the decoder
    over the whole prefix at every step instead of reusing keys and values (the same search, slower: benchmarks).
    The device is read only when hypotheses finish (a few times per sentence), so a GPU is not stalled every step.
    """
    model.eval()
    B, K = src.shape[0], beam
    src_lens = (src != model.pad_id).sum(1)
    max_positions = model.tgt_embed.positions.shape[0]
    max_len = length_caps(src_lens, max_len_a, max_len_b, max_positions)  # (B,)

    memory, mask = model.encode(src)
    memory = memory.repeat_interleave(K, 0)  # (B*K, S, D)
    mask = mask.repeat_interleave(K, 0)  # (B*K, 1, 1, S)
    caches = model.new_caches() if cache else None
    tokens = torch.full((B * K, 1), bos, dtype=torch.long, device=src.device)  # (B*K, t+1)
    scores = torch.zeros(B, K, device=src.device)  # summed log-probs of the live hypotheses
    scores[:, 1:] = -math.inf  # all beams start identical: keep one
    sentence = list(range(B))  # batch row → original sentence
    limit = max_len.tolist()  # per original sentence, on the host
    row_limit = max_len.repeat_interleave(K)  # per live row, on the device
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    not_eos = torch.arange(model.output.weight.shape[0], device=src.device) != eos

    for t in range(max(limit)):
        n = len(sentence)
        if cache:
            logits = model.decode(tokens[:, -1:], memory, mask, caches, start=t)[:, -1]  # (n*K, V)
        else:  # the decoder reruns the whole prefix; only its last position is projected onto the vocabulary
            logits = model.output(model.decoder(model.tgt_embed(tokens), memory, mask)[:, -1])
        logp = F.log_softmax(logits.float(), dim=-1)
        logp[:, bos] = logp[:, model.pad_id] = -math.inf
        logp = logp.masked_fill((t + 1 >= row_limit).unsqueeze(1) & not_eos, -math.inf)  # at its limit: must end now
        V = logp.shape[1]
        candidates = (scores.view(-1, 1) + logp).view(n, K * V)
        top_scores, top_idx = candidates.topk(2 * K, dim=1)  # (n, 2K)
        from_beam, token = top_idx // V, top_idx % V
        ends = token == eos

        ended = (ends[:, :K] & (top_scores[:, :K] > -math.inf)).nonzero()  # (m, 2): a read, as are the two below
        if len(ended):
            b, j = ended.unbind(1)
            hyps = tokens[b * K + from_beam[b, j], 1:].tolist()
            for row, score, hyp in zip(b.tolist(), top_scores[b, j].tolist(), hyps):
                finished[sentence[row]].append((score / (t + 1) ** len_penalty, hyp))

        live_scores, pick = top_scores.masked_fill(ends, -math.inf).topk(K, dim=1)  # (n, K)
        rows = (torch.arange(n, device=src.device) * K).unsqueeze(1) + from_beam.gather(1, pick)  # (n, K)
        tokens = torch.cat([tokens[rows.view(-1)], token.gather(1, pick).view(-1, 1)], dim=1)
        scores = live_scores
        if cache:  # cross k/v: the same for a sentence's beams
            _select_rows(caches, rows.view(-1), keys=("self_k", "self_v"))

        done = [len(finished[i]) >= K or t + 1 >= limit[i] for i in sentence]
        if all(done):
            break
        if any(done):  # drop done sentences from the batch
            keep_list = [row for row, d in enumerate(done) if not d]
            keep = torch.tensor(keep_list, device=src.device)
            keep_rows = (keep.unsqueeze(1) * K + torch.arange(K, device=src.device)).view(-1)
            sentence = [sentence[row] for row in keep_list]
            scores, tokens, row_limit = scores[keep], tokens[keep_rows], row_limit[keep_rows]
            memory, mask = memory[keep_rows], mask[keep_rows]
            if cache:
                _select_rows(caches, keep_rows)

    return [max(hyps)[1] if hyps else [] for hyps in finished]


def translate(
    model: Transformer,
    sources: list[list[int]],
    vocab,
    device,
    eval_cfg,
    beam: Optional[int] = None,
    cache: bool = True,
    capped: Optional[list] = None,
) -> list[str]:
    """Decode token-id sources (no eos) into detokenised strings, batching sentences of similar length.

    Search settings come from `eval_cfg` (the config's `eval` section); `beam` overrides its beam size; `cache=False`
    decodes without the key/value cache (benchmarks). `capped`, a list, receives the index of every sentence whose
    hypothesis stopped at the length cap (eval.max_len_a × source + eval.max_len_b) rather than at end-of-sentence.
    """
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    max_src = model.src_embed.positions.shape[0] - 1
    out: list[Optional[str]] = [None] * len(sources)
    for start in range(0, len(order), eval_cfg.batch_sentences):
        idx = order[start : start + eval_cfg.batch_sentences]
        src = pad_sequences([sources[i][:max_src] + [EOS] for i in idx])
        hyps = beam_search(
            model,
            src.to(device),
            beam=beam or eval_cfg.beam,
            bos=BOS,
            eos=EOS,
            max_len_a=eval_cfg.max_len_a,
            max_len_b=eval_cfg.max_len_b,
            len_penalty=eval_cfg.len_penalty,
            cache=cache,
        )
        caps = length_caps((src != model.pad_id).sum(1), eval_cfg.max_len_a, eval_cfg.max_len_b,
                           model.tgt_embed.positions.shape[0])  # fmt: skip
        for i, hyp, cap in zip(idx, hyps, caps.tolist()):
            out[i] = vocab.decode(hyp)
            if capped is not None and len(hyp) >= cap - 1:  # the last position left is the forced end-of-sentence
                capped.append(i)
    return out


def length_caps(src_lens: Tensor, max_len_a: float, max_len_b: int, max_positions: int) -> Tensor:
    """Most tokens a hypothesis may have, end-of-sentence included: max_len_a · source length (with its eos) +
    max_len_b, as fairseq's options of the same names, within the model's positions."""
    return (max_len_a * src_lens.float() + max_len_b).long().clamp(1, max_positions - 1)  # (B,)
