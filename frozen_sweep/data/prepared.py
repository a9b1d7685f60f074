"""The on-disk format of a prepared dataset, and nothing else owns it: `<task.cache_dir>/prepared/<key>/` holds

    manifest.json            FORMAT_VERSION, key, settings, source hashes, counts, dropped lines, every file's size
    spm.model                the SentencePiece vocabulary
    {split}.{lang}.bin       token ids of every kept sentence, concatenated (uint16 if the vocabulary fits, else
                             uint32; no bos/eos), memory-mapped by jobs
    {split}.{lang}.off.npy   (N + 1,) int64: sentence i is ids[off[i]:off[i + 1]]
    {split}.{lang}.len.npy   (N,) int32 subword counts (what batching sorts by)
    {valid,test}.{lang}.txt  the held-out sentences as read (BLEU's references, decoding's logs)
    {split}.labels.npy       task.kind=classify: (N,) int32 label ids, the names in the manifest's `labels`;
                             task.kind=regression: (N,) float32 numbers, the manifest says `"label_kind": "number"`
                             (and has no `labels`) and gives each split's `numbers`: count, mean, std. Either way the
                             one side is `text` (pairs: text_a, eos eos, text_b: data/preparation.py)

12 bytes per sentence and side beyond the tokens themselves, as fairseq's .idx. The key (data/identity.py) hashes the
sources' content and every setting that changes the ids. A directory is complete when its manifest names every file
at its size; data/preparation.py writes it under a temporary name and renames it, so it is complete or absent.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from frozen_sweep.data.identity import FORMAT_VERSION
from frozen_sweep.data.labelled import LabelledSplit, is_labelled
from frozen_sweep.data.split import Side, Split
from frozen_sweep.data.vocab import Vocab

MANIFEST = "manifest.json"
VOCAB_FILE = "spm.model"
HELD_OUT = ("valid", "test")


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 2**16 else np.uint32)


def labels_file(split: str) -> str:
    return f"{split}.labels.npy"


def side_files(split: str, lang: str) -> tuple[str, str, str]:
    return f"{split}.{lang}.bin", f"{split}.{lang}.off.npy", f"{split}.{lang}.len.npy"


def text_file(split: str, lang: str) -> str:
    return f"{split}.{lang}.txt"


class SideWriter:
    """Appends the encoded chunks of one language of a split: ids to .bin, lengths into a .npy of known length."""

    def __init__(self, directory: Path, split: str, lang: str, examples: int, dtype: np.dtype):
        self.directory, self.dtype, self.n = Path(directory), dtype, 0
        self.names = side_files(split, lang)
        self.bin = open(self.directory / self.names[0], "wb")
        self.lens = np.lib.format.open_memmap(self.directory / self.names[2], "w+", np.int32, (examples,))

    def add(self, ids: list[list[int]]) -> None:
        lens = np.fromiter(map(len, ids), np.int32, count=len(ids))
        np.fromiter((t for row in ids for t in row), self.dtype, count=int(lens.sum())).tofile(self.bin)
        self.lens[self.n : self.n + len(ids)] = lens
        self.n += len(ids)

    def close(self) -> int:
        """Flush everything to disk; the number of tokens written."""
        if self.n != len(self.lens):
            raise RuntimeError(f"{self.names[2]}: {self.n} sentences written, {len(self.lens)} expected")
        offsets = np.lib.format.open_memmap(self.directory / self.names[1], "w+", np.int64, (self.n + 1,))
        offsets[0] = 0
        np.cumsum(self.lens, out=offsets[1:])
        tokens = int(offsets[-1])
        for array in (self.lens, offsets):
            array.flush()
        self.bin.flush()
        os.fsync(self.bin.fileno())
        self.bin.close()
        del self.lens, offsets
        return tokens


def write_texts(directory: Path, split: str, lang: str, lines: list[str]) -> None:
    (Path(directory) / text_file(split, lang)).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_manifest(directory: Path, manifest: dict) -> None:
    """Last file of a build: records every file's size, so that a truncated copy is told from a complete one."""
    directory = Path(directory)
    files = sorted(p.name for p in directory.iterdir() if p.name != MANIFEST)
    sizes = {name: (directory / name).stat().st_size for name in files}
    manifest = {**manifest, "format": FORMAT_VERSION, "files": sizes}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def problem(directory: Path, key: str) -> str | None:
    """None if `directory` holds a complete prepared dataset for `key`, else what is wrong with it."""
    directory = Path(directory)
    if not directory.is_dir():
        return "not prepared yet"
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"no readable {MANIFEST} ({type(e).__name__}: {e})"
    if manifest.get("format") != FORMAT_VERSION or manifest.get("key") != key:
        return f"{MANIFEST} is for format {manifest.get('format')}, key {manifest.get('key')}"
    for name, size in files.items():
        path = directory / name
        actual = path.stat().st_size if path.is_file() else None
        if actual != size:
            return f"{name} has {actual if actual is not None else 'no'} bytes, the manifest says {size}"
    return None


@dataclass
class Prepared:
    directory: Path
    manifest: dict
    vocab: Vocab
    splits: dict[str, Split]


def _ids(path: Path, dtype: np.dtype) -> np.ndarray:
    return np.memmap(path, dtype=dtype, mode="r") if path.stat().st_size else np.zeros(0, dtype)


def open_prepared(directory: Path) -> Prepared:
    """The prepared dataset at `directory` (checked by `problem` first): ids and index memory-mapped, held-out text
    read; ValueError if the arrays disagree with the manifest."""
    directory = Path(directory)
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    dtype = np.dtype(manifest["dtype"])
    splits = {}
    for split, counts in manifest["splits"].items():
        sides, texts = [], []
        for lang in manifest["langs"]:
            bin_name, off_name, len_name = side_files(split, lang)
            side = Side(_ids(directory / bin_name, dtype), np.load(directory / off_name, mmap_mode="r"),
                        np.load(directory / len_name, mmap_mode="r"))  # fmt: skip
            if len(side.lens) != counts["examples"] or int(side.offsets[-1]) != len(side.ids):
                raise ValueError(f"{directory}: {split}.{lang} does not match {MANIFEST}; delete the directory")
            sides.append(side)
            if split in HELD_OUT:
                texts.append((directory / text_file(split, lang)).read_text(encoding="utf-8").split("\n")[:-1])
        src, tgt = sides if len(sides) == 2 else (None, sides[0])
        src_text, tgt_text = (texts if len(texts) == 2 else (None, texts[0])) if texts else (None, None)
        if is_labelled(manifest):  # task.kind=classify or regression
            splits[split] = LabelledSplit(tgt, np.load(directory / labels_file(split), mmap_mode="r"), tgt_text)
        else:
            splits[split] = Split(src, tgt, src_text, tgt_text)
    return Prepared(directory, manifest, Vocab.load(directory / VOCAB_FILE), splits)
