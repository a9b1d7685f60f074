"""Frozen weights drawn on the fly: each frozen parameter is drawn from (seed, name) just before the module that uses
it runs and freed right after, so the weights resident at any moment are the trainable ones plus one module's frozen
ones.

The model is built on the meta device (no memory), then its trainable parameters are made real and its frozen ones
left as empty placeholders. Forward hooks on every module that holds a frozen parameter (each holder of a tied one)
fill it with `freeze.draw`, the function a resident model is built with, and empty it again: the numbers, and so the
outputs, are bit-identical to a resident model's. An orthogonal reservoir matrix costs a QR each time it is drawn
(not cached); a GRU reservoir holds all its matrices during its one fused call.
"""

import time

import torch
from torch import nn

from frozen_sweep.weights.freeze import Draw, draw, draw_plan, tensor_sha256


class OnTheFly:
    """The hooks of one model, and what they cost: seconds spent drawing, draws made, the most frozen bytes held."""

    def __init__(self, model: nn.Module, plan: dict[str, Draw], seed: int, shapes: dict[str, torch.Size]):
        self.plan = {name: how for name, how in plan.items() if how.frozen}
        self.seed, self.shapes = seed, shapes
        self.params = {name: getattr(how.owner, how.attr) for name, how in self.plan.items()}
        self.draw_s, self.draws, self.held_bytes, self.peak_held_bytes = 0.0, 0, 0, 0
        by_module: dict[nn.Module, list[str]] = {}
        frozen_ids = {id(p): name for name, p in self.params.items()}
        for module in model.modules():
            names = [frozen_ids[id(p)] for p in module.parameters(recurse=False) if id(p) in frozen_ids]
            if names:
                by_module[module] = names
        self.by_module = by_module
        for module in by_module:
            module.register_forward_pre_hook(self._fill)
            module.register_forward_hook(self._empty)

    def drawn(self, name: str) -> torch.Tensor:
        """Frozen parameter `name`, drawn now on the CPU."""
        start = time.perf_counter()
        value = draw(name, self.plan[name], self.seed, torch.empty(self.shapes[name]))
        self.draw_s += time.perf_counter() - start
        self.draws += 1
        return value

    def fingerprint(self, model: nn.Module = None) -> dict[str, str]:  # model: load_checkpoint passes it; unused
        """SHA-256 of every frozen parameter, each drawn, hashed and freed in turn (checkpoint.restore's check)."""
        return {name: tensor_sha256(self.drawn(name)) for name in self.plan}

    def _fill(self, module: nn.Module, args) -> None:
        for name in self.by_module[module]:
            param = self.params[name]
            param.data = self.drawn(name).to(param.device)
            self.held_bytes += param.nbytes
        self.peak_held_bytes = max(self.peak_held_bytes, self.held_bytes)

    def _empty(self, module: nn.Module, args, output) -> None:
        for name in self.by_module[module]:
            param = self.params[name]
            self.held_bytes -= param.nbytes
            param.data = torch.empty(0, device=param.device)


def build_on_the_fly(make_model, freeze_cfg, seed: int, adjust=None) -> tuple[nn.Module, OnTheFly]:
    """The model `make_model()` builds, with its trainable parameters drawn as `init_and_freeze` draws them and its
    frozen ones drawn on the fly; no frozen parameter is allocated here. `adjust(plan)`: the draw plan to use instead
    of the freeze pattern's (a model file's: freeze.with_draws)."""
    with torch.device("meta"):
        model = make_model()
    plan = draw_plan(model, freeze_cfg)
    if adjust is not None:
        plan = adjust(plan)
    shapes = {name: getattr(how.owner, how.attr).shape for name, how in plan.items()}
    made: dict[int, nn.Parameter] = {}  # meta parameter → its real one: a tied weight's holders share it
    for module_name, module in model.named_modules():
        for attr, meta in list(module.named_parameters(recurse=False)):
            name = f"{module_name}.{attr}" if module_name else attr
            if id(meta) not in made:
                how = plan[name]
                value = torch.empty(0) if how.frozen else draw(name, how, seed, torch.empty(shapes[name]))
                made[id(meta)] = nn.Parameter(value, requires_grad=not how.frozen)
            setattr(module, attr, made[id(meta)])  # through the module's __setattr__: a GRU re-reads its weights
    return model, OnTheFly(model, plan, seed, shapes)
