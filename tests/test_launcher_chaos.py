"""A launcher killed (SIGKILL) or interrupted (SIGINT) at the worst instants of submission, on both launchers: the
next launch adopts every job the earlier one started, never starts a live job twice, and the messages say what runs.
The kills are placed exactly with FROZEN_SWEEP_KILL_AT (hydra_plugins/frozen_sweep_launchers/_kill_point.py). The
jobs read their data through paths relative to the command's directory, with hydra.job.chdir=true (they run in
their own directories). benchmarks/chaos.py kills at random instants, many times."""

import contextlib
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
from hydra_plugins.frozen_sweep_launchers._plan import SweepConfigError
from hydra_plugins.frozen_sweep_launchers._submission import local_processes, queued_tasks, read_submissions

from frozen_sweep.run.lock import live_runner
from tests.conftest import ROOT
from tests.helpers.sweeps import LOCAL, attempts, job_dirs, read_json, record, run_sweep, start_sweep, wait_for

FREEZES = ("none", "emb", "ffn")


def relative_paths(micro_overrides: list[str]) -> list[str]:
    """The micro job's data and cache paths relative to the directory the sweeps run in; jobs run in their own."""
    relative = []
    for override in micro_overrides:
        key, value = override.split("=", 1)
        relative.append(f"{key}={os.path.relpath(value, ROOT)}" if key in ("task.path", "task.cache_dir") else override)
    return [*relative, "hydra.job.chdir=true", "trainer.valid_bleu_sentences=0", "eval.beam=1"]


def kill_at(point: str, signal_name: str = "SIGKILL") -> dict:
    return {"FROZEN_SWEEP_KILL_AT": f"{point}:{signal_name}"}


def launch(sweep: Path, args: list[str], name: str, tmp_path: Path, env: Optional[dict] = None) -> tuple[int, str]:
    out = tmp_path / f"{name}.txt"
    proc = start_sweep(sweep, *args, output=out, env=env)
    return proc.wait(timeout=300), out.read_text()


def training(sweep: Path) -> list[Path]:
    """The directories of the jobs that run and have written their record (so they are past their set-up)."""
    return [d for d in job_dirs(sweep) if live_runner(d) and (d / "result.json").exists()]


@contextlib.contextmanager
def held(sweep: Path) -> Iterator[None]:
    """The sweep's running jobs stopped (SIGSTOP) while the block runs, so that they are still mid-run when a
    launcher adopts them; signals sent to them meanwhile arrive when they continue."""
    pids = [runner["pid"] for d in job_dirs(sweep) if (runner := live_runner(d))]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def each_ran_once_to_its_end(sweep: Path, interrupted: set = frozenset()) -> None:
    for freeze in FREEZES:
        assert record(sweep, f"freeze={freeze}")["status"] == "completed"
        expected = ["interrupted", "completed"] if freeze in interrupted else ["completed"]
        assert [a.get("status") for a in attempts(sweep, f"freeze={freeze}")] == expected, freeze


@pytest.mark.slow
def test_local_gpus_adopts_jobs_still_starting_when_the_launcher_died_and_stops_them_when_interrupted(
    tmp_path, micro_overrides
):
    args = [*relative_paths(micro_overrides), LOCAL, "hydra.launcher.max_parallel=2", "trainer.threads=1",
            "trainer.max_epochs=20", f"freeze={','.join(FREEZES)}"]  # fmt: skip
    # 20 epochs: the jobs must still train when a relaunch has planned (prepared data lets them start at once)
    sweep = tmp_path / "sweep"
    # 1. killed the instant its first job's processes exist, before the job holds its directory's lock
    code, _ = launch(sweep, args, "first", tmp_path, kill_at("after_submit"))
    assert code == -signal.SIGKILL
    (pids,) = [pids for directory, pids in local_processes().items() if directory.startswith(str(sweep))]
    for pid in pids:  # held before it takes its lock, while the next launcher plans
        os.kill(pid, signal.SIGSTOP)
    # 2. the relaunch adopts that job (found by its processes: it holds no lock yet) and starts the others
    second = start_sweep(sweep, *args, output=tmp_path / "second.txt")
    out = wait_for(lambda: "local_gpus: " in (text := (tmp_path / "second.txt").read_text()) and text, "the plan")
    for pid in pids:
        os.kill(pid, signal.SIGCONT)
    assert "3 jobs: 2 to run" in out
    assert re.search(r"still running: freeze=none \(starting on \S+ \(pid [\d ]+\)\)", out), out
    # 3. Ctrl-C on the launcher alone once two jobs train (the adopted one and one of its own): it stops both, each
    # records failed (interrupted), and nothing of the sweep runs once it has exited
    wait_for(lambda: len(training(sweep)) == 2, "two jobs to train")
    running = {d.name for d in training(sweep)}
    os.kill(second.pid, signal.SIGINT)
    assert second.wait(timeout=40) != 0
    out = (tmp_path / "second.txt").read_text()
    assert "Stopped (the launcher got SIGINT): 2 running jobs stopped" in out, out
    assert "Traceback" not in out and "still run" not in out.split("Stopping 2 jobs")[1], out
    assert not [d for d in local_processes() if d.startswith(str(sweep))]
    stopped = {freeze for freeze in FREEZES if any(d.name in running for d in job_dirs(sweep, f"freeze={freeze}"))}
    assert "none" in stopped and all(record(sweep, f"freeze={f}")["status"] == "failed" for f in stopped)
    # 4. the last launch resumes the stopped ones and runs the rest: each ran once at a time, to its end
    final = run_sweep(sweep, *args)
    assert final.returncode == 0, final.stdout
    each_ran_once_to_its_end(sweep, interrupted=stopped)


