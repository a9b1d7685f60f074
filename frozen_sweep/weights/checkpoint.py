"""Seed-only checkpoints: trainable parameters + the seed; frozen parameters are regenerated and verified on load."""

from pathlib import Path
from typing import Any

import torch
from torch import nn

from frozen_sweep.system.files import write_atomic
from frozen_sweep.weights.freeze import frozen_fingerprint, init_and_freeze


class CheckpointError(RuntimeError):
    pass


def save_checkpoint(path: Path, model: nn.Module, seed: int, **extra: Any) -> None:
    """Atomically save the trainable parameters, the seed and the frozen parameters' fingerprint."""
    state = {
        "seed": seed,
        "trainable": {n: p.detach().cpu() for n, p in model.named_parameters() if p.requires_grad},
        "frozen_sha256": frozen_fingerprint(model),
        **extra,
    }
    write_atomic(path, lambda f: torch.save(state, f))


def load_checkpoint(path: Path, model: nn.Module, freeze_cfg=None) -> dict:
    """Verify the model's frozen parameters against the saved run's, then load the trainable ones.

    With `freeze_cfg`, the frozen parameters are first regenerated from the stored seed. Without, they must already
    be in place: a model freshly built for the job (its frozen parameters are regenerated as it is built), or a
    relearn model, whose frozen parameters are a base run's trained weights (frozen_sweep.study.relearn).
    Returns the checkpoint's other entries (optimiser state etc.).
    """
    state = torch.load(path, map_location="cpu", weights_only=False)
    if freeze_cfg is not None:
        init_and_freeze(model, freeze_cfg, state["seed"])
    expected, actual = state["frozen_sha256"], frozen_fingerprint(model)
    if expected.keys() != actual.keys():
        raise CheckpointError(
            f"{path}: frozen parameters differ from this config's freeze pattern "
            f"(checkpoint: {sorted(expected)[:3]}…, config: {sorted(actual)[:3]}…)"
        )
    mismatched = [name for name in expected if expected[name] != actual[name]]
    if mismatched:
        raise CheckpointError(f"{path}: regenerated frozen parameters differ from the saved run's: {mismatched[:5]}")
    params = dict(model.named_parameters())
    trainable = state["trainable"]
    if trainable.keys() != {n for n, p in params.items() if p.requires_grad}:
        raise CheckpointError(f"{path}: its trainable parameters do not match this model")
    with torch.no_grad():
        for name, value in trainable.items():
            params[name].copy_(value)
    return {k: v for k, v in state.items() if k not in ("seed", "trainable", "frozen_sha256")}
