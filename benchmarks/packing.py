"""Packing: target tokens/s of N small jobs sharing one GPU (hydra.launcher.jobs_per_gpu=N) against one job alone.

    python benchmarks/packing.py --device cuda [--jobs 4] [--model demo] [--steps 400] [override ...]

Runs two real sweeps through `python -m frozen_sweep -m hydra/launcher=local_gpus` on GPU 0, one after the other:
one job alone (jobs_per_gpu=1) and N jobs at once (jobs_per_gpu=N, seeds 1..N), each `--steps` updates of
`--model` on the embedded corpus (on the GPU machine pass task.sword_dir=$FS_SWORD), validation loss only. The
packed figure is the sum of the jobs' own training tokens/s (they train side by side from start to end); the
sweeps' wall times, start-up and test decoding included, are shown beside. Target: packed ≥ 0.8·N × alone (3.2×
for 4 jobs). Without a GPU (a smoke test of the scheduling: --quick) the launcher is shown a GPU id 0
(CUDA_VISIBLE_DEVICES=0) and the jobs, pinned to it, train on the CPU.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common


def sweep(sweep_dir: Path, jobs: int, overrides: list[str]) -> tuple[float, list[dict]]:
    """Wall seconds of a sweep of `jobs` jobs sharing GPU 0, and their result records."""
    seeds = ",".join(str(s) for s in range(1, jobs + 1))
    launcher = ["hydra/launcher=local_gpus", "hydra.launcher.gpus=[0]", f"hydra.launcher.jobs_per_gpu={jobs}"]
    command = [sys.executable, "-m", "frozen_sweep", "-m", f"hydra.sweep.dir={sweep_dir}", *launcher, f"seed={seeds}",
               *overrides]  # fmt: skip
    started = time.perf_counter()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}  # the launcher's GPU 0
    done = subprocess.run(command, cwd=common.ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"sweep failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return wall, [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/result.json"))]


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--model", default="demo")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("overrides", nargs="*", help="config overrides for every job")
    args = p.parse_args()
    common.setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        task = common.task_overrides(args.quick, tmp)
        if args.quick:  # one thread each, alone too: two threads on a busy CPU stall at every OpenMP barrier
            task += ["trainer.max_tokens=512", "eval.beam=1", "trainer.threads=1"]
            args.model, args.steps, args.jobs = "micro", 20, 2
        overrides = [*task, f"model={args.model}", f"trainer.max_steps={args.steps}", "trainer.max_time_s=null",
                     f"trainer.validate_every_steps={args.steps}", "trainer.valid_bleu_sentences=0",
                     f"trainer.device={args.device}", "trainer.progress=false", *args.overrides]  # fmt: skip
        print(f"model={args.model}, {args.steps} updates per job; 1 job alone, then {args.jobs} sharing GPU 0")
        rows, rates = [], {}
        for jobs in (1, args.jobs):
            wall, records = sweep(Path(tmp) / f"jobs{jobs}", jobs, overrides)
            rates[jobs] = sum(r["train_tokens_per_s"] for r in records)
            tokens = sum(r["steps"] and r["history"][-1]["train_tokens"] for r in records)
            rows.append([jobs, records[0]["device"], f"{rates[jobs]:,.0f}", f"{wall:.1f} s", f"{tokens / wall:,.0f}"])
        common.table(["jobs on GPU 0", "device", "training tokens/s (sum)", "sweep wall", "tokens / wall s"], rows)
    common.verdict(f"{args.jobs} packed jobs / one job alone, tokens/s", rates[args.jobs] / rates[1], 0.8 * args.jobs)


if __name__ == "__main__":
    main()
