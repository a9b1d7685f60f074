"""The Hugging Face checkpoints our model can hold, one family each: a table from the checkpoint's tensor names to
ours, the names it may hold that we drop, a table from its config (config.json) to our model keys, and what of its
config we cannot hold. The import (frozen_sweep.weights.pretrained) reads the tables one way, the export
(frozen_sweep.weights.llama_hf) the other.

A weight table maps modules, `{}` standing for a layer's index: each module's `.weight` and, where it has one, `.bias`
go along. A module mapped to several of ours is their fusion, per head: each head's rows of the first, then of the
second, ... (GPT-NeoX's query_key_value: a head's query, key and value rows, head after head). A config table maps
config keys (as the transformers config class reads config.json, its defaults filled in) to our model keys; `fixed`
holds the model keys every checkpoint of the family has.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

LAYER = "{}"  # a layer's index in a table's names
_INDEX = re.compile(r"\.(\d+)\.")


@dataclass(frozen=True)
class Family:
    architecture: str  # config.json's `architectures` entry, the transformers class
    model_type: str  # config.json's `model_type`, which picks the transformers config class
    weights: dict[str, str | tuple[str, ...]]  # the checkpoint's module → ours
    config: dict[str, str]  # the checkpoint's config key → our model key
    fixed: dict  # our model keys every checkpoint of the family has
    derived: Callable[[object], dict]  # the transformers config → our model keys computed from it
    # the transformers config and the longest sequence the model will read → what of it our model cannot hold
    refusals: Callable[[object, int], list[str]]
    dropped: tuple[str, ...] = ()  # tensors some checkpoints hold that have no place in ours


def rename(name: str, table: dict) -> str | tuple[str, ...] | None:
    """`name` (a module's `.weight` or `.bias`) on the table's other side (several names for a fused module), None
    when the table has no such module."""
    index = _INDEX.search(name)
    key = name if index is None else f"{name[: index.start()]}.{LAYER}.{name[index.end() :]}"
    module, kind = key.rsplit(".", 1)
    if module not in table:
        return None
    layer = "" if index is None else index.group(1)
    renamed = tuple(f"{target}.{kind}".replace(LAYER, layer) for target in _targets(table[module]))
    return renamed if isinstance(table[module], tuple) else renamed[0]


def inverse(table: dict) -> dict[str, str]:
    """Ours → the checkpoint's (each part of a fused module → the fused module)."""
    return {ours: theirs for theirs, targets in table.items() for ours in _targets(targets)}


def _targets(targets: str | tuple[str, ...]) -> tuple[str, ...]:
    return targets if isinstance(targets, tuple) else (targets,)


# names of older checkpoints that transformers reads for every family: TF-era LayerNorm gains and biases (BERT's)
LEGACY = {".LayerNorm.gamma": ".LayerNorm.weight", ".LayerNorm.beta": ".LayerNorm.bias"}


def current_name(name: str) -> str:
    """A checkpoint's tensor name as transformers reads it today."""
    old = next((old for old in LEGACY if name.endswith(old)), None)
    return name if old is None else name[: -len(old)] + LEGACY[old]


def is_dropped(name: str, family: Family) -> bool:
    return _INDEX.sub(f".{LAYER}.", name) in family.dropped


def rotary(c) -> dict:
    """The rotary positions' base and the share of a head they rotate."""
    return {"rope_base": c.rope_parameters["rope_theta"],
            "rope_fraction": c.rope_parameters.get("partial_rotary_factor", 1.0)}  # fmt: skip


LLAMA_WEIGHTS = {
    "model.embed_tokens": "tgt_embed.tokens",
    "model.layers.{}.input_layernorm": "decoder.layers.{}.self_attn_res.norm",
    "model.layers.{}.self_attn.q_proj": "decoder.layers.{}.self_attn.q_proj",
    "model.layers.{}.self_attn.k_proj": "decoder.layers.{}.self_attn.k_proj",
    "model.layers.{}.self_attn.v_proj": "decoder.layers.{}.self_attn.v_proj",
    "model.layers.{}.self_attn.o_proj": "decoder.layers.{}.self_attn.out_proj",
    "model.layers.{}.post_attention_layernorm": "decoder.layers.{}.ffn_res.norm",
    "model.layers.{}.mlp.gate_proj": "decoder.layers.{}.ffn.gate",
    "model.layers.{}.mlp.up_proj": "decoder.layers.{}.ffn.up",
    "model.layers.{}.mlp.down_proj": "decoder.layers.{}.ffn.down",
    "model.norm": "decoder.final_norm",
    "lm_head": "output",
}  # fmt: skip
LLAMA_DROPPED = ("model.layers.{}.self_attn.rotary_emb.inv_freq",)  # a buffer older checkpoints saved
LLAMA_CONFIG = {
    "hidden_size": "d_model", "intermediate_size": "ffn_dim", "num_hidden_layers": "decoder_layers",
    "num_attention_heads": "heads", "num_key_value_heads": "kv_heads", "max_position_embeddings": "max_positions",
    "rms_norm_eps": "norm_eps", "attention_dropout": "attention_dropout",
}  # fmt: skip
# a decoder-only language model with LLaMA's block: pre-RMSNorm, SwiGLU, rotary positions, no dropout elsewhere
LLAMA_FIXED = {"encoder_layers": 0, "norm": "rms", "ffn": "swiglu", "positions": "rope", "dropout": 0.0,
               "activation_dropout": 0.0}  # fmt: skip


def llama_block_refusals(c) -> list[str]:
    """What of a LLaMA-shaped config our block cannot hold: another activation, a head width that does not split the
    width evenly, a rotary scaling other than none."""
    reasons = []
    if c.hidden_act != "silu":
        reasons.append(f"hidden_act={c.hidden_act} (the SwiGLU FFN here is silu's)")
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if head_dim * c.num_attention_heads != c.hidden_size:
        reasons.append(f"head_dim={head_dim} with {c.num_attention_heads} heads is not hidden_size={c.hidden_size} "
                       "(heads here split the width)")  # fmt: skip
    rope_type = (c.rope_parameters or {}).get("rope_type", "default")
    if rope_type != "default":
        reasons.append(f"rope_type={rope_type} (rotary scaling; only unscaled rotary positions, rope_type=default)")
    return reasons


def llama_refusals(c, longest: int) -> list[str]:
    reasons = llama_block_refusals(c)
    if c.attention_bias != c.mlp_bias:
        reasons.append(f"attention_bias={c.attention_bias} with mlp_bias={c.mlp_bias} (biases are on both or neither)")
    return reasons


def qwen2_refusals(c, longest: int) -> list[str]:
    sliding = "sliding_attention" in (c.layer_types or [])
    return llama_block_refusals(c) + (["sliding-window attention (use_sliding_window=true)"] if sliding else [])


def mistral_refusals(c, longest: int) -> list[str]:
    """A window at least as long as the longest sequence the model reads never masks anything: held."""
    window = c.sliding_window
    sliding = window is not None and window < longest
    windowed = [f"sliding-window attention (sliding_window={window}, shorter than the {longest} positions read)"]
    return llama_block_refusals(c) + (windowed if sliding else [])


NEOX_WEIGHTS = {
    "gpt_neox.embed_in": "tgt_embed.tokens",
    "gpt_neox.layers.{}.input_layernorm": "decoder.layers.{}.self_attn_res.norm",
    "gpt_neox.layers.{}.attention.query_key_value": ("decoder.layers.{}.self_attn.q_proj",
                                                     "decoder.layers.{}.self_attn.k_proj",
                                                     "decoder.layers.{}.self_attn.v_proj"),
    "gpt_neox.layers.{}.attention.dense": "decoder.layers.{}.self_attn.out_proj",
    "gpt_neox.layers.{}.post_attention_layernorm": "decoder.layers.{}.ffn_res.norm",
    "gpt_neox.layers.{}.mlp.dense_h_to_4h": "decoder.layers.{}.ffn.fc1",
    "gpt_neox.layers.{}.mlp.dense_4h_to_h": "decoder.layers.{}.ffn.fc2",
    "gpt_neox.final_layer_norm": "decoder.final_norm",
    "embed_out": "output",
}  # fmt: skip
# the causal mask and rotary buffers older checkpoints saved
NEOX_DROPPED = ("gpt_neox.layers.{}.attention.bias", "gpt_neox.layers.{}.attention.masked_bias",
                "gpt_neox.layers.{}.attention.rotary_emb.inv_freq")  # fmt: skip
NEOX_CONFIG = {
    "hidden_size": "d_model", "intermediate_size": "ffn_dim", "num_hidden_layers": "decoder_layers",
    "num_attention_heads": "heads", "max_position_embeddings": "max_positions", "layer_norm_eps": "norm_eps",
    "attention_dropout": "attention_dropout", "hidden_dropout": "dropout", "use_parallel_residual": "parallel",
}  # fmt: skip
# pre-LayerNorm with biases everywhere, a GELU FFN, rotary positions
NEOX_FIXED = {"encoder_layers": 0, "norm": "pre", "ffn": "mlp", "activation": "gelu", "positions": "rope", "bias": True,
              "activation_dropout": 0.0}  # fmt: skip


def neox_refusals(c, longest: int) -> list[str]:
    reasons = []
    if c.hidden_act != "gelu":
        reasons.append(f"hidden_act={c.hidden_act} (the FFN's GELU here is the exact one, hidden_act=gelu)")
    if not c.attention_bias:
        reasons.append("attention_bias=false (biases are on attention, FFN and LayerNorm alike)")
    rope_type = c.rope_parameters.get("rope_type", "default")
    if rope_type != "default":
        reasons.append(f"rope_type={rope_type} (rotary scaling; only unscaled rotary positions, rope_type=default)")
    rotated = int(c.hidden_size // c.num_attention_heads * c.rope_parameters.get("partial_rotary_factor", 1.0))
    if rotated < 2 or rotated % 2:
        reasons.append(f"{rotated} rotary dimensions a head (an even number, at least 2)")
    return reasons


def encoder_weights(prefix: str, head: dict[str, str]) -> dict[str, str]:
    """BERT's and RoBERTa's encoder under `prefix`, and their masked-LM head."""
    return {
        f"{prefix}.embeddings.word_embeddings": "src_embed.tokens",
        f"{prefix}.embeddings.position_embeddings": "src_embed.position_table",
        f"{prefix}.embeddings.token_type_embeddings": "src_embed.token_type_table",
        f"{prefix}.embeddings.LayerNorm": "src_embed.norm",
        f"{prefix}.encoder.layer.{{}}.attention.self.query": "encoder.layers.{}.self_attn.q_proj",
        f"{prefix}.encoder.layer.{{}}.attention.self.key": "encoder.layers.{}.self_attn.k_proj",
        f"{prefix}.encoder.layer.{{}}.attention.self.value": "encoder.layers.{}.self_attn.v_proj",
        f"{prefix}.encoder.layer.{{}}.attention.output.dense": "encoder.layers.{}.self_attn.out_proj",
        f"{prefix}.encoder.layer.{{}}.attention.output.LayerNorm": "encoder.layers.{}.self_attn_res.norm",
        f"{prefix}.encoder.layer.{{}}.intermediate.dense": "encoder.layers.{}.ffn.fc1",
        f"{prefix}.encoder.layer.{{}}.output.dense": "encoder.layers.{}.ffn.fc2",
        f"{prefix}.encoder.layer.{{}}.output.LayerNorm": "encoder.layers.{}.ffn_res.norm",
    } | head  # fmt: skip


def encoder_dropped(prefix: str) -> tuple[str, ...]:
    """The position-id buffer older checkpoints saved, and the pooler and next-sentence head that pretraining
    checkpoints hold and a masked LM does not use."""
    return (f"{prefix}.embeddings.position_ids", f"{prefix}.pooler.dense.weight", f"{prefix}.pooler.dense.bias",
            "cls.seq_relationship.weight", "cls.seq_relationship.bias")  # fmt: skip


# the output projection's weight (tied: the token embedding) and bias, under either of the names checkpoints use
BERT_HEAD = {"cls.predictions.transform.dense": "output_transform.dense",
             "cls.predictions.transform.LayerNorm": "output_transform.norm",
             "cls.predictions": "output", "cls.predictions.decoder": "output"}  # fmt: skip
ROBERTA_HEAD = {"lm_head.dense": "output_transform.dense", "lm_head.layer_norm": "output_transform.norm",
                "lm_head": "output", "lm_head.decoder": "output"}  # fmt: skip
BERT_CONFIG = {
    "hidden_size": "d_model", "intermediate_size": "ffn_dim", "num_hidden_layers": "encoder_layers",
    "num_attention_heads": "heads", "max_position_embeddings": "max_positions", "layer_norm_eps": "norm_eps",
    "hidden_dropout_prob": "dropout", "attention_probs_dropout_prob": "attention_dropout",
    "type_vocab_size": "token_types",
}  # fmt: skip
# an encoder-only masked LM, post-LayerNorm with biases, a GELU FFN, BERT's embeddings and head
BERT_FIXED = {"decoder_layers": 0, "norm": "post", "ffn": "mlp", "activation": "gelu", "positions": "learned",
              "bias": True, "embed_norm": True, "mlm_head": True, "activation_dropout": 0.0}  # fmt: skip


def bert_refusals(c, longest: int) -> list[str]:
    reasons = []
    if c.hidden_act != "gelu":
        reasons.append(f"hidden_act={c.hidden_act} (the FFN's GELU here is the exact one, hidden_act=gelu)")
    if getattr(c, "position_embedding_type", "absolute") != "absolute":
        reasons.append(f"position_embedding_type={c.position_embedding_type} (a table of absolute positions only)")
    if c.is_decoder or c.add_cross_attention:
        reasons.append("is_decoder or add_cross_attention (an encoder's masked LM only)")
    if longest != c.max_position_embeddings:
        reasons.append(f"max_positions={longest}: its position table has max_position_embeddings="
                       f"{c.max_position_embeddings} rows")  # fmt: skip
    return reasons


FAMILIES = {
    family.architecture: family
    for family in (
        Family("LlamaForCausalLM", "llama", LLAMA_WEIGHTS, LLAMA_CONFIG | {"attention_bias": "bias"}, LLAMA_FIXED,
               rotary, llama_refusals, LLAMA_DROPPED),
        Family("Qwen2ForCausalLM", "qwen2", LLAMA_WEIGHTS, LLAMA_CONFIG,
               LLAMA_FIXED | {"bias": False, "qkv_bias": True}, rotary, qwen2_refusals, LLAMA_DROPPED),
        Family("MistralForCausalLM", "mistral", LLAMA_WEIGHTS, LLAMA_CONFIG, LLAMA_FIXED | {"bias": False}, rotary,
               mistral_refusals, LLAMA_DROPPED),
        Family("GPTNeoXForCausalLM", "gpt_neox", NEOX_WEIGHTS, NEOX_CONFIG, NEOX_FIXED, rotary, neox_refusals,
               NEOX_DROPPED),
        Family("BertForMaskedLM", "bert", encoder_weights("bert", BERT_HEAD), BERT_CONFIG, BERT_FIXED,
               lambda c: {}, bert_refusals, encoder_dropped("bert")),
        Family("RobertaForMaskedLM", "roberta", encoder_weights("roberta", ROBERTA_HEAD), BERT_CONFIG, BERT_FIXED,
               lambda c: {"position_offset": c.pad_token_id + 1}, bert_refusals, encoder_dropped("roberta")),
    )
}  # fmt: skip
