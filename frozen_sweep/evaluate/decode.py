"""Beam search with a key/value cache, and the translation of a test set in batches (greedy is beam 1)."""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from frozen_sweep.data.batching import pad_sequences
from frozen_sweep.model import Transformer


DROP_AT = 8  # done sentences leave the batch once they are at least 1/DROP_AT of it
ENCODE_ROWS = 16  # sources encoded at a time by `encode_by_length`


def select_rows(caches: list[dict[str, Tensor]], rows: Tensor, keys: tuple[str, ...]) -> None:
    for cache in caches:
        for key in keys:
            if key in cache:
                cache[key] = cache[key].index_select(0, rows)


def beam_search(model: Transformer, src: Tensor, beam: int, bos: int, eos: int, **search) -> list[list[int]]:
    """Best hypothesis per sentence (ids without bos/eos): `beam_search_nbest`'s first."""
    return [hyps[0][1] if hyps else [] for hyps in beam_search_nbest(model, src, beam, bos, eos, nbest=1, **search)]


@torch.inference_mode()
def beam_search_nbest(
    model: Transformer,
    src: Tensor,  # (B, S) source ids + eos, padded
    beam: int,
    bos: int,
    eos: int,
    max_len_a: float = 1.2,
    max_len_b: int = 10,
    len_penalty: float = 1.0,
    cache: bool = True,
    nbest: int = 1,
) -> list[list[tuple[float, list[int]]]]:
    """The `nbest` best (score, hypothesis) per sentence, best first (ids without bos/eos). Beam 1 is greedy search.

    A hypothesis' score is its summed log-probability (eos included) divided by length ** len_penalty. At every step
    the 2·beam best continuations are ranked; those ending in eos within the top `beam` are finished, the best `beam`
    others stay live. A sentence is done when it has `beam` finished hypotheses or reaches
    max_len_a · source length + max_len_b tokens; done sentences leave the batch together once they are an eighth of
    it (a removal copies every cache; until then their rows run on, unused). `cache=False` runs the decoder over the
    whole prefix at every step instead of reusing keys and values (the same search, slower: benchmarks).
    The device is read only when hypotheses finish (a few times per sentence), so a GPU is not stalled every step.
    """
    model.eval()
    B, K = src.shape[0], beam
    src_lens = (src != model.pad_id).sum(1)
    max_positions = model.tgt_embed.max_positions
    max_len = length_caps(src_lens, max_len_a, max_len_b, max_positions)  # (B,)

    # once per sentence, not per hypothesis: cross-attention reads a sentence's keys and values for its K rows at once
    memory, mask = encode_by_length(model, src)  # (B, S, D), (B, 1, 1, S)
    # additive (0 or -inf), made once, rather than a boolean mask attention converts at every step
    mask = torch.zeros(mask.shape, dtype=memory.dtype, device=src.device).masked_fill_(~mask, -math.inf)
    caches = model.new_caches() if cache else None
    tokens = torch.full((B * K, 1), bos, dtype=torch.long, device=src.device)  # (B*K, t+1)
    scores = torch.zeros(B, K, device=src.device)  # summed log-probs of the live hypotheses
    scores[:, 1:] = -math.inf  # all beams start identical: keep one
    sentence = list(range(B))  # batch row → original sentence
    limit = max_len.tolist()  # per original sentence, on the host
    row_limit = max_len.repeat_interleave(K)  # per live row, on the device
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    closed = [False] * B  # done: no more hypotheses (its rows may still run until the next removal)
    not_eos = None  # (V,): from the first logits (the output weight may be drawn only while it projects)
    nearest_limit = min(limit)  # the lowest limit of a sentence still in the batch, on the host

    for t in range(max(limit)):
        n = len(sentence)
        if cache:
            logits = model.decode(tokens[:, -1:], memory, mask, caches, start=t)[:, -1]  # (n*K, V)
        else:  # the decoder reruns the whole prefix; only its last position is projected onto the vocabulary
            logits = model.output(model.decoder(model.tgt_embed(tokens), memory, mask)[:, -1])
        logp = F.log_softmax(logits.float(), dim=-1)
        if not_eos is None:
            not_eos = torch.arange(logp.shape[1], device=src.device) != eos
        logp[:, bos] = logp[:, model.pad_id] = -math.inf
        if t + 1 >= nearest_limit:  # a row at its limit must end now (the mask only from the first such step)
            logp = logp.masked_fill((t + 1 >= row_limit).unsqueeze(1) & not_eos, -math.inf)
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
                if not closed[sentence[row]]:
                    finished[sentence[row]].append((score / (t + 1) ** len_penalty, hyp))

        live_scores, pick = top_scores.masked_fill(ends, -math.inf).topk(K, dim=1)  # (n, K)
        if K == 1:  # greedy: every row continues itself, nothing to reorder
            tokens = torch.cat([tokens, token.gather(1, pick)], dim=1)
        else:
            rows = (torch.arange(n, device=src.device) * K).unsqueeze(1) + from_beam.gather(1, pick)  # (n, K)
            tokens = torch.cat([tokens[rows.view(-1)], token.gather(1, pick).view(-1, 1)], dim=1)
            if cache:  # cross k/v: the same for a sentence's beams
                select_rows(caches, rows.view(-1), keys=("self_k", "self_v"))
        scores = live_scores

        done = [len(finished[i]) >= K or t + 1 >= limit[i] for i in sentence]
        for i, d in zip(sentence, done):
            closed[i] |= d
        if all(done):
            break
        if sum(done) * DROP_AT >= len(done):  # drop done sentences from the batch
            keep_list = [row for row, d in enumerate(done) if not d]
            keep = torch.tensor(keep_list, device=src.device)
            keep_rows = (keep.unsqueeze(1) * K + torch.arange(K, device=src.device)).view(-1)
            sentence = [sentence[row] for row in keep_list]
            nearest_limit = min(limit[i] for i in sentence)
            scores, tokens, row_limit = scores[keep], tokens[keep_rows], row_limit[keep_rows]
            memory, mask = memory[keep], mask[keep]
            if cache:
                select_rows(caches, keep_rows, keys=("self_k", "self_v"))
                select_rows(caches, keep, keys=("cross_k", "cross_v"))

    return [sorted(hyps, reverse=True)[:nbest] for hyps in finished]


