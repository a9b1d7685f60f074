"""CPU threads (frozen_sweep.system.cpu): how many a job uses, fixed; and, opted in, fewer while other processes keep
the cores busy."""

import importlib
import os
import subprocess
import sys
import time

import pytest
import torch

from frozen_sweep.system import cpu
from tests.conftest import ROOT

BUSY_LOOP = "import sys; print('ready', flush=True)\nwhile True: pass"


def test_threads_default_to_the_cores_this_process_may_use():
    assert cpu.usable_cores() == len(os.sched_getaffinity(0))
    assert cpu.job_threads(None, environ={}) == cpu.usable_cores()
    code = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); from frozen_sweep.system import cpu; "
    done = subprocess.run([sys.executable, "-c", code + "print(cpu.job_threads(None, environ={}))"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip() == "1"


def test_explicit_threads_win():
    assert cpu.job_threads(3, environ={"OMP_NUM_THREADS": "5"}) == 3  # trainer.threads (or a launcher's share)
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "5"}) == 5
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "4,2"}) == 4  # nested levels: the outer one
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "lots"}) == cpu.usable_cores()
    assert cpu.job_threads(1, follow_free_cores=True, environ={"OMP_NUM_THREADS": "1"}) == cpu.usable_cores()


def test_free_cores_leave_out_this_process_and_idle_time():
    governor = cpu.FreeCoreThreads(most=8)
    cores = len(governor.cpus)
    governor.last = (10.0, 100.0, 5.0)
    # in 2 s the machine was busy 3 CPU-seconds on our cores, 2 of them ours: others held half a core
    assert governor.free_cores((12.0, 103.0, 7.0)) == pytest.approx(cores - 0.5)
    assert governor.free_cores((12.0, 101.0, 7.0)) == cores  # tick sampling can put ours above the total
    assert cpu.busy_seconds(governor.cpus) > 0


def test_threads_are_set_through_the_openmp_runtime_that_mkl_follows():
    """torch.set_num_threads would also pin MKL's count and slow every later step (cpu.py); the OpenMP call must still
    reach torch's loops and MKL's products."""
    importlib.import_module("sentencepiece")  # it loads a libgomp of its own: the call must reach torch's

    if sys.platform != "linux":
        pytest.skip("torch's library is looked up as libtorch_cpu.so")
    assert cpu._omp_set_num_threads() is not None, "not found: jobs fall back to torch.set_num_threads"
    before = torch.get_num_threads()
    try:
        for n in (1, 2, 1):
            cpu.set_threads(n)
            assert torch.get_num_threads() == n
            assert f"mkl_get_max_threads() : {n}" in torch.__config__.parallel_info()
    finally:
        cpu.set_threads(before)


def test_mkl_num_threads_in_the_environment_still_gives_way():
    """MKL ignores the OpenMP count where MKL_NUM_THREADS is set: set_threads must then set MKL's too."""
    code = ("import torch; from frozen_sweep.system import cpu; cpu.set_threads(1); "
            "print(torch.__config__.parallel_info().count('max_threads() : 1'))")  # fmt: skip
    env = {**os.environ, "MKL_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=True)  # fmt: skip
    assert done.stdout.strip() == "2"  # omp_get_max_threads and mkl_get_max_threads


def test_following_the_free_cores_a_job_beside_busy_processes_drops_threads_and_restores_them(monkeypatch):
    if cpu.usable_cores() < 2:
        pytest.skip("one core: nothing to adapt")
    monkeypatch.setattr(cpu, "CHECK_EVERY_S", 0.3)
    before = torch.get_num_threads()
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdout=subprocess.PIPE) for _ in
            range(cpu.usable_cores())]  # fmt: skip
    try:
        for p in busy:
            p.stdout.readline()
        layer, x = torch.nn.Linear(256, 256), torch.randn(512, 256)
        with cpu.threads_for_job(cpu.usable_cores(), follow_free_cores=True):
            assert torch.get_num_threads() == cpu.usable_cores()
            until = time.monotonic() + 2
            while time.monotonic() < until and torch.get_num_threads() == cpu.usable_cores():
                layer(x)  # the check runs before a module's forward
            assert torch.get_num_threads() < cpu.usable_cores()  # one on 2 cores; fewer each second on more
        assert torch.get_num_threads() == cpu.usable_cores()  # the most, again, and no hook left behind
        assert not torch.nn.modules.module._global_forward_pre_hooks
    finally:
        for p in busy:
            p.kill()
            p.wait()
        cpu.set_threads(before)


def test_fixed_threads_and_one_thread_need_no_check():
    before = torch.get_num_threads()
    try:
        for threads, follow in ((1, True), (2, False)):
            with cpu.threads_for_job(threads, follow_free_cores=follow):
                assert torch.get_num_threads() == threads
                assert not torch.nn.modules.module._global_forward_pre_hooks
    finally:
        cpu.set_threads(before)
