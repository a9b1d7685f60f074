"""The on-disk format of a prepared dataset, and nothing else owns it: `<task.cache_dir>/prepared/<key>/` holds

    manifest.json            FORMAT_VERSION, key, settings, source hashes, counts, dropped lines, every file's size
    spm.model                the SentencePiece vocabulary (trained here, or given by task.vocab), or
    tokenizer_vocab.json     a checkpoint's tokenizer (task.vocab: data/checkpoint_vocab.py)
    {split}.{lang}.bin       token ids of every kept sentence, concatenated (uint16 if the vocabulary fits, else
                             uint32; no bos/eos), read by jobs a sentence at a time (DiskArray)
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
import weakref
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from frozen_sweep.data.identity import FORMAT_VERSION
from frozen_sweep.data.labelled import LabelledSplit, is_labelled
from frozen_sweep.data.split import Side, Split
from frozen_sweep.data.vocab import prepared_vocab_file, read_vocab

MANIFEST = "manifest.json"
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


def read_manifest(directory: Path) -> dict:
    return json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))


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


def longest_held_out(directory: Path) -> tuple[int, str, int]:
    """(subwords, "split.side", row) of the longest valid or test example of a prepared dataset, on any side: a
    held-out example is scored whole, so the model's positions must cover it (bos and eos added)."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    found = (0, "", 0)
    for split in HELD_OUT:
        for lang in manifest["langs"]:
            lens = np.load(directory / side_files(split, lang)[2])  # (N,) int32: a held-out split's, small
            if len(lens) and int(lens.max()) > found[0]:
                found = (int(lens.max()), f"{split}.{lang}", int(lens.argmax()))
    return found


@dataclass
class Prepared:
    directory: Path
    manifest: dict
    vocab: object  # data/vocab.py's Vocab, or data/checkpoint_vocab.py's TokenizerVocab
    splits: dict[str, Split]


class DiskArray:
    """A 1-D array in a file (a raw .bin, or the data of a .npy), read with pread where it is indexed: an int, a slice
    of step 1, or an integer array (one read per element). Nothing of it is mapped into the process.

    A memory map would be: every page a job touches counts in its RSS (RssFile) for as long as the map lives, and one
    touched id maps 64 KB around it (the kernel's fault-around), or whole large folios where the page cache holds them
    (≈350 KB an id on average right after preparation wrote the file, Linux 6.18, ext4): a 2-step job's random
    batches mapped ≈40 MB of a 400k-pair corpus's 50 MB of ids, a longer job all of them (docs/performance.md, data
    at scale). Reads still go through the page cache, which is not the job's."""

    def __init__(self, path: Path, dtype: np.dtype, start: int = 0, length: int | None = None):
        self.path, self.dtype, self.start = Path(path), np.dtype(dtype), start
        size = self.path.stat().st_size - start
        self.length = size // self.dtype.itemsize if length is None else length
        self.fd: int | None = None  # opened at the first read

    @classmethod
    def npy(cls, path: Path) -> "DiskArray":
        """The data of a 1-D, C-order .npy file (np.save's), read in place."""
        fmt = np.lib.format
        with open(path, "rb") as f:
            read_header = fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
            if len(shape) != 1 or fortran or dtype.hasobject:
                raise ValueError(f"{path}: a 1-D array of numbers expected, found shape {shape} of {dtype}")
            return cls(path, dtype, f.tell(), shape[0])

    def __len__(self) -> int:
        return self.length

    def _fd(self) -> int:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
            weakref.finalize(self, os.close, self.fd)
        return self.fd

    def ranges(self, starts, counts) -> np.ndarray:
        """Elements starts[k] … starts[k] + counts[k] - 1 for every k, concatenated: one read per range."""
        starts, counts = np.asarray(starts, np.int64), np.asarray(counts, np.int64)
        if len(starts) and (starts.min() < 0 or counts.min() < 0 or (starts + counts).max() > self.length):
            raise IndexError(f"{self.path}: a range outside its {self.length} elements")
        fd, size = self._fd(), self.dtype.itemsize
        data = b"".join(map(os.pread, repeat(fd), (counts * size).tolist(), (starts * size + self.start).tolist()))
        if len(data) != int(counts.sum()) * size:
            raise ValueError(f"{self.path}: {len(data)} bytes read, {counts.sum() * size} expected (did it change?)")
        return np.frombuffer(data, self.dtype)

    def __getitem__(self, key):
        if isinstance(key, slice):
            first, stop, step = key.indices(self.length)
            if step != 1:
                raise IndexError("DiskArray: slices of step 1 only")
            return self.ranges([first], [max(stop - first, 0)])
        indices = np.asarray(key)
        if indices.dtype.kind not in "iu":
            raise IndexError(f"DiskArray: an int, a slice or an integer array, not {indices.dtype}")
        indices = np.where(indices < 0, indices + self.length, indices)
        values = self.ranges(indices.reshape(-1), np.ones(indices.size, np.int64)).reshape(indices.shape)
        return values[()] if values.ndim == 0 else values  # an int gives a scalar, as numpy's indexing does

    def __getstate__(self) -> dict:  # a copy in another process opens the file itself
        return {**self.__dict__, "fd": None}


def open_prepared(directory: Path) -> Prepared:
    """The prepared dataset at `directory` (checked by `problem` first): ids and offsets read from disk as batches ask
    for them (DiskArray), lengths memory-mapped (planning reads them whole), held-out text read; ValueError if the
    arrays disagree with the manifest."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    dtype = np.dtype(manifest["dtype"])
    vocab = read_vocab(prepared_vocab_file(directory))
    splits = {}
    for split, counts in manifest["splits"].items():
        sides, texts = [], []
        for lang in manifest["langs"]:
            bin_name, off_name, len_name = side_files(split, lang)
            side = Side(DiskArray(directory / bin_name, dtype), DiskArray.npy(directory / off_name),
                        np.load(directory / len_name, mmap_mode="r"))  # fmt: skip
            if len(side.lens) != counts["examples"] or int(side.offsets[-1]) != len(side.ids):
                raise ValueError(f"{directory}: {split}.{lang} does not match {MANIFEST}; delete the directory")
            sides.append(side)
            if split in HELD_OUT:
                texts.append((directory / text_file(split, lang)).read_text(encoding="utf-8").split("\n")[:-1])
        src, tgt = sides if len(sides) == 2 else (None, sides[0])
        src_text, tgt_text = (texts if len(texts) == 2 else (None, texts[0])) if texts else (None, None)
        if is_labelled(manifest):  # task.kind=classify or regression
            labels = np.load(directory / labels_file(split), mmap_mode="r")
            splits[split] = LabelledSplit(tgt, labels, tgt_text, specials=vocab.specials)
        else:
            splits[split] = Split(src, tgt, src_text, tgt_text, specials=vocab.specials)
    return Prepared(directory, manifest, vocab, splits)
