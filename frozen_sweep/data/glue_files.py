"""A GLUE task read from GLUE's own folder, as `download_glue_data.py` unzips it (`task=glue_sst2 task.path=DIR`),
into the `datasets.Dataset` the hub gives for the same rows: the GLUE card's columns and features (nyu-mll/glue), its
ClassLabel's ids, `idx` counting the rows. The hub's split protocol (data/hub_splits.py: which split is which, the
seeded hold-out, the readers) then prepares both alike: the same rows give the same prepared dataset from either.

The hub's splits are GLUE's files: train → train.tsv, validation → dev.tsv, test → test.tsv (MNLI: validation_matched,
validation_mismatched, test_matched, test_mismatched → dev_matched.tsv, ...). Each is read as GLUE's own readers read
it, `csv.reader(f, delimiter="\\t", quotechar=None)`: no quoting, a cell starting with `"` is text. A header line names
the columns (CoLA's train and dev have none: source, label, original label, sentence), every line has the first
line's number of cells, and a label is GLUE's: the ClassLabel's id as digits ("0", "1"), its name (MNLI, QNLI, RTE) or
a number (STS-B's score). A test file is recognised by its header (the texts without the label) and refused: GLUE
withholds its labels. Every error names the file and the line.

Memory: a split is read into Arrow in memory (the hub's is memory-mapped from its cache), holding a chunk of lines'
Python strings at a time: a 55 MB train.tsv of 364k question pairs (QQP's size) reads in 2.5 s with 160 MB more peak
RSS on 2 cores. Torch-free; `datasets` is passed in by the one caller that reads a split.
"""

import csv
import math
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Iterator

from frozen_sweep.config import GLUE_DATASET, ConfigError
from frozen_sweep.data.file_hashes import file_sha256
from frozen_sweep.data.text_files import CHUNK_LINES, decode_lines

FILES = {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}  # the hub's split → GLUE's file
MNLI_FILES = {"train": "train.tsv", "validation_matched": "dev_matched.tsv",
              "validation_mismatched": "dev_mismatched.tsv", "test_matched": "test_matched.tsv",
              "test_mismatched": "test_mismatched.tsv"}  # fmt: skip


@dataclass(frozen=True)
class GlueTask:
    """One task's folder: the file column of each of the hub's text columns and of the label, the labels' spelling."""

    folder: str  # as download_glue_data.py names it
    texts: dict[str, str]  # the hub's text column → the file's column
    label: str  # the file's label column
    names: tuple[str, ...] | None  # the hub's ClassLabel names, in its order; None: a number (STS-B)
    by_name: bool = False  # labels written as the names (else as the ids, "0" and "1")
    cells: tuple[str, ...] | None = None  # the columns of a file without a header line (CoLA's train and dev)
    files: dict[str, str] = field(default_factory=lambda: FILES)


def _pair(first: str, second: str) -> dict[str, str]:
    return {first: first, second: second}


TASKS = {  # by the hub's config name (a GLUE task's task.dataset_config)
    "cola": GlueTask("CoLA", {"sentence": "sentence"}, "label", ("unacceptable", "acceptable"),
                     cells=("source", "label", "original label", "sentence")),
    "sst2": GlueTask("SST-2", {"sentence": "sentence"}, "label", ("negative", "positive")),
    "mrpc": GlueTask("MRPC", {"sentence1": "#1 String", "sentence2": "#2 String"}, "Quality",
                     ("not_equivalent", "equivalent")),
    "qqp": GlueTask("QQP", _pair("question1", "question2"), "is_duplicate", ("not_duplicate", "duplicate")),
    "stsb": GlueTask("STS-B", _pair("sentence1", "sentence2"), "score", None),
    "mnli": GlueTask("MNLI", {"premise": "sentence1", "hypothesis": "sentence2"}, "gold_label",
                     ("entailment", "neutral", "contradiction"), by_name=True, files=MNLI_FILES),
    "qnli": GlueTask("QNLI", _pair("question", "sentence"), "label", ("entailment", "not_entailment"), by_name=True),
    "rte": GlueTask("RTE", _pair("sentence1", "sentence2"), "label", ("entailment", "not_entailment"), by_name=True),
    "wnli": GlueTask("WNLI", _pair("sentence1", "sentence2"), "label", ("not_entailment", "entailment")),
}  # fmt: skip
ROLE_KEYS = ("train_split", "valid_split", "test_split")


