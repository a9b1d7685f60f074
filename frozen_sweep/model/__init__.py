"""Transformers built from torch.nn blocks, and the grouping of their parameters into the paper's components."""

from frozen_sweep.model.components import component_of_parameters
from frozen_sweep.model.transformer import Transformer

__all__ = ["Transformer", "component_of_parameters"]
