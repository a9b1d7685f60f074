"""A sweep whose launcher is killed at random instants of its life, on both launchers: no job ever has two live
submissions at once, and none is lost.

    python benchmarks/chaos.py [--launcher both|local_gpus|slurm] [--kills 20] [--jobs 6] [--epochs 40] [--seed 0]

A sweep of --jobs micro jobs (the tests' small synthetic corpus, under a temporary directory), two at a time. A
launcher is started and killed, --kills times, each a new launcher started at once; the last one runs to the end.
Each kill is one of: SIGKILL to the launcher alone (its jobs live on), SIGINT to it alone (local_gpus stops its
jobs, on SLURM they stay), SIGINT to it alone and then the stop command its message advises (slurm) (so that later launches submit again), SIGINT to its process group (Ctrl-C in a terminal: local jobs get it too), each at a random instant once the launcher has planned
(uniform over 0..--span s after its plan line), or the launcher killed exactly at a random named point of its
submission (FROZEN_SWEEP_KILL_AT: before the records, between
the records and sbatch, after sbatch before the array's ids are recorded, after a local job's start).

Throughout, a watcher looks every 0.1 s at what runs each job directory: squeue's tasks of the sweep, traced to their
directories through the submission records (slurm), or the job processes marked with their directory (local_gpus).
Printed: live duplicates (times a directory had two live submissions at once), attempts per directory, lost jobs
(not completed after the last launch). TARGET: 0 duplicates and 0 lost jobs. The slurm launcher needs a cluster
(`make slurm-up`); without one it is skipped, saying so.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hydra_plugins.frozen_sweep_launchers._submission import (  # noqa: E402
    local_processes,
    queued_tasks,
    read_submissions,
)  # fmt: skip

from frozen_sweep.run.directory import ATTEMPTS_FILE, read_record
from tests.conftest import write_corpus  # noqa: E402
from tests.helpers.sweeps import read_json, sweep_command  # noqa: E402

PLAN_TIMEOUT_S = 120  # a launcher plans within this (python, torch and Hydra imports, composing every job)
KILL_POINTS = {"slurm": ["before_records", "before_sbatch", "after_sbatch"], "local_gpus": ["after_submit"]}
LAUNCHER_ARGS = {
    "slurm": ["hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.poll_interval_s=1"],
    "local_gpus": ["hydra/launcher=local_gpus", "hydra.launcher.max_parallel=2", "trainer.threads=1"],
}


class Watcher:
    """Samples who runs each job directory; a directory with two live submissions at once is a duplicate."""

    def __init__(self, sweep: Path, launcher: str):
        self.sweep, self.launcher = sweep, launcher
        self.duplicates: Counter = Counter()  # directory → samples in which it had two or more live submissions
        self.claims: dict[tuple, str] = {}  # (comment, array index) → directory, from every record ever seen
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def live(self) -> dict[str, list]:
        """Directory → its live submissions: submitit controllers (local_gpus), or squeue's tasks (slurm)."""
        if self.launcher == "local_gpus":
            return {d: controllers(pids) for d, pids in local_processes().items() if d.startswith(f"{self.sweep}/")}
        for directory in self.sweep.glob("*/"):
            for record in read_submissions(directory):
                self.claims[(record.get("comment"), record.get("array_index"))] = directory.name
        live: dict[str, list] = {}
        for task in queued_tasks(self.sweep):
            live.setdefault(self.claims.get((task.comment, task.index), "?"), []).append(task)
        return live

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for directory, submissions in self.live().items():
                if len(submissions) > 1:
                    if not self.duplicates:
                        print(f"  first duplicate: {directory}: {submissions}", flush=True)
                    self.duplicates[directory] += 1

    def close(self) -> Counter:
        self.stop.set()
        self.thread.join()
        return self.duplicates


def controllers(pids: list[int]) -> list[str]:
    """The submitit controllers among a directory's processes, one per submission: a process whose parent is one of
    them is its task, caught between fork and exec (it still shows the controller's command line)."""
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            if b"submitit.local._local" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found[pid] = int(fields[1])
        except OSError:  # ended meanwhile
            continue
    return [f"pid {pid} (parent {parent})" for pid, parent in found.items() if parent not in found]


def wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def launch(sweep: Path, args: list[str], env: dict, log) -> subprocess.Popen:
    return subprocess.Popen(sweep_command(sweep, *args), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, env={**os.environ, **env})  # fmt: skip


