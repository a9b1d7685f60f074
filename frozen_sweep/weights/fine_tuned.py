"""The model of a study=finetune run built on its base (a run of ours, or a pretrained checkpoint's import): which of
its parameters are copied from the base, which the job draws from its own seed, and which are frozen. The job
(frozen_sweep.study.finetune) and whatever loads the finished run (frozen_sweep.weights.finished_run) build it alike.
"""

from typing import Optional

import torch

from frozen_sweep.config import FreezeFrom, FrozenMode, Init
from frozen_sweep.data.specials import PAD
from frozen_sweep.model import Transformer, component_of_parameters
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.freeze import draw_plan


def embedding_rows(model: Transformer) -> int:
    """The rows of a model's token embedding: its vocabulary's size (a checkpoint's may exceed its tokenizer's)."""
    return (model.src_embed if model.is_encoder_only else model.tgt_embed).tokens.num_embeddings


def fine_tuned_model(cfg, base_model: Transformer, vocab_size: int, outputs: int, pad_id: int = PAD) -> Transformer:
    """A study=finetune job's classifier or regression (`outputs`: TaskData.head_outputs): the model of `cfg` (the
    base's encoder shape and reservoirs, the job's seed) with every parameter but the head's copied from the base's
    model (a run's, or a pretrained checkpoint's), and with finetune.freeze_from=seed but the ones the job's freeze
    pattern freezes (drawn from the job's seed, with the pattern's init), and the top finetune.reinit_top layers (the
    job's draw, as a trainable layer's). Frozen: the job's freeze pattern's components, the layers
    finetune.frozen_layers marks F, and with finetune.frozen=keep whatever the base kept frozen (its frozen
    components, its reservoir layers) — so a checkpoint stays seed-only: its frozen parameters are the base's
    (regenerated from the base's seed and checkpoint, or read from the pretrained checkpoint) or the job seed's."""
    model = build_model(cfg, vocab_size, outputs, pad_id)
    base_params = dict(base_model.named_parameters())
    keep = FrozenMode(cfg.finetune.frozen) == FrozenMode.keep
    components = component_of_parameters(model)
    with torch.no_grad():
        for name, param in model.named_parameters():
            component = components[name]
            layer_frozen = in_frozen_layer(cfg, name)
            if drawn_by_job(cfg, component, name):  # the job's draw, as built
                param.requires_grad_(param.requires_grad and not layer_frozen)
                continue
            source = base_params[name]  # the same encoder: job_config adopted the base's model and reservoirs
            param.copy_(source)
            frozen = cfg.freeze[component].frozen or layer_frozen or (keep and not source.requires_grad)
            param.requires_grad_(not frozen)
    return model


def layer_index(cfg, name: str) -> Optional[int]:
    """The index of the base's layer that parameter `name` belongs to (its encoder's; a decoder-only model's
    decoder's), None outside the layers."""
    stack = "encoder" if cfg.model.encoder_layers else "decoder"
    prefix = f"{stack}.layers."
    return int(name[len(prefix):].split(".", 1)[0]) if name.startswith(prefix) else None


def in_frozen_layer(cfg, name: str) -> bool:
    """Whether parameter `name` is in a layer that finetune.frozen_layers marks F."""
    layer, pattern = layer_index(cfg, name), cfg.finetune.frozen_layers
    return layer is not None and pattern is not None and pattern[layer] == "F"


def drawn_by_job(cfg, component: str, name: str) -> bool:
    """Whether a fine-tuned model's parameter `name` of `component` is the job's own draw from its seed (the head,
    with finetune.freeze_from=seed the components its freeze pattern freezes, and the top finetune.reinit_top layers),
    not copied from its base."""
    f = cfg.finetune
    layer, layers = layer_index(cfg, name), cfg.model.encoder_layers or cfg.model.decoder_layers
    reinitialised = layer is not None and layer >= layers - f.reinit_top
    return component == "head" or reinitialised or (f.freeze_from == FreezeFrom.seed and cfg.freeze[component].frozen)


def base_draws(cfg, model: Transformer, base) -> dict[str, tuple[int, str]]:
    """A fine-tuned model's frozen parameters copied from what its base run drew and froze: name → (the base's seed,
    the init it drew with)."""
    base_plan = draw_plan(base.model, base.config.freeze)
    components = component_of_parameters(model)
    return {
        name: (base.config.seed, Init(base_plan[name].init).value)
        for name, param in model.named_parameters()
        if not param.requires_grad and not drawn_by_job(cfg, components[name], name) and base_plan[name].frozen
    }
