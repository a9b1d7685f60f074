"""A pretrained Hugging Face checkpoint as our model, its weights and config read through one family's tables
(frozen_sweep.weights.hf_tables):

    from frozen_sweep.weights.pretrained import load_pretrained
    model, model_cfg, info = load_pretrained("path/to/dir")  # a directory written by save_pretrained
    model, model_cfg, info = load_pretrained("Qwen/Qwen2.5-0.5B", revision="main")  # a hub name, pinned to a commit

`model` is a `Transformer` (a language model, or a masked LM) in eval mode holding every weight of the checkpoint
(float32 unless `dtype` says otherwise), all trainable; `model_cfg` the model group's config it was built from
(config.json through the family's table); `info` what was read: the source, the commit a hub name resolved to, the
directory (its tokenizer files are there: `AutoTokenizer.from_pretrained(info["directory"])`), the architecture and the
parameters per component. Its logits are the transformers model's to float rounding.

Read: LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, GPTNeoXForCausalLM, BertForMaskedLM and
RobertaForMaskedLM, from safetensors. Refused in one line, naming what it is (PretrainedError): another architecture,
remote code (`auto_map`), a pickle-only or quantised checkpoint, a config our model cannot hold (sliding windows, rotary
scaling, another activation or head width, ...), tensors with no place in our model or missing from the checkpoint, an
output projection that the config ties but the checkpoint does not (docs/pretrained.md).
"""

import json
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config.model import ModelConfig, TieEmbeddings
from frozen_sweep.data.checkpoint_files import PretrainedError, locate
from frozen_sweep.model import Transformer
from frozen_sweep.weights.freeze import parameter_counts
from frozen_sweep.weights.hf_tables import (
    FAMILIES,
    Family,
    current_name,
    inverse,
    is_dropped,
    rename,
)

SUPPORTED = (f"supported: {', '.join(FAMILIES)}, without sliding windows or rotary scaling, from safetensors "
             "(model.safetensors or model.safetensors.index.json)")  # fmt: skip
PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt")


def load_pretrained(source: str | Path, revision: str | None = None, cache_dir: str | Path | None = None,
                    dtype: torch.dtype = torch.float32,
                    max_positions: int | None = None) -> tuple[Transformer, DictConfig, dict]:  # fmt: skip
    """`source` (a directory or a hub name at `revision`, `cache_dir` the hub cache) as (model, model config, info);
    `max_positions`: the longest sequence the model will read (default config.json's max_position_embeddings; each
    layer holds its rotary table up to it)."""
    directory, commit = locate(source, revision, cache_dir)
    family, hf_config, longest = read_config(directory, str(source), max_positions)
    model_cfg = model_config(family, hf_config, longest)
    tensors = read_weights(directory, str(source), dtype)
    state = our_state(tensors, family, model_cfg, str(source))
    model = build(model_cfg, hf_config, state, family, str(source))
    info = {"source": str(source), "revision": revision, "commit": commit, "directory": str(directory),
            "architecture": family.architecture, **parameter_counts(model)}  # fmt: skip
    return model, model_cfg, info


def read_config(directory: Path, source: str, max_positions: int | None):
    """The family of config.json's architecture, config.json as its transformers config class reads it, and the
    longest sequence the model will read."""
    try:
        raw = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PretrainedError(f"{source}: no readable config.json ({type(e).__name__}); {SUPPORTED}") from None
    architectures = raw.get("architectures") or []
    if "auto_map" in raw:
        raise PretrainedError(f"{source}: config.json names remote code (auto_map: {', '.join(raw['auto_map'])}), "
                             f"which is never run; {SUPPORTED}")  # fmt: skip
    if len(architectures) != 1 or architectures[0] not in FAMILIES:
        raise PretrainedError(f"{source}: architectures={architectures} cannot be imported; {SUPPORTED}")
    if "quantization_config" in raw:
        method = raw["quantization_config"].get("quant_method", "?")
        raise PretrainedError(f"{source}: quantised weights ({method}) cannot be imported; {SUPPORTED}")
    family = FAMILIES[architectures[0]]
    if raw.get("model_type") != family.model_type:
        raise PretrainedError(f"{source}: {family.architecture} with model_type={raw.get('model_type')} (its own is "
                             f"{family.model_type}) cannot be imported; {SUPPORTED}")  # fmt: skip
    from transformers import AutoConfig

    hf_config = AutoConfig.from_pretrained(directory)
    longest = max_positions or hf_config.max_position_embeddings
    reasons = family.refusals(hf_config, longest)
    if reasons:
        what = f"{family.architecture} with {'; '.join(reasons)}"
        raise PretrainedError(f"{source}: {what} cannot be imported; {SUPPORTED}")
    return family, hf_config, longest


def model_config(family: Family, hf_config, longest: int) -> DictConfig:
    """The model group's config of a checkpoint: its config keys through the family's table, the family's fixed
    keys, those computed from its config, tying, and the longest sequence it will read."""
    keys = {ours: getattr(hf_config, theirs) for theirs, ours in family.config.items()} | family.fixed
    keys |= family.derived(hf_config) | {"name": family.architecture, "max_positions": longest,
                                         "tie_embeddings": "decoder" if hf_config.tie_word_embeddings else "none"}
    return OmegaConf.merge(OmegaConf.structured(ModelConfig), keys)


