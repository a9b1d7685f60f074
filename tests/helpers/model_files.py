"""Altering a model file as another torch version (or a hand) would: a frozen tensor's saved hash replaced."""

import json
from pathlib import Path

import safetensors
import safetensors.torch


def replace_frozen_hash(path: Path, name: str) -> None:
    """Rewrite the model file at `path` with frozen tensor `name`'s SHA-256 changed, as if the seed drew others."""
    with safetensors.safe_open(str(path), framework="pt") as f:
        metadata, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    hashes = json.loads(metadata["frozen_sha256"])
    assert name in hashes, f"{name} is not a drawn frozen tensor of {path}"
    hashes[name] = "0" * 64
    safetensors.torch.save_file(tensors, str(path), metadata | {"frozen_sha256": json.dumps(hashes)})
