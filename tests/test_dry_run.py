"""`dry_run=true`: every job of a command, checked as it would check itself, with what it would do and why; nothing
is started and nothing is left on disk. Launcher settings that could not be used are refused the same way."""

import re
import subprocess
import sys

import pytest

from frozen_sweep.job.dry_run import ADOPT, REFUSE, RESUME, RUN, SKIP
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.run.directory import LAST_CHECKPOINT, write_result
from frozen_sweep.run.lock import exclusive_run
from frozen_sweep.run.record import RunResult
from tests.conftest import ROOT, compose_config
from tests.helpers.sweeps import LOCAL, run_sweep

SWEEP = ["seed=1,2,3,4,5", "trainer.max_steps=4", "trainer.threads=1"]  # the threads are in the fingerprint


def decisions(output: str) -> dict[str, tuple[str, str, str]]:
    """{job label: (action, directory, why)} from a dry run's report."""
    found = re.findall(r"^  (\w+) +(.+)\n +(.+?): (.+)$", output, flags=re.M)
    return {label: (action, directory, why) for action, label, directory, why in found}


def test_a_sweep_dry_run_tells_each_jobs_fate_and_starts_nothing(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, *SWEEP, "dry_run=true")
    assert proc.returncode == 0 and "dry run: 5 jobs (5 run); nothing was started" in proc.stdout, proc.stdout
    first = decisions(proc.stdout)
    assert not sweep.exists() and not any("dry_run" in where.rsplit("/", 1)[1] for _, where, _ in first.values())  # a neutral key

    def job(seed: int):  # its directory and fingerprint, as the job computes them
        overrides = [*micro_overrides, f"seed={seed}", "trainer.max_steps=4", "trainer.threads=1"]
        directory = sweep / first[f"seed={seed}"][1].rsplit("/", 1)[1]
        directory.mkdir(parents=True)
        return directory, fingerprint(job_config(compose_config(*overrides), overrides))

    done, fp = job(1)
    write_result(done, RunResult(status="completed", fingerprint=fp))
    interrupted, fp = job(2)
    write_result(interrupted, RunResult(status="running", fingerprint=fp))
    (interrupted / LAST_CHECKPOINT).touch()
    live, _ = job(3)
    other, fp = job(4)
    write_result(other, RunResult(status="completed", fingerprint={**fp, "sha256": "another config's"}))
    with exclusive_run(live):
        proc = run_sweep(sweep, *micro_overrides, LOCAL, *SWEEP, "dry_run=true")
    assert proc.returncode != 0 and "1 of 5 jobs would be refused (above). No job was started." in proc.stdout
    plan = decisions(proc.stdout)
    assert [plan[f"seed={s}"][0] for s in range(1, 6)] == [SKIP, RESUME, ADOPT, REFUSE, RUN]
    assert "holds a completed run of a different config" in plan["seed=4"][2]
    assert "dry run: 5 jobs (1 run, 1 resume, 1 skip, 1 adopt, 1 refuse); nothing was started" in proc.stdout
    assert sorted(p.name for p in sweep.iterdir()) == sorted(d.name for d in (done, interrupted, live, other))
    assert sorted(p.name for p in interrupted.iterdir()) == [LAST_CHECKPOINT, "result.json"]


def test_a_single_job_dry_run_leaves_no_directory(tmp_path, micro_overrides):
    run_dir = tmp_path / "job"
    command = [sys.executable, "-m", "frozen_sweep", f"hydra.run.dir={run_dir}", *micro_overrides, "dry_run=true"]
    ok = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and f"  {RUN} " in ok.stdout and "no run there yet" in ok.stdout, ok.stderr
    bad = subprocess.run([*command, "model.d_model=33"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and "model.heads=2 must divide model.d_model=33" in bad.stdout
    assert not run_dir.exists()


def test_launcher_settings_that_cannot_be_used_are_refused(tmp_path, micro_overrides, monkeypatch):
    from hydra_plugins.frozen_sweep_launchers.local_gpus import LocalGpusLauncher

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # this machine: no GPU
    local = dict(submitit_folder=str(tmp_path), poll_interval_s=1.0)
    refusals = [
        (dict(gpus=[0], max_parallel=1), "hydra.launcher.gpus=[0]: this process sees GPUs none"),
        (dict(gpus=None, max_parallel=1, jobs_per_gpu=2), "hydra.launcher.jobs_per_gpu=2: there is no GPU here"),
    ]
    for settings, message in refusals:
        assert message in LocalGpusLauncher(**local, **settings).refused
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    refused = LocalGpusLauncher(**local, gpus=None, max_parallel=2).refused
    assert "hydra.launcher.max_parallel=2 applies without a GPU" in refused
    proc = run_sweep(tmp_path / "sweep", *micro_overrides, "hydra/launcher=slurm", "hydra.launcher.gpus_per_node=2",
                     "seed=1,2", "dry_run=true")  # fmt: skip
    assert proc.returncode != 0 and "a job's rank trains on one GPU, so 1 would sit idle" in proc.stdout, proc.stdout
    assert "Error in call to target" not in proc.stdout and "Traceback" not in proc.stdout  # one line, no wrapper
    assert not (tmp_path / "sweep").exists()
