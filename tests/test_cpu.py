"""CPU threads and the OpenMP wait policy (frozen_sweep.cpu): the choice, and what torch's OpenMP runtime gets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from frozen_sweep import cpu
from tests.conftest import ROOT
from tests.test_launch_local import LOCAL, run_sweep

MAPS = Path("/proc/self/maps")  # the libraries this process has loaded (torch and its OpenMP runtime)
needs_libgomp = pytest.mark.skipif(
    not (MAPS.exists() and "libgomp" in MAPS.read_text()), reason="torch does not run on GNU OpenMP here"
)


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter whose environment has no thread or wait setting, plus `env`."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", *cpu.WAIT_SETTINGS)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def libgomp_settings(text: str) -> dict[str, str]:
    """The values libgomp printed with OMP_DISPLAY_ENV=verbose (the first time each is named)."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(" = ")
        if sep and name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"):
            found.setdefault(name, value.strip("'"))
    return found


def test_threads_default_to_the_cores_this_process_may_use():
    assert cpu.usable_cores() == len(os.sched_getaffinity(0))
    assert cpu.job_threads(None, environ={}) == cpu.usable_cores()
    one_core = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); from frozen_sweep import cpu; "
    assert python(one_core + "print(cpu.job_threads(None))").stdout.strip() == "1"


def test_explicit_threads_win():
    assert cpu.job_threads(3, environ={"OMP_NUM_THREADS": "5"}) == 3  # trainer.threads
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "5"}) == 5  # the user's or the launcher's
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "4,2"}) == 4  # a nested list: the outer level
    assert cpu.job_threads(None, environ={"OMP_NUM_THREADS": "lots"}) == cpu.usable_cores()


def test_an_explicit_wait_policy_wins():
    for explicit in ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "1000"}):
        environ = dict(explicit)
        cpu.set_openmp_defaults(environ)
        assert environ == explicit
    environ = {}
    cpu.set_openmp_defaults(environ)
    assert environ == cpu.OPENMP_DEFAULTS


@needs_libgomp
def test_torch_starts_its_openmp_runtime_with_the_policy():
    shown = python("import frozen_sweep.job", OMP_DISPLAY_ENV="verbose").stderr  # job imports torch
    expected = {"PASSIVE": "0"}[cpu.OPENMP_DEFAULTS["OMP_WAIT_POLICY"]]  # libgomp's spin count for the policy
    assert libgomp_settings(shown)["GOMP_SPINCOUNT"] == expected
    shown = python("import frozen_sweep.job", OMP_DISPLAY_ENV="verbose", GOMP_SPINCOUNT="1234").stderr
    assert libgomp_settings(shown)["GOMP_SPINCOUNT"] == "1234"


@needs_libgomp
def test_launched_jobs_start_with_the_policy_and_their_share_of_the_cores(tmp_path, micro_overrides, monkeypatch):
    for name in ("OMP_NUM_THREADS", *cpu.WAIT_SETTINGS):
        monkeypatch.delenv(name, raising=False)  # as a user's shell: frozen_sweep sets them for this process
    monkeypatch.setenv("OMP_DISPLAY_ENV", "verbose")
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "hydra.launcher.max_parallel=2", "trainer.max_steps=2",
                     "trainer.valid_bleu_sentences=0", "seed=1,2")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    logs = sorted(sweep.glob(".submitit/*/*_log.err"))
    assert len(logs) == 2
    for log in logs:
        shown = libgomp_settings(log.read_text())
        assert shown["GOMP_SPINCOUNT"] == "0"
        assert shown["OMP_NUM_THREADS"] == str(max(1, cpu.usable_cores() // 2))
