"""Where a task's text comes from, for its preparation (data/preparation.py): a reader per split, each yielding
chunks of rows, over the embedded corpus (extracted to text files first), the user's text or TSV files, or a
Hugging Face dataset (data/hub_splits.py); and what the manifest says of that source besides its text."""

import json
from pathlib import Path

from frozen_sweep.config import CorpusKind, TaskKind
from frozen_sweep.data.bible import extract_bible
from frozen_sweep.data.bible_labels import extract_labelled_bible
from frozen_sweep.data.held_out import held_out_tsv
from frozen_sweep.data.identity import SPLITS
from frozen_sweep.data.text_files import SplitReader, langs_of
from frozen_sweep.data.tsv import TsvReader
from frozen_sweep.data.tsv_columns import chosen, reads_header


def source_dir(task_cfg) -> Path:
    """The directory holding {train,valid,test}.{lang} (to classify: .tsv) for this task (the Bible is extracted
    there first)."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        labelled = TaskKind(task_cfg.kind) == TaskKind.classify
        return extract_labelled_bible(task_cfg) if labelled else extract_bible(task_cfg)
    return Path(task_cfg.path).expanduser()


def split_readers(task_cfg) -> tuple[str, dict]:
    """Where the task's text comes from (the manifest's source_dir) and a reader per split: a hub dataset's
    (data/hub_splits.py; a GLUE folder's too), else the text files' (to classify, the TSV files', valid possibly held
    out of train.tsv)."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.hf:
        from frozen_sweep.data.hub import describe
        from frozen_sweep.data.hub_splits import hub_readers  # `datasets`: only for this corpus

        return describe(task_cfg), hub_readers(task_cfg)
    directory = source_dir(task_cfg)
    if TaskKind(task_cfg.kind).labelled:
        header, keys = reads_header(task_cfg), chosen(task_cfg)
        if task_cfg.valid_from_train:  # valid held out of train.tsv (data/held_out.py)
            return str(directory), held_out_tsv(directory, header, keys, task_cfg.valid_from_train)
        train = TsvReader(directory, "train", header, keys)  # its first example sets the layout the others follow
        return str(directory), {"train": train} | {
            split: TsvReader(directory, split, header, keys, follows=train) for split in SPLITS if split != "train"}
    return str(directory), {split: SplitReader(directory, split, langs_of(task_cfg)) for split in SPLITS}


def record_source(task_cfg, manifest: dict) -> None:
    """What the manifest says of the corpus beside its text: the Bible's extraction (read, dropped, split), a hub
    dataset's name, config, commit and which of its splits each role is."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        manifest["corpus"] = json.loads((Path(manifest["source_dir"]) / "stats.json").read_text(encoding="utf-8"))
    elif CorpusKind(task_cfg.corpus) == CorpusKind.hf:
        from frozen_sweep.data.hub_splits import hub_source

        manifest["corpus"] = hub_source(task_cfg, manifest["sources"])
