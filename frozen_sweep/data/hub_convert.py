"""A `task.corpus=hf` dataset's splits loaded by `datasets` in a process of its own, which hands back Arrow files.

Why a process: importing `datasets` (with pandas, which it imports) and its conversion of the dataset to Arrow cost
≈120 MB at 205k pairs, which a preparing process would still hold when the vocabulary's training reaches its peak
(modules stay imported; freed heap is seldom handed back). A child's memory goes with it before that; preparation reads the files it names
with pyarrow alone (data/arrow_rows.py). The files are `datasets`' own Arrow cache, or, for a split built in memory
(a GLUE folder's), a copy in a scratch folder removed once no split needs it.

    python -m frozen_sweep.data.hub_convert REQUEST.json   (the child: reads the request, writes REQUEST.json.out)
"""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from frozen_sweep.config import ConfigError
from frozen_sweep.data.hub import is_local, load_split, resolve_commit



@dataclass(frozen=True)
class ArrowSplit:
    """One split of the dataset: Arrow IPC stream files holding its rows in order, and how many rows that is."""

    name: str
    files: list[str]
    rows: int
    scratch: object = field(default=None, repr=False, compare=False)  # keeps a copy's folder while the split is used


def converted_splits(task_cfg, splits: list[str]) -> dict[str, ArrowSplit]:
    """`splits` of the task's dataset (loaded and converted by a child process), by name; a bad dataset's ValueError
    or ConfigError is raised here as the child raised it."""
    settings = OmegaConf.to_container(task_cfg, resolve=True, enum_to_str=True)
    if task_cfg.path is None and not is_local(task_cfg):  # a hub name, not a GLUE folder (task.path) or local files
        settings["revision"] = resolve_commit(task_cfg)  # resolved here, once: the child reads that commit
    scratch = tempfile.TemporaryDirectory(prefix="frozen_sweep-hub-")
    request = Path(scratch.name) / "request.json"
    request.write_text(json.dumps({"task": settings, "splits": list(dict.fromkeys(splits))}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", __name__, str(request)])
    answer_file = request.with_name(request.name + ".out")
    if not answer_file.exists():
        raise RuntimeError(f"reading {task_cfg.dataset} with `datasets` failed (exit {done.returncode}): see above")
    answer = json.loads(answer_file.read_text(encoding="utf-8"))
    if "error" in answer:
        raise (ConfigError if answer["config_error"] else ValueError)(answer["error"])
    return {name: ArrowSplit(name, split["files"], split["rows"], scratch) for name, split in answer["splits"].items()}


def arrow_files(dataset, scratch: Path) -> list[str]:
    """The Arrow files holding exactly `dataset`'s rows: its cache files where it was loaded from them, else a copy of
    its in-memory table (with its features in the schema, as `datasets` writes them) in `scratch`."""
    import pyarrow as pa

    files = [entry["filename"] for entry in dataset.cache_files]
    table = dataset.data.table
    if files and all(pa.ipc.open_stream(pa.OSFile(name)).schema.equals(table.schema) for name in files):
        return files
    copy = scratch / f"{dataset.split or 'split'}-{len(list(scratch.iterdir()))}.arrow"
    table = table.replace_schema_metadata(dataset.features.arrow_schema.metadata)
    with pa.OSFile(str(copy), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return [str(copy)]


def main(request_file: str) -> int:
    request = Path(request_file)
    asked = json.loads(request.read_text(encoding="utf-8"))
    task_cfg = OmegaConf.create(asked["task"])
    try:
        splits = {}
        for split in asked["splits"]:
            dataset = load_split(task_cfg, split)
            splits[split] = {"files": arrow_files(dataset, request.parent), "rows": len(dataset)}
        answer = {"splits": splits}
    except (ValueError, ConfigError) as e:
        answer = {"error": str(e), "config_error": isinstance(e, ConfigError)}
    tmp = request.with_name(f".{request.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(answer), encoding="utf-8")
    os.replace(tmp, request.with_name(request.name + ".out"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
