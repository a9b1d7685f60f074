"""The reservoir study (Shen et al. 2021; docs/studies.md): models with frozen random layers, and the all-trainable
baselines swept beside them (reservoir=none). The model is the freeze study's (frozen_sweep.model.reservoir builds
the reservoirs); the record gets what the collector's reservoir table shows."""

from frozen_sweep.model import Transformer
from frozen_sweep.model.reservoir import Reservoir
from frozen_sweep.run.record import RunResult
from frozen_sweep.study.freeze import FreezeStudy


def describe_reservoirs(cfg, model: Transformer) -> dict:
    """Type, stack pattern, layer counts, backskip, init and the reservoirs' (frozen) parameters."""
    stack = getattr(model, cfg.reservoir.stack.value)
    pattern = stack.pattern
    return {
        "type": cfg.reservoir.type.value,
        "stack": cfg.reservoir.stack.value,
        "pattern": pattern,
        "reservoir_layers": pattern.count("R"),
        "updatable_layers": pattern.count("L"),
        "backskip": cfg.reservoir.backskip,
        "init": cfg.reservoir.init.value,
        "params": sum(p.numel() for layer in stack.layers if isinstance(layer, Reservoir) for p in layer.parameters()),
    }


class ReservoirStudy(FreezeStudy):
    def describe(self, model: Transformer, result: RunResult) -> None:
        result.reservoir = describe_reservoirs(self.cfg, model)


STUDY = ReservoirStudy