@dataclass(frozen=True)
class Layout:
    """Where a file's texts and label are: cell indices by the hub's column, and the cells every line has."""

    texts: dict[str, int]
    label: int
    columns: list[str]  # the header's names, or a headerless file's
    header: bool


def glue_task(task_cfg) -> GlueTask:
    if task_cfg.dataset != GLUE_DATASET or task_cfg.dataset_config not in TASKS:
        raise ConfigError(
            f"task.path={task_cfg.path} with task.dataset={task_cfg.dataset} task.dataset_config="
            f"{task_cfg.dataset_config}: task.path reads GLUE's folder for a GLUE task, task.dataset={GLUE_DATASET} "
            f"with task.dataset_config={'|'.join(TASKS)}"
        )
    return TASKS[task_cfg.dataset_config]


def ships(glue: GlueTask) -> str:
    return f"GLUE's {glue.folder} folder, as download_glue_data.py unzips it, holds {', '.join(glue.files.values())}"


def role_files(task_cfg) -> dict[str, tuple[str, Path]]:
    """{task.train_split and the others set: (the split, the file it reads)}; ConfigError for a split GLUE lacks."""
    glue, folder = glue_task(task_cfg), Path(task_cfg.path).expanduser()
    files = {}
    for key in ROLE_KEYS:
        split = task_cfg[key]
        if split is None:
            continue
        if split not in glue.files:
            shown = ", ".join(f"{name} ({file})" for name, file in glue.files.items())
            raise ConfigError(f"task.{key}={split}: GLUE's {glue.folder} folder has the splits {shown}")
        files[key] = split, folder / glue.files[split]
    return files


def check_folder(task_cfg) -> None:
    """With the data's identity (before any job starts): the folder and each file the task reads are there, and each
    starts as GLUE's labelled files do (its header, or CoLA's first example); ConfigError naming the file and what
    GLUE ships."""
    glue = glue_task(task_cfg)
    if not Path(task_cfg.path).expanduser().is_dir():
        raise ConfigError(f"task.path={task_cfg.path}: no such folder ({ships(glue)})")
    for key, (split, path) in role_files(task_cfg).items():
        if not path.is_file():
            raise ConfigError(f"task.path={task_cfg.path}: no {path.name}, which task.{key}={split} reads "
                              f"({ships(glue)})")  # fmt: skip
        try:
            layout(path, glue, split)
        except ValueError as e:
            raise ConfigError(str(e)) from None


def _rows(path: Path, raw: list[bytes], before: int):
    """(line number, cells) of a chunk's lines, split as GLUE's readers split them."""
    reader = csv.reader(decode_lines(path, raw, before, strip=False), delimiter="\t", quotechar=None)
    try:
        yield from enumerate(reader, start=before + 1)
    except csv.Error as e:
        raise ValueError(f"{path} line {before + reader.line_num}: {e}") from None


def label_ids(glue: GlueTask) -> dict[str, int] | None:
    """A label as the file writes it → the ClassLabel's id; None: a number."""
    if glue.names is None:
        return None
    return {name if glue.by_name else str(i): i for i, name in enumerate(glue.names)}


