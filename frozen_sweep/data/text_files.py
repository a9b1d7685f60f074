"""Stream a split of a plain-text corpus: `{directory}/{split}.{lang}`, one sentence per line, UTF-8, line-aligned.

Both corpora go through here (the Bible after extraction), in chunks of CHUNK_LINES lines: memory does not grow with
the corpus. Errors name the file and, where it applies, the line.

Empty lines: in train, a pair with an empty (or whitespace-only) side is skipped and counted, since crawled corpora
have a few; in valid and test an empty line is an error, because held-out sets must be used exactly as given (a
silently shortened test set is no longer comparable, and an empty reference breaks BLEU).
"""

from itertools import islice
from pathlib import Path
from typing import Iterator

from frozen_sweep.config import TaskKind

CHUNK_LINES = 1 << 16
SPLITS = ("train", "valid", "test")  # every corpus's, in this order


def langs_of(task_cfg) -> list[str]:
    """The languages a task reads: the target alone for (masked) language modelling, else source and target."""
    return [task_cfg.tgt_lang] if TaskKind(task_cfg.kind).monolingual else [task_cfg.src_lang, task_cfg.tgt_lang]


def decode_lines(path, raw: list[bytes], lines_before: int = 0, strip: bool = True) -> list[str]:
    """The lines of a chunk as text (the file's first line without a leading BOM), without surrounding whitespace, or
    with `strip=False` without their line endings only; `lines_before`: the file's lines before the chunk."""
    try:
        lines = list(map(bytes.decode, raw))  # strict UTF-8
    except UnicodeDecodeError:
        for number, line in enumerate(raw, start=lines_before + 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{path} line {number} is not valid UTF-8 (byte {line[e.start]:#04x} at column {e.start + 1})"
                ) from None
    if lines_before == 0 and lines:
        lines[0] = lines[0].lstrip("\ufeff")
    return list(map(str.strip, lines)) if strip else [line.rstrip("\r\n") for line in lines]


class SplitReader:
    """The sentences of `split`, one list per language, streamed; after a full pass `lines` and `skipped_empty`
    (train pairs skipped because a side was empty) are set, and every error has been raised."""

    def __init__(self, directory: Path, split: str, langs: list[str]):
        self.directory, self.split = Path(directory), split
        self.paths = [self.directory / f"{split}.{lang}" for lang in langs]
        self.lines = self.skipped_empty = 0

    def chunks(self) -> Iterator[list[list[str]]]:
        """Chunks of kept rows: one list of sentences per language, all the same length."""
        for path in self.paths:
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such file")
        files = [open(path, "rb") for path in self.paths]
        try:
            self.lines = self.skipped_empty = 0
            seen_text = [False] * len(files)
            while True:
                raw = [list(islice(f, CHUNK_LINES)) for f in files]
                columns = [decode_lines(path, r, self.lines) for path, r in zip(self.paths, raw)]
                seen_text = [seen or any(column) for seen, column in zip(seen_text, columns)]
                if len({len(r) for r in raw}) > 1:
                    self._unaligned(files, raw, seen_text)
                if not raw[0]:
                    break
                yield self._kept(columns)
                self.lines += len(raw[0])
        finally:
            for f in files:
                f.close()
        for path, seen in zip(self.paths, seen_text):
            if not seen:
                raise ValueError(f"{path} is empty")

    def _unaligned(self, files, raw: list[list[bytes]], seen_text: list[bool]) -> None:
        """A file ended before another: it is empty, or the files are not line-aligned."""
        ended = min(len(r) for r in raw)
        for path, r, seen in zip(self.paths, raw, seen_text):
            if len(r) == ended and not seen:
                raise ValueError(f"{path} is empty")
        counts = [self.lines + len(r) + sum(1 for _ in f) for r, f in zip(raw, files)]
        other = next(i for i, n in enumerate(counts) if n != counts[0])
        raise ValueError(
            f"{self.paths[0].name} has {counts[0]} lines but {self.paths[other].name} has {counts[other]} "
            f"(in {self.directory}): parallel files must be line-aligned"
        )

    def _kept(self, columns: list[list[str]]) -> list[list[str]]:
        if all(map(all, columns)):  # the usual case, at C speed
            return columns
        keep = [i for i, row in enumerate(zip(*columns)) if all(row)]
        if self.split != "train":
            first = next(i for i, row in enumerate(zip(*columns)) if not all(row))
            side = next(k for k, column in enumerate(columns) if not column[first])
            raise ValueError(
                f"{self.paths[side]} line {self.lines + first + 1} is empty; {self.split} sets may not have empty lines"
            )
        self.skipped_empty += len(columns[0]) - len(keep)
        return [[column[i] for i in keep] for column in columns]
