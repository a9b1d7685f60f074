"""Training speed on a busy CPU: the trainer's step, quiet and beside a process that keeps one core busy.

    python benchmarks/busy_cpu.py [--steps 2] [--repeats 5] [--sweep-repeats 1] [--also NAME:VAR=V,VAR=V ...]

The contenders, each in its own process (libgomp reads its environment when torch loads it):
- today: torch's default threads (one per core), fixed: what a job alone does by default (frozen_sweep.system.cpu);
- job: a job following the free cores (trainer.follow_free_cores=true, not reproducible): as many threads as the
  cores other processes leave free, re-measured every second;
- one: one thread (OMP_NUM_THREADS=1): the best a job can do with one core free (2 threads on 1⅓ cores spin-wait),
  so its busy step over today's quiet step is the floor of the job's busy/quiet ratio;
- --also: today's threads with extra environment, e.g. `passive:OMP_WAIT_POLICY=PASSIVE` (libgomp's threads
  sleep at once instead of spinning), `spin10k:GOMP_SPINCOUNT=10000`.
Each times `Trainer._train_step` on the demo model (model=demo, a 64×32 batch: 2,048 target tokens). A competitor, one
torch thread of matrix products and element-wise work, keeps one core busy while "busy" and is stopped (SIGSTOP) while
"quiet". Every round times every contender under both conditions in rotated order, each block after 2.5 s of untimed
steps (so the job has measured the block's load: a job adapts within two seconds of a change); a figure is the median
step over rounds. Then a 2-job `local_gpus` sweep of demo jobs (its default max_parallel=1, as `make demo` runs) on a
toy corpus, quiet and busy, with the launcher's default (fixed threads, one job at a time: 2 threads each): its wall
time, and the jobs' own training tokens/s from their result.json. The load average is printed with every round: other
work on the machine counts as well. Targets: job busy/quiet ≤ 1.5×, job quiet ≥ 0.97× today's quiet speed. --threads is
not used: the contenders choose their threads. """

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import torch

from frozen_sweep.system import cpu

COMPETITOR = """import torch
torch.set_num_threads(1)
a = torch.randn(256, 256)
print("ready", flush=True)
while True:
    torch.tanh(a @ a, out=a)
    a.mul_(0.5)
"""
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
ADAPT_S = 2.5 * cpu.CHECK_EVERY_S  # untimed steps before each timed block: the job measures the load


def clean_env(**extra: str) -> dict:
    """This process's environment without any thread or wait setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(common.ROOT), str(common.ROOT / "launchers"), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# ---- the training step in a worker process ------------------------------------------------------------------------


def worker(mode: str, sentences: int, length: int) -> None:
    """Build the demo model, then time `n` steps for every line `n` read from stdin; answer with the times and the
    threads torch used at the end."""
    common.keep_freed_memory()
    torch.manual_seed(0)
    cfg = common.compose_config("model=demo")
    vocab = cfg.task.vocab_size
    batch = common.synthetic_batch(sentences, length, vocab)
    following = cpu.threads_for_job(cpu.usable_cores(), follow_free_cores=True)
    adapting = following if mode == "job" else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp, adapting:
        _, step = common.train_step(cfg, common.build(cfg, vocab), Path(tmp), vocab)
        step(batch), step(batch)
        print(json.dumps({"tokens": batch.n_tokens}), flush=True)
        for line in sys.stdin:
            until = time.monotonic() + ADAPT_S  # every contender alike: warm caches
            while time.monotonic() < until:
                step(batch)
            times = []
            for _ in range(int(line)):
                started = time.perf_counter()
                step(batch)
                times.append(time.perf_counter() - started)
            print(json.dumps({"times": times, "threads": torch.get_num_threads()}), flush=True)


class Worker:
    """A worker process; `info` (its batch) once `ready()` returned."""

    def __init__(self, mode: str, env: dict, args):
        command = [sys.executable, __file__, "--worker", mode, "--sentences", str(args.sentences),
                   "--length", str(args.length)]  # fmt: skip
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ready(self) -> None:
        self.info = self.answer()

    def answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.process.args} died ({self.process.wait()})")
        return json.loads(line)

    def steps(self, n: int) -> dict:
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


class Competitor:
    """One torch thread kept busy; `busy(False)` stops it (SIGSTOP), `busy(True)` lets it run."""

    def __init__(self):
        env = clean_env(OMP_NUM_THREADS="1")
        self.process = subprocess.Popen([sys.executable, "-c", COMPETITOR], env=env, stdout=subprocess.PIPE, text=True)
        self.process.stdout.readline()
        self.busy(False)

    def busy(self, on: bool) -> None:
        os.kill(self.process.pid, signal.SIGCONT if on else signal.SIGSTOP)
        time.sleep(0.2)  # let the scheduler settle

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def close(self) -> None:
        self.busy(True)
        self.process.kill()
        self.process.wait()


# ---- a 2-job local_gpus sweep -------------------------------------------------------------------------------------


def sweep(env: dict, directory: Path, corpus: Path, model: str, steps: int) -> tuple[float, float]:
    """Wall seconds of a 2-job sweep, and the median of the jobs' training tokens/s (from their result.json)."""
    overrides = [f"task.path={corpus}", "task=text_files", "task.src_lang=es", "task.tgt_lang=en",
                 "task.vocab_size=60", f"task.cache_dir={directory.parent / 'cache'}", f"model={model}",
                 "trainer.max_tokens=1024", f"trainer.max_steps={steps}", "trainer.max_time_s=null",
                 "trainer.warmup_steps=10", "trainer.valid_bleu_sentences=0", "trainer.progress=false",
                 "eval.beam=1", "hydra/launcher=local_gpus", f"hydra.sweep.dir={directory}", "seed=1,2"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "frozen_sweep", "-m", *overrides], env=env, cwd=directory.parent,
                          capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"sweep failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rates = [json.loads(p.read_text())["train_tokens_per_s"] for p in directory.glob("*/result.json")]
    assert len(rates) == 2, f"expected 2 results under {directory}, found {len(rates)}"
    return wall, statistics.median(rates)


