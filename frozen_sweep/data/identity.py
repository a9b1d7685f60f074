"""What a task's data is, without reading it twice: the source files' content hashes (data/file_hashes.py) and the
key of the prepared dataset they give (data/prepared.py). No torch and no numpy here: the launchers' plan and the
fingerprint use it.
"""

import hashlib
import json
from pathlib import Path

from frozen_sweep.config import BibleLabels, ConfigError, CorpusKind, TaskKind
from frozen_sweep.data.file_hashes import file_sha256
from frozen_sweep.data.text_files import SPLITS, langs_of

FORMAT_VERSION = 1  # of the prepared dataset (data/prepared.py): part of its key
HOLD_OUT_SEED = 20_2611  # the examples of train held out as valid (task.valid_from_train): the same for every job
HF_SETTINGS = ("train_split", "valid_split", "test_split", "valid_from_train", "text_column", "text_pair_column",
               "label_column", "src_column", "tgt_column")  # fmt: skip

def data_files(task_cfg) -> dict[str, Path]:
    """The files the task reads, by a name that does not depend on where they are; ConfigError for a missing one."""
    langs = ["tsv"] if TaskKind(task_cfg.kind).labelled else langs_of(task_cfg)  # tsv: file suffix
    if CorpusKind(task_cfg.corpus) == CorpusKind.text_files:
        directory, held = Path(task_cfg.path).expanduser(), task_cfg.valid_from_train
        if held and (directory / "valid.tsv").exists():
            raise ConfigError(
                f"task.valid_from_train={held} holds valid out of train.tsv, and {directory / 'valid.tsv'} exists: "
                "remove it, or score on it with task.valid_from_train=0"
            )
        splits = [split for split in SPLITS if not (held and split == "valid")]
        files = {f"{split}.{lang}": directory / f"{split}.{lang}" for split in splits for lang in langs}
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            split_files = "{train,valid,test}.{%s}" % ",".join(langs)
            read = "{train,test}.tsv (valid held out of train)" if held else split_files
            raise ConfigError(f"task.path={task_cfg.path}: missing {', '.join(missing)} (task=text_files reads {read} "
                              "there)")  # fmt: skip
        return files
    from frozen_sweep.data.bible import module_sources  # the bible reader; imported here to keep it out of plans

    try:
        sources = module_sources(task_cfg)  # {lang: a shipped verses file, or a SWORD module's directory}
    except (OSError, ValueError) as e:
        raise ConfigError(f"task.sword_dir / task.modules: {e}") from e
    files = {}
    for lang, source in sources.items():
        for f in [source] if source.is_file() else sorted(p for p in source.iterdir() if p.is_file()):
            files[f"{lang}/{source.name}/{f.name}"] = f
    return files


def data_identity(task_cfg) -> dict[str, str]:
    """Each data file's content hash (for the Bible, the SWORD module files and the split rule's version; for a hub
    dataset its name, config and resolved commit)."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.hf:
        from frozen_sweep.data.hub import identity as hub_identity  # no `datasets` import: it is not needed here

        identity = hub_identity(task_cfg)
    else:
        identity = {name: file_sha256(path, task_cfg.cache_dir) for name, path in data_files(task_cfg).items()}
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        from frozen_sweep.data.bible import SPLIT_VERSION

        identity["bible_split_version"] = str(SPLIT_VERSION)
        if TaskKind(task_cfg.kind) == TaskKind.classify:
            from frozen_sweep.data.bible_labels import LABELS_VERSION

            identity["bible_labels_version"] = str(LABELS_VERSION)
    if task_cfg.get("vocab"):  # a given vocabulary (a fine-tuning job's base's, a checkpoint's tokenizer): its content
        from frozen_sweep.data.vocab import holds_tokenizer

        given = Path(task_cfg.vocab).expanduser()
        with_tokenizer = not given.is_file() or holds_tokenizer(given)
        if with_tokenizer and TaskKind(task_cfg.kind) == TaskKind.translation:
            raise ConfigError(f"task.vocab={task_cfg.vocab}: a checkpoint's tokenizer is read for task.kind=lm, "
                              "mlm, classify or regression; task.kind=translation reads a SentencePiece model of ours "
                              "(a file)")  # fmt: skip
        if given.is_file():
            identity["vocab"] = file_sha256(given, task_cfg.cache_dir)
        else:
            from frozen_sweep.data.checkpoint_vocab import checkpoint_identity

            identity |= checkpoint_identity(task_cfg.vocab, task_cfg.cache_dir, TaskKind(task_cfg.kind))
    return identity


def token_settings(task_cfg) -> dict:
    """Every setting that changes the prepared token ids (task.max_len does not: it is applied when a job opens it)."""
    from frozen_sweep.data.tsv_columns import chosen, reads_header
    from frozen_sweep.data.vocab import TRAINER_SETTINGS, spm

    settings = {
        "format": FORMAT_VERSION,
        "kind": TaskKind(task_cfg.kind).value,
        "langs": langs_of(task_cfg),
        "vocab_size": task_cfg.vocab_size,
        "vocab_sample_lines": task_cfg.vocab_sample_lines,
        "spm": {**TRAINER_SETTINGS, "version": spm.__version__},
    }
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        settings["max_length_ratio"] = task_cfg.max_length_ratio
    if CorpusKind(task_cfg.corpus) == CorpusKind.hf:  # which split is which, and the columns read
        settings["hf"] = {key: task_cfg[key] for key in HF_SETTINGS}
        if task_cfg.valid_from_train:
            settings["hf"]["hold_out_seed"] = HOLD_OUT_SEED
        if task_cfg.get("builder_kwargs"):
            settings["hf"]["builder_kwargs"] = dict(task_cfg.builder_kwargs)
    if TaskKind(task_cfg.kind).labelled:  # kinds before them keep their keys
        settings |= {"header": reads_header(task_cfg), "vocab_given": bool(task_cfg.vocab)}
        if chosen(task_cfg):  # absent without column keys: the keys of datasets prepared before them stay the same
            settings["columns"] = chosen(task_cfg)
        if CorpusKind(task_cfg.corpus) == CorpusKind.text_files and task_cfg.valid_from_train:  # absent at 0, as above
            settings |= {"valid_from_train": task_cfg.valid_from_train, "hold_out_seed": HOLD_OUT_SEED}
        if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
            settings["bible_labels"] = BibleLabels(task_cfg.bible_labels).value
    return settings


def prepared_key(task_cfg) -> tuple[str, dict, dict]:
    """(key of the prepared dataset, source identity, token settings): the key hashes both."""
    identity, settings = data_identity(task_cfg), token_settings(task_cfg)
    key = hashlib.sha256(json.dumps({"sources": identity, "settings": settings}, sort_keys=True).encode()).hexdigest()
    return key[:32], identity, settings
