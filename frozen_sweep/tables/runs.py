"""Result records → a DataFrame with one row per run (completed or not), which every table is built from."""

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pandas as pd

from frozen_sweep.config import COMPONENTS, NEUTRAL_KEYS
from frozen_sweep.run.directory import RESULT_FILE, parse_result, result_bytes
from frozen_sweep.run.lock import live_runner
from frozen_sweep.system.gc_pause import no_cyclic_gc
from frozen_sweep.tables.paper import ROWS
from frozen_sweep.tables.duplicates import flag_duplicates, run_identity
from frozen_sweep.tables.provenance import code_of
from frozen_sweep.tables.untrained import untrained_reason

STALE_FACTOR, STALE_MARGIN_S = 2, 300  # a running record silent for longer than 2 × its validation interval + 5 min
STALE_BEFORE_VALIDATION_S = 3600  # ... or for an hour before its first validation: its runner is gone
RECORD_KEYS = (
    "seed", "metric_name", "test_metric", "best_metric", "best_epoch", "epochs_to_convergence", "stopped_reason",
    "trainable_ratio", "params_trainable", "params_total", "steps", "wall_time_s", "test_accuracy",
)  # fmt: skip
PROVENANCE_KEYS = ("machine", "kernels", "precision", "threads")  # how it computed, beside the `code` it ran
CSV_COLUMNS = ["path", "status", "reason", "study", "task", "data", "model", "row", "label", *COMPONENTS, *RECORD_KEYS,
               "untrained", "code", *PROVENANCE_KEYS, "overrides"]  # fmt: skip


def find_results(paths: list[str]) -> list[str]:
    """Every result.json under the paths (a path may be a result.json itself), each once, named as pathlib would
    name them and in its order. Strings from os.scandir, not rglob's Paths nor os.walk's lists: half the time on
    thousands of run directories; none follows a symbolic link to a directory, and unreadable ones are skipped."""
    found = set()
    for root in map(str, map(Path, paths)):  # as pathlib names them: "outputs/" and "./outputs" are "outputs"
        if os.path.isfile(root):
            found.add(root)
        found.update(name[2:] if root == "." else name for name in results_under(root))  # pathlib: "a/result.json"
    return sorted(found, key=lambda name: name.split(os.sep))  # pathlib's order: by component


