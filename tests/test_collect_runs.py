"""The collector's view of runs: which files are records, and the runs that cannot be averaged (dead `running`
records, duplicates of one run) and how the command reports them."""

import io
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from frozen_sweep.collect import SHOWN_LEFT_OUT, report_left_out
from frozen_sweep.run import directory
from frozen_sweep.run.directory import load_result
from frozen_sweep.run.lock import exclusive_run
from frozen_sweep.system.files import write_json_atomic
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.render import csv, markdown, problems
from frozen_sweep.tables.runs import load_runs
from tests.helpers.records import write_run


def age(path, minutes: float) -> None:
    """Make the record look last written `minutes` ago."""
    record = load_result(path)
    record["updated_at"] = (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat(timespec="seconds")
    write_json_atomic(path, record)


def test_a_running_record_silent_for_longer_than_its_validations_is_dead(tmp_path):
    # validations every 30 s of training (write_run's history): dead after 2 × 30 s + 5 min of silence
    recent = write_run(tmp_path, "(1)", status="running")
    old = write_run(tmp_path, "(2)", status="running")
    held = write_run(tmp_path, "(3)", status="running")
    fresh = write_run(tmp_path, "(4)", status="running", history=[])
    for path in (old, held):
        age(path, 10)
    age(recent, 4)
    age(fresh, 50)  # before its first validation: an hour of grace
    with exclusive_run(held.parent):  # its runner is alive, however long it has been quiet
        runs = load_runs([str(tmp_path)]).set_index("label")
    assert runs.loc["(1)", "status"] == "running" and runs.loc["(4)", "status"] == "running"
    assert runs.loc["(3)", "status"] == "running"
    assert runs.loc["(2)", "status"] == "dead"
    assert runs.loc["(2)", "reason"].startswith("no update for 10 min") and "resume" in runs.loc["(2)", "reason"]


def test_duplicates_are_flagged_not_averaged_as_seeds(tmp_path):
    fingerprint = {"sha256": "ab" * 32, "config": {}, "data": {}}
    first = write_run(tmp_path / "a", "(0)", metric=10.0, fingerprint=fingerprint)
    write_run(tmp_path / "b", "(0)", metric=10.0, fingerprint=fingerprint)
    write_run(tmp_path / "c", "(0)", metric=14.0, seed=2, fingerprint={**fingerprint, "sha256": "cd" * 32})
    write_run(tmp_path / "d", "(1)", metric=9.0)  # no fingerprint (older records): same overrides and seed
    write_run(tmp_path / "e", "(1)", metric=9.0)
    runs = load_runs([str(tmp_path)])
    duplicates = runs[runs.status == "duplicate"]
    assert len(duplicates) == 2 and all("counted once" in r for r in duplicates.reason)
    assert str(first) in duplicates.reason.iloc[0]
    table = build_tables(runs)[0]
    cell = table.rows.loc[table.rows.index[0]]
    assert "12.0 ± 2.8" in " ".join(map(str, cell.values)), cell  # n=2 seeds (10, 14), not n=3 with a copy


def test_a_run_shared_by_two_experiments_counts_in_each(tmp_path):
    fingerprint = {"sha256": "ef" * 32, "config": {}, "data": {}}
    for experiment in ("finetune_reservoir", "random_embeddings_first"):  # the same scratch run in both sweeps
        write_run(tmp_path / experiment, "(0)", fingerprint=fingerprint, overrides=(f"experiment={experiment}",))
        write_run(tmp_path / experiment, "(1)", metric=8.0, overrides=(f"experiment={experiment}",))
    rerun = write_run(tmp_path / "rerun", "(0)", fingerprint=fingerprint, overrides=("experiment=finetune_reservoir",))
    runs = load_runs([str(tmp_path)])
    assert runs.set_index("path").loc[str(rerun), "status"] == "duplicate"  # within one experiment: counted once
    assert (runs.status == "completed").sum() == 4
    tables = build_tables(runs)
    assert len(tables) == 2 and all(len(t.runs) == 2 and "(0)" in set(t.runs.label) for t in tables)


def test_records_are_found_as_pathlib_names_them_without_following_links_and_read_whole(tmp_path, monkeypatch):
    first = write_run(tmp_path / "sweep", "(0)")
    second = write_run(tmp_path / "sweep" / "rerun", "(1)")
    (tmp_path / "link").symlink_to(tmp_path / "sweep", target_is_directory=True)  # not followed: no run twice
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "result.json").symlink_to(tmp_path / "sweep", target_is_directory=True)  # not a record
    monkeypatch.setattr(directory, "READ_CHUNK", 100)  # every record takes many reads
    monkeypatch.chdir(tmp_path)
    runs = load_runs(["./", "sweep/"])
    assert sorted(runs.path) == sorted(str(p.relative_to(tmp_path)) for p in (first, second))  # "sweep/…", once
    assert list(runs.status) == ["completed", "completed"] and list(runs.label) == ["(0)", "(1)"]
    with pytest.raises(ValueError, match=r"unreadable result record \(\[Errno 21\] Is a directory: '.*odd/result.json'"):
        load_result(tmp_path / "odd" / "result.json")


