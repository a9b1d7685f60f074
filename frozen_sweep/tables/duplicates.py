"""Completed runs that are one result (the same config, data and seed within one experiment): the first counts, the
others are flagged "duplicate" instead of being averaged as if they were seeds (the rule: docs/collect.md)."""

import pandas as pd

from frozen_sweep.run.directory import BEFORE_CPU


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


def flag_duplicates(runs: pd.DataFrame) -> None:
    """Completed runs of the same identity (run_identity) are one result: the first (by path) counts, the others get
    status "duplicate", with the thread counts when they differ (then their numbers do too: the fingerprints differ
    only in their CPU part). A run repeated in another experiment counts in that experiment's tables too. One pass
    over the frame."""
    done = runs[runs.status == "completed"]
    keys = done.identity
    repeated = keys.duplicated()
    if not repeated.any():
        return
    threads = done.record.map(lambda record: record.get("threads"))
    first_path = done.path.groupby(keys).transform("first")[repeated]
    first_threads = threads.groupby(keys).transform("first")[repeated]
    other = [
        f" at {own} thread(s), it at {kept}" if own != kept else ""
        for own, kept in zip(threads[repeated], first_threads)
    ]
    runs.loc[first_path.index, "status"] = "duplicate"
    runs.loc[first_path.index, "reason"] = [
        f"same config, data and seed as {path}{at}: counted once, not as another seed"
        for path, at in zip(first_path, other)
    ]