def read_weights(directory: Path, source: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint's safetensors files (one, or the shards its index names), as `dtype`."""
    from safetensors.torch import load_file

    if (directory / "model.safetensors").is_file():
        files = ["model.safetensors"]
    elif (directory / "model.safetensors.index.json").is_file():
        index = json.loads((directory / "model.safetensors.index.json").read_text(encoding="utf-8"))
        files = sorted(set(index["weight_map"].values()))
    else:
        pickles = sorted(p.name for pattern in PICKLES for p in directory.glob(pattern))
        held = (f"it holds {', '.join(pickles)}, a pickle, which is never loaded" if pickles else
                "it holds no weights (a hub name's pickle weights are never fetched)")  # fmt: skip
        raise PretrainedError(f"{source}: no model.safetensors or model.safetensors.index.json: {held}; {SUPPORTED}")
    return {name: t.to(dtype) for file in files for name, t in load_file(directory / file).items()}


def our_state(tensors: dict[str, torch.Tensor], family: Family, model_cfg: DictConfig,
              source: str) -> dict[str, torch.Tensor]:  # fmt: skip
    """The checkpoint's tensors under our names, a fused one split; the output projection is the token embedding
    when tied."""
    state, unknown = {}, []
    for name, tensor in tensors.items():
        ours = rename(current_name(name), family.weights)
        if isinstance(ours, tuple):
            state |= dict(zip(ours, unfuse(tensor, len(ours), model_cfg.heads)))
        elif ours is not None:
            state[ours] = tensor
        elif not is_dropped(name, family):
            unknown.append(name)
    if unknown:
        raise PretrainedError(f"{source}: {len(unknown)} tensors have no place in {family.architecture} as imported "
                             f"here ({', '.join(unknown[:3])}); {SUPPORTED}")  # fmt: skip
    tied = TieEmbeddings(model_cfg.tie_embeddings) != TieEmbeddings.none
    tokens = f"{'src' if model_cfg.decoder_layers == 0 else 'tgt'}_embed.tokens.weight"  # an encoder's, a decoder's
    head, embedding = state.get("output.weight"), state.get(tokens)
    theirs = inverse(family.weights)
    head_name, embedding_name = rename("output.weight", theirs), rename(tokens, theirs)
    if tied and head is not None and embedding is not None and not torch.equal(head, embedding):
        raise PretrainedError(f"{source}: config.json ties the output projection to the embedding "
                             f"(tie_word_embeddings=true) but {head_name} is not {embedding_name}")  # fmt: skip
    if not tied and head is None:
        raise PretrainedError(f"{source}: config.json unties the output projection (tie_word_embeddings=false) but the "
                             f"checkpoint has no {head_name}")  # fmt: skip
    if tied and embedding is not None:
        state["output.weight"] = embedding
    return state


def unfuse(tensor: torch.Tensor, parts: int, heads: int) -> list[torch.Tensor]:
    """A fused projection's weight (heads·parts·hd, D) or bias (heads·parts·hd,), each head's rows part after part,
    as `parts` projections of heads·hd rows."""
    per_head = tensor.view(heads, parts, -1, *tensor.shape[1:])  # (H, parts, hd, ...)
    return [per_head[:, part].reshape(-1, *tensor.shape[1:]) for part in range(parts)]  # each (H·hd, ...)


def build(model_cfg: DictConfig, hf_config, state: dict[str, torch.Tensor], family: Family,
          source: str) -> Transformer:  # fmt: skip
    """Our model of `model_cfg` holding `state`, built without drawing any weight (on the meta device); every tensor
    the model has must be in `state`, with its shape."""
    with torch.device("meta"):
        model = Transformer(model_cfg, hf_config.vocab_size, hf_config.pad_token_id)
    expected = {name: p.shape for name, p in model.state_dict().items()}
    theirs = inverse(family.weights)
    missing = [rename(name, theirs) for name in expected if name not in state]
    extra = [rename(name, theirs) for name in state if name not in expected]
    wrong = [f"{rename(name, theirs)} {tuple(state[name].shape)}, not {tuple(shape)}"
             for name, shape in expected.items() if name in state and state[name].shape != shape]  # fmt: skip
    if missing or extra or wrong:
        what = "; ".join(f"{kind}: {', '.join(sorted(names)[:3])}" for kind, names in
                         (("missing", missing), ("unexpected", extra), ("other shapes", wrong)) if names)  # fmt: skip
        raise PretrainedError(f"{source}: its tensors are not those its config.json describes ({what})")
    model.load_state_dict(state, assign=True)
    if hf_config.tie_word_embeddings:  # one parameter again, as the model is built
        model.output.weight = (model.src_embed if model.is_encoder_only else model.tgt_embed).tokens.weight
    return model.eval()
