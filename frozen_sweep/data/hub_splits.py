"""The splits of a `task.corpus=hf` dataset as preparation reads them: which of the dataset's splits is train, valid
and test (or valid held out of train), streamed from Arrow in chunks with the same interface as the text files'
readers (data/text_files.py, data/tsv.py), so one preparation serves every corpus.

Columns: translation reads WMT's `translation` column ({lang: text}) or two plain columns; lm and mlm one text column;
classify and regression a text column or two and a label column. Empty texts: a translation pair with an empty side
is skipped in train and refused in valid and test (as in text files); a language model's blank rows (wikitext's
paragraph breaks) are skipped in every split and counted; a classifier's empty text is refused. A `ClassLabel`
keeps its names and their order; -1 is a withheld label (GLUE's test splits) and is refused where a split is trained
or scored on, as a regression split whose every label is -1 is.
"""

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from frozen_sweep.config import TaskKind
from frozen_sweep.data.arrow_rows import Rows
from frozen_sweep.data.held_out import held_out
from frozen_sweep.data.hub import check_split_choice, describe
from frozen_sweep.data.hub_convert import converted_splits
from frozen_sweep.data.text_files import CHUNK_LINES, langs_of

ROLES = ("train", "valid", "test")
WITHHELD = -1


def split_names(task_cfg) -> dict[str, str]:
    """Where each role's examples come from, as the record and the tables say it."""
    t = task_cfg
    if t.valid_split is not None:
        return {"train": t.train_split, "valid": t.valid_split, "test": t.test_split}
    n = t.valid_from_train
    return {"train": f"{t.train_split} less {n} held out", "valid": f"{n} of {t.train_split} held out (seeded)",
            "test": t.test_split}  # fmt: skip


def role_rows(task_cfg) -> dict[str, Rows]:
    """train, valid, test as rows of the dataset's splits, valid possibly held out of train by a seeded choice."""
    check_split_choice(task_cfg)
    valid = [task_cfg.valid_split] if task_cfg.valid_split is not None else []
    splits = converted_splits(task_cfg, [task_cfg.train_split, *valid, task_cfg.test_split])
    train = splits[task_cfg.train_split]
    if task_cfg.valid_split is not None:
        rows = {"train": Rows(train), "valid": Rows(splits[task_cfg.valid_split])}
    else:
        n, held = train.rows, task_cfg.valid_from_train
        if held >= n:
            raise ValueError(f"task.valid_from_train={held}: {describe(task_cfg)} has {n} training examples")
        chosen = held_out(n, held)
        rows = {"train": Rows(train, np.flatnonzero(~chosen)), "valid": Rows(train, np.flatnonzero(chosen))}
    return rows | {"test": Rows(splits[task_cfg.test_split])}


def _column(columns: list[str], name: str | None, default: str, key: str, where: str) -> str:
    chosen = name or default
    if chosen not in columns:
        raise ValueError(f"{where}: no column '{chosen}' (task.{key}); its columns: {', '.join(columns)}")
    return chosen


def text_columns(task_cfg, rows: Rows, where: str) -> list[str]:
    """The flattened columns holding a translation's two sides (a struct's fields as `translation.de`), or a
    language model's text."""
    t, flat = task_cfg, rows.flat_names
    if TaskKind(t.kind).monolingual:
        return [_column(flat, t.text_column, "text", "text_column", where)]
    if t.src_column or t.tgt_column or "translation" not in rows.column_names:
        return [_column(flat, t.src_column, t.src_lang, "src_column", where),
                _column(flat, t.tgt_column, t.tgt_lang, "tgt_column", where)]  # fmt: skip
    langs = translation_languages(rows)
    missing = [lang for lang in langs_of(t) if lang not in langs]
    if missing:
        raise ValueError(f"{where}: its translation column has languages {', '.join(langs) or 'none'}, not "
                         f"{', '.join(missing)} (task.src_lang, task.tgt_lang)")  # fmt: skip
    return [f"translation.{lang}" for lang in langs_of(t)]


def translation_languages(rows: Rows) -> list[str]:
    """The languages of WMT's `translation` column: a `datasets.Translation`'s (as the hub types it), or a plain
    struct's fields."""
    feature = rows.features.get("translation", {})
    if feature.get("_type") == "Translation":
        return list(feature["languages"])
    return [name.split(".", 1)[1] for name in rows.flat_names if name.startswith("translation.")]


class HubTextReader:
    """A role's texts in chunks of kept rows, one list per side (data/text_files.py's SplitReader interface): after
    a full pass `lines` (rows read) and `skipped_empty` are set and every error has been raised."""

    def __init__(self, task_cfg, role: str, rows: Rows):
        self.role, self.where = role, f"{describe(task_cfg)} {split_names(task_cfg)[role]}"
        self.lm = TaskKind(task_cfg.kind).monolingual
        self.columns = text_columns(task_cfg, rows, self.where)
        self.rows = rows
        self.lines = self.skipped_empty = 0

    def chunks(self) -> Iterator[list[list[str]]]:
        self.lines = self.skipped_empty = 0
        empty, first = 0, None
        for batch in self.rows.chunks(self.columns, CHUNK_LINES):
            columns = [[(text or "").strip() for text in batch[name]] for name in self.columns]
            n = len(columns[0])
            if not all(map(all, columns)):  # the usual case skips this, at C speed
                keep = [i for i in range(n) if all(column[i] for column in columns)]
                if self.role != "train" and not self.lm:
                    empty += n - len(keep)
                    first = first if first is not None else self.lines + next(i for i in range(n) if i not in keep)
                self.skipped_empty += n - len(keep)
                columns = [[column[i] for i in keep] for column in columns]
            self.lines += n
            yield columns
        if empty:
            raise ValueError(f"{self.where}: {empty} examples with an empty side, the first at "
                             f"{self.rows.name_row(first)}; {self.role} sets may not have empty texts")  # fmt: skip
        if self.lines == self.skipped_empty:
            raise ValueError(f"{self.where} holds no text")


