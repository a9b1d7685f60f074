"""How long the collector takes on a large sweep: 1,000 synthetic records, then 10,000 of which half are duplicates.

    python benchmarks/collect_records.py [--records N --duplicates FRACTION] [--quick: 40 records, each case]

Writes the records (several tasks, models, learning rates, all nine rows plus an unlisted pattern, several seeds, 20
validations each; about 2% failed, 1% running, 1% corrupt) to a temporary directory, then times, in this process:
loading, building the tables, rendering each format, and separately the plots; and the whole command line
(`python -m frozen_sweep.collect DIR --format md`, interpreter start-up and imports included). The second case adds,
as collecting several sweep folders that share jobs (or `outputs/` after reruns) does, copies of the first half's
records in a second folder: the collector flags them as duplicates. Target: under 2 s to collect either (the command
line's wall time; its CPU time and the load average are printed beside it).
"""

import itertools
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

from frozen_sweep.run.directory import write_result
from frozen_sweep.run.record import RunResult
from frozen_sweep.tables import paper
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.plots import plot_tables
from frozen_sweep.tables.render import csv, latex, markdown
from frozen_sweep.tables.runs import load_runs

FROZEN = {
    "(0)": (), "(1)": ("emb",), "(2)": ("att",), "(3)": ("ffn",), "(2.1)": ("att",), "(3.1)": ("ffn",),
    "(4)": ("emb", "ffn"), "(5)": ("emb", "att"), "(6)": ("att", "ffn"), None: ("att", "other"),
}  # fmt: skip
SETUPS = [("bible_es_en", "demo", "bleu"), ("bible_es_en", "tiny", "bleu"), ("text_files", "base", "bleu"),
          ("lm_bible_en", "lm_demo", "ppl")]  # fmt: skip


def synthetic_record(rng: random.Random, task: str, model: str, metric_name: str, row, lr: str, seed: int) -> dict:
    init = "identity" if row in ("(2.1)", "(3.1)") else "orthogonal" if row is None else "random"
    freeze = {c: f"frozen:{init}" if c in FROZEN[row] else "trainable" for c in ("emb", "att", "ffn", "other")}
    final = rng.uniform(5, 30) if metric_name == "bleu" else rng.uniform(30, 200)
    history = [
        {"epoch": e, "step": 500 * e, "wall_time_s": 60.0 * e, "train_loss": 8 / e, "valid_loss": 7 / e,
         "valid_ppl": 1000 / e, "valid_bleu": final * e / 20, "valid_metric": final * e / 20}
        for e in range(1, 21)
    ]  # fmt: skip
    budget_ended = rng.random() < 0.3
    status = rng.choices(["completed", "failed", "running"], [97, 2, 1])[0]
    return RunResult(
        status=status, error="RuntimeError: synthetic failure\nTraceback ..." if status == "failed" else None,
        task=task, model=model, freeze=freeze, row=row, seed=seed, params_total=10_000_000,
        trainable_ratio=rng.uniform(0.1, 1), metric_name=metric_name, test_metric=final, best_metric=final,
        best_epoch=20, epochs_to_convergence=None if budget_ended else 20,
        stopped_reason="max_time" if budget_ended else "early_stop", history=history,
        overrides=[f"task={task}", f"model={model}", "freeze=x", f"seed={seed}", f"trainer.lr={lr}"],
    ).to_dict()  # fmt: skip


def write_records(root: Path, n: int, duplicates: float) -> None:
    """n records: the first n × (1 - duplicates) distinct runs, the rest copies of the first ones in rerun/."""
    rng = random.Random(0)
    distinct = round(n * (1 - duplicates))
    configs = itertools.cycle(itertools.product(SETUPS, ("5e-4", "1e-3"), [*paper.ROWS, None]))
    for i, ((task, model, metric_name), lr, row) in enumerate(itertools.islice(configs, distinct)):
        run_dir = root / f"{task}-{model}" / f"run{i:05d}"
        run_dir.mkdir(parents=True)
        if rng.random() < 0.01:
            (run_dir / "result.json").write_text('{"status": "completed", "task": ')  # torn write
        else:
            record = synthetic_record(rng, task, model, metric_name, row, lr, 1 + i // 80)
            write_result(run_dir, RunResult(**{**record, "fingerprint": {"sha256": f"{i:064x}"}}))
    originals = sorted(root.glob("*/run*"))
    for i in range(n - distinct):
        original = originals[i % len(originals)]
        copy = root / "rerun" / f"{original.parent.name}-{original.name}-{i // len(originals)}"
        copy.mkdir(parents=True)
        (copy / "result.json").write_bytes((original / "result.json").read_bytes())


def timed(label: str, fn):
    started = time.perf_counter()
    result = fn()
    print(f"  {label:<36} {time.perf_counter() - started:7.3f} s")
    return result


def collect(tmp: Path, records: int, duplicates: float) -> None:
    """One case: write the records, time each stage in this process and the whole command line."""
    root = tmp / f"outputs{records}-{duplicates}"
    print(f"{records} records, {duplicates:.0%} of them duplicates:")
    timed(f"write {records} records", lambda: write_records(root, records, duplicates))
    print("in process:")
    started = time.perf_counter()
    runs = timed("load", lambda: load_runs([str(root)]))
    tables = timed("build tables", lambda: build_tables(runs, paper.REFERENCES["paper_big"]))
    for name, render in (("markdown", markdown), ("latex", latex)):
        timed(f"render {name}", lambda: render(tables, runs))
    timed("render csv", lambda: csv(runs))
    print(f"  {'total (load + tables + 3 formats)':<36} {time.perf_counter() - started:7.3f} s")
    plots = timed(f"plots ({len(tables)} figures)", lambda: plot_tables(tables, tmp / "curves.png"))
    command = [sys.executable, "-m", "frozen_sweep.collect", str(root), "--out", str(tmp / "t.md")]
    started, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    timed("command line, md (imports included)", lambda: subprocess.run(command, check=True, capture_output=True))
    command_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  {'command line CPU time (user + sys)':<36} {cpu_s:7.3f} s at load average {load}")
    counts = runs.status.value_counts().to_dict()
    print(f"{len(runs)} runs {counts}, {len(tables)} tables, {len(plots)} plots")
    common.verdict(f"command line on {records} records", command_s, 2.0, unit=" s", at_most=True)


def main() -> None:
    parser = common.parser(__doc__)  # --threads is accepted for `make bench`: the collector is single-threaded
    parser.add_argument("--records", type=int, help="one case of N records instead of the two")
    parser.add_argument("--duplicates", type=float, default=0.0, help="with --records: the fraction of copies")
    args = parser.parse_args()
    cases = [(args.records, args.duplicates)] if args.records else [(1000, 0.0), (10_000, 0.5)]
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at start")
    with tempfile.TemporaryDirectory() as tmp:
        for records, duplicates in cases:
            collect(Path(tmp), 40 if args.quick else records, duplicates)


if __name__ == "__main__":
    main()
