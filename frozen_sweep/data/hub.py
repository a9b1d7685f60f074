"""Where a `task.corpus=hf` dataset comes from and what it is: a Hugging Face hub name, a local directory in the hub's
layout, or a builder (parquet, json, csv) over `task.data_files`, all read by `datasets.load_dataset`, the call that
Hugging Face's own run_translation.py and run_glue.py make.

Its identity (the prepared dataset's key, every job's fingerprint) is what was read: for a hub name the resolved
commit, for local files their content hashes. An unpinned hub name (`task.revision` null, a branch or a tag) is
resolved to its commit once per process, by the hub's API, and the answer is kept in `<task.cache_dir>/hub/`: offline
(HF_HUB_OFFLINE=1, as the launchers run their jobs, or no network), the last answer kept there is used, so that a
sweep's jobs and a SLURM sweep's nodes read the revision its plan resolved and never reach the hub.
"""

import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path

from frozen_sweep.config import ConfigError, CorpusKind
from frozen_sweep.data.file_hashes import file_sha256
from frozen_sweep.data.glue_files import glue_split, role_files
from frozen_sweep.data.glue_files import identity as glue_identity

log = logging.getLogger(__name__)

BUILDERS = ("parquet", "json", "csv")  # datasets' packaged builders for local files, read with task.data_files
COMMIT = re.compile(r"[0-9a-f]{40}")
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")

_commits: dict[tuple, str] = {}  # (dataset, config, revision asked) → commit: resolved once per process


def datasets_module():
    """The `datasets` package, or a ConfigError saying which extra installs it."""
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "task.corpus=hf reads datasets with Hugging Face `datasets`, which is not installed: "
            "pip install 'frozen_sweep[datasets]'"
        ) from None
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    return datasets


def describe(task_cfg) -> str:
    """The dataset as a user names it: `wmt/wmt18 (tr-en)`, a directory, or `parquet` over its files; a GLUE task's
    folder (task.path) and its task: `/data/SST-2 (sst2)`."""
    config = f" ({task_cfg.dataset_config})" if task_cfg.dataset_config else ""
    return f"{task_cfg.path or task_cfg.dataset}{config}"


def is_local(task_cfg) -> bool:
    return task_cfg.dataset in BUILDERS or Path(task_cfg.dataset).expanduser().is_dir()


def offline_variable() -> str | None:
    """The variable that makes this process offline, as `NAME=value`, or None."""
    return next((f"{name}={os.environ[name]}" for name in OFFLINE_VARIABLES
                 if os.environ.get(name, "").upper() in ("1", "ON", "YES", "TRUE")), None)  # fmt: skip


