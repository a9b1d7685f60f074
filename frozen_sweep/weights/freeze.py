"""Freeze patterns: initialise every parameter from (seed, name), freeze components, count what trains.

Every parameter, trainable or frozen, is drawn from its own `torch.Generator` seeded from (run seed, parameter name).
A frozen parameter is therefore a pure function of the seed: checkpoints store only the trainable parameters, and
loading regenerates the frozen ones bit-exactly (checked against a stored SHA-256 per tensor).

Inits (docs/concepts.md):
- random: what a trainable component gets — Xavier-uniform linear weights, N(0, d^-1/2) embeddings, zero biases,
  norms at (1, 0) (an RMSNorm's gain at 1).
- identity: our reading of the paper's "diagonal zeroed" rows (2.1)/(3.1): every weight matrix is zeros with ones on
  its leading diagonal (for a rectangular matrix, the leading square block is the identity), biases zero, layer-norm
  gains one. The frozen block then applies no random transformation: a frozen identity FFN computes
  fc2(relu(fc1(x))) = relu(x) on the first d units.
- orthogonal: orthogonal weight matrices (the reservoir transformer's choice); biases and norms as in random.
"""

import hashlib
import math
from dataclasses import dataclass, replace
from typing import Optional

import torch
from torch import Tensor, nn

from frozen_sweep.config import COMPONENTS, Init
from frozen_sweep.model import component_of_parameters
from frozen_sweep.model.layers import SwiGLU
from frozen_sweep.model.reservoir import Reservoir
from frozen_sweep.model.transformer import OutputProjection
from frozen_sweep.system import cpu

# Paper row label ← frozen components and their init (other components trainable). docs/concepts.md.
PAPER_ROWS = {
    (): "(0)",
    (("emb", "random"),): "(1)",
    (("att", "random"),): "(2)",
    (("ffn", "random"),): "(3)",
    (("att", "identity"),): "(2.1)",
    (("ffn", "identity"),): "(3.1)",
    (("emb", "random"), ("ffn", "random")): "(4)",
    (("att", "random"), ("emb", "random")): "(5)",
    (("att", "random"), ("ffn", "random")): "(6)",
}


def parameter_seed(seed: int, name: str) -> int:
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def parameter_owners(model: nn.Module) -> dict[str, nn.Module]:
    """Parameter name → the module that holds it directly (the first holder of a tied weight)."""
    owners = {}
    for module_name, module in model.named_modules():
        for attr, _ in module.named_parameters(recurse=False):
            owners.setdefault(f"{module_name}.{attr}" if module_name else attr, module)
    return owners


@torch.no_grad()
def init_parameter(param: Tensor, owner: nn.Module, attr: str, init: Init, generator: torch.Generator) -> None:
    """Fill one parameter in place; `owner` (the module holding it as `attr`) tells what kind of weight it is."""
    if param.dim() == 1:  # biases and norm parameters
        is_norm_gain = isinstance(owner, (nn.LayerNorm, nn.RMSNorm)) and attr == "weight"
        param.fill_(1.0 if is_norm_gain else 0.0)
    elif init == Init.identity:
        param.zero_()
        n = min(param.shape)
        param[torch.arange(n), torch.arange(n)] = 1.0
    elif init == Init.orthogonal:  # on one thread: QR's result depends on the thread count, which differs between jobs
        threads = torch.get_num_threads()  # (and resumes), so a frozen matrix would not regenerate bit-exactly
        cpu.set_threads(1)
        try:
            nn.init.orthogonal_(param, generator=generator)
        finally:
            cpu.set_threads(threads)
    elif isinstance(owner, (nn.Embedding, OutputProjection)):
        nn.init.normal_(param, std=param.shape[1] ** -0.5, generator=generator)
        if isinstance(owner, nn.Embedding) and owner.padding_idx is not None:
            param[owner.padding_idx].zero_()
    else:
        nn.init.xavier_uniform_(param, generator=generator)


def _fan_in(owner: nn.Module) -> int:
    """Inputs per output unit of a reservoir's GRU, linear or convolution (from its settings, not its weight: a weight
    regenerated on the fly is not there)."""
    if isinstance(owner, nn.RNNBase):
        return owner.hidden_size
    if isinstance(owner, nn.Linear):
        return owner.in_features
    return owner.in_channels // owner.groups * math.prod(owner.kernel_size)


@torch.no_grad()
def init_reservoir_parameter(param: Tensor, owner: nn.Module, attr: str, init: Init, generator) -> None:
    """Weight matrices with `init`; biases and norms as PyTorch initialises them (norms (1, 0), biases
    U(±1/sqrt(fan_in)), fan_in = a GRU's hidden size)."""
    if param.dim() > 1:
        init_parameter(param, owner, attr, init, generator)
    elif isinstance(owner, (nn.LayerNorm, nn.RMSNorm)):
        param.fill_(1.0 if attr == "weight" else 0.0)
    else:
        fan_in = _fan_in(owner)
        nn.init.uniform_(param, -(fan_in**-0.5), fan_in**-0.5, generator=generator)


@dataclass(frozen=True)
class Draw:
    """How one parameter is drawn from (seed, name): the module that holds it (as `attr`), its init, whether it is a
    reservoir's (its own inits, always frozen) and whether it is frozen; `seed`: another run's, when that run drew it
    (a fine-tuned run's frozen parameters kept from its base), else None: the run's own."""

    owner: nn.Module
    attr: str
    init: Init
    reservoir: bool
    frozen: bool
    seed: Optional[int] = None


