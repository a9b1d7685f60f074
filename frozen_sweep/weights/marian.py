"""A translation run as Hugging Face MarianMT: a directory that `transformers` loads (MarianMTModel, MarianTokenizer).

MarianMT is the same post-norm encoder–decoder with sqrt(d)-scaled embeddings, fixed sinusoidal positions and
biased attention and FFN projections, so the weights carry over one to one but for the positions: ours interleave
sine and cosine (sin in even dimensions, cos in odd), Marian's put every sine before every cosine. Every residual-stream
dimension is therefore permuted (even ones first, then odd ones): embedding and output-projection columns, the inputs
of the projections that read the stream, the outputs and biases of those that write it, the layer norms. Nothing else
changes; the logits agree to float rounding (~1e-6).

Not expressible (refused, saying which): language models and masked LMs (not MarianMT's shape), pre-norm models
(Marian has no final stack norm), the LLaMA-style options, reservoirs other than transformer layers (FFN-only, BiGRU,
convolution). The search differs too: MarianMT's `generate` has one length limit per batch where ours has max_len_a × source + max_len_b
per sentence, and its beam search ends differently; greedy search of one sentence at a time with
max_new_tokens = our cap − 1 and pad and bos banned gives our greedy translations. Its generation_config holds no
max_length (generate(max_new_tokens=...) would warn that they contradict) but max_new_tokens = the positions − 2.
"""

import json
from pathlib import Path

import torch

from frozen_sweep.config import FfnKind, NormPosition, Positions, ReservoirType, TaskKind, TieEmbeddings
from frozen_sweep.data.specials import BOS, EOS, PAD
from frozen_sweep.data.vocab import Vocab
from frozen_sweep.model import Transformer
from frozen_sweep.model.reservoir import Reservoir


def not_expressible(cfg) -> list[str]:
    """Why MarianMT cannot hold this run's model (empty when it can)."""
    reasons = []
    if TaskKind(cfg.task.kind) != TaskKind.translation:
        reasons.append(f"task.kind={TaskKind(cfg.task.kind).value}: MarianMT is an encoder–decoder translation model")
    m = cfg.model
    if NormPosition(m.norm) != NormPosition.post:
        reasons.append(f"model.norm={NormPosition(m.norm).value}: MarianMT is post-LayerNorm only (no final norm per "
                       "stack)")  # fmt: skip
    if FfnKind(m.ffn) != FfnKind.mlp or Positions(m.positions) != Positions.sinusoidal:
        reasons.append("model.ffn=swiglu or model.positions=rope: MarianMT has the paper's FFN and sinusoidal positions")
    if m.token_types or m.embed_norm:
        reasons.append("model.token_types or model.embed_norm: MarianMT's embeddings are the tokens and sinusoidal "
                       "positions alone")  # fmt: skip
    if m.kv_heads not in (None, m.heads) or not m.bias or m.norm_eps != 1e-5:
        reasons.append("model.kv_heads, model.bias=false or model.norm_eps: MarianMT has one key/value head per query "
                       "head, biases and LayerNorm's eps 1e-5")  # fmt: skip
    if cfg.reservoir.count and ReservoirType(cfg.reservoir.type) != ReservoirType.transformer:
        reasons.append(f"reservoir.type={ReservoirType(cfg.reservoir.type).value}: MarianMT layers are transformer "
                       "layers only")  # fmt: skip
    return reasons


def marian_config(cfg, vocab_size: int):
    from transformers import MarianConfig

    m, tie = cfg.model, TieEmbeddings(cfg.model.tie_embeddings)
    return MarianConfig(
        vocab_size=vocab_size, d_model=m.d_model, encoder_layers=m.encoder_layers, decoder_layers=m.decoder_layers,
        encoder_attention_heads=m.heads, decoder_attention_heads=m.heads, encoder_ffn_dim=m.ffn_dim,
        decoder_ffn_dim=m.ffn_dim, activation_function=m.activation.value, max_position_embeddings=m.max_positions,
        dropout=m.dropout, attention_dropout=m.attention_dropout, activation_dropout=m.activation_dropout,
        pad_token_id=PAD, eos_token_id=EOS, bos_token_id=BOS, decoder_start_token_id=BOS, forced_eos_token_id=None,
        scale_embedding=True, share_encoder_decoder_embeddings=tie == TieEmbeddings.all,
        tie_word_embeddings=tie != TieEmbeddings.none, decoder_vocab_size=vocab_size,
    )  # fmt: skip


