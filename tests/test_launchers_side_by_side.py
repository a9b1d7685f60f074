"""Two launchers on the same jobs: the same sweep started twice (at the same instant, or once the first runs), and on
SLURM. Each job runs once, whoever runs it; the other launcher waits for it, without a slot of its own, and reports
"completed by another launcher"; a launcher that completes its jobs exits 0, a completed directory gets no second
attempt, one launcher's stop reaches only its own jobs, and a third launch cancels none of the others' tasks."""

import os
import signal
import subprocess

import pytest
from hydra_plugins.frozen_sweep_launchers._submission import queued_tasks

from tests.helpers.processes import in_lockstep, process_state, step_together
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


def started(sweep, seed: str) -> int:
    """The pid of the job's own process once it has started (its attempt recorded, under its directory's lock)."""
    directory = wait_for(lambda: next((d for d in job_dirs(sweep, seed) if (d / "attempts.json").exists()), None),
                         f"{seed} to start", timeout=300)  # fmt: skip
    return read_json(directory / "attempts.json")[-1]["pid"]


def test_a_sweep_started_again_while_it_runs_shares_the_jobs_and_a_stop_reaches_only_its_own(tmp_path, micro_overrides):
    """The same command (one job at a time) started again while its first job runs (held still by SIGSTOP): the
    second launcher adopts that job and, waiting for it, starts the next one in its slot (waiting is not running);
    the first, once its job has completed, waits for the second's and starts the last. Ctrl-C on the first then
    stops its own job only: the second's goes on, and the second resumes what the first left and exits 0."""
    sweep = tmp_path / "sweep"
    args = [*tiny(micro_overrides), "hydra.launcher.max_parallel=1", "seed=1,2,3"]
    first = start_sweep(sweep, *args, output=tmp_path / "first.txt")
    seed_1 = started(sweep, "seed=1")
    os.kill(seed_1, signal.SIGSTOP)
    second = start_sweep(sweep, *args, output=tmp_path / "second.txt")
    seed_2 = started(sweep, "seed=2")  # by the second launcher: the first's one slot runs seed=1
    assert "still running: seed=1" in (tmp_path / "second.txt").read_text()
    os.kill(seed_2, signal.SIGSTOP)
    os.kill(seed_1, signal.SIGCONT)
    started(sweep, "seed=3")  # by the first, which waits for seed=2
    os.kill(first.pid, signal.SIGINT)
    assert first.wait(timeout=120) != 0
    out = (tmp_path / "first.txt").read_text()
    assert "1 running jobs stopped: seed=3" in out and "1 run by another launcher go on (seed=2)" in out, out
    assert process_state(seed_2) == "T", out  # the second launcher's job: not stopped, still held by SIGSTOP
    os.kill(seed_2, signal.SIGCONT)
    assert second.wait(timeout=600) == 0, (tmp_path / "second.txt").read_text()
    out = (tmp_path / "second.txt").read_text()
    assert "seed=1: completed by another launcher" in out and "3 completed (1 by another launcher)" in out, out
    assert_each_job_ran_once(sweep, ("seed=1", "seed=2"))
    assert [a.get("status") for a in attempts(sweep, "seed=3")] == ["interrupted", "completed"]


@pytest.mark.slurm
def test_the_same_sweep_submitted_twice_at_once_to_slurm_runs_each_job_once(slurm_cluster, tmp_path, micro_overrides):
    """Both launchers find nothing queued, then submit together (held in lockstep before their records): each job
    is in two arrays, and the task that comes second hands the directory back to the first's run. A third launch
    while all four tasks are queued (submitted held: `sbatch --hold`) adopts the jobs and cancels none of the
    others' tasks, though two launchers submitted each job."""
    sweep = tmp_path / "sweep"
    args = [*micro_overrides, "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.poll_interval_s=1",
            "+hydra.launcher.additional_parameters.hold=true", "trainer.threads=1", "trainer.max_steps=4",
            "eval.beam=1", "seed=1,2"]  # fmt: skip
    env = {"FROZEN_SWEEP_KILL_AT": "before_records:SIGSTOP"}
    launchers = [start_sweep(sweep, *args, output=tmp_path / f"out{i}.txt", env=env) for i in (0, 1)]
    step_together(launchers)
    outs = [tmp_path / f"out{i}.txt" for i in (0, 1)]
    wait_for(lambda: all("slurm: submitted 2 jobs" in out.read_text() for out in outs), "both submissions", timeout=300)
    third = start_sweep(sweep, *args, output=tmp_path / "third.txt")
    planned = "2 still running from an earlier launch"
    wait_for(lambda: planned in (tmp_path / "third.txt").read_text(), "the third's plan", timeout=300)
    tasks = queued_tasks(sweep)
    assert len(tasks) == 4 and all(task.pending for task in tasks), tasks  # none cancelled
    subprocess.run(["scontrol", "release", *(task.job_id for task in tasks)], check=True)
    codes = [proc.wait(timeout=600) for proc in (*launchers, third)]
    outputs = [path.read_text() for path in (*outs, tmp_path / "third.txt")]
    assert codes == [0, 0, 0], outputs
    assert_each_job_ran_once(sweep, SEEDS)
    assert "".join(outputs[:2]).count("completed by another launcher: test bleu") == 2, outputs
    assert outputs[2].count("completed by another launcher: test bleu") == 2 and "cancel" not in outputs[2], outputs[2]


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
