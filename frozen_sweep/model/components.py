"""Sort a model's parameters into the paper's components: emb, att, ffn, other, and a classifier's head
(docs/concepts.md)."""

from torch import nn

from frozen_sweep.model.head import ClassificationHead
from frozen_sweep.model.layers import Attention, FeedForward, SwiGLU
from frozen_sweep.model.transformer import Embeddings, OutputProjection

# a module's type → its parameters' component; a later match within it wins (a norm inside the embeddings is `other`)
_MODULE_COMPONENT = ((Embeddings, "emb"), (OutputProjection, "emb"), (Attention, "att"), (FeedForward, "ffn"),
                     (SwiGLU, "ffn"), (ClassificationHead, "head"), (nn.LayerNorm, "other"),
                     (nn.RMSNorm, "other"))  # fmt: skip


def component_of_parameters(model: nn.Module) -> dict[str, str]:
    """Parameter name → component, for every distinct parameter (a tied weight appears once, under its first name)."""
    owner: dict[int, str] = {}  # id(parameter) → component
    for module in model.modules():
        for kind, component in _MODULE_COMPONENT:
            if isinstance(module, kind):
                for p in module.parameters():
                    owner[id(p)] = component
    return {name: owner.get(id(p), "other") for name, p in model.named_parameters()}
