"""Which cells of a classification TSV line are the text, the text pair and the label (data/tsv.py reads them).

Without column keys a file has 2 cells (text, label) or 3 (text_a, text_b, label), as before the keys existed. With
them (`task.text_column`, `task.text_pair_column`, `task.label_column`) a line may have any number of cells, as
GLUE's files do: a key's value is a name in the file's header line, or a 0-based index written as digits. Names are
looked up in each file's own header (MNLI's dev files have more label columns than its train file); indices mean
the same cell in every file. Naming a column implies a header line (`task.header=null` reads one).

Torch- and numpy-free: a job's and a sweep's config check (frozen_sweep.job.job_config) reads each file's first lines
here, so that a bad key stops the command before any job starts.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from frozen_sweep.config import ConfigError, CorpusKind, TaskKind
from frozen_sweep.data.text_files import SPLITS

LAYOUTS = {2: "text<TAB>label", 3: "text_a<TAB>text_b<TAB>label"}
KEYS = ("text_column", "text_pair_column", "label_column")


@dataclass(frozen=True)
class Columns:
    """0-based cell indices of a file's text, text pair (None: single texts) and label, and the cells every line has."""

    text: int
    pair: Optional[int]
    label: int
    count: int

    def describe(self) -> str:
        """The layout, for messages: `text<TAB>label`, or the chosen cells."""
        if self.count in LAYOUTS and (self.text, self.label) == (0, self.count - 1):
            return LAYOUTS[self.count]
        pair = "" if self.pair is None else f", text pair {self.pair}"
        return f"cells counted from 0: text {self.text}{pair}, label {self.label}"


def tsv_path(directory: Path, split: str) -> Path:
    return Path(directory) / f"{split}.tsv"


def chosen(task_cfg) -> dict[str, str]:
    """The column keys set: {key: a header name or an index in digits}."""
    return {key: str(task_cfg[key]) for key in KEYS if task_cfg.get(key) is not None}


def named(keys: dict[str, str]) -> bool:
    """Whether a column is chosen by name (each file's header then says where it is)."""
    return any(not value.isdigit() for value in keys.values())


def reads_header(task_cfg) -> bool:
    """Whether each file's first line is a header: task.header, or where it is null (detect) whether a column is chosen
    by name. A null header read as no header has the prepared key `false` had; a first line that looks like a header
    is then refused when the data is prepared (frozen_sweep.data.preparation)."""
    header = task_cfg.get("header")
    return named(chosen(task_cfg)) if header is None else bool(header)


def check_keys(task_cfg) -> None:
    """ConfigError for column keys that cannot work, from the config alone."""
    keys = chosen(task_cfg)
    if not keys:
        return
    shown = " ".join(f"task.{key}={value}" for key, value in keys.items())
    if CorpusKind(task_cfg.corpus) == CorpusKind.text_files and not TaskKind(task_cfg.kind).labelled:
        raise ConfigError(
            f"{shown}: task=text_files reads columns from {{train,valid,test}}.tsv (task.kind=classify); "
            f"task.kind={TaskKind(task_cfg.kind).value} reads whole lines of {{split}}.{{lang}}: drop these keys"
        )
    missing = [f"task.{key}" for key in ("text_column", "label_column") if key not in keys]
    if missing:
        raise ConfigError(f"{shown}: choosing columns needs {' and '.join(missing)} too (a header name or an index)")
    if task_cfg.get("header") is False and named(chosen(task_cfg)):
        name = next(f"task.{key}={value}" for key, value in keys.items() if not value.isdigit())
        raise ConfigError(
            f"{name}: a column name needs a header line, and task.header=false says the files have none; give the "
            "column's 0-based index instead, or set task.header=true"
        )


def resolve(path: Path, names: Optional[list[str]], cells: list[str], keys: dict[str, str]) -> Columns:
    """The columns of the file at `path`, from its header's `names` (None: no header) and its first example's
    `cells`; ValueError naming the key and the file for a name it lacks or an index past its cells."""
    if not keys:
        if len(cells) not in LAYOUTS:
            raise ValueError(
                f"{path} line {1 + (names is not None)} has {len(cells)} TAB-separated columns; expected 2 "
                f"({LAYOUTS[2]}) or 3 ({LAYOUTS[3]}), or columns chosen with task.text_column, task.text_pair_column "
                "and task.label_column"
            )
        return Columns(0, 1 if len(cells) == 3 else None, len(cells) - 1, len(cells))
    index = {key: _index(path, names, len(cells), key, value) for key, value in keys.items()}
    return Columns(index["text_column"], index.get("text_pair_column"), index["label_column"], len(cells))


def _index(path: Path, names: Optional[list[str]], count: int, key: str, value: str) -> int:
    if value.isdigit():
        if int(value) >= count:
            raise ValueError(f"task.{key}={value}: {path} has {count} columns (indices 0 … {count - 1})")
        return int(value)
    if value not in (names or []):
        has = f"its columns: {', '.join(names)}" if names else "it is read without a header line (task.header=false)"
        raise ValueError(f"task.{key}={value}: {path}'s header has no such column; {has}")
    return names.index(value)


def head(path: Path, header: bool) -> tuple[Optional[list[str]], Optional[list[str]]]:
    """(the header's names, or None without a header; the first example's cells, or None: no example)."""
    with open(path, "rb") as f:
        lines = [f.readline().decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n") for _ in range(1 + header)]
    names = [name.strip() for name in lines[0].split("\t")] if header else None
    return names, lines[-1].split("\t") if lines[-1] else None


def check_columns(task_cfg) -> None:
    """The column keys against each file's header and first example (two lines a file), before any job starts:
    ConfigError naming the key and the file. The rest of each file is checked when it is prepared."""
    if CorpusKind(task_cfg.corpus) != CorpusKind.text_files:
        return
    check_keys(task_cfg)
    keys = chosen(task_cfg)
    if not keys or not TaskKind(task_cfg.kind).labelled:
        return
    header = reads_header(task_cfg)
    for split in SPLITS:
        path = tsv_path(Path(task_cfg.path).expanduser(), split)
        if not path.is_file():  # a missing file is named with the others (frozen_sweep.data.identity)
            continue
        names, cells = head(path, header)
        if cells is not None:
            try:
                resolve(path, names, cells, keys)
            except ValueError as e:
                raise ConfigError(str(e)) from None