def check_hub_keys(task_cfg) -> None:
    """task.corpus=hf's keys, checked before any job starts: the source, then the split choice."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.hf:
        check_source(task_cfg)
        check_split_choice(task_cfg)


def check_source(task_cfg) -> None:
    """What the config alone can tell: a dataset is named, data_files go with a builder, a revision with the hub,
    `datasets` is installed; a GLUE task's folder (task.path) has the splits asked (its files are checked with their
    identity, data/glue_files.py)."""
    import importlib.util

    if importlib.util.find_spec("datasets") is None:
        datasets_module()  # its ConfigError
    if not task_cfg.dataset:
        raise ConfigError(
            "task.dataset is not set: task.corpus=hf reads a hub dataset (task.dataset=wmt/wmt18 "
            "task.dataset_config=tr-en), a local directory in the hub's layout, or task.dataset=parquet|json|csv with "
            "task.data_files={train: FILE, validation: FILE, test: FILE}"
        )
    builder = task_cfg.dataset in BUILDERS
    if builder != bool(task_cfg.data_files):
        raise ConfigError(
            f"task.dataset={task_cfg.dataset} with task.data_files={task_cfg.data_files}: task.data_files goes with "
            f"a builder ({', '.join(BUILDERS)}), which needs it; a hub name or a directory names its own files"
        )
    if task_cfg.builder_kwargs and not builder:
        raise ConfigError(f"task.builder_kwargs={dict(task_cfg.builder_kwargs)} goes with a builder "
                          f"({', '.join(BUILDERS)}); task.dataset={task_cfg.dataset} is not one")  # fmt: skip
    if task_cfg.dataset == "csv" and not {"sep", "delimiter"} & set(task_cfg.builder_kwargs or {}):
        check_commas(task_cfg.data_files)
    if task_cfg.path is not None:
        if task_cfg.revision is not None:
            raise ConfigError(
                f"task.revision={task_cfg.revision} with task.path={task_cfg.path}: a revision is a hub commit, tag or "
                "branch, and task.path reads GLUE's files instead of the hub (their identity is their content): drop "
                "one"
            )
        role_files(task_cfg)  # a GLUE task, and splits its folder has
    if task_cfg.revision is not None and is_local(task_cfg):
        raise ConfigError(
            f"task.revision={task_cfg.revision}: a revision is a hub commit, tag or branch, and task.dataset="
            f"{task_cfg.dataset} is local (its identity is its files' content)"
        )


def check_commas(data_files) -> None:
    """A TSV read by the csv builder with its default separator, a comma, becomes one column (or a parse error):
    refused, naming the file, before anything is read."""
    for split, pattern in data_files.items():
        for name in _glob(pattern)[:1]:
            with open(name, encoding="utf-8", errors="replace") as f:
                first = f.readline()
            if "\t" in first and "," not in first:
                raise ConfigError(
                    f"task.data_files.{split}={name}: its first line is TAB-separated, and the csv builder splits at "
                    "commas: read it with task.builder_kwargs='{sep: \"\\t\"}'"
                )


def check_split_choice(task_cfg) -> None:
    """The split keys agree: valid is a split or held out of train, and nothing is scored on what is trained on."""
    t = task_cfg
    if (t.valid_split is None) == (t.valid_from_train == 0):
        raise ConfigError(
            f"task.valid_split={t.valid_split} with task.valid_from_train={t.valid_from_train}: name the dataset's "
            "validation split, or set task.valid_split=null and task.valid_from_train=N to hold out N examples of "
            "train"
        )
    if t.valid_from_train < 0:
        raise ConfigError(f"task.valid_from_train={t.valid_from_train}: must be >= 0")
    for key in ("valid_split", "test_split"):
        if t[key] is not None and t[key] == t.train_split:
            raise ConfigError(f"task.{key}={t[key]} is also task.train_split: a model is never scored on its training "
                              "data; hold out valid with task.valid_split=null task.valid_from_train=N")  # fmt: skip
    if t.valid_split is not None and t.valid_split == t.test_split:
        raise ConfigError(f"task.valid_split and task.test_split are both {t.test_split}: early stopping would select "
                          "on the test set; hold out valid with task.valid_split=null task.valid_from_train=N")  # fmt: skip


def local_files(task_cfg) -> dict[str, Path]:
    """The files a local dataset is read from, by a name that does not depend on where they are."""
    if task_cfg.dataset in BUILDERS:
        files = {}
        for split, pattern in task_cfg.data_files.items():
            matched = sorted(Path(p) for p in _glob(pattern))
            if not matched:
                raise ConfigError(f"task.data_files.{split}={pattern}: no such file")
            files |= {f"{split}/{i}{path.suffix}": path for i, path in enumerate(matched)}
        return files
    root = Path(task_cfg.dataset).expanduser()
    return {
        path.relative_to(root).as_posix(): path
        for path in sorted(root.rglob("*"))
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    }


def _glob(pattern: str) -> list[str]:
    import glob

    return glob.glob(os.path.expanduser(pattern), recursive=True)


def identity(task_cfg) -> dict[str, str]:
    """What the prepared dataset is made from: local files' content hashes (a GLUE folder's: those its roles read, and
    the task), or the hub name, config and commit."""
    check_source(task_cfg)
    if task_cfg.path is not None:
        return glue_identity(task_cfg)
    if is_local(task_cfg):  # a folder's files hold every config: the config read is part of what was read
        files = {f"hf/{name}": file_sha256(path, task_cfg.cache_dir) for name, path in local_files(task_cfg).items()}
        return files | {"hf_config": str(task_cfg.dataset_config)}
    return {"hf_dataset": task_cfg.dataset, "hf_config": str(task_cfg.dataset_config),
            "hf_commit": resolve_commit(task_cfg)}  # fmt: skip


def resolve_commit(task_cfg) -> str:
    """The hub commit that `task.revision` names now (a commit names itself), asked once per process and kept under
    the cache; offline, or when the hub cannot be reached, the commit kept there."""
    asked = task_cfg.revision or "main"
    if COMMIT.fullmatch(asked):
        return asked
    key = (task_cfg.dataset, task_cfg.dataset_config, asked)
    if key in _commits:
        return _commits[key]
    record = Path(task_cfg.cache_dir).expanduser() / "hub" / f"{hashlib.sha256(json.dumps(key).encode()).hexdigest()}.json"
    reason = f"{variable} is set" if (variable := offline_variable()) else None
    if reason is None:
        try:
            from huggingface_hub import HfApi

            commit = HfApi().dataset_info(task_cfg.dataset, revision=asked).sha
            _keep(record, {"dataset": task_cfg.dataset, "config": task_cfg.dataset_config, "revision": asked,
                           "commit": commit, "resolved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})  # fmt: skip
            _commits[key] = commit
            return commit
        except Exception as e:  # no network, a proxy, an unknown name: the kept answer, if there is one
            reason = f"the hub did not answer ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
            if type(e).__name__ in ("RepositoryNotFoundError", "RevisionNotFoundError"):
                raise ConfigError(f"task.dataset={task_cfg.dataset} task.revision={asked}: {reason}") from None
    try:
        kept = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ConfigError(
            f"task.dataset={task_cfg.dataset}: its revision '{asked}' cannot be resolved to a commit: {reason}, and "
            f"none was kept in {record.parent}. Where there is a network, run `python -m frozen_sweep.prepare` with "
            f"the same overrides and the same FROZEN_SWEEP_CACHE and HF_HOME; or pin task.revision=<a commit>"
        ) from None
    log.info("%s: revision %s taken as commit %s, resolved %s (%s)", describe(task_cfg), asked, kept["commit"],
             kept["resolved_at"], reason)  # fmt: skip
    _commits[key] = kept["commit"]
    return kept["commit"]


def _keep(record: Path, answer: dict) -> None:
    """Best effort, atomic: a read-only cache only means the next offline process cannot resolve."""
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(answer, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, record)
    except OSError as e:
        log.warning("could not keep the resolved revision in %s: %s", record, e)


def load_split(task_cfg, split: str):
    """One split as an Arrow-backed `datasets.Dataset` (memory-mapped from the datasets cache; a GLUE folder's file: in
    memory), or a ValueError that names what exists: configs, splits, or why the dataset cannot be read here. Called
    in the process of data/hub_convert.py, whose memory goes with it."""
    datasets = datasets_module()
    if task_cfg.path is not None:
        return glue_split(task_cfg, split, datasets)
    kwargs = {"path": task_cfg.dataset, "name": task_cfg.dataset_config}
    if task_cfg.data_files:
        kwargs["data_files"] = {name: _glob(pattern) for name, pattern in task_cfg.data_files.items()}
    kwargs |= task_cfg.get("builder_kwargs") or {}
    if not is_local(task_cfg):
        kwargs["revision"] = resolve_commit(task_cfg)
    else:  # `datasets` keys a local folder's Arrow cache by its name and configs, not its files: by their content here
        content = hashlib.sha256(json.dumps(identity(task_cfg), sort_keys=True).encode()).hexdigest()
        kwargs["cache_dir"] = str(Path(datasets.config.HF_DATASETS_CACHE) / "frozen_sweep" / content[:32])
    try:
        return datasets.load_dataset(**kwargs, split=split)
    except ValueError as e:
        text = str(e)
        if text.startswith("Unknown split"):
            raise ValueError(f"{describe(task_cfg)}: no split '{split}' ({text.split('. ', 1)[-1]})") from None
        if "BuilderConfig" in text or "Config name is missing" in text:
            raise ValueError(f"{describe(task_cfg)}: task.dataset_config={task_cfg.dataset_config}: {text}") from None
        raise
    except RuntimeError as e:
        if "scripts are no longer supported" in str(e):
            raise ValueError(
                f"task.dataset={task_cfg.dataset} is a loading script (remote code), which `datasets` no longer runs "
                "and this tool does not run: name its parquet version instead (most hub datasets have one: "
                "task.revision=refs/convert/parquet), or local files with task.dataset=parquet|json|csv"
            ) from None
        raise
    except datasets.exceptions.DatasetGenerationError as e:  # a builder's parser on bad bytes: its reason, in one line
        cause = str(e.__cause__ or e).strip().splitlines() or [type(e).__name__]
        raise ValueError(f"{describe(task_cfg)} {split}: the {task_cfg.dataset} builder cannot read it: {cause[-1]}"
                         ) from None  # fmt: skip
    except (ConnectionError, OSError) as e:
        raise ValueError(
            f"{describe(task_cfg)} is not in the datasets cache (HF_HOME) and cannot be downloaded here "
            f"({type(e).__name__}): where there is a network, run `python -m frozen_sweep.prepare` with the same "
            "overrides and the same FROZEN_SWEEP_CACHE (a prepared dataset needs neither the hub nor HF_HOME)"
        ) from None
