"""The local_gpus launcher end to end: real sweeps of micro jobs through `python -m frozen_sweep -m`."""

import os
import re
import shutil
import signal
from itertools import combinations

import pytest
from hydra_plugins.frozen_sweep_launchers._batches import check_claims
from hydra_plugins.frozen_sweep_launchers._plan import PlannedJob, SweepConfigError
from hydra_plugins.frozen_sweep_launchers._gpus import visible_gpus

from frozen_sweep.run.lock import live_runner
from tests.conftest import ROOT
from tests.helpers.sweeps import (
    LOCAL,
    attempts,
    job_dir,
    job_dirs,
    read_json,
    record,
    run_own_script,
    run_sweep,
    start_sweep,
    wait_for,
)  # fmt: skip


@pytest.mark.slow
def test_failed_and_killed_jobs_are_recorded_and_the_others_complete(tmp_path, micro_overrides, toy_corpus):
    good, bad = "task.max_len=200", "task.max_len=1"  # every training example is longer: the job fails as it loads
    sweep, output = tmp_path / "sweep", tmp_path / "out.txt"
    proc = start_sweep(
        sweep, *micro_overrides, LOCAL, "hydra.launcher.max_parallel=2", "task.max_len=200,1", "freeze=none,emb",
        output=output,
    )  # fmt: skip
    # the first two jobs run side by side: kill -9 the second one's process while it works, as the OOM killer would
    (victim,) = wait_for(lambda: job_dirs(sweep, good, "freeze=emb"), "the second job to start")
    os.kill(read_json(victim / "attempts.json")[-1]["pid"], signal.SIGKILL)
    proc.wait(timeout=300)
    out = output.read_text()

    assert proc.returncode != 0, out
    assert "4 jobs in" in out and "1 completed, 0 skipped (completed before), 3 failed" in out, out
    completed = record(sweep, good, "freeze=none")
    assert completed["status"] == "completed" and completed["test_metric"] is not None
    # on the CPU a job gets its share of the cores, fixed: cores // jobs at a time (frozen_sweep.system.cpu)
    assert attempts(sweep, good, "freeze=none")[0]["omp_num_threads"] == str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert completed["threads"] == max(1, len(os.sched_getaffinity(0)) // 2) and completed["jobs_at_a_time"] == 2
    killed = read_json(victim / "result.json")
    assert killed["status"] == "failed" and "died without a result" in killed["error"]
    for freeze in ("none", "emb"):
        raised = record(sweep, bad, f"freeze={freeze}")
        assert raised["status"] == "failed" and raised["error"].startswith("ValueError: no training example has at")
    assert f"FAILED {bad} freeze=none: ValueError: no training example has at most task.max_len=1 subwords" in out
    assert f"FAILED {good} freeze=emb: the job's process died without a result" in out
    assert "logs: " in out and "done 1, failed 3, running 0, queued 0" in out
    assert "Error executing job with overrides" in out and "trainer.threads=" not in out  # only what the user passed


@pytest.mark.slow
def test_a_job_that_outlives_its_killed_wrapper_is_waited_for_and_counted(tmp_path, micro_overrides):
    sweep, output = tmp_path / "sweep", tmp_path / "out.txt"
    proc = start_sweep(sweep, *micro_overrides, LOCAL, output=output)  # killed at its start: 2 epochs are plenty
    run = wait_for(lambda: job_dirs(sweep) and (job_dirs(sweep)[0] / "attempts.json").exists() and job_dirs(sweep)[0],
                   "the job to start")  # fmt: skip
    attempt = read_json(run / "attempts.json")[-1]
    os.kill(int(attempt["job_id"]), signal.SIGKILL)  # submitit's wrapper only (a local job's id is its pid)
    assert proc.wait(timeout=300) == 0, output.read_text()
    assert "1 completed" in output.read_text() and read_json(run / "result.json")["status"] == "completed"
    assert live_runner(run) is None  # the launcher returned after the job's own process let go, not before


def test_missing_data_stops_the_sweep_before_any_job_starts(tmp_path, micro_overrides, toy_corpus):
    missing = tmp_path / "missing"
    overrides = [o for o in micro_overrides if not o.startswith("task.path=")]
    proc = run_sweep(tmp_path / "sweep", *overrides, LOCAL, f"task.path={toy_corpus},{missing}")
    assert proc.returncode != 0 and "No job was started" in proc.stdout
    assert "job #1 (" in proc.stdout and f"task.path={missing}: missing {missing / 'train.es'}" in proc.stdout
    assert not (tmp_path / "sweep").exists()
    # in batches of one job, the second batch's missing data stops the sweep before the first batch starts
    proc = run_sweep(tmp_path / "sweep", *overrides, LOCAL, f"task.path={toy_corpus},{missing}",
                     "hydra.sweeper.max_batch_size=1")  # fmt: skip
    assert proc.returncode != 0 and "No job was started" in proc.stdout and "job #1 (" in proc.stdout, proc.stdout
    assert not (tmp_path / "sweep").exists()

    bad = shutil.copytree(toy_corpus, tmp_path / "bad")  # every file there, but a byte of train.en is not UTF-8
    (bad / "train.en").write_bytes((bad / "train.en").read_bytes().replace(b"\n", b"\n\xff", 1))
    overrides = [o for o in overrides if not o.startswith("task.cache_dir=")] + [f"task.cache_dir={tmp_path / 'cache'}"]
    proc = run_sweep(tmp_path / "sweep", *overrides, LOCAL, f"task.path={bad}", "seed=1,2")
    assert proc.returncode != 0 and "No job was started" in proc.stdout
    assert f"{bad / 'train.en'} line 2 is not valid UTF-8 (byte 0xff at column 1)" in proc.stdout
    assert not (tmp_path / "sweep").exists() and not any(p.is_dir() for p in (tmp_path / "cache" / "prepared").iterdir())


@pytest.mark.slow
def test_each_job_gets_a_gpu_of_its_own_and_the_data_is_prepared_once(tmp_path, micro_overrides, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # the ids the launcher may use; the jobs train on the CPU
    sweep, cache = tmp_path / "sweep", tmp_path / "cache"  # a cold cache: the jobs would start on unprepared data
    overrides = [o for o in micro_overrides if not o.startswith("task.cache_dir=")] + [f"task.cache_dir={cache}"]
    proc = run_sweep(sweep, *overrides, LOCAL, "hydra.launcher.gpus=[0,1]", "seed=1,2,3")
    assert proc.returncode == 0, proc.stdout
    built = re.compile(r"prepared [0-9a-f]{32}: train/valid/test")  # data/preparation.py's line, once per build
    assert len(built.findall(proc.stdout)) == 1, proc.stdout  # in the plan, before any job started ...
    assert not any(built.search(log.read_text()) for log in sweep.glob("*/*.log"))  # ... and in no job
    runs = [attempts(sweep, f"seed={seed}")[0] for seed in (1, 2, 3)]
    assert all(run["cuda_visible_devices"] in ("0", "1") for run in runs)
    assert all(run["omp_num_threads"] == str(max(1, len(os.sched_getaffinity(0)) // 2)) for run in runs)

    def overlap(a, b):
        return a["started"] < b["ended"] and b["started"] < a["ended"]

    pairs = list(combinations(runs, 2))
    assert not any(overlap(a, b) for a, b in pairs if a["cuda_visible_devices"] == b["cuda_visible_devices"])
    assert any(overlap(a, b) for a, b in pairs), "the two GPUs were never used at the same time"
    assert "[3/3] seed=" in proc.stdout and "queued 1" in proc.stdout  # the third job waited for a free GPU


def test_a_bad_config_stops_the_sweep_before_any_job_starts(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "model.heads=2,5")
    assert proc.returncode != 0
    assert "model.heads=5 must divide model.d_model=32" in proc.stdout and "No job was started" in proc.stdout
    assert not sweep.exists()
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "trainer.threads=1,2")  # two jobs, one directory
    assert proc.returncode != 0 and "would share the directory" in proc.stdout
    assert "differ only in trainer.threads (1 vs 2), which directory names leave out" in proc.stdout
    assert not sweep.exists()


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_to_the_results_of_an_uninterrupted_one(tmp_path, micro_overrides):
    args = [
        *micro_overrides, LOCAL, "hydra.launcher.max_parallel=1", "trainer.threads=1", "trainer.max_epochs=5",
        "trainer.valid_bleu_sentences=0", "freeze=none,emb,ffn",
    ]  # fmt: skip
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    reference = start_sweep(straight, *args, output=tmp_path / "straight.txt")
    first = start_sweep(interrupted, *args, output=tmp_path / "first.txt")
    # jobs run one at a time: once the second has a checkpoint, the first is done and the third not started
    wait_for(lambda: list(interrupted.glob("*freeze=emb*/checkpoint_last.pt")), "the second job's checkpoint")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert [record(interrupted, f"freeze={f}")["status"] for f in ("none", "emb")] == ["completed", "running"]

    again = run_sweep(interrupted, *args)
    assert again.returncode == 0, again.stdout
    assert "3 jobs: 2 to run (1 resuming from a checkpoint), 1 already completed" in again.stdout
    assert "threads per job: 1 (trainer.threads; the cores' share: " in again.stdout  # the user's, not the share
    assert [len(attempts(interrupted, f"freeze={f}")) for f in ("none", "emb", "ffn")] == [1, 2, 1]
    assert "resumed from" in (job_dir(interrupted, "freeze=emb") / "__main__.log").read_text()

    assert reference.wait(timeout=300) == 0, (tmp_path / "straight.txt").read_text()
    for freeze in ("none", "emb", "ffn"):
        a, b = record(straight, f"freeze={freeze}"), record(interrupted, f"freeze={freeze}")
        assert without_wall_times(a["history"]) == without_wall_times(b["history"]), freeze
        assert (a["test_metric"], a["best_epoch"], a["steps"]) == (b["test_metric"], b["best_epoch"], b["steps"])
        hypotheses = [job_dir(sweep, f"freeze={freeze}") / "test.hyp.txt" for sweep in (straight, interrupted)]
        assert hypotheses[0].read_text() == hypotheses[1].read_text(), freeze  # the same translations


def without_wall_times(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in entry.items() if k != "wall_time_s"} for entry in history]


@pytest.mark.parametrize("visible, expected", [("2,3", [2, 3]), ("", []), ("1,-1,0", [1])])
def test_gpus_default_to_the_ids_cuda_visible_devices_names(monkeypatch, visible, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert visible_gpus(None) == expected
    assert visible_gpus([5]) == [5]  # configured ids win


def test_gpus_named_by_uuid_must_be_configured(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8f3a")
    with pytest.raises(ValueError, match="hydra.launcher.gpus"):
        visible_gpus(None)


def test_jobs_get_the_launchers_hydra_state_such_as_its_resolvers(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    proc = run_own_script(ROOT, sweep, *micro_overrides, LOCAL, "trainer.max_steps=2", "eval.beam=1", "seed=${twice:3}")
    assert proc.returncode == 0, proc.stdout
    (result,) = [read_json(path) for path in sweep.glob("*/result.json")]
    assert result["status"] == "completed" and result["seed"] == 6
    (seen,) = [read_json(path) for path in sweep.glob("*/hydra_seen.json")]
    assert seen == {"cwd": str(ROOT), "original_cwd": str(ROOT), "corpus": str(ROOT / "corpus")}


def test_a_later_batch_may_not_take_a_directory_that_an_earlier_batch_took_with_other_overrides(tmp_path):
    """Sweepers that choose each batch from earlier results (Optuna): checked batch by batch (_batches.py)."""

    def job(num: int, *overrides: str) -> PlannedJob:
        return PlannedJob(num, list(overrides), None, tmp_path / "one_dir", None)

    check_claims([job(0, "seed=1")], [job(1, "seed=1")])  # the same job chosen again: skipped once completed
    with pytest.raises(SweepConfigError, match=r"jobs #0 and #1 would share .* No job of this batch was started"):
        check_claims([job(0, "seed=1", "name=a")], [job(1, "seed=1", "name=b")])


@pytest.mark.parametrize(
    "trap, message",
    [
        ("+freez=emb", "freez: no such key in the config; did you mean freeze"),
        ("trainer.warmup_steps=-10", "trainer.warmup_steps=-10): trainer.warmup_steps=-10: must be >= 0."),
        ("freeze=none,emb_emb", "emb_emb"),  # Hydra's own error: a config group option that does not exist
        ("freeze=glob(zzz*)", "freeze=glob(zzz*) matches no option of freeze, so the sweep has no job; allowed: a "
         "pattern matching one of att, "),
        ("seed=1,1", "seed=1,1 lists 1 more than once: the jobs would be one run in one directory; give each value"),
        ("hydra.launcher.max_parallel=0", "hydra.launcher.max_parallel=0: must be >= 1. No job was started."),
    ],
)
def test_each_refused_trap_leaves_the_sweep_folder_as_it_was(tmp_path, micro_overrides, trap, message):
    sweep = tmp_path / "sweep"
    (sweep / "earlier").mkdir(parents=True)  # a folder the user had: kept as it was, nothing added
    (sweep / "earlier" / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(sweep) for p in sweep.rglob("*"))
    proc = run_sweep(sweep, *micro_overrides, LOCAL, trap)
    assert proc.returncode != 0 and message in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout and "Error in call to target" not in proc.stdout  # one line, no wrapper
    assert "trainer.threads=" not in proc.stdout  # the launcher's own override is not the user's
    assert sorted(p.relative_to(sweep) for p in sweep.rglob("*")) == before
