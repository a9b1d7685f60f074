"""A CPU sweep's tail: a `local_gpus` job that runs alone keeps its share of the cores (the default) or takes the
cores the finished jobs left (following the free cores).

    python benchmarks/sweep_tail.py [--steps 400] [--repeats 1] [override ...]

Three demo jobs (experiment=demo_table, row (0), seeds 1-3, --steps updates each) as one `local_gpus` sweep with
max_parallel=2: two run together, the third starts when one ends and finishes alone, as the CPU demo's seventh job
does. Side by side (alternating, --repeats rounds): jobs following the free cores (trainer.follow_free_cores=true:
every core, fewer while the others hold them; not reproducible) against the launcher's default, a fixed share
(trainer.threads = cores // 2, fixed for the job's life). Printed: each sweep's wall time, the training tokens/s of
the jobs that started together and of the third.
Targets: the sweep ≥ 1.1× faster, and the jobs that ran together no slower (≥ 0.95×): giving way costs nothing.
Extra arguments are config overrides for every job.
"""

import json
import os
import statistics
import tempfile
from pathlib import Path

import common
from cpu_bf16 import demo_row, local_sweep

from frozen_sweep.run.directory import RESULT_FILE

PARALLEL = 2


def sweep(directory: Path, overrides: list[str]) -> tuple[float, list[float]]:
    """Wall seconds of the 3-job sweep into `directory`, and its jobs' training tokens/s by seed."""
    wall = local_sweep(directory, [*overrides, "seed=1,2,3", f"hydra.launcher.max_parallel={PARALLEL}"])
    records = [json.loads(p.read_text()) for p in directory.rglob(RESULT_FILE)]
    assert len(records) == 3, f"expected 3 results under {directory}, found {len(records)}"
    return wall, [record["train_tokens_per_s"] for record in sorted(records, key=lambda record: record["seed"])]


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--steps", type=int, default=400, help="updates per job")
    p.add_argument("overrides", nargs="*", help="config overrides for every job")
    args = p.parse_args()
    common.setup(args)
    cores = len(os.sched_getaffinity(0))
    share = max(1, cores // PARALLEL)
    modes = {"following the free cores": ["trainer.follow_free_cores=true"], f"fixed {share} (default)": []}
    repeats = 1 if args.quick else args.repeats or 1
    with tempfile.TemporaryDirectory() as tmp:
        steps = 20 if args.quick else args.steps
        config = [*demo_row(args.quick, tmp), "eval.beam=1", "trainer.validate_every_steps=null",
                  f"trainer.max_steps={steps}", "trainer.max_time_s=null", *args.overrides]  # fmt: skip
        if not args.quick:  # the corpus cache, built before the timing
            local_sweep(Path(tmp) / "warm-up", [*config, "trainer.max_steps=1"])
        figures = {mode: [] for mode in modes}
        for r in range(repeats):
            for mode, threads in (modes.items() if r % 2 == 0 else reversed(modes.items())):
                figures[mode].append(sweep(Path(tmp) / f"{len(figures[mode])}-{mode.split()[0]}", [*config, *threads]))
    print(f"{' '.join(config)}: 3 jobs, {PARALLEL} at a time, {repeats} round(s), medians")
    rows, summary = [], {}
    for mode, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        together = statistics.median(statistics.mean(rates[:2]) for _, rates in runs)
        alone = statistics.median(rates[2] for _, rates in runs)
        summary[mode] = wall, together, alone
        rows.append([mode, f"{wall:.1f}", f"{together:,.0f}", f"{alone:,.0f}"])
    common.table(["threads per job", "sweep wall s", "tokens/s, jobs 1-2", "tokens/s, job 3"], rows)
    (now_wall, now_together, now_alone), (old_wall, old_together, old_alone) = summary.values()
    print(f"job 3 (its end alone): {now_alone / old_alone:.2f}x the tokens/s")
    common.verdict("sweep wall time, fixed / following", old_wall / now_wall, 1.1)
    common.verdict("jobs that ran together, following / fixed tokens/s", now_together / old_together, 0.95)


if __name__ == "__main__":
    main()
