"""CPU threads and the OpenMP wait policy, chosen for a machine that other work shares.

torch's CPU kernels run their threads on GNU OpenMP (libgomp: `torch.__config__.parallel_info()` says "OpenMP",
torch/lib holds libgomp.so.1). By default a libgomp thread that finishes its share of a parallel region spins
300,000 times (GOMP_SPINCOUNT) waiting for the others before it sleeps. When another process holds one of the
cores, the spinning thread takes the time slices its partner needs to finish: a training step ran ~13× slower
beside one busy process (benchmarks/busy_cpu.py). libgomp reads its environment once, when torch loads it, so the
policy is set in the environment at import of frozen_sweep, before any of its modules imports torch, and launched
jobs inherit it.
"""

import os
from typing import Optional

# What a job runs with unless the environment says otherwise (benchmarks/busy_cpu.py chose it; README "Performance").
OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")  # either one set by the user: the user's wait policy holds


def set_openmp_defaults(environ=os.environ) -> None:
    """Put the wait policy in the environment unless it already has one (an explicit setting wins)."""
    if not any(name in environ for name in WAIT_SETTINGS):
        environ.update(OPENMP_DEFAULTS)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: taskset, cpusets, SLURM), not all the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity API on this platform (macOS)
        return os.cpu_count() or 1


def job_threads(requested: Optional[int], environ=os.environ) -> int:
    """torch's threads for a job: trainer.threads when set; else OMP_NUM_THREADS (the user's, or the launcher's
    split of the cores between jobs); else the cores this process may use."""
    if requested:
        return requested
    omp = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    return usable_cores()