class HubLabelledReader:
    """A role's examples in chunks of (texts or texts_a, texts_b or None, labels as text) (data/tsv.py's TsvReader
    interface); `names` is a ClassLabel's names in their order (None: string or numeric labels). Every example is
    kept: an empty text or a withheld label is refused, with how many and the first row."""

    def __init__(self, task_cfg, role: str, rows: Rows):
        t = task_cfg
        self.role, self.where = role, f"{describe(t)} {split_names(t)[role]}"
        self.regression = TaskKind(t.kind) == TaskKind.regression
        self.texts = [_column(rows.column_names, t.text_column, "text", "text_column", self.where)]
        if t.text_pair_column:
            self.texts.append(_column(rows.column_names, t.text_pair_column, "", "text_pair_column", self.where))
        self.label = _column(rows.column_names, t.label_column, "label", "label_column", self.where)
        feature = rows.features.get(self.label, {})
        self.names = feature["names"] if feature.get("_type") == "ClassLabel" and not self.regression else None
        self.rows = rows
        self.pairs, self.path = len(self.texts) == 2, self.where  # a pair of texts; what errors name
        self.lines = 0

    def row(self, index: int) -> str:
        """Where the current chunk's example `index` is, as errors name it."""
        return f"{self.where} {self.rows.name_row(self.lines + index)}"

    def chunks(self) -> Iterator[tuple[list[str], list[str] | None, list[str]]]:
        self.check_labels()
        self.lines, empty, first = 0, 0, None
        for batch in self.rows.chunks([*self.texts, self.label], CHUNK_LINES):
            texts = [[(text or "").strip() for text in batch[name]] for name in self.texts]
            if not all(map(all, texts)):
                rows = [i for i, row in enumerate(zip(*texts)) if not all(row)]
                empty, first = empty + len(rows), first if first is not None else self.lines + rows[0]
            labels = batch[self.label]  # ints (a ClassLabel's ids: -1 refused above), strings or numbers
            shown = [str(label) if self.names is None else self.names[label] for label in labels]
            yield texts[0], texts[1] if len(texts) == 2 else None, shown
            self.lines += len(labels)
        self.refuse(empty, first, "an empty text")
        if not self.lines:
            raise ValueError(f"{self.where} holds no example")

    def check_labels(self) -> None:
        """Missing and withheld labels, counted in the label column alone (Arrow) before any text is read."""
        column = self.rows.column(self.label)  # (N,) a pyarrow array: 4-8 bytes an example
        self.refuse(column.null_count, _first(pc.is_null(column)), "no label")
        if self.names is not None:  # a ClassLabel's ids: 0 .. classes-1, or -1 (withheld, below)
            outside = pc.or_(pc.less(column, WITHHELD), pc.greater_equal(column, len(self.names)))
            if (first := _first(outside)) is not None:
                named = ", ".join(f"{i} {name}" for i, name in enumerate(self.names))
                raise ValueError(f"{self.where} {self.rows.name_row(first)}: label {column[first].as_py()} is not "
                                 f"one of its ClassLabel's ({named}; -1 withheld); {pc.sum(outside).as_py()} rows in "
                                 "all")  # fmt: skip
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
            withheld = pc.equal(column, WITHHELD)
            count = pc.sum(withheld).as_py() or 0
            if not self.regression or count == len(column):  # a number's -1 is withheld only where all are
                advice = (" (GLUE withholds its test labels: score on validation with task.test_split=validation, "
                          "and hold out valid with task.valid_split=null task.valid_from_train=N)")  # fmt: skip
                self.refuse(count, _first(withheld), "label -1 (withheld)", advice)

    def refuse(self, count: int, first: int | None, what: str, advice: str = "") -> None:
        if count:
            raise ValueError(f"{self.where}: {count} examples with {what}, the first at "
                             f"{self.rows.name_row(first)}; {self.role} examples are all trained or scored on{advice}"
                             )  # fmt: skip


def _first(mask) -> int | None:
    """The first true position of a pyarrow boolean array, or None."""
    index = pc.index(mask, True).as_py()
    return None if index < 0 else index


def hub_source(task_cfg, sources: dict) -> dict:
    """The manifest's (and the record's) word on the corpus: dataset, config, resolved revision, which split is which."""
    source = {"dataset": task_cfg.dataset, "config": task_cfg.dataset_config, "splits": split_names(task_cfg)}
    if "hf_commit" in sources:
        source |= {"revision": task_cfg.revision or "main", "commit": sources["hf_commit"]}  # asked, and resolved
    else:
        source["files_sha256"] = {name: sha for name, sha in sources.items() if name.startswith(("hf/", "glue/"))}
    if task_cfg.path is not None:  # GLUE's folder, read instead of the hub (data/glue_files.py)
        source["path"] = task_cfg.path
    return source


def hub_readers(task_cfg) -> dict:
    """A reader per role, of the kind the task's preparation reads."""
    reader = HubLabelledReader if TaskKind(task_cfg.kind).labelled else HubTextReader
    return {role: reader(task_cfg, role, rows) for role, rows in role_rows(task_cfg).items()}
