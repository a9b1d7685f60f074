"""The same command gives a bit-identical record whatever else runs on the machine: a job's threads are fixed for its
life (frozen_sweep.system.cpu), so a job run alone and again beside a process that keeps a core busy agree on every
validation, the test metric and every test translation. On CUDA that takes `trainer.deterministic` too: PyTorch's
deterministic algorithms and cuBLAS's workspace setting, turned on before the job starts and recorded."""

import json
import subprocess
import sys

import pytest

from frozen_sweep.system import cpu
from tests.conftest import ROOT
from tests.helpers.jobs import result, run_cli
from tests.test_cpu import BUSY_LOOP

TIMES = ("wall_time_s", "tokens_per_s")  # how long it took: the only fields allowed to differ


def numbers(run_dir) -> dict:
    """What the run computed: its record less timings and run-specific fields, and its test translations."""
    r = result(run_dir)
    return {
        "history": [{k: v for k, v in entry.items() if not k.endswith(TIMES)} for entry in r["history"]],
        **{key: r[key] for key in ("test_metric", "best_metric", "best_epoch", "steps", "params_trainable", "threads")},
        "translations": (run_dir / "test.hyp.txt").read_text(),
    }


@pytest.mark.slow
def test_a_job_alone_and_beside_a_busy_core_gives_the_same_record(tmp_path, micro_overrides, monkeypatch):
    if cpu.usable_cores() < 2:
        pytest.skip("one core: a job has one thread whatever the load")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the job's threads: every core it may use
    # Threads that wait asleep, not spinning: the same numbers (the same threads split the same work), but a 2-thread
    # job beside a busy core is not slowed 3-10x by its waiting thread spinning on the core its partner needs
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    # the demo width (d=128): there matrix products split over 2 threads sum in another order than on 1
    job = [*micro_overrides, "model=demo", "trainer.threads=null", "trainer.max_steps=8",
           "trainer.validate_every_steps=4", "trainer.valid_bleu_sentences=0", "eval.beam=1"]  # fmt: skip
    assert run_cli(*job, f"hydra.run.dir={tmp_path / 'alone'}", timeout=300).returncode == 0
    busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdout=subprocess.PIPE)
    try:
        busy.stdout.readline()
        beside = run_cli(*job, f"hydra.run.dir={tmp_path / 'beside'}", timeout=300)
    finally:
        busy.kill()
        busy.wait()
    assert beside.returncode == 0, beside.stdout
    alone = numbers(tmp_path / "alone")
    assert alone["threads"] == cpu.usable_cores() and len(alone["history"]) == 2
    assert numbers(tmp_path / "beside") == alone


DETERMINISTIC_PROBE = """
import json, os, sys, torch
from tests.conftest import compose_config
from frozen_sweep.job.how_it_runs import how_it_runs
from frozen_sweep.run.record import RunResult
result = RunResult(status="running")
how_it_runs(compose_config(*sys.argv[1:]).copy(), result)
print(json.dumps([result.deterministic, torch.are_deterministic_algorithms_enabled(),
                  torch.backends.cudnn.benchmark, os.environ.get("CUBLAS_WORKSPACE_CONFIG")]))
"""


@pytest.mark.parametrize("on", [False, True])
def test_trainer_deterministic_turns_on_pytorchs_deterministic_algorithms_and_is_recorded(on, monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)  # set by the job, before CUDA starts
    probe = subprocess.run([sys.executable, "-c", DETERMINISTIC_PROBE, f"trainer.deterministic={str(on).lower()}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    recorded, enabled, benchmark, workspace = json.loads(probe.stdout.splitlines()[-1])
    assert (recorded, enabled) == (on, on) and workspace == (":4096:8" if on else None)
    assert not benchmark  # cuDNN's autotuner picks kernels by timing: off
