"""Completed runs that are one result (the same config, data and seed within one experiment): the first by path
counts, the others are flagged "duplicate" instead of being averaged as if they were seeds (the rule: docs/collect.md).
Runs of one result that computed differently (threads, kernels, precision, code) give other numbers: a duplicate whose
test metric differs from the kept run's says so, and the kept run's table names both (`disagreements`)."""

import pandas as pd

from frozen_sweep.run.directory import BEFORE_CPU
from frozen_sweep.tables.provenance import code_of

HOW = {"threads": "thread(s)", "kernels": "kernels", "precision": "", "code": "code"}  # how the runs computed
DISAGREES = "differs from the kept run's"  # in a duplicate's reason when its test metric is not the kept run's


def experiment_of(overrides: list[str]) -> str:
    """The `experiment=` a run was launched with ("" without one): a run counts once within each experiment."""
    return next((o.partition("=")[2] for o in overrides if o.lstrip("+").startswith("experiment=")), "")


def run_identity(record: dict, row: dict) -> str:
    """What a completed run is one result of: its experiment and its fingerprint (without the CPU part), or for a
    record without one, its row's study, task, model, freeze pattern, setting and seed. Made once per record read
    (copies share it), from plain Python values: iterating the frame's string columns costs more than the rest."""
    fingerprint = record.get("fingerprint") or {}
    same = fingerprint.get(BEFORE_CPU) or fingerprint.get("sha256")
    same = same or tuple(row[key] for key in ("study", "task", "model", "label", "setting", "seed"))
    return repr((experiment_of(record.get("overrides") or []), same))


def how(record: dict) -> dict:
    """How a run computed: its threads, kernels, precision and code ("?" where its record does not say)."""
    found = {key: record.get(key) for key in ("threads", "kernels", "precision")} | {"code": code_of(record)}
    return {key: "?" if value is None else value for key, value in found.items()}


def apart(own: dict, kept: dict) -> str:
    """" at 2 thread(s), bf16 autocast; it at 1 thread(s), fp32": where two runs computed differently, or ""."""
    keys = [key for key in HOW if own[key] != kept[key]]
    if not keys:
        return ""
    said = lambda run: ", ".join(f"{run[key]} {HOW[key]}".strip() for key in keys)  # noqa: E731
    return f" at {said(own)}; it at {said(kept)}"


def differ(a, b) -> bool:
    return a != b and not (pd.isna(a) and pd.isna(b))


def flag_duplicates(runs: pd.DataFrame) -> None:
    """Completed runs of the same identity (run_identity) are one result: the first (by path) counts, the others get
    status "duplicate", its path in `kept`, saying how they computed differently and, where their test metric differs
    from the kept run's, what each gave. A run repeated in another experiment counts in that experiment's tables too.
    One pass over the frame."""
    runs["kept"] = None
    done = runs[runs.status == "completed"]
    keys = done.identity
    repeated = keys.duplicated()
    if not repeated.any():
        return
    first = done.index.to_series().groupby(keys).transform("first")[repeated]
    reasons = []
    for index, kept in first.items():
        own, other = runs.loc[index], runs.loc[kept]
        gave = ""
        if differ(own.test_metric, other.test_metric):
            gave = f"; its test {own.metric_name} {own.test_metric:g} {DISAGREES} {other.test_metric:g}"
        reasons.append(f"same config, data and seed as {other.path} (kept: the first by path){gave}"
                       f"{apart(how(own.record), how(other.record))}: counted once, not as another seed")  # fmt: skip
    runs.loc[first.index, "status"] = "duplicate"
    runs.loc[first.index, "kept"] = runs.path[first.values].values
    runs.loc[first.index, "reason"] = reasons


def disagreements(table_runs: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Footnotes of a table: each duplicate of one of its runs whose test metric differs from the kept run's, with
    which run the table keeps, why, and what the other gave."""
    kept = table_runs.set_index("path")
    notes = []
    for r in runs[(runs.status == "duplicate") & runs.kept.isin(set(kept.index))].itertuples():
        value = kept.test_metric[r.kept]
        if differ(r.test_metric, value):
            notes.append(f"⚠ {r.label} seed {r.seed}: the table keeps `{r.kept}` ({value:g}), the first by path of its "
                         f"config, data and seed; `{r.path}`, the same run, gave {r.test_metric:g}"
                         f"{apart(how(r.record), how(kept.record[r.kept]))}.")  # fmt: skip
    return notes
