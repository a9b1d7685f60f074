"""Read a split of a plain-text corpus: `{directory}/{split}.{lang}`, one sentence per line, UTF-8.

Both corpora go through here (the Bible after extraction). Errors name the file and, where it applies, the line.

Empty lines: in train, a pair with an empty (or whitespace-only) side is skipped and counted, since crawled corpora
have a few; in valid and test an empty line is an error, because held-out sets must be used exactly as given (a
silently shortened test set is no longer comparable, and an empty reference breaks BLEU).
"""

from pathlib import Path
from typing import NamedTuple


class TextSplit(NamedTuple):
    lines: list[list[str]]  # one list of sentences per language, all the same length
    skipped_empty: int  # train pairs skipped because a side was empty


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, without line endings or surrounding whitespace."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path} is empty")
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()  # the final newline ends the last line rather than starting a new one
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.decode("utf-8").lstrip("\ufeff").strip())
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path} line {number} is not valid UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
            ) from None
    return lines


def read_split(directory: Path, split: str, langs: list[str]) -> TextSplit:
    """Sentences of `split` for each language, line-aligned; see the module docstring for empty lines."""
    paths = [Path(directory) / f"{split}.{lang}" for lang in langs]
    columns = [read_lines(path) for path in paths]
    for path, column in zip(paths[1:], columns[1:]):
        if len(column) != len(columns[0]):
            raise ValueError(
                f"{paths[0].name} has {len(columns[0])} lines but {path.name} has {len(column)} (in {directory}): "
                "parallel files must be line-aligned"
            )
    keep = []
    for i, row in enumerate(zip(*columns)):
        empty = [path for path, text in zip(paths, row) if not text]
        if not empty:
            keep.append(i)
        elif split != "train":
            raise ValueError(f"{empty[0]} line {i + 1} is empty; {split} sets may not have empty lines")
    return TextSplit([[column[i] for i in keep] for column in columns], len(columns[0]) - len(keep))
