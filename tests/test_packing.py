"""`hydra.launcher.jobs_per_gpu`: several jobs share one GPU. The scheduling runs here on the CPU path (the launcher is
shown GPU ids 0 and 1 through CUDA_VISIBLE_DEVICES; the jobs, pinned to one and seeing no GPU, train on the CPU);
tests/test_cuda.py runs it on a real GPU."""

import os
from itertools import combinations

import pytest

from tests.helpers.sweeps import LOCAL, attempts, run_sweep


@pytest.fixture(autouse=True)
def two_gpu_ids(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")


def overlap(a: dict, b: dict) -> bool:
    return a["started"] < b["ended"] and b["started"] < a["ended"]


@pytest.mark.slow
def test_jobs_per_gpu_runs_that_many_jobs_on_one_gpu_at_a_time(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "hydra.launcher.gpus=[0]", "hydra.launcher.jobs_per_gpu=2",
                     "seed=1,2,3")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    assert "GPUs [0], 2 job(s) each, 2 jobs at a time" in proc.stdout
    runs = [attempts(sweep, f"seed={seed}")[0] for seed in (1, 2, 3)]
    assert all(run["cuda_visible_devices"] == "0" for run in runs)
    assert all(run["omp_num_threads"] == str(max(1, len(os.sched_getaffinity(0)) // 2)) for run in runs)
    assert any(overlap(a, b) for a, b in combinations(runs, 2)), "no two jobs shared the GPU"
    assert not (overlap(runs[0], runs[1]) and overlap(runs[1], runs[2]) and overlap(runs[0], runs[2]))
    assert "queued 1" in proc.stdout  # the third job waited for a free slot


def test_jobs_per_gpu_must_be_positive(tmp_path, micro_overrides):
    proc = run_sweep(tmp_path / "sweep", *micro_overrides, LOCAL, "hydra.launcher.gpus=[0]",
                     "hydra.launcher.jobs_per_gpu=0", "seed=1,2")  # fmt: skip
    assert proc.returncode != 0 and "hydra.launcher.jobs_per_gpu=0: must be >= 1" in proc.stdout


@pytest.mark.parametrize(
    "gpus, jobs_per_gpu, gpus_per_job, slots",
    [([0, 1], 2, 1, [(0,), (1,), (0,), (1,)]), ([], 1, 1, [None]), ([0, 1], 1, 2, [(0, 1)])],
)
def test_slots_fill_gpus_in_turn_or_give_a_job_several(tmp_path, gpus, jobs_per_gpu, gpus_per_job, slots):
    from hydra_plugins.frozen_sweep_launchers.local_gpus import LocalGpusLauncher

    launcher = LocalGpusLauncher(submitit_folder=str(tmp_path), gpus=gpus, max_parallel=1, poll_interval_s=0.1,
                                 jobs_per_gpu=jobs_per_gpu, gpus_per_job=gpus_per_job)  # fmt: skip
    assert launcher.slots == slots


@pytest.mark.parametrize(
    "gpus, jobs_per_gpu, gpus_per_job, error",
    [([0, 1], 2, 2, "jobs_per_gpu=2 with gpus_per_job=2"), ([0, 1], 1, 4, "gpus_per_job=4: only 2 GPUs")],
)
def test_impossible_gpu_shares_are_refused(tmp_path, gpus, jobs_per_gpu, gpus_per_job, error):
    from hydra_plugins.frozen_sweep_launchers.local_gpus import LocalGpusLauncher

    launcher = LocalGpusLauncher(submitit_folder=str(tmp_path), gpus=gpus, max_parallel=1, poll_interval_s=0.1,
                                 jobs_per_gpu=jobs_per_gpu, gpus_per_job=gpus_per_job)  # fmt: skip
    assert error in launcher.refused


def test_a_job_whose_devices_differ_from_its_gpus_is_refused_before_any_starts(tmp_path, micro_overrides):
    proc = run_sweep(tmp_path / "sweep", *micro_overrides, LOCAL, "hydra.launcher.gpus=[0,1]",
                     "hydra.launcher.gpus_per_job=2", "trainer.devices=1", "seed=1,2")  # fmt: skip
    assert proc.returncode != 0, proc.stdout
    assert "trainer.devices=1, but hydra.launcher.gpus_per_job gives it 2" in proc.stdout
    assert "No job was started" in proc.stdout and not list((tmp_path / "sweep").glob("*/result.json"))
