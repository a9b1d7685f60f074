"""Where a table's numbers come from, printed above it: the command that made its runs, when, on what machine, with
which CPU kernels and in which precision, how many jobs and threads, the code version and the fingerprint recipe; and
a warning where its runs differ in kernels, precision or code, which change the numbers (its rows may then differ by
more than their seeds). The docs' tables carry this line, and a test fails when the code's FINGERPRINT_RECIPE has
moved past a documented table's (tests/test_docs_tables.py)."""

import shlex
from pathlib import Path
from typing import Callable, Optional

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.run.directory import CONFIG_FILE

RECIPE_WORDS = "fingerprint recipe"  # followed by the number: what the docs test reads


LAUNCHER_KEYS = ("trainer.threads",)  # the launchers add it (their share of the cores): the line states the threads


def sweep_commands(
    overrides: list[list[str]], config_of: Callable[[int], Optional[DictConfig]] = lambda run: None,
    config_dir: Optional[str] = None,
) -> list[str]:
    """The `python -m frozen_sweep` commands that give exactly these runs: `experiment=` first, each key with its
    values comma-separated (a -m sweep), in first-seen order; one command where the runs are one sweep's cross
    product, else as few as merging runs that differ in one key gives (five reservoir types plus a backskip row and a
    2-layer control: three commands, not one that would sweep backskip over every type). A key typed for some runs
    only takes, for the others, the value their config (`config_of(i)`: run i's) holds: seed 1 by default beside a
    `seed=2` sweep reads `seed=1,2`; a config group's choice is not a value there. A config is read only for a run
    that lacks a key (≈10 ms each: the runs of one sweep read none). `config_dir`: the --config-dir they ran with."""
    parsed = [dict(o.split("=", 1) if "=" in o else (o, "") for o in run) for run in overrides]
    keys = sorted(dict.fromkeys(k for run in parsed for k in run if k not in LAUNCHER_KEYS), key=lambda k: k != "experiment")
    for i, run in enumerate(parsed):
        missing = [key for key in keys if key not in run]
        config = config_of(i) if missing else None
        if config is None:
            continue
        for key in missing:
            value = OmegaConf.select(config, key, default=None)
            if value is not None and not OmegaConf.is_config(value):
                run[key] = str(value)
    sweeps = list(dict.fromkeys(tuple((run.get(key, ""),) for key in keys) for run in parsed))  # a value tuple a key
    by_values = sorted(range(len(keys)), key=lambda i: -len({run.get(keys[i], "") for run in parsed}))
    while True:  # merge sweeps that differ in one key, the key with the most values first, until none merge
        count = len(sweeps)
        for i in by_values:
            merged: dict[tuple, list] = {}
            for sweep in sweeps:
                into = merged.setdefault(sweep[:i] + sweep[i + 1 :], list(sweep))
                into[i] = (*into[i], *(v for v in sweep[i] if v not in into[i]))
            sweeps = [tuple(sweep) for sweep in merged.values()]
        if len(sweeps) == count:
            break
    options = f"--config-dir {shlex.quote(config_dir)} " * bool(config_dir) + "-m " * (len(parsed) > 1)
    return [command(options, keys, sweep) for sweep in sweeps]


def command(options: str, keys: list[str], sweep: tuple) -> str:
    """`python -m frozen_sweep [--config-dir DIR] [-m] key=a,b …` of one sweep (a value tuple a key), keys without a
    value left out."""
    parts = [f"{key}={','.join(v for v in values if v)}" for key, values in zip(keys, sweep) if any(values)]
    return f"python -m frozen_sweep {options}{' '.join(parts)}".rstrip()


