"""The seed-only model file: one safetensors file that holds a run's trainable tensors, its seed, its config, its
vocabulary and a SHA-256 of each frozen tensor, and nothing else.

safetensors, because loading it cannot run code (a pickled checkpoint can) and any language reads it. The frozen
tensors are not in it: they are drawn again from (seed, name) when it is loaded, and refused, naming the tensor, when
a hash differs (another torch version draws other numbers, or the file was altered). Its size is therefore the
trainable tensors' bytes plus the vocabulary and a few KB of header.

Layout: every trainable parameter under its own name (a tied weight once, under its first name), the SentencePiece
model as the uint8 tensor VOCAB_TENSOR; metadata (strings): format, seed, config (YAML), frozen_sha256 (JSON).
"""

import json
from dataclasses import dataclass
from pathlib import Path

import safetensors
import safetensors.torch
import torch
from torch import nn

from frozen_sweep.data.vocab import Vocab
from frozen_sweep.system.files import write_atomic

FORMAT = "frozen_sweep.seed_only/1"
VOCAB_TENSOR = "__vocabulary__"  # not a parameter name: those are dotted module paths


class ModelFileError(ValueError):
    """Not a model file this version can read; the message names the file and why."""


@dataclass
class ModelFile:
    seed: int
    config_yaml: str  # the config the run trained with
    vocab: Vocab
    trainable: dict[str, torch.Tensor]
    frozen_sha256: dict[str, str]


def write_model_file(path: Path, model: nn.Module, seed: int, config_yaml: str, vocab: Vocab,
                     frozen_sha256: dict[str, str]) -> None:  # fmt: skip
    """Atomically write the model file of `model` (its trainable parameters) and the rest of a run."""
    tensors = {name: p.detach().cpu().contiguous() for name, p in model.named_parameters() if p.requires_grad}
    tensors[VOCAB_TENSOR] = torch.frombuffer(bytearray(vocab.model), dtype=torch.uint8)
    metadata = {"format": FORMAT, "seed": str(seed), "config": config_yaml, "frozen_sha256": json.dumps(frozen_sha256)}
    data = safetensors.torch.save(tensors, metadata)
    write_atomic(path, lambda f: f.write(data))


def read_model_file(path: Path) -> ModelFile:
    """The content of a model file; ModelFileError naming the file when it is not one."""
    try:
        with safetensors.safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except (safetensors.SafetensorError, OSError, ValueError) as e:
        raise ModelFileError(f"{path} is not a model file (safetensors: {e})") from None
    if metadata.get("format") != FORMAT:
        raise ModelFileError(f"{path} is a safetensors file but not a frozen_sweep model file (format "
                             f"{metadata.get('format')!r}, expected {FORMAT!r}): write one with "
                             f"`python -m frozen_sweep.export RUN {path}`")  # fmt: skip
    missing = [key for key in ("seed", "config", "frozen_sha256") if key not in metadata] + (
        [VOCAB_TENSOR] if VOCAB_TENSOR not in tensors else []
    )
    if missing:
        raise ModelFileError(f"{path}: its {', '.join(missing)} is missing")
    vocab = Vocab(tensors.pop(VOCAB_TENSOR).numpy().tobytes())
    return ModelFile(int(metadata["seed"]), metadata["config"], vocab, tensors, json.loads(metadata["frozen_sha256"]))
