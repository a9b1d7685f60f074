"""The relearn study's reset: re-draw one layer (or some of its parts) of a trained model in place and leave only it
trainable. Every model of a relearn run is its base's weights plus this reset, made the same way by the job
(frozen_sweep.study.relearn) and by whatever loads the finished run (frozen_sweep.weights.finished_run)."""

import torch
from torch import nn

from frozen_sweep.config import Init, ResetParts
from frozen_sweep.config.stack_layout import parse_reset_layer
from frozen_sweep.weights.freeze import init_parameter, parameter_owners, parameter_seed

# A reset part → the parameter-name prefixes it covers inside a layer (frozen_sweep.model.layers' module names)
PART_PREFIXES = {
    ResetParts.all: ("",),
    ResetParts.att: ("self_attn.",),
    ResetParts.ffn: ("ffn.",),
    ResetParts.cross_att: ("cross_attn.",),
    ResetParts.norms: ("self_attn_res.norm.", "cross_attn_res.norm.", "ffn_res.norm."),
}


def layer_parameters(model: nn.Module, stack: str, index: int, parts: ResetParts) -> list[str]:
    """Names of the parameters of `parts` in layer `index` of `stack`."""
    prefixes = tuple(f"{stack}.layers.{index}.{p}" for p in PART_PREFIXES[parts])
    return [name for name, _ in model.named_parameters() if name.startswith(prefixes)]


def reset(model: nn.Module, relearn_cfg, seed: int) -> list[str]:
    """Re-draw the chosen parts of the chosen layer in place; only they (and the neighbours, when asked) train.
    Returns the reset parameters' names."""
    stack, index = parse_reset_layer(relearn_cfg.reset_layer)
    names = layer_parameters(model, stack, index, ResetParts(relearn_cfg.reset_parts))
    trainable = set(names)
    if relearn_cfg.train_neighbours:
        for neighbour in (index - 1, index + 1):
            trainable.update(layer_parameters(model, stack, neighbour, ResetParts.all))  # [] beyond the stack
    owners, init = parameter_owners(model), Init(relearn_cfg.reset_init)
    for name, param in model.named_parameters():
        if name in names:
            generator = torch.Generator().manual_seed(parameter_seed(seed, f"relearn/{name}"))
            init_parameter(param, owners[name], name.rsplit(".", 1)[1], init, generator)
        param.requires_grad_(name in trainable)
    return names
