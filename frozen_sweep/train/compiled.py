"""torch.compile of the training step by region: each encoder and decoder layer on its own. Every layer of a stack runs
the same code, so one compiled graph serves them all (parameters are the graph's inputs), and compile time stays
nearly flat with depth, where one graph of the whole step grows with it (docs/performance.md, "Compile time")."""

import torch
from torch import nn

from frozen_sweep.model.layers import DecoderLayer, EncoderLayer


def compile_layers(model: nn.Module, mode: str) -> int:
    """Compiles the forward of every encoder and decoder layer of `model` (a reservoir's too), dynamic shapes, for
    training only; returns how many layers. Validation and decoding (eval mode, or no gradients: a backskipped
    reservoir's forward too) run the same layers eager, so their shapes and caches never compile."""
    layers = [module for module in model.modules() if isinstance(module, (EncoderLayer, DecoderLayer))]
    for layer in layers:
        layer.forward = _in_training(layer, torch.compile(layer.forward, dynamic=True, mode=mode))
    return len(layers)


def _in_training(layer: nn.Module, compiled):
    eager = layer.forward

    def forward(*args, **kwargs):
        return (compiled if layer.training and torch.is_grad_enabled() else eager)(*args, **kwargs)

    return forward
