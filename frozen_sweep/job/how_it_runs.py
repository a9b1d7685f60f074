"""How a job runs, beside what it computes: its CPU threads (fixed for its life unless trainer.follow_free_cores),
CUDA's deterministic algorithms (trainer.deterministic), and what its record says about both, the machine and its
kernels."""

import logging
import os
import subprocess
from pathlib import Path
from typing import Optional

import torch

import frozen_sweep
from frozen_sweep.run.record import JOBS_AT_A_TIME_VARIABLE, RunResult
from frozen_sweep.system import cpu
from frozen_sweep.system.determinism import deterministic_algorithms
from frozen_sweep.system.kernels import machine

log = logging.getLogger(__name__)


def job_threads(cfg, ranks: int = 1) -> tuple[int, bool]:
    """(threads of this process, whether they follow the free cores): the job's threads, shared by the ranks it
    spawned (frozen_sweep.system.cpu)."""
    follow = cfg.trainer.follow_free_cores
    return max(1, cpu.job_threads(cfg.trainer.threads, follow) // ranks), follow


def how_it_runs(cfg, result: RunResult) -> None:
    """What the record says about how the job ran: the machine, threads, torch's kernels (the fingerprint's
    cpu.kernels read them from the CPU's flags: a warning where torch disagrees), jobs beside it."""
    result.machine = machine()
    result.kernels = torch.backends.cpu.get_cpu_capability()
    expected = result.fingerprint.get("config", {}).get("cpu.kernels", result.kernels)
    if expected != result.kernels:
        log.warning("torch runs %s CPU kernels, the fingerprint says %s (frozen_sweep.system.kernels)",
                    result.kernels, expected)  # fmt: skip
    result.threads, result.follow_free_cores = torch.get_num_threads(), cfg.trainer.follow_free_cores
    jobs = os.environ.get(JOBS_AT_A_TIME_VARIABLE, "")
    result.jobs_at_a_time = int(jobs) if jobs.isdigit() else None
    result.config_dir = command_line_config_dir()


def command_line_config_dir() -> Optional[str]:
    """The directory the command's --config-dir added to Hydra's config sources (None without one, or outside
    Hydra's run of a job)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    for source in HydraConfig.get().runtime.config_sources:
        if source.provider == "command-line" and source.schema == "file":
            return str(Path(source.path).absolute())
    return None
    result.deterministic = cfg.trainer.deterministic
    if cfg.trainer.deterministic:
        deterministic_algorithms()


def versions() -> dict:
    """The code that ran: torch's and this package's versions, the commit and whether the tracked files differ from it
    (git_dirty; both null outside a git checkout)."""
    sha, changes = git("rev-parse", "HEAD"), git("status", "--porcelain", "--untracked-files=no")
    return {"torch": torch.__version__, "frozen_sweep": frozen_sweep.__version__, "git_sha": sha or None,
            "git_dirty": None if not sha or changes is None else bool(changes)}  # fmt: skip


def git(*args: str) -> Optional[str]:
    """git's output in this package's checkout, stripped; None where git fails."""
    try:
        done = subprocess.run(["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
