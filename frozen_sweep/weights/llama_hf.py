"""A LLaMA-style language model as Hugging Face LLaMA: a directory that `transformers` loads (LlamaForCausalLM,
AutoTokenizer).

Our pre-RMSNorm decoder with SwiGLU, rotary positions and grouped-query attention is LLaMA's block: every weight
carries over one to one, under LLaMA's names (q/k/v/o_proj, gate/up/down_proj, input_ and post_attention_layernorm:
the import's table, frozen_sweep.weights.hf_tables, read backwards).
Rotary positions follow LLaMA's layout (`rotate_half`: dimension i pairs with i + head_dim/2) and query head h reads
key/value head h // (heads / kv_heads), as LLaMA's `repeat_kv`, so no weight is permuted; biases, when the run has
them, are LLaMA's `attention_bias` and `mlp_bias`. The logits agree to float rounding (~1e-6).

The tokenizer is the run's SentencePiece model as a `tokenizers` pipeline that encodes as SentencePiece does (its
normaliser, dummy prefix and BPE merges), with bos prepended as our language model reads it (tokenizer.json); the
SentencePiece model itself is beside it (tokenizer.model).

Not expressible (refused, saying which): other task kinds, post-norm or LayerNorm models, the ReLU/GELU FFN,
sinusoidal positions, reservoirs other than transformer layers.
"""

from pathlib import Path

import torch

from frozen_sweep.config import FfnKind, NormPosition, Positions, ReservoirType, TaskKind, TieEmbeddings
from frozen_sweep.data.specials import BOS, EOS, PAD, UNK
from frozen_sweep.data.vocab import Vocab
from frozen_sweep.model import Transformer
from frozen_sweep.weights.hf_export import hf_state_dict
from frozen_sweep.weights.hf_tables import FAMILIES

LLAMA = FAMILIES["LlamaForCausalLM"]


def not_expressible(cfg) -> list[str]:
    """Why LlamaForCausalLM cannot hold this run's model (empty when it can)."""
    m, reasons = cfg.model, []
    if TaskKind(cfg.task.kind) != TaskKind.lm:
        reasons.append(f"task.kind={TaskKind(cfg.task.kind).value}: LLaMA is a decoder-only language model")
    if NormPosition(m.norm) != NormPosition.rms:
        reasons.append(f"model.norm={NormPosition(m.norm).value}: LLaMA normalises with RMSNorm before each sublayer "
                       "(model.norm=rms)")  # fmt: skip
    if FfnKind(m.ffn) != FfnKind.swiglu:
        reasons.append("model.ffn=mlp: LLaMA's FFN is SwiGLU (model.ffn=swiglu)")
    if Positions(m.positions) != Positions.rope:
        reasons.append("model.positions=sinusoidal: LLaMA has rotary positions (model.positions=rope)")
    if (m.qkv_bias and not m.bias) or m.rope_fraction != 1 or m.parallel or m.token_types or m.embed_norm:
        reasons.append("model.qkv_bias, rope_fraction, parallel, token_types or embed_norm: LLaMA has biases on every "
                       "projection or none, rotates whole heads, runs attention and FFN in turn, and embeds tokens "
                       "alone")  # fmt: skip
    if cfg.reservoir.count and ReservoirType(cfg.reservoir.type) != ReservoirType.transformer:
        reasons.append(f"reservoir.type={ReservoirType(cfg.reservoir.type).value}: LLaMA layers are transformer "
                       "layers only")  # fmt: skip
    return reasons


def llama_config(cfg, vocab_size: int):
    """The LlamaConfig of our model config: LLaMA's config table read backwards (frozen_sweep.weights.hf_tables)."""
    from transformers import LlamaConfig

    m = cfg.model
    keys = {theirs: m[ours] for theirs, ours in LLAMA.config.items()} | {"num_key_value_heads": m.kv_heads or m.heads}
    return LlamaConfig(
        vocab_size=vocab_size, **keys, hidden_act="silu", mlp_bias=m.bias,
        rope_parameters={"rope_type": "default", "rope_theta": m.rope_base},
        tie_word_embeddings=TieEmbeddings(m.tie_embeddings) != TieEmbeddings.none,
        pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
    )  # fmt: skip


def llama_state_dict(model: Transformer) -> dict[str, torch.Tensor]:
    """Our parameters under LlamaForCausalLM's names: LLaMA's weight table read backwards; a tied output projection
    under both names, as LLaMA's state dict has it."""
    return hf_state_dict(model, LLAMA)


def llama_tokenizer(vocab: Vocab):
    """The run's SentencePiece model as a fast tokenizer that encodes as SentencePiece does, bos prepended."""
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import SpmConverter

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(vocab.model)
    piece = vocab.sp.id_to_piece
    pipeline = SpmConverter.build_tokenizer_from_spm_proto(proto, {piece(i): i for i in range(len(vocab))})
    pipeline.post_processor = TemplateProcessing(single=f"{piece(BOS)} $A", special_tokens=[(piece(BOS), BOS)])
    return PreTrainedTokenizerFast(tokenizer_object=pipeline, bos_token=piece(BOS), eos_token=piece(EOS),
                                   unk_token=piece(UNK), pad_token=piece(PAD))  # fmt: skip


def write_llama(directory: Path, cfg, model: Transformer, vocab: Vocab) -> None:
    """save_pretrained of the LlamaForCausalLM (safetensors), its greedy generation settings, its tokenizer."""
    from transformers import GenerationConfig, LlamaForCausalLM

    reasons = not_expressible(cfg)
    if reasons:
        raise ValueError("LLaMA cannot hold this run's model: " + "; ".join(reasons))
    llama = LlamaForCausalLM(llama_config(cfg, len(vocab))).eval()
    missing, unexpected = llama.load_state_dict(llama_state_dict(model), strict=False)
    if missing or unexpected:
        raise RuntimeError(f"LLaMA weights not set: {missing[:3]}, not LLaMA's: {unexpected[:3]}")
    # no max_length: generate(max_new_tokens=...) would warn that the two contradict (config.json holds the positions)
    llama.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, do_sample=False,
                                               num_beams=1)  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    llama.save_pretrained(directory)
    llama_tokenizer(vocab).save_pretrained(directory)
    (directory / "tokenizer.model").write_bytes(vocab.model)
