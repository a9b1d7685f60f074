"""Seed-only checkpoints: trainable parameters + the seed; frozen parameters are regenerated and verified on load."""

from pathlib import Path
from typing import Any

import torch
from torch import nn

from frozen_sweep.run.directory import STEP_CHECKPOINT, step_checkpoints
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


def keep_step_checkpoint(run_dir: Path, model: nn.Module, seed: int, step: int, keep: int) -> None:
    """Keeps the last `keep` validations' weights (trainer.keep_checkpoints), for averaging; 0 keeps none."""
    if keep <= 0:
        return
    save_checkpoint(Path(run_dir) / STEP_CHECKPOINT.format(step), model, seed, step=step)
    for old in step_checkpoints(run_dir)[:-keep]:
        old.unlink()


def load_checkpoint(path: Path, model: nn.Module, freeze_cfg=None, fingerprint=frozen_fingerprint) -> dict:
    """Verify the model's frozen parameters against the saved run's, then load the trainable ones.

    With `freeze_cfg`, the frozen parameters are first regenerated from the stored seed. Without, they must already
    be in place: a model freshly built for the job (its frozen parameters are regenerated as it is built), or a
    relearn model, whose frozen parameters are a base run's trained weights (frozen_sweep.study.relearn).
    `fingerprint(model)` hashes the model's frozen parameters (a model whose frozen parameters are drawn on the fly
    brings its own). Returns the checkpoint's other entries (optimiser state etc.).
    """
    state = torch.load(path, map_location="cpu", weights_only=False)
    if freeze_cfg is not None:
        init_and_freeze(model, freeze_cfg, state["seed"])
    restore(path, model, state["trainable"], state["frozen_sha256"], fingerprint(model))
    return {k: v for k, v in state.items() if k not in ("seed", "trainable", "frozen_sha256")}


def restore(source: Path, model: nn.Module, trainable: dict, expected: dict[str, str], actual: dict[str, str]) -> None:
    """Check the regenerated frozen parameters' hashes (`actual`) against the saved ones (`expected`), naming the
    first that differs, then copy the saved trainable tensors into the model. `source` names the file in errors."""
    if expected.keys() != actual.keys():
        raise CheckpointError(
            f"{source}: frozen parameters differ from this config's freeze pattern "
            f"(saved: {sorted(expected)[:3]}…, config: {sorted(actual)[:3]}…)"
        )
    mismatched = [name for name in expected if expected[name] != actual[name]]
    if mismatched:
        others = f" (and {len(mismatched) - 1} more)" if len(mismatched) > 1 else ""
        raise CheckpointError(
            f"{source}: frozen tensor {mismatched[0]}{others} regenerated from the seed does not match its saved "
            f"SHA-256: another torch version draws other numbers, or the file was altered"
        )
    params = dict(model.named_parameters())
    if trainable.keys() != {n for n, p in params.items() if p.requires_grad}:
        raise CheckpointError(f"{source}: its trainable parameters do not match this model")
    with torch.no_grad():
        for name, value in trainable.items():
            if params[name].shape != value.shape:
                raise CheckpointError(f"{source}: {name} has shape {tuple(value.shape)}, the model's is "
                                      f"{tuple(params[name].shape)}")  # fmt: skip
            params[name].copy_(value)
