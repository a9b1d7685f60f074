"""A sweep as a script runs it: started in the background of a non-interactive shell, its jobs stopped by `kill -INT`
and plain `kill`; and run again with a default written out, which must not train the finished jobs twice."""

import os
import re
import shlex
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers.sweeps import LOCAL, job_dir, job_dirs, read_json, run_sweep, sweep_command, wait_for


@pytest.mark.slow
def test_jobs_of_a_sweep_started_by_a_script_stop_on_kill_int_and_on_plain_kill(tmp_path, micro_overrides):
    sweep, output = tmp_path / "sweep", tmp_path / "out.txt"
    command = shlex.join(sweep_command(sweep, *micro_overrides, LOCAL, "hydra.launcher.max_parallel=2",
                                       "trainer.max_epochs=50", "freeze=none,emb"))  # fmt: skip
    # a background command of a non-interactive shell inherits SIGINT ignored, and so would every job it starts
    script = subprocess.Popen(["bash", "-c", f"{command} > {output} 2>&1 & wait"], cwd=ROOT, start_new_session=True)
    try:
        dirs = {}
        for freeze in ("none", "emb"):
            dirs[freeze] = wait_for(lambda: (found := job_dirs(sweep, f"freeze={freeze}")) and
                                    (found[0] / "checkpoint_last.pt").exists() and found[0], f"{freeze} to checkpoint")  # fmt: skip
        os.kill(read_json(dirs["none"] / "attempts.json")[-1]["pid"], signal.SIGINT)
        os.kill(read_json(dirs["emb"] / "attempts.json")[-1]["pid"], signal.SIGTERM)
        assert script.wait(timeout=120) == 0  # bash's `wait` returns once the sweep has ended
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
    out = output.read_text()
    for freeze, error in (("none", "KeyboardInterrupt"), ("emb", "Interrupted: stopped by SIGTERM")):
        record = read_json(dirs[freeze] / "result.json")
        assert record["status"] == "failed" and record["error"].startswith(error), record["error"][:300]
        assert read_json(dirs[freeze] / "attempts.json")[-1]["status"] == "interrupted"
        assert (dirs[freeze] / "checkpoint_last.pt").exists()  # run again, it resumes from there
    assert "0 completed, 0 skipped (completed before), 2 failed" in out, out
    assert "HYDRA_FULL_ERROR" not in out and "Traceback" not in out, out


@pytest.mark.slow
def test_a_finished_job_is_not_run_again_under_another_directory_name(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    first = run_sweep(sweep, *micro_overrides, LOCAL, "freeze=none")
    assert first.returncode == 0, first.stdout
    assert re.search(r"\[1/1\] \S+: test bleu \d+\.\d\d, \d+\.\d\d epochs \(max_epochs\), \d+ s", first.stdout), first.stdout
    assert f"python -m frozen_sweep.collect {sweep}" in first.stdout  # the sweep's end says how to collect it
    finished = job_dir(sweep, "freeze=none")
    # seed=1 is the default: the same run, in a directory named differently; seed=2 is a new one
    again = run_sweep(sweep, *micro_overrides, LOCAL, "freeze=none", "seed=1,2")
    assert again.returncode == 0, again.stdout
    assert "2 jobs: 1 to run (0 resuming from a checkpoint), 1 already completed" in again.stdout, again.stdout
    assert f"skipped seed=1: the same run (config, data and seed) as {finished}" in again.stdout, again.stdout
    assert not job_dirs(sweep, "seed=1")  # no directory made for it
    assert len(read_json(finished / "attempts.json")) == 1
    # a single job too, in its outputs/<name>/: seed=1 beside the run the default seed made
    for extra in ([], ["seed=1"]):
        single = subprocess.run([sys.executable, "-m", "frozen_sweep", *micro_overrides, *extra], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)  # fmt: skip
        assert single.returncode == 0, single.stdout
    assert "skipped: the same run (config, data and seed) as outputs/runs/" in single.stdout, single.stdout
    assert len(list((tmp_path / "outputs" / "runs").iterdir())) == 1
    dry = run_sweep(sweep, *micro_overrides, LOCAL, "freeze=none", "seed=1", "dry_run=true")
    assert "(1 skip)" in dry.stdout and f"the same run (config, data and seed) as {finished}, which holds" in dry.stdout


@pytest.mark.slow
def test_hydras_job_settings_hold_for_frozen_sweep_jobs(tmp_path, micro_overrides, toy_corpus):
    """hydra.job.name, hydra.sweep.subdir and hydra.job.chdir on local_gpus, with a task.path relative to the
    directory the command ran in (what to_absolute_path and get_original_cwd give a job)."""
    (tmp_path / "corpus").symlink_to(toy_corpus)
    overrides = [o for o in micro_overrides if not o.startswith("task.path=")] + ["task.path=corpus"]
    command = sweep_command(tmp_path / "sweep", *overrides, LOCAL, "hydra.job.name=myjob", "hydra.job.chdir=true",
                            "hydra.sweep.subdir=s${seed}", "seed=1,2")  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    for seed in (1, 2):
        run = tmp_path / "sweep" / f"s{seed}"
        assert (run / "myjob.log").exists() and read_json(run / "result.json")["status"] == "completed"
        assert f"\n  path: {tmp_path / 'corpus'}\n" in (run / "config.yaml").read_text()  # task.path, made absolute
