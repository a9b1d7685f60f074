"""The freeze group's schema: which of the paper's components are frozen, and how they are initialised."""

from dataclasses import dataclass, field
from enum import Enum


class Init(Enum):
    random = "random"  # the init a trainable component gets (xavier / normal / ones-zeros)
    identity = "identity"  # zeros with ones on the leading diagonal, biases zero: "diagonal" in the paper
    orthogonal = "orthogonal"  # orthogonal weights (reservoir transformers)


# the paper's components, and a classifier's head: a FreezeConfig field each (docs/concepts.md)
COMPONENTS = ("emb", "att", "ffn", "other", "head")


@dataclass
class ComponentSpec:
    frozen: bool = False
    init: Init = Init.random


@dataclass
class FreezeConfig:
    name: str = "none"
    emb: ComponentSpec = field(default_factory=ComponentSpec)
    att: ComponentSpec = field(default_factory=ComponentSpec)
    ffn: ComponentSpec = field(default_factory=ComponentSpec)
    other: ComponentSpec = field(default_factory=ComponentSpec)
    head: ComponentSpec = field(default_factory=ComponentSpec)  # a classifier's head (task.kind=classify)
    # the gate matrices of a SwiGLU FFN (model.ffn=swiglu) alone: part of the ffn component, frozen when either is
    gate: ComponentSpec = field(default_factory=ComponentSpec)