# ---- side by side -------------------------------------------------------------------------------------------------


def contenders(also: list[str]) -> dict[str, tuple[str, dict]]:
    """name → (worker mode, extra environment)."""
    out = {"today": ("fixed", {}), "job": ("job", {}), "one": ("fixed", {"OMP_NUM_THREADS": "1"})}
    for spec in also:
        name, _, assignments = spec.partition(":")
        out[name] = ("fixed", dict(a.split("=", 1) for a in assignments.split(",") if a))
    return out


def rotated(items: list, r: int) -> list:
    return items[r % len(items) :] + items[: r % len(items)]


def side_by_side(names: list[str], measure, competitor: Competitor, repeats: int, label: str):
    """{(name, "quiet" | "busy"): every value `measure(name, condition, round)` returned}, in rotated order, and
    the median number of cores the competitor had while busy."""
    values = {(name, cond): [] for name in names for cond in ("quiet", "busy")}
    cores = []
    for r in range(repeats):
        for cond in rotated(["quiet", "busy"], r):
            competitor.busy(cond == "busy")
            cpu_seconds, started = competitor.cpu_seconds(), time.perf_counter()
            for name in rotated(names, r):
                values[name, cond] += measure(name, cond, r)
            if cond == "busy":
                cores.append((competitor.cpu_seconds() - cpu_seconds) / (time.perf_counter() - started))
        print(f"{label} round {r + 1}/{repeats}: load average {load()}", flush=True)
    competitor.busy(False)
    return values, statistics.median(cores)


def describe(mode: str, env: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in env.items()) or ("free cores" if mode == "job" else "torch's default")


def compare_steps(candidates, competitor: Competitor, args) -> dict:
    workers = {name: Worker(mode, clean_env(**env), args) for name, (mode, env) in candidates.items()}
    try:
        for w in workers.values():  # started together, waited for in turn
            w.ready()
        tokens = workers["job"].info["tokens"]
        print(f"\ntraining step: demo model, {args.sentences}×{args.length} batch ({tokens} target tokens), "
              f"{args.repeats} rounds of {args.steps} steps per contender and condition")  # fmt: skip

        def measure(name, cond, r):
            answer = workers[name].steps(args.steps)
            return [(t, answer["threads"]) for t in answer["times"]]

        values, cores = side_by_side(list(workers), measure, competitor, args.repeats, "steps")
    finally:
        for w in workers.values():
            w.close()
    times = {k: statistics.median(t for t, _ in v) for k, v in values.items()}
    threads = {k: statistics.median_low(n for _, n in v) for k, v in values.items()}
    rows = []
    for name, (mode, env) in candidates.items():
        quiet, busy = times[name, "quiet"], times[name, "busy"]
        rows.append([name, describe(mode, env), f"{threads[name, 'quiet']} / {threads[name, 'busy']}",
                     f"{quiet * 1e3:.0f} ms", f"{tokens / quiet:,.0f}", f"{busy * 1e3:.0f} ms", f"{tokens / busy:,.0f}",
                     f"{busy / quiet:.2f}×", f"{times['today', 'quiet'] / quiet:.3f}"])  # fmt: skip
    print(f"training step, medians (the competitor had {cores:.2f} cores while busy)")
    common.table(["contender", "threads", "quiet / busy", "quiet step", "tokens/s", "busy step", "tokens/s",
                  "busy/quiet", "quiet speed / today's"], rows)  # fmt: skip
    if threads["job", "quiet"] < threads["today", "quiet"]:
        print(f"NOTE: the job ran {threads['job', 'quiet']} thread(s) while quiet: other processes kept cores busy "
              f"(load average {load()}), so its quiet figures are not a quiet machine's")  # fmt: skip
    return times


