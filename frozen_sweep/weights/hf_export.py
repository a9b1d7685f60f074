"""A model imported from a pretrained checkpoint (frozen_sweep.weights.pretrained), trained here, written back as the
transformers class it came from: its config.json as the checkpoint had it, our weights under its names in
model.safetensors (the family's table read backwards, fused projections fused again), its tokenizer beside them.
`AutoModelFor...from_pretrained(directory)` then gives our logits.

Only what came from a checkpoint and kept its head goes back: a language model or masked LM (the checkpoint's own
class); a classifier built on an imported encoder has no such class (refused, saying why).
"""

from pathlib import Path

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.model import Transformer
from frozen_sweep.weights.hf_tables import FAMILIES, Family, inverse, rename


def hf_state_dict(model: Transformer, family: Family, heads: int = 0) -> dict[str, torch.Tensor]:
    """Our parameters under the family's checkpoint names: each one renamed by the table read backwards, a fused
    module's parts fused per head (`heads`: the model's) in the table's order; a tied output projection under both
    names."""
    ours_to_theirs, out, fused = inverse(family.weights), {}, {}
    for name, p in model.named_parameters(remove_duplicate=False):
        # a transformer reservoir wraps its layer: decoder.layers.{i}.layer.* is the layer's decoder.layers.{i}.*
        plain = name.replace(".layer.", ".", 1)
        theirs = rename(plain, ours_to_theirs)
        if theirs is None:
            raise KeyError(f"{name} has no place in {family.architecture}")
        parts = rename(theirs, family.weights)
        if isinstance(parts, tuple):
            fused.setdefault(theirs, {})[plain] = p.detach()
            if len(fused[theirs]) == len(parts):
                out[theirs] = fuse([fused[theirs][part] for part in parts], heads)
        else:
            out[theirs] = p.detach().contiguous()
    return out


def fuse(parts: list[torch.Tensor], heads: int) -> torch.Tensor:
    """`parts` projections of heads·hd rows as one fused projection, each head's rows part after part (the import's
    `unfuse` undone)."""
    per_head = [part.reshape(heads, -1, *part.shape[1:]) for part in parts]  # each (H, hd, ...)
    return torch.stack(per_head, dim=1).reshape(-1, *parts[0].shape[1:]).contiguous()  # (H·parts·hd, ...)


def checkpoint_source(cfg) -> str | None:
    """The pretrained checkpoint a run started from (its fine-tuning or relearn base), None for a run of ours."""
    from frozen_sweep.data.checkpoint_files import is_checkpoint_source

    bases = [cfg.finetune.base_checkpoint, cfg.relearn.base_checkpoint if cfg.relearn.name != "none" else None]
    return next((str(base) for base in bases if base and is_checkpoint_source(base)), None)


def architecture_of(source: str) -> str:
    """The transformers class of checkpoint `source` (its config.json's)."""
    import json

    from frozen_sweep.data.checkpoint_files import locate

    directory, _ = locate(source, None, None)
    return json.loads((directory / "config.json").read_text(encoding="utf-8"))["architectures"][0]


def not_expressible(cfg, source: str) -> list[str]:
    """Why checkpoint `source`'s own class cannot hold the model of run config `cfg` (empty when it can)."""
    if TaskKind(cfg.task.kind).labelled:
        return [f"task.kind={TaskKind(cfg.task.kind).value}: a classifier or regression built on {source}'s encoder "
                "has a head the checkpoint's masked-LM class has no place for (a language model or masked LM "
                "trained from a checkpoint goes back)"]  # fmt: skip
    return []


def write_pretrained_class(directory: Path, cfg, model: Transformer, source: str) -> str:
    """Checkpoint `source`'s config.json (and generation settings), `model`'s weights under the checkpoint's names in
    model.safetensors (a tied output projection once, under the embedding's name, as transformers saves it) and the
    checkpoint's tokenizer, written by transformers; returns the class's name. ValueError when the class cannot hold
    `model`."""
    import transformers
    from safetensors.torch import save_file

    from frozen_sweep.data.checkpoint_files import locate

    reasons = not_expressible(cfg, source)
    if reasons:
        raise ValueError("; ".join(reasons))
    checkpoint, _ = locate(source, None, None)
    hf_config = transformers.AutoConfig.from_pretrained(checkpoint)
    family = FAMILIES[architecture_of(source)]
    state = hf_state_dict(model, family, hf_config.num_attention_heads)
    if hf_config.tie_word_embeddings:
        del state[rename("output.weight", inverse(family.weights))]
    directory.mkdir(parents=True, exist_ok=True)
    hf_config.save_pretrained(directory)
    if (checkpoint / "generation_config.json").is_file():
        transformers.GenerationConfig.from_pretrained(checkpoint).save_pretrained(directory)
    save_file(state, directory / "model.safetensors", metadata={"format": "pt"})
    transformers.AutoTokenizer.from_pretrained(checkpoint).save_pretrained(directory)
    return family.architecture
