"""Prepare a task's data once: read and check every file, train the vocabulary on a seeded sample, encode every
split on all cores into the format of data/prepared.py, in a temporary directory renamed into place.

Concurrent preparers of one key (a sweep's jobs on a cold cache, two sweeps) take a file lock: one builds, the others
wait and open what it built. A directory that fails its check (killed copy, truncated file) is rebuilt, never used.
Content errors (line counts, UTF-8, empty held-out lines, an empty corpus) are raised by the first pass, naming the
file and line, before anything is written but the temporary directory, which is removed.

Cost: two passes over the text (check and sample, then encode), O(corpus) time; memory holds a chunk of lines, the
sample (task.vocab_sample_lines pairs) and the held-out text, not the training corpus.
"""

import contextlib
import fcntl
import logging
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import numpy as np

from frozen_sweep.config import TaskKind
from frozen_sweep.data.identity import prepared_key
from frozen_sweep.data.labelled import NUMBER, number_summary, parse_numbers, check_classes
from frozen_sweep.data.prepared import (
    HELD_OUT,
    SideWriter,
    labels_file,
    problem,
    token_dtype,
    write_manifest,
    write_texts,
)  # fmt: skip
from frozen_sweep.data.progress import progress
from frozen_sweep.data.sources import record_source, split_readers
from frozen_sweep.data.text_files import langs_of
from frozen_sweep.data.tsv import looks_like_header
from frozen_sweep.data.vocab import given_vocab, train_vocab
from frozen_sweep.system.files import write_dir_atomic

log = logging.getLogger(__name__)

SAMPLE_SEED = 20_2311  # the vocabulary sample's: fixed, so that jobs of every seed share one prepared dataset


