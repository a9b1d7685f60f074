"""Two launchers on the same jobs: the same sweep started twice (at the same instant, or once the first runs), and on
SLURM. Each job runs once, whoever runs it; the other launcher waits for it and reports "completed by another
launcher"; both exit 0; a completed directory gets no second attempt."""

import os
import re
import signal

import pytest

from tests.helpers.processes import in_lockstep
from tests.helpers.sweeps import LOCAL, attempts, job_dirs, read_json, start_sweep, wait_for
from tests.test_sweep_bases import tiny_base

pytestmark = pytest.mark.slow
SEEDS = ("seed=1", "seed=2")


def tiny(micro_overrides: list[str]) -> list[str]:
    return [*micro_overrides, LOCAL, "trainer.threads=1", "trainer.max_steps=4", "eval.beam=1"]


def assert_each_job_ran_once(sweep, seeds) -> None:
    for seed in seeds:
        assert [a.get("status") for a in attempts(sweep, seed)] == ["completed"], seed


def test_the_same_sweep_started_twice_at_the_same_instant_runs_each_job_once(tmp_path, micro_overrides):
    """Both launchers stop themselves just before they start a job (after checking it is free) and are let go
    together: both start it, and one of the two job processes finds the other's in the directory."""
    sweep = tmp_path / "sweep"
    args = [*tiny(micro_overrides), "hydra.launcher.max_parallel=1", "seed=1,2"]
    env = {"FROZEN_SWEEP_KILL_AT": "before_submit:SIGSTOP"}
    launchers = [start_sweep(sweep, *args, output=tmp_path / f"out{i}.txt", env=env) for i in (0, 1)]
    in_lockstep(launchers)  # each job started by both at once
    outputs = [(tmp_path / f"out{i}.txt").read_text() for i in (0, 1)]
    assert [proc.returncode for proc in launchers] == [0, 0], outputs
    assert_each_job_ran_once(sweep, SEEDS)
    both = "".join(outputs)
    assert "FAILED" not in both and both.count("completed by another launcher: test bleu") == 2, both
    assert all("2 jobs in" in out and "0 failed" in out for out in outputs)


def test_a_sweep_started_again_while_it_runs_shares_the_jobs_and_runs_none_twice(tmp_path, micro_overrides):
    """The second launcher adopts the running job (held still, by SIGSTOP, while the second plans) and starts the
    next queued one in its free slot; each launcher then waits for the jobs the other took."""
    sweep = tmp_path / "sweep"
    args = [*tiny(micro_overrides), "seed=1,2,3"]
    first = start_sweep(sweep, *args, "hydra.launcher.max_parallel=1", output=tmp_path / "first.txt")
    started = wait_for(lambda: job_dirs(sweep, "seed=1") and (job_dirs(sweep, "seed=1")[0] / "attempts.json").exists()
                       and job_dirs(sweep, "seed=1")[0], "the first job to start", timeout=300)  # fmt: skip
    job_pid = read_json(started / "attempts.json")[0]["pid"]
    os.kill(job_pid, signal.SIGSTOP)
    second = start_sweep(sweep, *args, "hydra.launcher.max_parallel=2", output=tmp_path / "second.txt")
    wait_for(lambda: "still running: seed=1" in (tmp_path / "second.txt").read_text(), "the plan", timeout=300)
    os.kill(job_pid, signal.SIGCONT)
    codes = [first.wait(timeout=600), second.wait(timeout=600)]
    outputs = [(tmp_path / name).read_text() for name in ("first.txt", "second.txt")]
    assert codes == [0, 0], outputs
    assert_each_job_ran_once(sweep, ("seed=1", "seed=2", "seed=3"))
    assert "FAILED" not in "".join(outputs)
    assert "seed=1: completed by another launcher" in outputs[1], outputs[1]
    for seed in ("seed=2", "seed=3"):  # run by whichever launcher had a free slot first; reported so by the other
        assert sum(f"{seed}: completed by another launcher" in output for output in outputs) == 1, outputs
    shared = [re.search(r"3 completed \((\d) by another launcher\)", output) for output in outputs]
    assert all(shared) and sum(int(found[1]) for found in shared) == 3, outputs


@pytest.mark.slurm
def test_the_same_sweep_submitted_twice_at_once_to_slurm_runs_each_job_once(slurm_cluster, tmp_path, micro_overrides):
    """Both launchers find nothing queued, then submit together (held in lockstep before their records): each job
    is in two arrays, and the task that comes second hands the directory back to the first's run."""
    sweep = tmp_path / "sweep"
    args = [*micro_overrides, "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.poll_interval_s=1",
            "trainer.threads=1", "trainer.max_steps=4", "eval.beam=1", "seed=1,2"]  # fmt: skip
    env = {"FROZEN_SWEEP_KILL_AT": "before_records:SIGSTOP"}
    launchers = [start_sweep(sweep, *args, output=tmp_path / f"out{i}.txt", env=env) for i in (0, 1)]
    in_lockstep(launchers)
    outputs = [(tmp_path / f"out{i}.txt").read_text() for i in (0, 1)]
    assert [proc.returncode for proc in launchers] == [0, 0], outputs
    assert all("slurm: submitted 2 jobs" in out for out in outputs)  # both submitted every job
    assert_each_job_ran_once(sweep, SEEDS)
    assert "".join(outputs).count("completed by another launcher: test bleu") == 2, outputs


def test_two_fine_tuning_sweeps_started_at_once_train_their_shared_base_once(tmp_path, cache_dir):
    """Two sweeps (seed=1, seed=2) that name the same base: both plan it and start it in the same instant; one
    trains it, the other waits for it, and each then fine-tunes from it."""
    sweep = tmp_path / "sweep"
    args = ["experiment=random_embeddings_first", tiny_base(), "finetune.base_checkpoint=bases.regular",
            "freeze=none", "trainer=quick", "trainer.max_steps=30", "trainer.validate_every_steps=30",
            f"task.cache_dir={cache_dir}", LOCAL]  # fmt: skip
    env = {"FROZEN_SWEEP_KILL_AT": "before_submit:SIGSTOP"}
    launchers = [start_sweep(sweep, *args, seed, output=tmp_path / f"out{i}.txt", env=env)
                 for i, seed in enumerate(SEEDS)]  # fmt: skip
    in_lockstep(launchers)
    outputs = [(tmp_path / f"out{i}.txt").read_text() for i in (0, 1)]
    assert [proc.returncode for proc in launchers] == [0, 0], outputs
    assert all("1 bases to train first: bases.regular" in out for out in outputs)
    assert "".join(outputs).count("bases.regular: completed by another launcher: test mlm_ppl") == 1, outputs
    (base,) = [path.parent for path in sweep.glob("*/result.json") if read_json(path)["metric_name"] == "mlm_ppl"]
    assert [a.get("status") for a in read_json(base / "attempts.json")] == ["completed"]
    assert_each_job_ran_once(sweep, SEEDS)  # each sweep's fine-tuning job
