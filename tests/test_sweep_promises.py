"""A sweep as a script runs it: started with nohup in the background of a non-interactive shell, stopped whole by
`kill`, `kill -INT` and `kill -HUP` to its launcher, then resumed on a terminal; its status without one; and run
again with a default written out, which must not train the finished jobs twice."""

import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from frozen_sweep.run.lock import live_runner

from tests.conftest import ROOT
from tests.helpers.processes import session_processes
from tests.helpers.sweeps import (LOCAL, job_dir, job_dirs, read_json, run_sweep, run_sweep_on_terminal, sweep_command,
                                  wait_for)


@pytest.mark.slow
def test_a_sweep_started_with_nohup_stops_whole_on_kill_kill_int_and_kill_hup_then_resumes_to_its_end(
    tmp_path, micro_overrides
):
    sweep = tmp_path / "sweep"
    args = [*micro_overrides, LOCAL, "hydra.launcher.max_parallel=2", "trainer.max_epochs=6", "freeze=none,emb"]
    command = shlex.join(sweep_command(sweep, *args))
    for attempt, signum in enumerate((signal.SIGTERM, signal.SIGINT, signal.SIGHUP), start=1):
        output, pid_file, status_file = (tmp_path / f"{signum.name}.{kind}" for kind in ("txt", "pid", "status"))
        # in the background of a script, under nohup: the launcher inherits SIGINT and SIGHUP ignored
        script = subprocess.Popen(["bash", "-c", f"nohup {command} > {output} 2>&1 & echo $! > {pid_file}; "
                                   f"wait $!; echo $? > {status_file}"], cwd=ROOT, start_new_session=True)  # fmt: skip
        try:
            dirs = wait_for(lambda: len(found := training(sweep, attempt)) == 2 and found, "both jobs to train")
            started, launcher = time.monotonic(), int(pid_file.read_text())
            os.kill(launcher, signum)
            if signum == signal.SIGTERM:  # a second signal while it stops its jobs: answered, not obeyed halfway
                wait_for(lambda: "Stopping 2 jobs" in output.read_text(), "the stop", timeout=30)
                os.kill(launcher, signal.SIGINT)
            script.wait(timeout=60)
            took = time.monotonic() - started
        finally:
            if script.poll() is None:
                os.killpg(script.pid, signal.SIGKILL)
        out = output.read_text()
        assert took < 30 and int(status_file.read_text()) != 0, (took, out)
        assert f"Stopped (the launcher got {signum.name}): 2 running jobs stopped" in out, out
        assert signum != signal.SIGTERM or "Already stopping (SIGINT ignored)" in out, out
        assert "Traceback" not in out and "HYDRA_FULL_ERROR" not in out and "still run" not in out.split("Stopping")[1]
        assert session_processes(script.pid) == []  # nothing the script started is left: no orphan
        for job in dirs:
            record = read_json(job / "result.json")
            assert record["status"] == "failed" and "Interrupt" in record["error"].split(":")[0], record["error"]
            assert read_json(job / "attempts.json")[-1]["status"] == "interrupted"
            assert (job / "checkpoint_last.pt").exists()  # run again, it resumes from there
    # resumed to its end from a terminal: one status block, redrawn in place (erased, then drawn again)
    code, out = run_sweep_on_terminal(sweep, *args)
    assert code == 0, out
    assert "2 jobs: 2 to run (2 resuming from a checkpoint)" in out, out
    assert re.search(r"status: 0 done, 2 running, 0 queued, 0 failed of 2 \| sweep ETA [^\n]+\n"
                     r"  freeze=none: step \d+, epoch [\d.]+/6 \| valid bleu [\d.]+ \| [\d,]+ tok/s \| ETA ", out), out
    assert out.count("\x1b[3F\x1b[J") >= 2, out  # the 3-line block erased before each redraw
    assert re.search(r"s wall in its last attempt \(training \d+ s over its 4 attempts\)", out), out
    for job in job_dirs(sweep):
        assert [a["status"] for a in read_json(job / "attempts.json")] == ["interrupted"] * 3 + ["completed"]


def training(sweep, attempt: int) -> list:
    """The sweep's jobs that train in their `attempt`-th attempt, past their first checkpoint."""
    return [
        d for d in job_dirs(sweep)
        if live_runner(d) and (d / "checkpoint_last.pt").exists()
        and len(read_json(d / "attempts.json")) == attempt
    ]  # fmt: skip


@pytest.mark.slow
def test_a_finished_job_is_not_run_again_under_another_directory_name(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    first = run_sweep(sweep, *micro_overrides, LOCAL, "freeze=none", "hydra.launcher.status_every_s=0.5")
    assert first.returncode == 0, first.stdout
    ended = r"\[1/1\] \S+: test bleu \d+\.\d\d, \d+\.\d\d epochs \(max_epochs\), (\d+) s wall \(training (\d+) s\)"
    wall, training = map(int, re.search(ended, first.stdout).groups())
    assert wall > training, first.stdout  # start-up, data and the test set take time too
    # without a terminal: the status as plain lines, every hydra.launcher.status_every_s
    status = r"status: 0 done, 1 running, 0 queued, 0 failed of 1 \| sweep ETA .+\n.*  \S*freeze=none\S*: step \d+"
    assert re.search(status, first.stdout), first.stdout
    assert f"python -m frozen_sweep.collect {sweep}" in first.stdout  # the sweep's end says how to collect it
    finished = job_dir(sweep, "freeze=none")
    # seed=1 is the default: the same run, in a directory named differently; seed=2 is a new one
    again = run_sweep(sweep, *micro_overrides, LOCAL, "freeze=none", "seed=1,2", "estimate=true")
    assert again.returncode == 0, again.stdout
    assert "2 jobs: 1 to run (0 resuming from a checkpoint), 1 already completed" in again.stdout, again.stdout
    assert "estimated cost: 1 job to run, " in again.stdout, again.stdout  # the launch's plan line: what it costs
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
                            "hydra.sweep.subdir=s${seed}", "seed=1,2", "trainer.max_steps=4",
                            "hydra.launcher.max_parallel=2")  # fmt: skip
    proc = subprocess.run(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    for seed in (1, 2):
        run = tmp_path / "sweep" / f"s{seed}"
        assert (run / "myjob.log").exists() and read_json(run / "result.json")["status"] == "completed"
        assert f"\n  path: {tmp_path / 'corpus'}\n" in (run / "config.yaml").read_text()  # task.path, made absolute