def chaos(launcher: str, args: argparse.Namespace, tmp: Path) -> dict:
    rng = random.Random(args.seed)
    corpus = write_corpus(tmp / "corpus")
    sweep = tmp / f"sweep-{launcher}"
    config = ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en", "task.vocab_size=60",
              f"task.cache_dir={tmp / 'cache'}", "model=micro", "trainer=quick", "eval.beam=1",
              "trainer.valid_bleu_sentences=0", f"trainer.max_epochs={args.epochs}", *LAUNCHER_ARGS[launcher],
              f"seed={','.join(str(s) for s in range(1, args.jobs + 1))}"]  # fmt: skip
    kinds: Counter = Counter()
    watcher = Watcher(sweep, launcher)
    started = time.perf_counter()
    for number in range(args.kills):
        kind = rng.choice(["SIGKILL", "SIGINT", "SIGINT, then its advice", "SIGINT to the group", "point"])
        env = {}
        if kind == "point":
            kind = f"at {rng.choice(KILL_POINTS[launcher])}:{rng.choice(['SIGKILL', 'SIGINT'])}"
            env = {"FROZEN_SWEEP_KILL_AT": kind[3:]}
        output = tmp / f"{launcher}-{number}.log"
        with open(output, "w") as log:
            proc = launch(sweep, config, env, log)
        # a random instant after the launcher has planned (what comes before it submits nothing), or the point
        planned = wait(lambda: proc.poll() is not None or " jobs: " in output.read_text(), PLAN_TIMEOUT_S)
        try:
            proc.wait(timeout=(args.span if env else rng.uniform(0, args.span)) if planned else 0)
            text = output.read_text()  # local_gpus stops its jobs ("Stopped"); on SLURM they stay ("Interrupted")
            fired = env and (proc.returncode == -signal.SIGKILL or "Interrupted" in text or "Stopped (" in text)
            kinds[kind if fired else f"{kind} (the launcher had ended: nothing left to do)"] += 1
            continue
        except subprocess.TimeoutExpired:
            pass
        if env:  # the point was not reached (nothing left to submit): killed like any other
            kind = "SIGKILL (point not reached)"
        kinds[kind] += 1
        if kind == "SIGINT to the group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT if kind.startswith("SIGINT") else signal.SIGKILL)
        proc.wait()
        if kind == "SIGINT, then its advice" and "stop them: " in (text := output.read_text()):
            advice = text.split("stop them: ")[1].splitlines()[0].split(" (")[0]
            subprocess.run(advice, shell=True, capture_output=True)  # as a user would: the next launch resubmits
    final = subprocess.run(sweep_command(sweep, *config), cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    duplicates = watcher.close()
    directories = [d for d in sweep.iterdir() if d.is_dir() and not d.name.startswith(".")]
    attempts = Counter(len(read_json(d / ATTEMPTS_FILE)) if (d / ATTEMPTS_FILE).exists() else 0 for d in directories)
    lost = [d.name for d in directories if (read_record(d) or {}).get("status") != "completed"]
    lost += ["(missing)"] * (args.jobs - len(directories))
    if final.returncode != 0:
        print(f"  the last launch failed ({final.returncode}):\n{final.stdout[-1500:]}{final.stderr[-1500:]}")
    return {"kinds": kinds, "duplicates": duplicates, "attempts": attempts, "lost": lost, "wall": wall}


def cluster_answers() -> bool:
    return bool(shutil.which("squeue")) and subprocess.run(["squeue", "-h"], capture_output=True).returncode == 0


def main() -> None:
    # the launchers it starts must take SIGINT as Ctrl-C even when this runs in the background (SIGINT ignored, and
    # inherited by what it starts): Python's handler resets to the default in a child
    signal.signal(signal.SIGINT, signal.default_int_handler)
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--launcher", choices=["both", "local_gpus", "slurm"], default="both")
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--jobs", type=int, default=6)
    p.add_argument("--epochs", type=int, default=40, help="trainer.max_epochs of each micro job (the sweep's life)")
    p.add_argument("--span", type=float, default=8.0, help="a kill comes after 0..span s (or at a named point)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"chaos: {args.jobs} micro jobs, {args.kills} kills per launcher, seed {args.seed}, {os.cpu_count()} CPUs, "
          f"load average {load} at start")  # fmt: skip
    met = True
    for launcher in ["local_gpus", "slurm"] if args.launcher == "both" else [args.launcher]:
        if launcher == "slurm" and not cluster_answers():
            print("slurm: skipped, no SLURM cluster answers (make slurm-up)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            figures = chaos(launcher, args, Path(tmp))
        duplicates, lost = sum(figures["duplicates"].values()), len(figures["lost"])
        met &= duplicates == 0 and lost == 0
        print(f"{launcher}: {figures['wall']:.0f} s, kills: {dict(figures['kinds'])}")
        print(f"  live duplicates: {duplicates} samples ({len(figures['duplicates'])} directories)")
        print(f"  attempts per directory: {dict(sorted(figures['attempts'].items()))} (attempts: directories)")
        print(f"  lost jobs: {lost}{' ' + ', '.join(figures['lost']) if lost else ''}")
    print(f"TARGET 0 duplicates and 0 lost jobs: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