def results_under(root: str) -> list[str]:
    """The result.json files in `root` and its subdirectories, as os.walk would find them."""
    found, directories = [], [root]
    while directories:
        try:
            with os.scandir(directories.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        directories.append(entry.path)
                    elif entry.name == RESULT_FILE and not entry.is_dir():  # a link to a directory is not a record
                        found.append(entry.path)
        except OSError:  # gone or unreadable meanwhile: os.walk skips it too
            continue
    return found


def setting_of(overrides: list[str], ignored: frozenset = frozenset()) -> tuple[str, ...]:
    """What makes a run more than a seed of its freeze pattern: its overrides less freeze, seed and NEUTRAL_KEYS
    (and any key in `ignored`, or under it: a study's own sweep axes).

    The task= and model= choices go too: the record's task and model names already key the table.
    """
    groups = {"freeze"} | ignored  # the key and everything under it
    ignored = NEUTRAL_KEYS | {"seed", "task", "model"} | groups
    keys = (o.lstrip("+~").partition("=")[0] for o in overrides)
    return tuple(sorted(o for o, key in zip(overrides, keys) if key not in ignored and key.split(".")[0] not in groups))


def distinguishing(settings: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Setting → the overrides that tell it apart from the other settings of the same task × model."""
    parsed = {s: dict(o.partition("=")[::2] for o in s) for s in settings}
    keys = sorted({k for overrides in parsed.values() for k in overrides})
    differing = [k for k in keys if len({overrides.get(k) for overrides in parsed.values()}) > 1]
    return {s: " ".join(f"{k}={overrides.get(k, '(default)')}" for k in differing) for s, overrides in parsed.items()}


def per_setting(runs: pd.DataFrame, keys: list[str], sort: bool = True):
    """Each table's runs: for every group of `keys` (task, data, model, ...), every metric × setting, as (the group's
    key values, metric name, the overrides that tell the setting apart within the group, its runs)."""
    for key, group in runs.groupby(keys, sort=False, dropna=False):
        names = distinguishing(list(group.setting.unique()))
        for (metric_name, setting), table_runs in group.groupby(["metric_name", "setting"], sort=sort, dropna=False):
            yield key, metric_name, names[setting], table_runs


def pattern_label(freeze: dict) -> str:
    """A label for a pattern the paper has no row for, e.g. "att (orthogonal)+other frozen"."""
    groups = {"frozen": [], "trainable": []}
    for component, state in freeze.items():
        kind, _, init = state.partition(":")
        if state != "trainable":
            groups[kind].append(component if init in ("", "random") else f"{component} ({init})")
    return "; ".join(f"{'+'.join(names)} {kind}" for kind, names in groups.items() if names) or "all trainable"


DATA_KEYS = frozenset({"task.path", "task.dataset", "task.dataset_config"})  # what data_read names


def data_read(record: dict) -> str:
    """The data a run read, as its table's heading names it after the task: a hub dataset and its config
    ("nyu-mll/glue (cola)", from data.corpus), the text files' directory (data.data_dir); "" for the embedded corpus,
    which its task names (a local copy of a hub dataset is named by its directory, as `task.dataset` gave it)."""
    data = record.get("data") or {}
    source = data.get("corpus") or {}
    if "dataset" in source:
        return f"{source['dataset']}" + (f" ({source['config']})" if source.get("config") else "")
    corpus = ((record.get("fingerprint") or {}).get("config") or {}).get("task.corpus")
    return str(data.get("data_dir") or "") if corpus == "text_files" else ""


def why_not_completed(record: dict) -> Optional[str]:
    """The first line of a failed run's error; for a running one, a reminder that it may be dead; None if completed."""
    if record["status"] == "failed":
        return (str(record.get("error") or "").strip() or "no error recorded").splitlines()[0]
    if record["status"] == "running":
        return "no final result yet: still running"
    return None


def validation_interval_s(history: list[dict]) -> Optional[float]:
    """The longest training time between two validations (the first counted from the start), or None before any."""
    times = [0.0] + [e["wall_time_s"] for e in history if e.get("wall_time_s") is not None]
    return max(b - a for a, b in zip(times, times[1:])) if len(times) > 1 else None


def silent_for_s(record: dict, now: Optional[datetime] = None) -> Optional[float]:
    """Seconds since the record was last written (None when it does not say)."""
    try:
        updated = datetime.fromisoformat(record["updated_at"])
    except (KeyError, TypeError, ValueError):
        return None
    return ((now or datetime.now(timezone.utc)) - updated).total_seconds()


def dead_reason(path: Path, record: dict, now: Optional[datetime] = None) -> Optional[str]:
    """Why a `running` record is dead: nobody holds its directory's lock and it has not been written for longer than
    its own validation interval with margin (STALE_MARGIN); None while it may still run."""
    if live_runner(path.parent):
        return None
    silent, interval = silent_for_s(record, now), validation_interval_s(record.get("history") or [])
    limit = STALE_FACTOR * interval + STALE_MARGIN_S if interval is not None else STALE_BEFORE_VALIDATION_S
    if silent is None or silent <= limit:
        return None
    return (
        f"no update for {silent / 60:.0f} min (validations every ≤{(interval or 0) / 60:.1f} min) and no "
        "process holds its directory; run the same command again to resume it from its checkpoint"
    )


def run_row(path: str, data: bytes) -> dict:
    """One run as a flat row (plus the whole record, for the studies' own columns) from its record's bytes; a record
    that cannot be read becomes status "corrupt" with the reason."""
    try:
        record = parse_result(data, path)
        freeze = record.get("freeze") or {}
        overrides = [str(o) for o in record.get("overrides") or []]
        dead = dead_reason(Path(path), record) if record["status"] == "running" else None
        row = {
            "path": path,
            "status": "dead" if dead else record["status"],
            "reason": dead or why_not_completed(record),
            "study": record.get("study") or "freeze",
            "task": record.get("task"),
            "data": data_read(record),
            "model": record.get("model"),
            "row": record.get("row"),
            "label": record.get("row") or pattern_label(freeze),
            **{c: freeze.get(c, "trainable") for c in COMPONENTS},
            **{key: record.get(key) for key in RECORD_KEYS},
            "code": code_of(record),
            **{key: record.get(key) for key in PROVENANCE_KEYS},
            "overrides": " ".join(overrides),
            "setting": setting_of(overrides),
            "history": record.get("history") or [],
            "record": record,
        }
        if row["status"] == "completed":  # work done once per record read: copies share the row
            row["untrained"], row["identity"] = untrained_reason(record), run_identity(record, row)
        return row
    except ValueError as e:
        reason = str(e).removeprefix(f"{path}: ")
    except (AttributeError, TypeError, LookupError) as e:  # JSON, but not shaped like a record
        reason = f"malformed record ({type(e).__name__}: {e})"
    return {"path": path, "status": "corrupt", "reason": reason}


def run_rows(paths: list[str]) -> list[dict]:
    """Every path's row. A record byte for byte like one read before (a copy in another sweep folder, or under
    `outputs/` after reruns) shares that row, its path apart: parsed once. Only finished records are shared; a running
    one's row depends on its own directory (who holds its lock)."""
    rows, finished = [], {}  # sha256 of a finished record's bytes → its row
    for path in paths:
        try:
            data = result_bytes(path)
        except ValueError as e:
            rows.append({"path": path, "status": "corrupt", "reason": str(e).removeprefix(f"{path}: ")})
            continue
        digest = hashlib.sha256(data).digest()
        if digest in finished:
            rows.append({**finished[digest], "path": path})
            continue
        rows.append(run_row(path, data))
        if rows[-1]["status"] in ("completed", "failed"):
            finished[digest] = rows[-1]
    return rows


def load_runs(paths: list[str]) -> pd.DataFrame:
    """All runs under the paths, one row each, in table order (task, model, paper row, seed)."""
    columns = [*CSV_COLUMNS, "setting", "history", "record", "identity"]
    with no_cyclic_gc():  # a record is hundreds of objects, none of them garbage: 15-20% of the reading
        rows = run_rows(find_results(paths))
        runs = pd.DataFrame(rows, columns=columns)
    runs = runs.astype({k: "Int64" for k in ("seed", "params_trainable", "params_total", "steps", "threads")})
    runs["data"] = runs.data.fillna("")  # an unread record's: no data to name
    # why a completed run counts as untrained (tables.untrained), else None (not NaN: a reason's truth is read)
    runs["untrained"] = pd.Series([row.get("untrained") for row in rows], dtype=object)
    flag_duplicates(runs)
    runs["order"] = runs.label.map({row: i for i, row in enumerate(ROWS)}).fillna(len(ROWS))
    return runs.sort_values(["task", "data", "model", "order", "label", "seed", "path"], ignore_index=True)


def completed(runs: pd.DataFrame, study: str) -> pd.DataFrame:
    return runs[(runs.status == "completed") & (runs.study == study)]