def layout(path: Path, glue: GlueTask, split: str) -> Layout:
    """The file's layout from its first line; ValueError for an unlabelled test file, or a first line that is not
    GLUE's (a header line in CoLA's headerless files, a header without the task's columns)."""
    with open(path, "rb") as f:
        first = f.readline()
    if not first.strip():
        raise ValueError(f"{path} {'line 1 is empty' if first else 'is empty'} ({ships(glue)})")
    cells = next(_rows(path, [first], 0))[1]
    names, wanted, ids = [cell.strip() for cell in cells], [*glue.texts.values(), glue.label], label_ids(glue)
    if glue.cells is not None:  # no header: an example, unless it is a header line
        if len(cells) == len(glue.cells) and cells[glue.cells.index(glue.label)].strip() in ids:
            return Layout({hub: glue.cells.index(name) for hub, name in glue.texts.items()},
                          glue.cells.index(glue.label), list(glue.cells), header=False)  # fmt: skip
    elif all(name in names for name in wanted):
        return Layout({hub: names.index(name) for hub, name in glue.texts.items()}, names.index(glue.label), names,
                      header=True)  # fmt: skip
    if glue.label not in names and all(name in names for name in glue.texts.values()):
        dev = split.replace("test", "validation")
        dev = dev if dev in glue.files else "validation"
        raise ValueError(f"{path} is GLUE's unlabelled test file ({', '.join(names)}): GLUE withholds its labels; the "
                         f"dev set is scored (task.test_split={dev})")  # fmt: skip
    if glue.cells is not None:
        raise ValueError(f"{path} line 1 is not an example ({', '.join(names)}): GLUE's {glue.folder} {path.name} has "
                         f"no header line; each line is {', '.join(glue.cells)} (labels {', '.join(ids)})")  # fmt: skip
    raise ValueError(f"{path} line 1, its header, names {', '.join(names)}: GLUE's {glue.folder} {path.name} names "
                     f"{', '.join(wanted)} among its columns")  # fmt: skip


def read_chunks(path: Path, glue: GlueTask, split: str) -> Iterator[dict[str, list]]:
    """The file's examples as the hub's columns, a chunk of lines at a time: its texts, the labels' ids (or numbers)
    and idx; ValueError naming the line for a wrong number of cells, an empty text or a label that is not GLUE's."""
    at, ids, count = layout(path, glue, split), label_ids(glue), 0
    with open(path, "rb") as f:
        before = int(at.header)
        if at.header:
            f.readline()
        while raw := list(islice(f, CHUNK_LINES)):
            texts, labels = {hub: [] for hub in at.texts}, []
            for number, cells in _rows(path, raw, before):
                if len(cells) != len(at.columns):
                    raise ValueError(f"{path} line {number} has {len(cells)} TAB-separated cells; expected "
                                     f"{len(at.columns)} ({', '.join(at.columns)})")  # fmt: skip
                for hub, index in at.texts.items():
                    if not cells[index].strip():
                        raise ValueError(f"{path} line {number}: its {at.columns[index]} is empty")
                    texts[hub].append(cells[index])
                labels.append(_label(cells[at.label].strip(), ids, f"{path} line {number}"))
            yield {**texts, "label": labels, "idx": list(range(count, count + len(labels)))}
            before, count = before + len(raw), count + len(labels)
    if not count:
        raise ValueError(f"{path} holds no example")


def _label(cell: str, ids: dict[str, int] | None, where: str):
    if ids is not None:
        if cell not in ids:
            raise ValueError(f"{where}: label {cell!r} is not one of GLUE's ({', '.join(ids)})")
        return ids[cell]
    try:
        number = float(cell)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"{where}: score {cell!r} is not a finite number")
    return number


def glue_split(task_cfg, split: str, datasets):
    """One split of the task's GLUE folder as the hub's `datasets.Dataset`, typed with the card's features, built in
    Arrow a chunk at a time (a chunk's Python strings at most)."""
    glue = glue_task(task_cfg)
    label = datasets.Value("float32") if glue.names is None else datasets.ClassLabel(names=list(glue.names))
    features = datasets.Features({**{hub: datasets.Value("string") for hub in glue.texts}, "label": label,
                                  "idx": datasets.Value("int32")})  # fmt: skip
    path = Path(task_cfg.path).expanduser() / glue.files[split]
    chunks = [datasets.Dataset.from_dict(chunk, features=features) for chunk in read_chunks(path, glue, split)]
    return datasets.concatenate_datasets(chunks)


def identity(task_cfg) -> dict[str, str]:
    """What the prepared dataset is made from: the GLUE task and the content of each file its roles read (checked)."""
    check_folder(task_cfg)
    files = {f"glue/{path.name}": file_sha256(path, task_cfg.cache_dir) for _, path in role_files(task_cfg).values()}
    return {"glue_task": task_cfg.dataset_config, **files}