def draw_plan(model: nn.Module, freeze_cfg) -> dict[str, Draw]:
    """Parameter name → how it is drawn, for every distinct parameter (a tied weight under its first name). A SwiGLU
    gate's parameters follow `freeze.gate` when it is frozen and their component, ffn, is not."""
    components = component_of_parameters(model)
    gates = {id(p) for module in model.modules() if isinstance(module, SwiGLU) for p in module.gate.parameters()}
    reservoir_inits = {
        f"{module_name}.{name}": module.init
        for module_name, module in model.named_modules()
        if isinstance(module, Reservoir)
        for name, _ in module.named_parameters()
    }
    plan = {}
    for module_name, module in model.named_modules():
        for attr, _ in module.named_parameters(recurse=False):
            name = f"{module_name}.{attr}" if module_name else attr
            if name not in components or name in plan:  # a tied weight's second holder
                continue
            spec = freeze_cfg[components[name]]
            if id(getattr(module, attr)) in gates and freeze_cfg.gate.frozen and not spec.frozen:
                spec = freeze_cfg.gate
            reservoir = name in reservoir_inits
            init = reservoir_inits[name] if reservoir else Init(spec.init)
            plan[name] = Draw(module, attr, init, reservoir, spec.frozen or reservoir)
    return plan


def draw(name: str, how: Draw, seed: int, out: Tensor) -> Tensor:
    """`out`, a CPU tensor of the parameter's shape, filled with parameter `name` as drawn from `seed`: the same bits
    on every machine, whenever it is drawn (at build, or just before use: frozen_sweep.weights.on_the_fly)."""
    generator = torch.Generator().manual_seed(parameter_seed(seed if how.seed is None else how.seed, name))
    fill = init_reservoir_parameter if how.reservoir else init_parameter
    fill(out, how.owner, how.attr, how.init, generator)
    return out


def with_draws(plan: dict[str, Draw], drawn: set[str], other_seeds: dict[str, tuple[int, str]]) -> dict[str, Draw]:
    """`plan` with exactly the parameters `drawn` frozen and drawn from a seed, those in `other_seeds` from another
    run's (name → that seed, and the init it drew with): a model file's parameters."""
    return {
        name: replace(how, frozen=name in drawn, **({"seed": other_seeds[name][0], "init": Init(other_seeds[name][1])}
                                                   if name in other_seeds else {}))  # fmt: skip
        for name, how in plan.items()
    }


def init_and_freeze(model: nn.Module, freeze_cfg, seed: int) -> None:
    """Initialise all parameters from (seed, name) with their component's init; freeze the frozen components.
    Reservoir layers are always frozen, with their own init."""
    params = dict(model.named_parameters())
    for name, how in draw_plan(model, freeze_cfg).items():
        param = params[name]
        if param.device.type == "cpu":
            draw(name, how, seed, param.data)
        else:  # always drawn on CPU: the same bits everywhere
            param.data.copy_(draw(name, how, seed, param.detach().cpu()))
        param.requires_grad_(not how.frozen)


def tensor_sha256(t: Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().contiguous().view(torch.uint8).numpy()).hexdigest()


def frozen_fingerprint(model: nn.Module) -> dict[str, str]:
    """SHA-256 of every frozen parameter, to verify a regeneration."""
    return {name: tensor_sha256(p) for name, p in model.named_parameters() if not p.requires_grad}


def parameter_counts(model: nn.Module) -> dict:
    """Totals and per-component counts; a tied weight counts once (the paper's accounting)."""
    params = dict(model.named_parameters())
    by_component = {c: {"total": 0, "trainable": 0} for c in COMPONENTS}
    for name, component in component_of_parameters(model).items():
        p = params[name]
        by_component[component]["total"] += p.numel()
        by_component[component]["trainable"] += p.numel() if p.requires_grad else 0
    total = sum(c["total"] for c in by_component.values())
    trainable = sum(c["trainable"] for c in by_component.values())
    return {
        "params_total": total,
        "params_trainable": trainable,
        "params_by_component": by_component,
        "trainable_ratio": trainable / total,
    }


def describe(freeze_cfg) -> dict[str, str]:
    """Component → "trainable" | "frozen:<init>" (with ":<init>" on trainable ones only when not random); a
    classifier's head only when it is not plain trainable, so that the records of the other kinds keep their shape."""
    out = {}
    for c in COMPONENTS:
        spec = freeze_cfg[c]
        init = Init(spec.init).value
        if spec.frozen:
            out[c] = f"frozen:{init}"
        else:
            out[c] = "trainable" if init == "random" else f"trainable:{init}"
    if out["head"] == "trainable":
        del out["head"]
    gate = freeze_cfg.gate
    if gate.frozen:  # only when frozen: a record without it is the paper's FFN, gate included
        out["gate"] = f"frozen:{Init(gate.init).value}"
    return out


def paper_row(freeze_cfg) -> Optional[str]:
    """The paper's row label for this pattern, or None when the paper has no such row."""
    described = describe(freeze_cfg)
    if "gate" in described:
        return None
    if any(v.startswith("trainable:") for v in described.values()) or described["other"] != "trainable":
        return None
    key = tuple(sorted((c, v.split(":")[1]) for c, v in described.items() if v.startswith("frozen")))
    return PAPER_ROWS.get(key)


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]