def marian_state_dict(model: Transformer) -> dict[str, torch.Tensor]:
    """Our parameters under MarianMT's names, the residual stream's dimensions permuted (module docstring)."""
    ours = {name: p.detach() for name, p in model.named_parameters(remove_duplicate=False)}
    d = ours["tgt_embed.tokens.weight"].shape[1]
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    out = {}

    def linear(src: str, dst: str, reads: bool, writes: bool) -> None:
        weight, bias = ours[f"{src}.weight"], ours[f"{src}.bias"]
        weight = weight[:, perm] if reads else weight
        out[f"{dst}.weight"], out[f"{dst}.bias"] = (weight[perm], bias[perm]) if writes else (weight, bias)

    def norm(src: str, dst: str) -> None:
        out[f"{dst}.weight"], out[f"{dst}.bias"] = ours[f"{src}.weight"][perm], ours[f"{src}.bias"][perm]

    def attention(src: str, dst: str) -> None:
        for p in "qkv":
            linear(f"{src}.{p}_proj", f"{dst}.{p}_proj", True, False)
        linear(f"{src}.out_proj", f"{dst}.out_proj", False, True)

    for stack in ("encoder", "decoder"):
        for i, layer in enumerate(getattr(model, stack).layers):
            o = f"{stack}.layers.{i}" + (".layer" if isinstance(layer, Reservoir) else "")
            h = f"model.{stack}.layers.{i}"
            attention(f"{o}.self_attn", f"{h}.self_attn")
            norm(f"{o}.self_attn_res.norm", f"{h}.self_attn_layer_norm")
            if stack == "decoder":
                attention(f"{o}.cross_attn", f"{h}.encoder_attn")
                norm(f"{o}.cross_attn_res.norm", f"{h}.encoder_attn_layer_norm")
            linear(f"{o}.ffn.fc1", f"{h}.fc1", True, False)
            linear(f"{o}.ffn.fc2", f"{h}.fc2", False, True)
            norm(f"{o}.ffn_res.norm", f"{h}.final_layer_norm")
    out["model.shared.weight"] = ours["src_embed.tokens.weight"][:, perm]
    out["model.encoder.embed_tokens.weight"] = out["model.shared.weight"]
    out["model.decoder.embed_tokens.weight"] = ours["tgt_embed.tokens.weight"][:, perm]
    out["lm_head.weight"] = ours["output.weight"][:, perm]
    return {name: t.contiguous() for name, t in out.items()}


def write_marian(directory: Path, cfg, model: Transformer, vocab: Vocab) -> None:
    """save_pretrained of the MarianMTModel, its greedy generation settings, and a MarianTokenizer's files (the
    SentencePiece model as source.spm and target.spm, vocab.json)."""
    from transformers import GenerationConfig, MarianMTModel

    reasons = not_expressible(cfg)
    if reasons:
        raise ValueError("MarianMT cannot hold this run's model: " + "; ".join(reasons))
    marian = MarianMTModel(marian_config(cfg, len(vocab))).eval()
    missing, unexpected = marian.load_state_dict(marian_state_dict(model), strict=False)
    left = [k for k in missing if "embed_positions" not in k and k != "final_logits_bias"]
    if left or unexpected:
        raise RuntimeError(f"MarianMT weights not set: {left[:3]}, not MarianMT's: {unexpected[:3]}")
    marian.generation_config = GenerationConfig(
        decoder_start_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, bad_words_ids=[[PAD], [BOS]],
        num_beams=1, do_sample=False, max_new_tokens=cfg.model.max_positions - 2,
    )  # fmt: skip: no max_length (generate(max_new_tokens=...) would say the two contradict); without a limit of its
    # own, transformers' default max_length of 20 would cut translations short
    directory.mkdir(parents=True, exist_ok=True)
    marian.save_pretrained(directory)
    for name in ("source.spm", "target.spm"):
        (directory / name).write_bytes(vocab.model)
    pieces = {vocab.sp.id_to_piece(i): i for i in range(len(vocab))}
    (directory / "vocab.json").write_text(json.dumps(pieces, ensure_ascii=False))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "MarianTokenizer", "eos_token": vocab.sp.id_to_piece(EOS),
        "unk_token": vocab.sp.id_to_piece(1), "pad_token": vocab.sp.id_to_piece(PAD), "separate_vocabs": False,
    }))  # fmt: skip
