"""How a job runs, beside what it computes: its CPU threads (fixed for its life unless trainer.follow_free_cores),
CUDA's deterministic algorithms (trainer.deterministic), and what its record says about both and the machine."""

import os

import torch

from frozen_sweep.run.record import JOBS_AT_A_TIME_VARIABLE, RunResult
from frozen_sweep.system import cpu
from frozen_sweep.system.determinism import deterministic_algorithms


def job_threads(cfg, ranks: int = 1) -> tuple[int, bool]:
    """(threads of this process, whether they follow the free cores): the job's threads, shared by the ranks it
    spawned (frozen_sweep.system.cpu)."""
    follow = cfg.trainer.follow_free_cores
    return max(1, cpu.job_threads(cfg.trainer.threads, follow) // ranks), follow


def how_it_runs(cfg, result: RunResult) -> None:
    """What the record says about how the job ran (not fingerprinted): the machine, threads, jobs beside it."""
    result.machine = cpu.machine()
    result.threads, result.follow_free_cores = torch.get_num_threads(), cfg.trainer.follow_free_cores
    jobs = os.environ.get(JOBS_AT_A_TIME_VARIABLE, "")
    result.jobs_at_a_time = int(jobs) if jobs.isdigit() else None
    result.deterministic = cfg.trainer.deterministic
    if cfg.trainer.deterministic:
        deterministic_algorithms()
