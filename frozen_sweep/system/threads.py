"""How many CPU threads a job uses: no torch here, so that the fingerprint (frozen_sweep.job.fingerprint) can name
them before any job starts (frozen_sweep.system.cpu sets them). The count changes a job's numbers: matrix products
split their sums differently. What else of the CPU does: frozen_sweep.system.kernels.
"""

import os
from typing import Optional


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: taskset, cpusets, SLURM), not all the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity API on this platform (macOS)
        return os.cpu_count() or 1


def job_threads(requested: Optional[int], follow_free_cores: bool = False, environ=os.environ) -> int:
    """The threads a job uses: trainer.threads when set (the launchers set it: their share of the cores); else
    OMP_NUM_THREADS; else the cores this process may use. Following the free cores, the most it uses: every core
    this process may use."""
    if follow_free_cores:
        return usable_cores()
    if requested:
        return requested
    omp = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    return usable_cores()