def encode_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Reservoir:
    """A seeded uniform sample of k rows of a stream (Algorithm R: one uniform draw per row past the first k), the
    same however the stream is chunked; k = 0 keeps every row."""

    def __init__(self, k: int, seed: int):
        self.k, self.seen, self.columns = k, 0, None
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def add(self, columns: list[list[str]]) -> None:
        n = len(columns[0])
        if self.columns is None:
            self.columns = [[] for _ in columns]
        fill = n if self.k == 0 else max(0, min(n, self.k - self.seen))
        for mine, column in zip(self.columns, columns):
            mine.extend(column[:fill])
        if fill < n:
            position = self.seen + fill + np.arange(n - fill)  # (n - fill,) 0-based index in the stream
            slot = (self.rng.random(n - fill) * (position + 1)).astype(np.int64)
            for i in np.flatnonzero(slot < self.k).tolist():
                for mine, column in zip(self.columns, columns):
                    mine[slot[i]] = column[fill + i]
        self.seen += n


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path`, waited for (and said so) when another preparer holds it. The holder removes the
    file before it lets go, so no lock file outlives its preparation; a waiter that then gets the lock of the removed
    file tries again."""
    while True:
        f = open(path, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process preparing the same data (lock %s)", path)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        f.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        f.close()  # releases the lock


def prepare(task_cfg) -> Path:
    """The prepared dataset of the task's data and settings: found, or built now (under the key's lock)."""
    key, identity, settings = prepared_key(task_cfg)
    root = Path(task_cfg.cache_dir).expanduser() / "prepared"
    final = root / key
    if problem(final, key) is None:
        return final
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root / f".{key}.lock"):
        why = problem(final, key)
        if why is None:  # another process built it while this one waited
            return final
        if final.exists():
            log.warning("%s: %s; rebuilding it", final, why)
            shutil.rmtree(final)
        for stale in root.glob(f".{key}.tmp*"):  # a killed preparation's leftovers: the lock says none runs now
            shutil.rmtree(stale, ignore_errors=True)
        manifest = {"key": key, "sources": identity, "settings": settings}
        write_dir_atomic(final, lambda tmp: build(task_cfg, tmp, manifest), prefix=f".{key}.tmp")
    return final


def build(task_cfg, out: Path, manifest: dict) -> None:
    """Every file of a prepared dataset, into `out`; the manifest last."""
    if TaskKind(task_cfg.kind).labelled:
        return build_labelled(task_cfg, out, manifest)
    started = time.perf_counter()
    directory, readers = split_readers(task_cfg)
    langs = langs_of(task_cfg)
    sample = Reservoir(task_cfg.vocab_sample_lines, SAMPLE_SEED)
    with progress("prepare: check") as bar:
        for split, reader in readers.items():  # every file read and checked before anything is encoded
            for columns in reader.chunks():
                if split == "train" and not task_cfg.vocab:  # a given vocabulary is not trained
                    sample.add(columns)
                bar.update(len(columns[0]))
    checked = time.perf_counter()
    vocab = task_vocab(task_cfg, [text for column in sample.columns or [] for text in column])
    del sample
    (out / vocab.FILE).write_bytes(vocab.model)
    if len(vocab) < task_cfg.vocab_size and not task_cfg.vocab:
        log.warning(
            "the vocabulary has %d pieces, fewer than task.vocab_size=%d: the training text supports no more",
            len(vocab), task_cfg.vocab_size,
        )  # fmt: skip
    trained = time.perf_counter()
    dtype, threads = token_dtype(len(vocab)), encode_threads()
    counts = {}
    with progress("prepare: encode", sum(reader.lines for reader in readers.values())) as bar:
        for split, reader in readers.items():
            examples = reader.lines - reader.skipped_empty
            writers = [SideWriter(out, split, lang, examples, dtype) for lang in langs]
            texts = [[] for _ in langs]
            for columns in reader.chunks():
                for writer, text, column in zip(writers, texts, columns):
                    writer.add(vocab.encode_batch(column, threads))
                    if split in HELD_OUT:
                        text.extend(column)
                bar.update(len(columns[0]))
            tokens = {lang: writer.close() for lang, writer in zip(langs, writers)}
            for lang, text in zip(langs, texts):
                if split in HELD_OUT:
                    write_texts(out, split, lang, text)
            counts[split] = {"examples": examples, "lines": reader.lines, "skipped_empty": reader.skipped_empty,
                             "tokens": tokens}  # fmt: skip
    encoded = time.perf_counter()
    manifest.update(
        langs=langs,
        kind=manifest["settings"]["kind"],
        dtype=dtype.name,
        vocab_size=len(vocab),
        vocab_size_asked=task_cfg.vocab_size,
        vocab_sample_lines=task_cfg.vocab_sample_lines,
        vocab_sampled=None if task_cfg.vocab else
        min(counts["train"]["examples"], task_cfg.vocab_sample_lines or counts["train"]["examples"]),
        splits=counts,
        source_dir=directory,
        seconds={"check": round(checked - started, 2), "vocab": round(trained - checked, 2),
                 "encode": round(encoded - trained, 2)},  # fmt: skip
        encode_threads=threads,
    )
    record_source(task_cfg, manifest)
    write_manifest(out, manifest)
    sizes = "/".join(str(c["examples"]) for c in counts.values())
    log.info("prepared %s: train/valid/test %s, vocab %d, in %.1f s (%s)", manifest["key"], sizes, len(vocab),
             encoded - started, manifest["seconds"])  # fmt: skip


def task_vocab(task_cfg, texts: list[str]):
    """task.vocab when it is set (a fine-tuning job's base vocabulary, a checkpoint's tokenizer), else one trained on
    `texts`."""
    if task_cfg.vocab:
        return given_vocab(task_cfg.vocab)
    return train_vocab(texts, task_cfg.vocab_size)


def build_labelled(task_cfg, out: Path, manifest: dict) -> None:
    """A classification or regression task's prepared dataset (data/prepared.py): one token side `text` (a pair:
    text_a, eos eos, text_b, as RoBERTa separates them), `{split}.labels.npy` with the label ids (train's labels in
    code-point order) or the numbers, label counts (or the numbers' mean and spread) and <unk> counts per split. Every
    file is read and checked first: a label that train lacks, or a regression's label that is not a number, stops it
    naming the file and line; a classifier's train labels that are many numbers are refused as a regression's."""
    started = time.perf_counter()
    directory, readers = split_readers(task_cfg)
    train, header = readers["train"], getattr(readers["train"], "header", None)
    # TSV files (data/tsv.py; a hub dataset's reader has no header) with task.header=null: a first line that looks
    # like a header is refused
    detect = header is False and task_cfg.get("header") is None
    sample, labels = Reservoir(task_cfg.vocab_sample_lines, SAMPLE_SEED), Counter()
    numbers = TaskKind(task_cfg.kind) == TaskKind.regression
    for split, reader in readers.items():
        for text_a, text_b, chunk_labels in reader.chunks():
            if split == "train":
                sample.add([text_a] if text_b is None else [text_a, text_b])
            if numbers:
                parse_numbers(chunk_labels, reader.row)
            elif split == "train":
                labels.update(chunk_labels)
            elif not labels.keys() >= set(chunk_labels):
                number, label = next((i, x) for i, x in enumerate(chunk_labels) if x not in labels)
                if detect and reader.line(number) == 1:
                    raise looks_like_header(reader.path, label, "occurs on no line of train.tsv")
                raise ValueError(
                    f"{reader.row(number)}: label {label!r} does not occur in "
                    f"{getattr(train.path, 'name', 'train')} (its labels: {', '.join(sorted(labels))})"
                )
        if reader is train and detect and labels[train.first_label] == 1:
            raise looks_like_header(train.path, train.first_label, "occurs on no other line")
        if split == "train" and not numbers:
            check_classes(reader.path, labels)
    vocab = task_vocab(task_cfg, [text for column in sample.columns for text in column])
    del sample
    (out / vocab.FILE).write_bytes(vocab.model)
    names = getattr(readers["train"], "names", None) or sorted(labels)  # a ClassLabel's, in its order
    label_id = {label: i for i, label in enumerate(names)}
    dtype, threads, counts = token_dtype(len(vocab)), encode_threads(), {}
    for split, reader in readers.items():
        writer, texts, ids = SideWriter(out, split, "text", reader.lines, dtype), [], []
        unk = 0
        for text_a, text_b, chunk_labels in reader.chunks():
            encoded = vocab.encode_batch(text_a, threads)
            if text_b is not None:
                middle = list(vocab.specials.middle)
                encoded = [a + middle + b for a, b in zip(encoded, vocab.encode_batch(text_b, threads))]
            unk += sum(row.count(vocab.specials.unk) for row in encoded)
            writer.add(encoded)
            ids += [float(label) if numbers else label_id[label] for label in chunk_labels]  # checked above
            if split in HELD_OUT:
                texts += text_a if text_b is None else [f"{a}\t{b}" for a, b in zip(text_a, text_b)]
        tokens = writer.close()
        values = np.array(ids, dtype=np.float32 if numbers else np.int32)
        np.save(out / labels_file(split), values)
        if split in HELD_OUT:
            write_texts(out, split, "text", texts)
        counts[split] = {"examples": reader.lines, "lines": reader.lines, "skipped_empty": 0,
                         "tokens": {"text": tokens}, "unk": unk}  # fmt: skip
        if numbers:
            counts[split]["numbers"] = number_summary(values)
        else:
            per_label = np.bincount(values.astype(np.int64), minlength=len(names)).tolist()
            counts[split]["labels"] = dict(zip(names, per_label))
    manifest.update(
        langs=["text"], kind=manifest["settings"]["kind"], dtype=dtype.name,
        **({"label_kind": NUMBER} if numbers else {"labels": names}),
        pairs=train.pairs, header=header, vocab_size=len(vocab), vocab_size_asked=task_cfg.vocab_size,
        vocab_sample_lines=task_cfg.vocab_sample_lines, vocab_sampled=None if task_cfg.vocab else
        min(counts["train"]["examples"], task_cfg.vocab_sample_lines or counts["train"]["examples"]),
        splits=counts, source_dir=directory, seconds={"all": round(time.perf_counter() - started, 2)},
        encode_threads=threads,
    )  # fmt: skip
    record_source(task_cfg, manifest)
    write_manifest(out, manifest)
    log.info("prepared %s: %s, train/valid/test %s", manifest["key"], "numbers" if numbers else f"{len(names)} labels",
             "/".join(str(c["examples"]) for c in counts.values()))  # fmt: skip
