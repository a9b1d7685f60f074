"""CPU threads for a machine that other work shares.

A job's thread count is fixed for its whole life (job_threads: trainer.threads, which the launchers set to their
share of the cores, else OMP_NUM_THREADS, else every core this process may use): the same command gives a
bit-identical record whatever else runs on the machine. The count changes numerics: one training step at 1 and at
2 threads gives the same loss but different gradients (matrix products split their sums differently), so a job whose
threads followed the load gave other numbers at load 1 than at load 10.

Following the free cores stays available as an opt-in (trainer.follow_free_cores=true; the record says so and
is not reproducible): torch runs its CPU kernels on GNU OpenMP (`torch.__config__.parallel_info()`;
torch/lib/libgomp.so.1), and a thread that finishes its share of a parallel region spins (GOMP_SPINCOUNT, 300,000 by
default) waiting for the others. When another process holds one of the cores, every region waits for the thread that
lost its core, and the waiting thread burns the time its partner needs: a 2-thread training step ran 2.5–3.1× slower
beside one busy process (≈12× at load average 4), a 1-thread step hardly slower at all. FreeCoreThreads then keeps
the thread count to the cores other processes leave free, measured from /proc/stat every CHECK_EVERY_S. The
alternatives measured worse (benchmarks/busy_cpu.py, docs/performance.md): OMP_WAIT_POLICY=PASSIVE (threads sleep at
once) made every quiet step 1.4–1.7× longer, since each region then wakes a sleeping thread; libgomp's own OMP_DYNAMIC
subtracts the 15-minute load average, which counts the job's own threads, so it would run one thread on a quiet
machine.

The count is set through the OpenMP runtime (omp_set_num_threads), not torch.set_num_threads: torch's call also pins
MKL's thread count (mkl_set_num_threads_local, mkl_set_dynamic(0)) and resizes its own thread pool, and every later
`demo` training step ran 5.5% slower for it (2 threads either way: 166 vs 157 ms, side by side, 12 rounds). MKL,
oneDNN and torch's own parallel loops all follow the OpenMP count, and torch.get_num_threads() reads it back. MKL
stops following it where MKL_NUM_THREADS is set, so the launchers set only OMP_NUM_THREADS: with both set, a sweep's
jobs beside a busy process kept 2-thread matrix products and trained 4.3× slower instead of 1.57×.
"""

import contextlib
import ctypes
import functools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import torch

from frozen_sweep.system.threads import job_threads, usable_cores

__all__ = ["job_threads", "usable_cores"]  # kept here too: the threads belong to this module's story
CHECK_EVERY_S = 1.0  # how often the free cores are measured; a change in load costs at most about this long


@functools.cache
def _omp_set_num_threads() -> Optional[Callable[[int], None]]:
    """omp_set_num_threads of the OpenMP runtime torch's kernels use, looked up through torch's own library, whose
    dependencies are searched first (sentencepiece loads a libgomp of its own); None where that fails."""
    try:
        return ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so")).omp_set_num_threads
    except (OSError, AttributeError):  # another platform's name, or a build without OpenMP
        return None


def set_threads(n: int) -> None:
    """torch's CPU threads from now on, for this thread; nothing is called when n already is the count. Where
    MKL_NUM_THREADS is set, MKL no longer follows the OpenMP count: then torch.set_num_threads sets both."""
    if n == torch.get_num_threads():
        return
    omp_set_num_threads = _omp_set_num_threads()
    if omp_set_num_threads is None or "MKL_NUM_THREADS" in os.environ:
        torch.set_num_threads(n)
    else:
        omp_set_num_threads(n)


def busy_seconds(cpus: set[int], stat: str = "/proc/stat") -> float:
    """CPU seconds the machine spent busy on `cpus` since boot: every state but idle and iowait."""
    ticks = 0
    with open(stat) as f:
        for line in f:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
                ticks += user + nice + system + irq + softirq + steal
    return ticks / os.sysconf("SC_CLK_TCK")


class FreeCoreThreads:
    """Called from the thread that runs torch (a module forward pre-hook): at most once per CHECK_EVERY_S, sets
    torch's threads to the cores the other processes left free in the last interval (rounded), between 1 and
    `most`. Other work counts whether or not it would yield: a batch job that fills the core a job leaves idle
    keeps the job at fewer threads."""

    def __init__(self, most: int, used: Optional[set[int]] = None):
        self.most = most
        self.used = set() if used is None else used  # every count it set
        self.cpus = os.sched_getaffinity(0)
        self.last = self.sample()

    def sample(self) -> tuple[float, float, float]:
        """(now, the machine's busy CPU seconds on our cores, this process's CPU seconds)."""
        return time.monotonic(), busy_seconds(self.cpus), time.process_time()

    def free_cores(self, now: tuple[float, float, float]) -> float:
        (t0, busy0, own0), (t1, busy1, own1) = self.last, now
        others = (busy1 - busy0) - (own1 - own0)  # CPU seconds of other processes on our cores
        return len(self.cpus) - max(0.0, others) / (t1 - t0)

    def __call__(self, *_hook_args) -> None:
        if time.monotonic() - self.last[0] < CHECK_EVERY_S:
            return
        now = self.sample()
        free = self.free_cores(now)
        self.last = now
        threads = max(1, min(self.most, round(free)))
        self.used.add(threads)
        set_threads(threads)


@contextlib.contextmanager
def threads_for_job(threads: int, follow_free_cores: bool = False) -> Iterator[set[int]]:
    """Inside the block torch uses `threads` threads, fixed. With follow_free_cores, at most `threads`, fewer while
    other processes keep cores busy (re-measured at most every CHECK_EVERY_S, before a module's forward): faster
    beside other work, not reproducible. Yields the thread counts used, filled in as the block runs."""
    set_threads(threads)
    used = {threads}
    if not follow_free_cores or threads == 1 or not os.path.exists("/proc/stat") or not hasattr(os, "sched_getaffinity"):
        yield used
        return
    hook = torch.nn.modules.module.register_module_forward_pre_hook(FreeCoreThreads(threads, used))
    try:
        yield used
    finally:
        hook.remove()
        set_threads(threads)
