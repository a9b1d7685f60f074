"""Stream a split of a classification corpus: `{directory}/{split}.tsv`, one example a line, UTF-8, its cells
separated by TABs: `text<TAB>label` or `text_a<TAB>text_b<TAB>label` (GLUE's layout less its index column), or any
cells with the columns chosen by name or index (data/tsv_columns.py); a header line is skipped when the task reads
one (tsv_columns.reads_header).

A file's first example sets the number of cells every line of it must have; without columns chosen by name, train's
sets it for every file. Errors name the file and line: invalid UTF-8, a wrong number of cells, an empty text or label.
Unlike the other task kinds' training files (data/text_files.py), no line is skipped: an example without a text means
nothing to a classifier, and a skipped line would shift the line numbers a user looks up.
"""

from itertools import islice
from pathlib import Path
from typing import Iterator, Optional

from frozen_sweep.data.text_files import CHUNK_LINES, decode_lines
from frozen_sweep.data.tsv_columns import Columns, named, resolve, tsv_path

Chunk = tuple[list[str], list[str] | None, list[str]]  # texts (or texts_a), texts_b (pairs) or None, labels


class TsvReader:
    """The examples of `split` in chunks, with the columns `keys` chooses (tsv_columns.chosen; {}: the 2- or 3-cell
    layout). `follows`: the reader (train's) whose first example sets this file's number of cells, unless columns
    are chosen by name. After a full pass `lines` counts the examples and `first_label` is the first one's label."""

    def __init__(self, directory: Path, split: str, header: bool, keys: dict[str, str],
                 follows: Optional["TsvReader"] = None):  # fmt: skip
        self.path, self.header, self.keys, self.follows = tsv_path(directory, split), header, keys, follows
        self.columns: Optional[Columns] = None
        self.header_names: Optional[list[str]] = None  # once read
        self.lines, self.first_label = 0, None

    @property
    def pairs(self) -> bool:
        return self.columns.pair is not None

    def line(self, index: int) -> int:
        """The file's line number of the current chunk's example `index` (0-based)."""
        return int(self.header) + self.lines + index + 1

    def row(self, index: int) -> str:
        """Where the current chunk's example `index` is, as errors name it (a hub dataset's reader: its row)."""
        return f"{self.path} line {self.line(index)}"

    def chunks(self) -> Iterator[Chunk]:
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such file")
        self.lines = 0
        with open(self.path, "rb") as f:
            if self.header:
                line = decode_lines(self.path, [f.readline()], strip=False)[0]
                self.header_names = [name.strip() for name in line.split("\t")]
            while raw := list(islice(f, CHUNK_LINES)):
                lines = decode_lines(self.path, raw, int(self.header) + self.lines, strip=False)
                rows = [line.split("\t") for line in lines]
                if not self.lines:
                    self.columns = self._columns(self.header_names, rows[0])
                    self.first_label = rows[0][self.columns.label].strip()
                yield self._cells(rows)
                self.lines += len(lines)
        if not self.lines:
            raise ValueError(f"{self.path} holds no example" + (" after its header line" if self.header else ""))

    def _columns(self, names: Optional[list[str]], cells: list[str]) -> Columns:
        """This file's columns; a file that follows train's has train's number of cells, and its header (if read)
        train's label column."""
        if self.follows is None or named(self.keys):
            return resolve(self.path, names, cells, self.keys)
        theirs, header = self.follows.columns, self.follows.header_names or []
        label = header[theirs.label] if theirs.label < len(header) else None  # train.tsv's label column, by its name
        if names is not None and label and label not in names:
            raise ValueError(
                f"{self.path}'s header ({', '.join(names)}) has no {label!r} column, as train.tsv's has: a file without "
                "labels (GLUE's test files withhold theirs) is never scored; give a labelled one (GLUE's dev.tsv), or "
                "read GLUE's folder with its task (task=glue_sst2 task.path=DIR)"
            )
        if len(cells) != theirs.count:
            raise ValueError(
                f"{self.path} line {self.line(0)} has {len(cells)} TAB-separated columns; expected {theirs.count} "
                f"({theirs.describe()}, as train.tsv's first example)"
            )
        return theirs

    def _cells(self, rows: list[list[str]]) -> Chunk:
        """The chunk's texts and labels; an error names the first bad line."""
        c = self.columns
        cells = [("text_a" if c.pair is not None else "text", c.text), ("text_b", c.pair), ("label", c.label)]
        cells = [(name, k) for name, k in cells if k is not None]
        for number, row in enumerate(rows):
            if len(row) != c.count:
                raise ValueError(
                    f"{self.path} line {self.line(number)} has {len(row)} TAB-separated columns; expected {c.count} "
                    f"({c.describe()}, as the file's first example)"
                )
            empty = next((name for name, k in cells if not row[k].strip()), None)
            if empty:
                raise ValueError(f"{self.path} line {self.line(number)}: the {empty} is empty ({c.describe()})")
        texts = [[row[k].strip() for row in rows] for _, k in cells]
        return texts[0], texts[1] if c.pair is not None else None, texts[-1]


def looks_like_header(path: Path, label: str, where: str) -> ValueError:
    """The refusal of a first line read as an example (task.header=null) whose label `where` says is unlike the
    others: a header line, most likely."""
    return ValueError(
        f"{path} line 1 looks like a header (its label {label!r} {where}): set task.header=true, or "
        "task.header=false if it is an example"
    )
