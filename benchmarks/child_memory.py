"""A benchmark's child process, measured: its wall and CPU time and its peak memory, with every process it starts.

Used by the data benchmarks (data_scale.py, hub_prepare.py), whose commands prepare data or run a job.
"""

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import common

# A child's ru_maxrss counts the image it was forked from (Linux keeps the pre-exec high-water mark), so measured
# children are started by this small interpreter (≈10 MB), not by the benchmark (torch and a million lines loaded).
# It samples every 10 ms the RssAnon and RssFile of the child and of every process the child started (preparation
# reads a hub dataset in a process of its own): the peaks of their sums, beside ru_maxrss (the largest single
# process's exact peak); the peak reported is the larger of the sampled sum and ru_maxrss.
SPAWNER = """import json, os, re, sys, time
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
peak = {"RssAnon": 0, "RssFile": 0, "tree": 0}
def tree(p):
    try:
        with open(f"/proc/{p}/task/{p}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    return [p] + [q for c in children for q in tree(c)]
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    now = {"RssAnon": 0, "RssFile": 0}
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for key, kb in re.findall(r"^(RssAnon|RssFile):\\s+(\\d+)", f.read(), re.M):
                    now[key] += int(kb)
        except OSError:
            pass
    for key in now:
        peak[key] = max(peak[key], now[key])
    peak["tree"] = max(peak["tree"], now["RssAnon"] + now["RssFile"])
    time.sleep(0.01)
open(os.environ["RSS_FILE"], "w").write(json.dumps({"maxrss": max(usage.ru_maxrss, peak.pop("tree")), **peak,
                                                   "cpu_s": usage.ru_utime + usage.ru_stime}))
sys.exit(os.waitstatus_to_exitcode(status))"""


@dataclass
class Memory:
    """A child's peak RSS (the larger of ru_maxrss and its process tree's sampled peak) and the peaks of its tree's
    sampled RssAnon and RssFile, in MB; its CPU seconds (and its waited-for children's)."""

    peak: float
    anon: float
    file: float
    cpu_s: float = 0.0

    def __str__(self) -> str:
        return f"{self.peak:.0f} MB ({self.anon:.0f} anon + {self.file:.0f} file)"


def run_child(command: list[str], log: Path) -> tuple[float, Memory, str]:
    """(seconds, peak memory, output) of a child process."""
    started = time.perf_counter()
    rss_file = log.with_suffix(".rss")
    with open(log, "w") as out:
        done = subprocess.run([sys.executable, "-S", "-c", SPAWNER, *command], cwd=common.ROOT, stdout=out,
                              stderr=subprocess.STDOUT, env={**os.environ, "RSS_FILE": str(rss_file)})  # fmt: skip
    text = log.read_text()
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{text[-3000:]}")
    rss = json.loads(rss_file.read_text())
    memory = Memory(rss["maxrss"] / 1024, rss["RssAnon"] / 1024, rss["RssFile"] / 1024, rss["cpu_s"])
    return time.perf_counter() - started, memory, text