def test_the_runs_left_out_are_named_up_to_a_cap_then_counted_by_status(capsys):
    statuses = ["failed"] * 15 + ["corrupt"] * 10 + ["dead"] * 3 + ["duplicate"] * 40
    left_out = pd.DataFrame({"path": [f"r{i}/result.json" for i in range(len(statuses))], "status": statuses,
                             "reason": "why"})  # fmt: skip
    report_left_out(left_out, Path("t.md"))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == SHOWN_LEFT_OUT + 2 and lines[0] == "collect: not included: r0/result.json (failed: why)"
    assert lines[-2] == "collect: not included: 8 more (5 corrupt, 3 dead; listed in t.md)"
    assert lines[-1] == "collect: not included: 40 duplicates of runs counted once (listed in t.md)"


def test_runs_of_one_result_that_disagree_say_which_was_kept_why_and_what_the_other_gave(tmp_path, capsys):
    """The same config, data and seed trained in fp32 and in bf16 (the fingerprint without its CPU part is theirs
    both): one row, the first by path kept; the table's footnote and the other's reason give both numbers and how
    they computed; a copy that agrees is a plain duplicate."""
    fingerprint = {"sha256": "ab" * 32, "sha256_before_cpu": "cd" * 32, "config": {}, "data": {}}
    code = {"git_sha": "1a2b3c4d5e6f", "git_dirty": False}
    kept = write_run(tmp_path / "a", "(0)", 19.1, fingerprint=fingerprint, precision="fp32", kernels="AVX2",
                     versions=code)  # fmt: skip
    other = write_run(tmp_path / "b", "(0)", 20.3, fingerprint={**fingerprint, "sha256": "ef" * 32},
                      precision="bf16 autocast", kernels="AVX2", versions=code)  # fmt: skip
    write_run(tmp_path / "c", "(0)", 19.1, fingerprint=fingerprint, precision="fp32", kernels="AVX2", versions=code)
    runs = load_runs([str(tmp_path)])
    reasons = runs.set_index("path").reason
    assert reasons[str(other)] == (f"same config, data and seed as {kept} (kept: the first by path); its test bleu "
                                   "20.3 differs from the kept run's 19.1 at bf16 autocast; it at fp32: counted once, "
                                   "not as another seed")  # fmt: skip
    assert "differs" not in reasons[str(tmp_path / "c" / os.listdir(tmp_path / "c")[0] / "result.json")]
    (table,) = build_tables(runs)
    assert table.footnotes[-1] == (f"⚠ (0) seed 1: the table keeps `{kept}` (19.1), the first by path of its config, "
                                   f"data and seed; `{other}`, the same run, gave 20.3 at bf16 autocast; it at fp32.")
    report_left_out(problems(runs), Path("t.md"))
    assert "collect: 1 of them gave another test metric than the run kept" in capsys.readouterr().err


def test_a_table_names_its_kernels_precision_and_code_and_warns_where_its_runs_mix_them(tmp_path):
    """The provenance line says how the runs computed; a table whose runs differ in kernels, precision or code (a
    commit, or uncommitted changes) says MIXED; the CSV carries the same per run."""
    same = {"kernels": "AVX2", "precision": "fp32", "threads": 1, "machine": "AMD EPYC, 2 cores",
            "versions": {"git_sha": "1a2b3c4d5e6f", "git_dirty": False}}  # fmt: skip
    write_run(tmp_path / "one", "(0)", 19.1, **same)
    write_run(tmp_path / "one", "(1)", 9.7, **same)
    runs = load_runs([str(tmp_path / "one")])
    line = markdown(build_tables(runs), runs).split("\n")[2]
    assert "AMD EPYC, 2 cores · kernels AVX2, precision fp32 · 1 job(s) at a time" in line
    assert "code 1a2b3c4d5e ·" in line
    assert "MIXED" not in markdown(build_tables(runs), runs)
    write_run(tmp_path / "mixed", "(0)", 19.1, **same)
    write_run(tmp_path / "mixed", "(1)", 9.7, **{**same, "kernels": "AVX512", "precision": "bf16 autocast",
                                                 "versions": {"git_sha": "1a2b3c4d5e6f", "git_dirty": True}})
    runs = load_runs([str(tmp_path / "mixed")])
    text = markdown(build_tables(runs), runs)
    assert ("**MIXED kernels AVX2 vs AVX512; precision bf16 autocast vs fp32; code 1a2b3c4d5e vs 1a2b3c4d5e+uncommitted"
            "**: not one computation, rows may differ by more than their seeds") in text
    rows = pd.read_csv(io.StringIO(csv(runs))).set_index("row")
    assert rows.loc["(1)", ["code", "machine", "kernels", "precision", "threads"]].tolist() == [
        "1a2b3c4d5e+uncommitted", "AMD EPYC, 2 cores", "AVX512", "bf16 autocast", 1]
