"""The command line: every study's tables from the runs under the given paths."""

import argparse
import sys
from pathlib import Path
from typing import Optional

import pandas as pd

from frozen_sweep.collect.freeze_tables import freeze_tables
from frozen_sweep.collect.plots import plot_tables
from frozen_sweep.collect.relearn_tables import relearn_tables
from frozen_sweep.collect.render import Table, csv, latex, markdown, problems
from frozen_sweep.collect.reservoir_tables import reservoir_tables
from frozen_sweep.collect.runs import load_runs
from frozen_sweep.paper import REFERENCES, Reference
from frozen_sweep.results import RESULT_FILE


def build_tables(runs: pd.DataFrame, reference: Optional[Reference] = None) -> list[Table]:
    """The tables of every study found among the runs (freeze patterns first)."""
    return freeze_tables(runs, reference) + reservoir_tables(runs) + relearn_tables(runs)


def main(argv: Optional[list[str]] = None) -> int:
    from frozen_sweep import collect

    parser = argparse.ArgumentParser(prog="python -m frozen_sweep.collect", description=collect.__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="directories to search for result.json, or result.json files")
    parser.add_argument("--format", choices=("md", "latex", "csv"), default="md",
                        help="GitHub Markdown (default), booktabs LaTeX, or CSV with one row per run")
    parser.add_argument("--out", type=Path, help="write the tables here instead of stdout")
    parser.add_argument("--plot", type=Path, help="figures, e.g. curves.png (one file per table)")
    parser.add_argument("--reference", choices=sorted(REFERENCES), help="the paper's numbers beside ours")
    args = parser.parse_args(argv)

    for path in args.paths:
        if not Path(path).exists():
            print(f"collect: {path}: no such file or directory", file=sys.stderr)
    runs = load_runs(args.paths)
    if runs.empty:
        print(f"collect: no {RESULT_FILE} under {' '.join(args.paths)}", file=sys.stderr)
        return 1
    tables = build_tables(runs, REFERENCES.get(args.reference))
    text = csv(runs) if args.format == "csv" else (markdown if args.format == "md" else latex)(tables, runs)
    if args.out:
        args.out.write_text(text)
        print(f"collect: wrote {args.out}: {len(tables)} tables from {len(runs)} runs", file=sys.stderr)
        for r in problems(runs).itertuples():  # in the file too, but easy to miss there
            print(f"collect: not included: {r.path} ({r.status}: {r.reason})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.plot:
        for path in plot_tables(tables, args.plot):
            print(f"collect: wrote {path}", file=sys.stderr)
    return 0
