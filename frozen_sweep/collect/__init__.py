"""Result records → the studies' tables and figures.

    python -m frozen_sweep.collect outputs/demo_table [--format md|latex|csv] [--out FILE] [--plot FILE.png]
                                   [--reference paper_big|paper_big_ffn1024|paper_lm] [--claims [--min-runs N]]

- `runs`: every result.json under the paths → one DataFrame row per run, each tagged with its study (the record's
  `study`: freeze patterns, reservoir layers, layer reset and relearn).
- `freeze_tables` (the paper's tables), then one module per other study: each turns its completed runs into `Table`s
  and says how to plot them.
- `significance`: paired bootstrap of each BLEU run against row (0) with the same seed (p, † in the tables).
- `claims`: with --claims, the papers' findings (frozen_sweep.paper) checked under each table: ✓ / ✗ / not enough runs.
- `render`: Markdown, LaTeX, CSV for every study. Failed, running and unreadable records are listed after the tables
  (in CSV: rows with their status), never averaged.
"""

from frozen_sweep.collect.cli import build_tables, main
from frozen_sweep.collect.plots import plot_tables
from frozen_sweep.collect.render import Table, csv, latex, markdown
from frozen_sweep.collect.runs import load_runs
from frozen_sweep.paper import REFERENCES

__all__ = ["REFERENCES", "Table", "build_tables", "csv", "latex", "load_runs", "main", "markdown", "plot_tables"]