def made_by(records: list[dict], paths: list[str]) -> str:
    """The commands that make the runs, those of each --config-dir apart."""
    by_dir: dict[Optional[str], list[int]] = {}
    for i, record in enumerate(records):
        by_dir.setdefault(record.get("config_dir"), []).append(i)
    commands = [c for config_dir, runs in by_dir.items()
                for c in sweep_commands([records[i].get("overrides") or [] for i in runs],
                                        lambda j, runs=runs: run_config(paths[runs[j]]), config_dir)]  # fmt: skip
    return "Made by " + " and ".join(f"`{c}`" for c in commands)


def run_config(result_path: str) -> Optional[DictConfig]:
    """The config a run ran with (beside its record), None where there is none."""
    path = Path(result_path).parent / CONFIG_FILE
    return OmegaConf.load(path) if path.is_file() else None


def spread(values) -> str:
    """"a" when every value is a, else "a, b, …"; "?" when none is known."""
    found = sorted({str(v) for v in values if v is not None and not pd.isna(v)}, key=lambda v: (len(v), v))
    return found[0] if len(found) == 1 else ", ".join(found) or "?"


def code_of(record: dict) -> Optional[str]:
    """The code a run ran: its commit's first 10 digits, "+uncommitted" where tracked files differed from it."""
    versions = record.get("versions") or {}
    sha = (versions.get("git_sha") or "")[:10]
    return f"{sha}{'+uncommitted' * bool(versions.get('git_dirty'))}" if sha else None


def kinds(values) -> list[str]:
    """The distinct values, "not recorded" for a run without one (records from before the field)."""
    return sorted({"not recorded" if v is None else str(v) for v in values})


def provenance(runs: pd.DataFrame) -> str:
    """One line from the runs' records: "Made by `python -m frozen_sweep -m …` · 2026-11-25 · AMD EPYC, 2 cores ·
    kernels AVX2, precision fp32 · 2 jobs at a time, 1 thread each · code 1a2b3c4d5e · fingerprint recipe 3", then
    what the runs do not share of kernels, precision and code: "**MIXED precision bf16 autocast vs fp32**: …"."""
    records, paths = list(runs.record), list(runs.path)
    dates = sorted({(r.get("updated_at") or "")[:10] for r in records} - {""})
    follows = any(r.get("follow_free_cores") for r in records)
    shared = {"kernels": kinds(r.get("kernels") for r in records),
              "precision": kinds(r.get("precision") for r in records),
              "code": kinds(code_of(r) for r in records)}  # fmt: skip
    mixed = [f"{name} {' vs '.join(values)}" for name, values in shared.items() if len(values) > 1]
    return " · ".join([
        made_by(records, paths),
        " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "undated",
        spread(r.get("machine") for r in records),
        f"kernels {', '.join(shared['kernels'])}, precision {', '.join(shared['precision'])}",
        f"{spread(r.get('jobs_at_a_time') or 1 for r in records)} job(s) at a time, "
        f"{spread(r.get('threads') for r in records)} thread(s) each"
        + (" (following the free cores: not reproducible)" if follows else ""),
        f"code {', '.join(shared['code'])}",
        f"{RECIPE_WORDS} {spread((r.get('fingerprint') or {}).get('recipe') for r in records)}",
        *data_source(records),
    ]) + (f"\n\n**MIXED {'; '.join(mixed)}**: not one computation, rows may differ by more than their seeds"
          if mixed else "")  # fmt: skip


def data_source(records: list[dict]) -> list[str]:
    """A hub dataset's name, config, commit and which split each number comes from ("test = validation"); nothing
    for the other corpora, whose files the command names."""
    sources = [((r.get("data") or {}).get("corpus") or {}) for r in records]
    if not any("dataset" in source for source in sources):
        return []
    named = spread(f"{s.get('dataset')}" + (f" ({s['config']})" if s.get("config") else "") for s in sources)
    commit = spread((s.get("commit") or "")[:10] or "local files" for s in sources)
    splits = [s.get("splits") or {} for s in sources]
    roles = ", ".join(f"{role} = {spread(split.get(role) for split in splits)}" for role in ("train", "valid", "test"))
    return [f"{named} @ {commit}: {roles}"]
