"""The seed-only model file: one safetensors file that holds a run's trainable tensors, its seed, its config, its
vocabulary and a SHA-256 of each frozen tensor, and nothing else (a classifier: also its label names).

safetensors, because loading it cannot run code (a pickled checkpoint can) and any language reads it. The frozen
tensors are not in it: they are drawn again from (seed, name) when it is loaded, and refused, naming the tensor, when
a hash differs (another torch version draws other numbers, or the file was altered). Its size is therefore the
trainable tensors' bytes plus the vocabulary and a few KB of header. A fine-tuned run's frozen tensors come from its
base run: those the base drew and kept frozen are drawn again from the base's seed (the file names it); those the
base trained no seed draws, and they are stored like trainable ones.

Layout: every stored parameter under its own name (a tied weight once, under its first name), the SentencePiece
model as the uint8 tensor VOCAB_TENSOR; metadata (strings): format, seed, config (YAML), frozen_sha256 (JSON: the
drawn ones), frozen_stored (JSON: the stored parameters that are frozen), for a classifier or a regression, classifier
(JSON: labels by class id, null for a regression, and whether an example is a pair of texts), for a fine-tuned
run, base_draws (JSON: the frozen tensors its base run drew, each with the base's seed and init), where its record
says, threads (the CPU threads its job ran with, which the file is then used at, as its run directory is), and sha256 (JSON:
{"tensors": the SHA-256 of every stored tensor, the vocabulary included, "metadata": of every other metadata value}).
Reading checks every one before anything is used, so an altered byte anywhere is refused, naming what differs.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import safetensors
import safetensors.torch
import torch
from torch import nn

from frozen_sweep.data.vocab import vocab_from_bytes
from frozen_sweep.system.files import write_atomic
from frozen_sweep.weights.integrity import IntegrityError, check_digests, tensor_digest, text_digest

FORMAT = "frozen_sweep.seed_only/3"
UNHASHED = ("frozen_sweep.seed_only/1", "frozen_sweep.seed_only/2")  # older files: no sha256, so no check possible
VOCAB_TENSOR = "__vocabulary__"  # not a parameter name: those are dotted module paths
DIGESTS = "sha256"  # the metadata key of the content hashes


class ModelFileError(ValueError):
    """Not a model file this version can read; the message names the file and why."""


@dataclass
class ModelFile:
    seed: int
    config_yaml: str  # the config the run trained with
    vocab: object  # data/vocab.py's Vocab, or a checkpoint's tokenizer (data/checkpoint_vocab.py)
    trainable: dict[str, torch.Tensor]
    frozen_stored: dict[str, torch.Tensor]  # frozen, but not drawn from the seed (a fine-tuned run's from its base)
    frozen_sha256: dict[str, str]  # the frozen tensors drawn from the seed
    classifier: Optional[dict] = None  # {"labels": [names by class id], or null for a regression, "pairs": bool}
    base_draws: dict = field(default_factory=dict)  # frozen tensors another run's seed drew: name → [seed, init]
    threads: Optional[int] = None  # the CPU threads its job ran with, where its record said


def write_model_file(path: Path, model: nn.Module, seed: int, config_yaml: str, vocab,
                     frozen_sha256: dict[str, str], classifier: Optional[dict] = None,
                     base_draws: Optional[dict] = None, threads: Optional[int] = None) -> None:  # fmt: skip
    """Atomically write the model file of `model` and the rest of a run: every parameter but the frozen ones hashed in
    `frozen_sha256` (those `seed` draws, or for names in `base_draws` another run's seed) is stored."""
    tensors = {name: p.detach().cpu().contiguous() for name, p in model.named_parameters() if name not in frozen_sha256}
    frozen_stored = [name for name, p in model.named_parameters() if name in tensors and not p.requires_grad]
    tensors[VOCAB_TENSOR] = torch.frombuffer(bytearray(vocab.model), dtype=torch.uint8)
    metadata = {"format": FORMAT, "seed": str(seed), "config": config_yaml, "frozen_sha256": json.dumps(frozen_sha256),
                "frozen_stored": json.dumps(frozen_stored)}  # fmt: skip
    if classifier:
        metadata["classifier"] = json.dumps(classifier)
    if base_draws:
        metadata["base_draws"] = json.dumps(base_draws)
    if threads:
        metadata["threads"] = str(threads)
    data = safetensors.torch.save(tensors, signed(tensors, metadata))
    write_atomic(path, lambda f: f.write(data))


def signed(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> dict[str, str]:
    """`metadata` with the SHA-256 of every tensor and of every metadata value added (the DIGESTS entry)."""
    digests = {"tensors": {name: tensor_digest(t) for name, t in tensors.items()},
               "metadata": {key: text_digest(value) for key, value in metadata.items()}}  # fmt: skip
    return metadata | {DIGESTS: json.dumps(digests)}


def read_model_file(path: Path) -> ModelFile:
    """The content of a model file, every tensor and metadata value checked against its SHA-256 first;
    ModelFileError naming the file and what is wrong when it is not one, or not as it was written."""
    try:
        with safetensors.safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            _check_format(path, metadata.get("format"))
            digests = _digests(path, metadata)
            check_digests(path, "metadata key", digests["metadata"],
                          {key: text_digest(value) for key, value in metadata.items() if key != DIGESTS})
            tensors = {name: f.get_tensor(name) for name in f.keys()}
            check_digests(path, "stored tensor", digests["tensors"],
                          {name: tensor_digest(t) for name, t in tensors.items()})
    except ModelFileError:
        raise
    except IntegrityError as e:
        raise ModelFileError(str(e)) from None
    except (safetensors.SafetensorError, OSError, ValueError) as e:
        raise ModelFileError(f"{path} is not a model file (safetensors: {e})") from None
    missing = [key for key in ("seed", "config", "frozen_sha256", "frozen_stored") if key not in metadata] + (
        [VOCAB_TENSOR] if VOCAB_TENSOR not in tensors else []
    )
    if missing:
        raise ModelFileError(f"{path}: its {', '.join(missing)} is missing")
    vocab = vocab_from_bytes(tensors.pop(VOCAB_TENSOR).numpy().tobytes())
    frozen_names = json.loads(metadata["frozen_stored"])
    absent = [name for name in frozen_names if name not in tensors]
    if absent:
        raise ModelFileError(f"{path}: frozen tensor {absent[0]} is listed as stored but is not in the file")
    frozen_stored = {name: tensors.pop(name) for name in frozen_names}
    classifier = json.loads(metadata["classifier"]) if "classifier" in metadata else None
    base_draws = json.loads(metadata.get("base_draws", "{}"))
    return ModelFile(int(metadata["seed"]), metadata["config"], vocab, tensors, frozen_stored,
                     json.loads(metadata["frozen_sha256"]), classifier, base_draws,
                     int(metadata["threads"]) if "threads" in metadata else None)  # fmt: skip


def _check_format(path: Path, found) -> None:
    if found in UNHASHED:
        raise ModelFileError(f"{path} was written by an older frozen_sweep (format {found!r}) without content hashes, "
                             f"so it cannot be checked: export it again from its run")  # fmt: skip
    if found != FORMAT:
        raise ModelFileError(f"{path} is a safetensors file but not a frozen_sweep model file (format {found!r}, "
                             f"expected {FORMAT!r}): write one with `python -m frozen_sweep.export RUN {path}`")


def _digests(path: Path, metadata: dict[str, str]) -> dict:
    """The file's recorded hashes; ModelFileError when they are missing or not what `signed` writes."""
    try:
        digests = json.loads(metadata[DIGESTS])
        assert isinstance(digests["tensors"], dict) and isinstance(digests["metadata"], dict)
        return digests
    except (KeyError, TypeError, AssertionError, json.JSONDecodeError):
        raise ModelFileError(f"{path}: its metadata's {DIGESTS} entry is missing or altered: refused") from None
