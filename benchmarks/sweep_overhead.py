"""Sweep overhead: what each launcher and the collector add per job, beyond the job's own work.

    python benchmarks/sweep_overhead.py [--jobs 4] [--records 1000] [--slurm auto|yes|no]

Launchers. The same micro job (model=micro on a small synthetic corpus, trainer=quick, 2 updates, greedy test
decoding: a couple of seconds of real work) is run
- in this process, `frozen_sweep.job.runner.run_job` after composing its config: the job's own time J (median);
- as a sweep `python -m frozen_sweep -m seed=1,…,N` through each launcher: Hydra's `basic` (in one process),
  `local_gpus` (a subprocess per job through submitit, max_parallel=1) and `slurm` (the one-node cluster of
  `make slurm-up`, when it answers; array_parallelism=1), with N = 1 and N = --jobs, interleaved.
Per-job overhead = (W(N) − W(1)) / (N − 1) − J; fixed cost per sweep (interpreter start, imports, planning) =
W(1) − J − per-job overhead. The collector: `python -m frozen_sweep.collect DIR` over 10 and --records synthetic
records (benchmarks/collect_records.py writes them): per-record cost = slope, fixed cost = intercept.
"""

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from collect_records import write_records

from frozen_sweep.job.runner import run_job


def job_overrides(corpus: Path, cache: Path) -> list[str]:
    return ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en", "task.vocab_size=60",
            f"task.cache_dir={cache}", "model=micro", "trainer=quick", "trainer.max_steps=2", "eval.beam=1",
            "trainer.valid_bleu_sentences=0"]  # fmt: skip


def slurm_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(s.strip() in ("idle", "mixed", "allocated") for s in out.splitlines())


def timed_command(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--jobs", type=int, default=5, help="jobs in the larger sweep (the smaller has 1)")
    p.add_argument("--records", type=int, default=1000)
    p.add_argument("--slurm", choices=["auto", "yes", "no"], default="auto")
    args = p.parse_args()
    if args.quick:
        args.jobs, args.records, args.repeats = 2, 40, 1
    repeats = args.repeats or 2
    common.setup(args)
    sys.path.insert(0, str(common.ROOT))
    from tests.conftest import write_corpus

    launchers = ["basic", "local_gpus"]
    if args.slurm == "yes" or (args.slurm == "auto" and slurm_up()):
        launchers.append("slurm")
    else:
        print("slurm: skipped (no cluster answers `sinfo`; `make slurm-up` starts one)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus, cache = write_corpus(tmp / "corpus"), tmp / "cache"
        overrides = job_overrides(corpus, cache)

        own = []  # the job's own time, in this process (the first call also trains the vocabulary: not counted)
        for seed in range(4 if not args.quick else 2):
            cfg = common.compose_config(*overrides, f"seed={seed}")
            started = time.perf_counter()
            run_job(cfg, tmp / "inprocess" / str(seed), [*overrides, f"seed={seed}"])
            own.append(time.perf_counter() - started)
        job_s = statistics.median(own[1:])
        print(f"one micro job in this process (run_job): {job_s:.2f} s (median of {len(own) - 1})")

        def sweep(launcher: str, n: int, r: int):
            extra = {"basic": ["hydra/launcher=basic"], "local_gpus": ["hydra/launcher=local_gpus"],
                     "slurm": ["hydra/launcher=slurm", "hydra.launcher.array_parallelism=1",
                               "hydra.launcher.poll_interval_s=0.5"]}[launcher]  # fmt: skip
            seeds = ",".join(str(s) for s in range(1, n + 1))
            command = [sys.executable, "-m", "frozen_sweep", "-m", *extra, *overrides, f"seed={seeds}",
                       f"name={launcher}_{n}_{r}", "trainer.threads=" + str(args.threads)]  # fmt: skip
            return lambda: timed_command(command, tmp)

        walls: dict[tuple[str, int], list[float]] = {}
        for r in range(repeats):
            for launcher in launchers:
                for n in (1, args.jobs):
                    walls.setdefault((launcher, n), []).append(sweep(launcher, n, r)())
        rows, overheads = [], {}
        for launcher in launchers:
            w1, wn = statistics.median(walls[launcher, 1]), statistics.median(walls[launcher, args.jobs])
            per_job = (wn - w1) / (args.jobs - 1) - job_s
            fixed = w1 - job_s - per_job
            overheads[launcher] = per_job
            rows.append([launcher, f"{w1:.1f} s", f"{wn:.1f} s", f"{per_job:+.2f} s", f"{per_job / job_s:+.0%}",
                         f"{fixed:.1f} s"])  # fmt: skip
        print(f"\nsweeps of 1 and {args.jobs} micro jobs, wall time including interpreter start ({repeats} round(s))")
        common.table(["launcher", "W(1)", f"W({args.jobs})", "overhead/job", "of the job", "fixed/sweep"], rows)

        # the collector: the command line over few and many records
        few, many = 10, args.records
        for n in (few, many):
            write_records(tmp / f"records{n}", n, duplicates=0)
        command = lambda n: [sys.executable, "-m", "frozen_sweep.collect", str(tmp / f"records{n}"),
                             "--out", str(tmp / f"table{n}.md")]  # fmt: skip
        times = common.interleaved({n: (lambda n=n: timed_command(command(n), tmp)) for n in (few, many)},
                                   repeats=1 if args.quick else 3, warmup=0 if args.quick else 1)  # fmt: skip
        slope = (times[many] - times[few]) / (many - few)
        print(f"\ncollector (`python -m frozen_sweep.collect DIR --out table.md`): {few} records {times[few]:.2f} s, "
              f"{many} records {times[many]:.2f} s → {slope * 1e3:.2f} ms per record, "
              f"fixed {times[few] - few * slope:.2f} s")  # fmt: skip
        for launcher, per_job in overheads.items():
            print(f"collector per record / {launcher} overhead per job: {slope / per_job:.3%}" if per_job > 0 else "")


if __name__ == "__main__":
    main()
