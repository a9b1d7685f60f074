"""Altering a model file as another torch version, a damaged disk or a hand would."""

import json
import struct
from pathlib import Path

import safetensors
import safetensors.torch

from frozen_sweep.weights.model_file import DIGESTS, signed


def _content(path: Path) -> tuple[dict, dict]:
    with safetensors.safe_open(str(path), framework="pt") as f:
        return f.metadata(), {k: f.get_tensor(k) for k in f.keys()}


def replace_frozen_hash(path: Path, name: str) -> None:
    """Rewrite the model file at `path` with frozen tensor `name`'s SHA-256 changed, as if the seed drew others (the
    file's own hashes made anew: it is not altered, its frozen tensors just regenerate differently)."""
    metadata, tensors = _content(path)
    hashes = json.loads(metadata["frozen_sha256"])
    assert name in hashes, f"{name} is not a drawn frozen tensor of {path}"
    hashes[name] = "0" * 64
    unsigned = {k: v for k, v in metadata.items() if k != DIGESTS}
    safetensors.torch.save_file(tensors, str(path), signed(tensors, unsigned | {"frozen_sha256": json.dumps(hashes)}))


def flip_bit(path: Path, tensor: str, byte: int, bit: int) -> None:
    """Flip one bit of tensor `tensor`'s `byte`-th stored byte in place, as a damaged disk would."""
    data = bytearray(path.read_bytes())
    (header_size,) = struct.unpack("<Q", data[:8])
    start, _ = json.loads(data[8 : 8 + header_size])[tensor]["data_offsets"]
    data[8 + header_size + start + byte] ^= 1 << bit
    path.write_bytes(bytes(data))


def edit_metadata(path: Path, edit) -> None:
    """Rewrite the file with its metadata replaced by `edit(metadata)`, its hashes left as they were (a hand's edit)."""
    metadata, tensors = _content(path)
    safetensors.torch.save_file(tensors, str(path), edit(dict(metadata)))
