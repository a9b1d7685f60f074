"""`python -m frozen_sweep.collect PATHS`: every study's tables from the runs under the given paths."""

import gc

if __name__ == "__main__":  # the command line: a short process whose objects (the records) live to its end, and
    gc.disable()  # that makes no garbage cycles worth freeing: Python's cyclic collector walking the records and the
    # imports was a tenth of its CPU time (docs/performance.md). In process, main() leaves the collector as it is.

import argparse
import sys
from pathlib import Path
from typing import Optional

from frozen_sweep.run.directory import RESULT_FILE
from frozen_sweep.system.files import write_text_atomic
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.paper import REFERENCES
from frozen_sweep.tables.plots import plot_tables
from frozen_sweep.tables.render import checks_csv, csv, latex, markdown, problems
from frozen_sweep.tables.duplicates import DISAGREES
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.tables.significance import with_p_values

SHOWN_LEFT_OUT = 20  # runs left out named one by one on stderr; beyond them a count (the file lists them all)


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, got {text!r}")
    return int(text)


def report_left_out(left_out, out: Path) -> None:
    """The runs the tables leave out, on stderr: each one up to SHOWN_LEFT_OUT (in the file too, but easy to miss
    there), then a count per status; duplicates (thousands, after reruns) only as a count. Every one is in `out`."""
    duplicate = left_out.status == "duplicate"
    others = left_out[~duplicate]
    for r in others.head(SHOWN_LEFT_OUT).itertuples():
        print(f"collect: not included: {r.path} ({r.status}: {r.reason})", file=sys.stderr)
    if len(others) > SHOWN_LEFT_OUT:
        counts = others.status.iloc[SHOWN_LEFT_OUT:].value_counts()
        print(f"collect: not included: {len(others) - SHOWN_LEFT_OUT} more "
              f"({', '.join(f'{n} {status}' for status, n in counts.items())}; listed in {out})", file=sys.stderr)
    if duplicate.any():
        print(f"collect: not included: {duplicate.sum()} duplicates of runs counted once (listed in {out})",
              file=sys.stderr)  # fmt: skip
    disagree = left_out.reason[duplicate].str.contains(DISAGREES, regex=False).sum()
    if disagree:
        print(f"collect: {disagree} of them gave another test metric than the run kept (in the tables' footnotes)",
              file=sys.stderr)  # fmt: skip


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m frozen_sweep.collect", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="directories to search for result.json, or result.json files")
    parser.add_argument("--format", choices=("md", "latex", "csv"), default="md",
                        help="GitHub Markdown (default), booktabs LaTeX, or CSV with one row per run")
    parser.add_argument("--out", type=Path, help="write the tables here instead of stdout")
    parser.add_argument("--plot", type=Path, help="figures, e.g. curves.png (one file per table)")
    parser.add_argument("--reference", choices=sorted(REFERENCES), help="the paper's numbers beside ours")
    parser.add_argument("--claims", action="store_true",
                        help="check the papers' findings (frozen_sweep/tables/paper.py: F1-F5, E1, B1-B3 on freeze tables, "
                             "R1 on reservoir tables) under each table: the numbers compared and ✓ / ✗ / 'not enough "
                             "runs'; with --reference, the same check on the paper's numbers. CSV: a second CSV of "
                             "the checks, after a blank line on stdout, or in FILE.claims.csv beside --out FILE")
    parser.add_argument("--min-runs", type=positive, default=1, metavar="N",
                        help="with --claims: a row with fewer runs (seeds) counts as missing (default 1)")
    args = parser.parse_args(argv)

    for path in args.paths:
        if not Path(path).exists():
            print(f"collect: {path}: no such file or directory", file=sys.stderr)
    runs = load_runs(args.paths)
    if runs.empty:
        print(f"collect: no {RESULT_FILE} under {' '.join(args.paths)}", file=sys.stderr)
        return 1
    runs = with_p_values(runs)
    tables = build_tables(runs, REFERENCES.get(args.reference), args.claims, args.min_runs)
    text = csv(runs) if args.format == "csv" else (markdown if args.format == "md" else latex)(tables, runs)
    checks = checks_csv(tables) if args.format == "csv" and args.claims else None
    if args.out:
        write_text_atomic(args.out, text)  # a reader (or a rerun killed halfway) never sees half a table
        print(f"collect: wrote {args.out}: {len(tables)} tables from {len(runs)} runs", file=sys.stderr)
        if checks:
            claims_out = args.out.with_suffix(".claims.csv")
            write_text_atomic(claims_out, checks)
            print(f"collect: wrote {claims_out}: the findings checked", file=sys.stderr)
        report_left_out(problems(runs), args.out)
    else:
        sys.stdout.write(text + (f"\n{checks}" if checks else ""))
    if args.plot:
        for path in plot_tables(tables, args.plot):
            print(f"collect: wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
