"""Stream a split of a classification corpus: `{directory}/{split}.tsv`, one example a line, UTF-8, either
`text<TAB>label` or `text_a<TAB>text_b<TAB>label` (GLUE's layout less its index column); with `task.header=true` the
first line of each file is a header and is skipped.

The first example of train.tsv sets the column count; every line of every split must have it. Errors name the file
and line: invalid UTF-8, a wrong number of columns, an empty text or label. Unlike the other task kinds' training
files (data/text_files.py), no line is skipped: an example without a text means nothing to a classifier, and a
skipped line would shift the line numbers a user looks up.
"""

from itertools import islice
from pathlib import Path
from typing import Iterator

from frozen_sweep.data.text_files import CHUNK_LINES, decode_lines

LAYOUTS = {2: "text<TAB>label", 3: "text_a<TAB>text_b<TAB>label"}
Chunk = tuple[list[str], list[str] | None, list[str]]  # texts (or texts_a), texts_b (pairs) or None, labels


def tsv_path(directory: Path, split: str) -> Path:
    return Path(directory) / f"{split}.tsv"


class TsvReader:
    """The examples of `split` in chunks; `columns` is the column count every line must have (None: this file's
    first example sets it, as train.tsv's does). After a full pass `lines` counts the examples."""

    def __init__(self, directory: Path, split: str, header: bool, columns: int | None = None):
        self.path, self.header, self.columns = tsv_path(directory, split), header, columns
        self.lines = 0

    def row(self, number: int) -> str:
        """Where the example `number` (0-based) is, as errors name it."""
        return f"{self.path} line {number + 1 + int(bool(self.header))}"

    def chunks(self) -> Iterator[Chunk]:
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such file")
        self.lines, before = 0, int(self.header)  # file lines before the first example
        with open(self.path, "rb") as f:
            if self.header:
                f.readline()
            while raw := list(islice(f, CHUNK_LINES)):
                lines = decode_lines(self.path, raw, before + self.lines, strip=False)
                yield self._columns(lines, before + self.lines + 1)
                self.lines += len(lines)
        if not self.lines:
            raise ValueError(f"{self.path} holds no example" + (" after its header line" if self.header else ""))

    def _columns(self, lines: list[str], first: int) -> Chunk:
        """The chunk's columns; `first` is the file's line number of its first line."""
        rows = [line.split("\t") for line in lines]
        if self.columns is None:
            if len(rows[0]) not in LAYOUTS:
                raise ValueError(
                    f"{self.path} line {first} has {len(rows[0])} TAB-separated columns; expected 2 ({LAYOUTS[2]}) "
                    f"or 3 ({LAYOUTS[3]})"
                )
            self.columns = len(rows[0])
        names = ("text", "label") if self.columns == 2 else ("text_a", "text_b", "label")
        for number, row in enumerate(rows, start=first):
            if len(row) != self.columns:
                raise ValueError(
                    f"{self.path} line {number} has {len(row)} TAB-separated columns; expected {self.columns} "
                    f"({LAYOUTS[self.columns]}, as train.tsv's first example)"
                )
            empty = next((name for name, cell in zip(names, row) if not cell.strip()), None)
            if empty:
                raise ValueError(f"{self.path} line {number}: the {empty} is empty ({LAYOUTS[self.columns]})")
        texts = [[row[k].strip() for row in rows] for k in range(self.columns)]
        return texts[0], texts[1] if self.columns == 3 else None, texts[-1]