class ArrayWatch:
    """Samples squeue while a test runs: the most arrays of one sweep ever live at once (two would mean a job
    directory submitted twice while its first submission was still queued or running)."""

    def __init__(self, sweep: Path):
        self.sweep, self.most, self.stop = sweep, 0, threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self) -> None:
        while not self.stop.wait(0.2):
            with contextlib.suppress(SweepConfigError):  # squeue did not answer this time
                self.most = max(self.most, len({task.array_id for task in queued_tasks(self.sweep)}))

    def close(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.most


@pytest.mark.slurm
@pytest.mark.slow
def test_slurm_launchers_killed_between_records_and_sbatch_or_before_the_array_ids_are_recorded_submit_nothing_twice(
    slurm_cluster,
    tmp_path,
    micro_overrides,
):
    args = [*relative_paths(micro_overrides), "hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1",
            "hydra.launcher.poll_interval_s=1", "trainer.max_epochs=20", f"freeze={','.join(FREEZES)}"]  # fmt: skip
    # 20 epochs: the jobs must still train when the relaunch has planned (at 2, prepared data let them end in 2 s)
    sweep = tmp_path / "sweep"
    watch = ArrayWatch(sweep)
    # 1. kill -9 after sbatch returned, before any record holds the array's id (the lost window)
    code, _ = launch(sweep, args, "first", tmp_path, kill_at("after_sbatch"))
    assert code == -signal.SIGKILL
    (array,) = {task.array_id for task in queued_tasks(sweep)}
    records = [record for path in sweep.glob("*/") for record in read_submissions(path)]
    assert len(records) == 3 and all(r["state"] == "submitting" for r in records)
    # 2. a relaunch adopts all three (pending ones by their SLURM id), submits nothing, and is stopped by plain kill:
    # the array belongs to the cluster and stays, and the message says how to cancel it
    second = start_sweep(sweep, *args, output=tmp_path / "second.txt")
    wait_for(lambda: " jobs: " in (tmp_path / "second.txt").read_text(), "the plan")
    wait_for(lambda: len(training(sweep)) == 2, "two jobs to train")
    running = training(sweep)
    with held(sweep):  # mid-run from here while launchers come and go
        os.kill(second.pid, signal.SIGTERM)
        assert second.wait(timeout=60) != 0
        out = (tmp_path / "second.txt").read_text()
        assert "3 jobs: 0 to run" in out and "slurm: submitted" not in out and "pid None" not in out, out
        assert re.search(rf"still running: freeze=\w+ \((pending|running)\S*( on \S+)?, SLURM job {array}_\d", out)
        assert f"(the launcher got SIGTERM): SLURM job {array} (2 running, 1 pending) stay on the cluster" in out, out
        assert f"stop them: scancel --state=PENDING {array}; scancel --signal=INT {array}" in out
        assert len(queued_tasks(sweep)) == 3
        # 3. a relaunch with cancel_on_exit=true adopts them all again and, stopped by kill -HUP, cancels them: the
        # pending one cancelled, the running ones interrupted (their records say failed, not `running`)
        third = start_sweep(sweep, *args, "hydra.launcher.cancel_on_exit=true", output=tmp_path / "third.txt")
        wait_for(lambda: "3 still running from an earlier launch" in (tmp_path / "third.txt").read_text(), "the plan")
    os.kill(third.pid, signal.SIGHUP)
    assert third.wait(timeout=120) != 0
    out = (tmp_path / "third.txt").read_text()
    assert f"(the launcher got SIGHUP; hydra.launcher.cancel_on_exit=true): cancelled SLURM job {array}" in out, out
    assert "Traceback" not in out and "slurm: submitted" not in out, out
    wait_for(lambda: not queued_tasks(sweep), "the array to end")
    for directory in running:
        assert read_json(directory / "result.json")["status"] == "failed"
        assert read_json(directory / "attempts.json")[-1]["status"] == "interrupted"
    # 4. SIGINT with the records written and sbatch not yet called: it says that nothing runs, truly
    code, out = launch(sweep, args, "fourth", tmp_path, kill_at("before_sbatch", "SIGINT"))
    assert code != 0 and "SLURM lists no job of this sweep" in out and not queued_tasks(sweep), out
    # 5. the last launch runs what did not complete, once
    started = time.time()
    final = run_sweep(sweep, *args)
    assert final.returncode == 0, final.stdout
    assert watch.close() == 1  # never two arrays of this sweep live at once
    for freeze in FREEZES:
        assert record(sweep, f"freeze={freeze}")["status"] == "completed"
        tries = attempts(sweep, f"freeze={freeze}")
        assert all(a.get("status") in ("interrupted", "completed") for a in tries) and len(tries) <= 2, tries
        assert all(a["started"] > started for a in tries[1:])  # a second try only in the last launch
