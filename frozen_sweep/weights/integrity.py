"""Content hashes that make an altered model file (or an exported directory) refused rather than used.

A model file's metadata holds the SHA-256 of every stored tensor (its dtype, shape and bytes: a reshaped tensor is
altered too) and of every other metadata value; `check_digests` names the first entry that differs. An exported
directory holds a `SHA256SUMS` file in the format `sha256sum -c` reads; `check_checksums` verifies it the same way.
"""

import hashlib
from pathlib import Path

import torch

CHECKSUMS = "SHA256SUMS"  # in an exported directory, as coreutils' sha256sum writes it


class IntegrityError(ValueError):
    """A file whose content does not match its recorded hash; the message names the file and the entry."""


def tensor_digest(tensor: torch.Tensor) -> str:
    """SHA-256 of a tensor's dtype, shape and bytes."""
    digest = hashlib.sha256(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
    digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy())
    return digest.hexdigest()


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_digests(source, kind: str, expected: dict[str, str], actual: dict[str, str]) -> None:
    """IntegrityError naming the first of `kind` (e.g. "stored tensor") in `actual` that is missing, unexpected or
    differs from `expected`."""
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    if missing or extra:
        found = f"; it has {', '.join(extra)} instead" if extra else ""
        what = f"{kind} {missing[0]} is missing{found}" if missing else f"{kind} {extra[0]} was never written to it"
        raise IntegrityError(f"{source}: {what} (the file was altered): refused")
    for name in expected:
        if expected[name] != actual[name]:
            raise IntegrityError(f"{source}: {kind} {name} does not match its SHA-256 (the file was altered or "
                                 "damaged): refused")  # fmt: skip


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _listed_files(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): file_digest(p) for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != CHECKSUMS}  # fmt: skip


def write_checksums(directory: Path) -> None:
    """Write `directory`/SHA256SUMS: every file's SHA-256 (`sha256sum -c SHA256SUMS` checks it too)."""
    lines = "".join(f"{digest}  {name}\n" for name, digest in _listed_files(Path(directory)).items())
    (Path(directory) / CHECKSUMS).write_text(lines)


def check_checksums(directory: Path) -> None:
    """IntegrityError naming the first file of an exported `directory` that is missing, added or altered."""
    directory = Path(directory)
    listing = directory / CHECKSUMS
    if not listing.is_file():
        raise IntegrityError(f"{directory}: no {CHECKSUMS}: not an exported directory, or one altered: refused")
    expected = dict(reversed(line.split("  ", 1)) for line in listing.read_text().splitlines() if line)
    check_digests(directory, "file", expected, _listed_files(directory))