def compare_sweeps(competitor: Competitor, args) -> None:
    """The job's code only: a sweep's jobs cannot run today's fixed threads any more."""
    sys.path.insert(0, str(common.ROOT))
    from tests.conftest import write_corpus

    model = "micro" if args.quick else "demo"
    print(f"\n2-job local_gpus sweeps (default max_parallel=1, as `make demo`) of {model} jobs, {args.sweep_steps} "
          f"steps each, {args.sweep_repeats} round(s)")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        corpus = write_corpus(Path(tmp) / "corpus")

        def measure(name, cond, r):
            return [sweep(clean_env(), Path(tmp) / f"{cond}_{r}", corpus, model, args.sweep_steps)]

        values, cores = side_by_side(["job"], measure, competitor, args.sweep_repeats, "sweeps")
    wall = {cond: statistics.median(w for w, _ in values["job", cond]) for cond in ("quiet", "busy")}
    rate = {cond: statistics.median(t for _, t in values["job", cond]) for cond in ("quiet", "busy")}
    print(f"sweeps, medians (the competitor had {cores:.2f} cores while busy)")
    rows = [[cond, f"{wall[cond]:.1f} s", f"{rate[cond]:,.0f}"] for cond in ("quiet", "busy")]
    rows.append(["busy/quiet", f"{wall['busy'] / wall['quiet']:.2f}×", f"{rate['quiet'] / rate['busy']:.2f}× slower"])
    common.table(["", "wall", "jobs' training tokens/s"], rows)


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--steps", type=int, default=2, help="steps per contender and condition in each round")
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32)
    p.add_argument("--sweep-repeats", type=int, default=1, help="0: no sweeps")
    p.add_argument("--sweep-steps", type=int, default=50, help="training steps of each sweep job")
    p.add_argument("--also", nargs="*", default=[], help="more fixed-thread contenders, NAME:VAR=VALUE,VAR=VALUE")
    p.add_argument("--worker", choices=["fixed", "job"], help=argparse.SUPPRESS)  # the step timer, in a subprocess
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.sentences, args.length)
    if args.quick:
        args.steps, args.repeats, args.sentences, args.length, args.sweep_steps = 1, 1, 8, 8, 2
    args.repeats = args.repeats or 5
    started = time.perf_counter()
    print(f"torch {torch.__version__} ({torch.__config__.parallel_info().splitlines()[-1].strip()}), "
          f"{cpu.usable_cores()} usable cores of {os.cpu_count()}; load average {load()} at start")  # fmt: skip
    candidates = contenders(args.also)
    competitor = Competitor()
    try:
        times = compare_steps(candidates, competitor, args)
        if args.sweep_repeats:
            compare_sweeps(competitor, args)
    finally:
        competitor.close()
    print(f"\nload average {load()} at the end; {time.perf_counter() - started:.0f} s in all")
    common.verdict("job: busy / quiet step time", times["job", "busy"] / times["job", "quiet"], 1.5, at_most=True)
    print(f"floor of that ratio (one thread beside the busy process / today's quiet step): "
          f"{times['one', 'busy'] / times['today', 'quiet']:.2f}×; the job's busy step / one thread's: "
          f"{times['job', 'busy'] / times['one', 'busy']:.3f}")  # fmt: skip
    common.verdict("job / today's quiet speed", times["today", "quiet"] / times["job", "quiet"], 0.97)


if __name__ == "__main__":
    main()