def encode_by_length(model: Transformer, src: Tensor, rows: int = ENCODE_ROWS) -> tuple[Tensor, Tensor]:
    """`model.encode(src)` (src right-padded), run on `rows` sources of similar length at a time, each group padded
    only to its own longest: a batch's lengths vary (most are shorter than its longest), and the encoder's work is
    in proportion to the padded tokens. Padding positions of the memory are 0 (attention never reads them)."""
    src_lens = (src != model.pad_id).sum(1)  # (B,)
    memory = None
    for group in src_lens.argsort(stable=True).split(rows):
        width = int(src_lens[group].max())
        encoded, _ = model.encode(src[group, :width])  # (rows, width, D)
        if memory is None:
            memory = encoded.new_zeros(src.shape[0], src.shape[1], encoded.shape[2])  # (B, S, D)
        memory[group, :width] = encoded
    return memory, (src != model.pad_id)[:, None, None, :]


def translate(model: Transformer, sources: list[list[int]], vocab, device, eval_cfg, **options) -> list[str]:
    """Decode token-id sources (no eos) into detokenised strings: `translate_nbest`'s best of each."""
    return [hyps[0][1] for hyps in translate_nbest(model, sources, vocab, device, eval_cfg, **options)]


def translate_nbest(
    model: Transformer,
    sources: list[list[int]],
    vocab,
    device,
    eval_cfg,
    beam: Optional[int] = None,
    cache: bool = True,
    capped: Optional[list] = None,
    nbest: int = 1,
    max_tokens: Optional[int] = None,
    on_batch=None,
) -> list[list[tuple[float, str]]]:
    """The `nbest` best (score, detokenised string) of each source, best first, batching sentences of similar length.

    Search settings come from `eval_cfg` (the config's `eval` section); `beam` overrides its beam size; `cache=False`
    decodes without the key/value cache (benchmarks). `capped`, a list, receives the index of every sentence whose
    best hypothesis stopped at the length cap (eval.max_len_a × source + eval.max_len_b) rather than at
    end-of-sentence. Batches: sentences sorted by length, at most eval.batch_sentences each and, with `max_tokens`, at
    most that many padded source tokens; `on_batch(n)` is called after each batch of n sentences (progress).
    """
    max_src = model.src_embed.max_positions - 1
    out: list[list[tuple[float, str]]] = [[] for _ in sources]
    for idx in length_batches([len(s) + 1 for s in sources], eval_cfg.batch_sentences, max_tokens):
        src = pad_sequences([sources[i][:max_src] + [vocab.specials.eos] for i in idx], model.pad_id)
        hyps = beam_search_nbest(
            model,
            src.to(device),
            beam=beam or eval_cfg.beam,
            bos=vocab.specials.bos,
            eos=vocab.specials.eos,
            max_len_a=eval_cfg.max_len_a,
            max_len_b=eval_cfg.max_len_b,
            len_penalty=eval_cfg.len_penalty,
            cache=cache,
            nbest=nbest,
        )
        caps = length_caps((src != model.pad_id).sum(1), eval_cfg.max_len_a, eval_cfg.max_len_b,
                           model.tgt_embed.max_positions)  # fmt: skip
        for i, ranked, cap in zip(idx, hyps, caps.tolist()):
            out[i] = [(score, vocab.decode(hyp)) for score, hyp in ranked] or [(-math.inf, "")]
            best = ranked[0][1] if ranked else []
            if capped is not None and len(best) >= cap - 1:  # the last position left is the forced end-of-sentence
                capped.append(i)
        if on_batch is not None:
            on_batch(len(idx))
    return out


def length_batches(lengths: list[int], max_sentences: int, max_tokens: Optional[int] = None) -> list[list[int]]:
    """Indices sorted by length (stable), cut into batches of at most `max_sentences` and, with `max_tokens`, at most
    that many padded tokens (sentences × the longest); a sentence longer than `max_tokens` is a batch of its own.
    Without `max_tokens` these are the batches a run's test set was decoded in."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        batch = batches[-1] if batches else None
        if batch is None or len(batch) >= max_sentences or (
            max_tokens is not None and (len(batch) + 1) * lengths[i] > max_tokens
        ):
            batches.append([i])
        else:
            batch.append(i)
    return batches


def length_caps(src_lens: Tensor, max_len_a: float, max_len_b: int, max_positions: int) -> Tensor:
    """Most tokens a hypothesis may have, end-of-sentence included: max_len_a · source length (with its eos) +
    max_len_b, as fairseq's options of the same names, within the model's positions."""
    return (max_len_a * src_lens.float() + max_len_b).long().clamp(1, max_positions - 1)  # (B,)
