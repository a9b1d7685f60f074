"""Result records → the paper's tables and convergence plots.

    python -m frozen_sweep.collect outputs/demo_table [--format md|latex|csv] [--out FILE] [--plot FILE.png]
                                   [--reference paper_big|paper_big_ffn1024|paper_lm]

How the tables read:
- One table per task × model × setting. A run's setting is its overrides other than the freeze pattern, the seed and
  the keys that only say how it was launched (NEUTRAL_KEYS); runs of one setting that differ only in seed are
  averaged, runs that differ in anything else (say trainer.lr) land in separate tables, titled by what differs.
- Rows carry the paper's labels in the paper's order and sections; a freeze pattern the paper has no row for comes
  last, labelled by its pattern. EMB/ATT/FFN: ✓ trainable, ✗ frozen, with the init when it is not random.
- BLEU / PPL: the test metric, mean ± sample standard deviation over the n runs (no ± when n = 1).
- Epochs: epochs_to_convergence, the epoch of the best validation when early stopping ended the run. When a budget
  (max_time_s, max_epochs, max_steps) ended a run first, that run counts with its best_epoch and the cell is marked
  "≥": a lower bound, since the run had not converged.
- Failed, running and unreadable records are listed after the tables (in CSV: rows with their status), never averaged.
"""

import argparse
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from frozen_sweep.paper import BASELINE, REFERENCES, ROWS, SECTION_OF, Reference
from frozen_sweep.results import RESULT_FILE, load_result

# Overrides that change where or how a job runs, not what it computes: conf/config.yaml's exclude_keys, and the cache.
NEUTRAL_KEYS = {"name", "force", "trainer.progress", "trainer.threads", "trainer.device", "task.cache_dir"}
COMPONENTS = ("emb", "att", "ffn", "other")
RECORD_KEYS = (
    "seed", "metric_name", "test_metric", "best_metric", "best_epoch", "epochs_to_convergence", "stopped_reason",
    "trainable_ratio", "params_trainable", "params_total", "steps", "wall_time_s",
)  # fmt: skip
CSV_COLUMNS = ["path", "status", "reason", "task", "model", "row", "label", *COMPONENTS, *RECORD_KEYS, "overrides"]
OTHER_SECTION = "Freeze patterns without a paper row"
METRIC_LABELS = {"bleu": "BLEU", "ppl": "PPL"}
LOWER_BOUND_NOTE = (
    "≥: a budget (max_time_s, max_epochs or max_steps) ended a run before early stopping did: "
    "the epoch of its best validation, a lower bound on epochs to convergence."
)


# ---- records → one row per run ---------------------------------------------------------------------------------------


def find_results(paths: list[str]) -> list[Path]:
    """Every result.json under the paths (a path may be a result.json itself), each once."""
    found = set()
    for path in map(Path, paths):
        found.update([path] if path.is_file() else path.rglob(RESULT_FILE))
    return sorted(found)


def setting_of(overrides: list[str]) -> tuple[str, ...]:
    """What makes a run more than a seed of its freeze pattern: its overrides less freeze, seed and NEUTRAL_KEYS.

    The task= and model= choices go too: the record's task and model names already key the table.
    """
    ignored = NEUTRAL_KEYS | {"seed", "freeze", "task", "model"}
    keys = (o.lstrip("+~").partition("=")[0] for o in overrides)
    return tuple(sorted(o for o, key in zip(overrides, keys) if key not in ignored and not key.startswith("freeze.")))


def pattern_label(freeze: dict) -> str:
    """A label for a pattern the paper has no row for, e.g. "att (orthogonal)+other frozen"."""
    groups = {"frozen": [], "trainable": []}
    for component, state in freeze.items():
        kind, _, init = state.partition(":")
        if state != "trainable":
            groups[kind].append(component if init in ("", "random") else f"{component} ({init})")
    return "; ".join(f"{'+'.join(names)} {kind}" for kind, names in groups.items() if names) or "all trainable"


def mark(state: str) -> str:
    """✓ / ✗ for trainable / frozen, with the init when it is not random: "✗ (identity)"."""
    kind, _, init = state.partition(":")
    symbol = "✗" if kind == "frozen" else "✓"
    return symbol if init in ("", "random") else f"{symbol} ({init})"


def why_not_completed(record: dict) -> Optional[str]:
    """The first line of a failed run's error; for a running one, a reminder that it may be dead; None if completed."""
    if record["status"] == "failed":
        return (str(record.get("error") or "").strip() or "no error recorded").splitlines()[0]
    if record["status"] == "running":
        return "no final result: still running, or killed before it could record a failure"
    return None


def run_row(path: Path) -> dict:
    """One run as a flat row; a record that cannot be read becomes status "corrupt" with the reason."""
    try:
        record = load_result(path)
        freeze = record.get("freeze") or {}
        overrides = [str(o) for o in record.get("overrides") or []]
        return {
            "path": str(path),
            "status": record["status"],
            "reason": why_not_completed(record),
            "task": record.get("task"),
            "model": record.get("model"),
            "row": record.get("row"),
            "label": record.get("row") or pattern_label(freeze),
            **{c: freeze.get(c, "trainable") for c in COMPONENTS},
            **{key: record.get(key) for key in RECORD_KEYS},
            "overrides": " ".join(overrides),
            "setting": setting_of(overrides),
            "history": record.get("history") or [],
        }
    except ValueError as e:
        reason = str(e).removeprefix(f"{path}: ")
    except (AttributeError, TypeError, LookupError) as e:  # JSON, but not shaped like a record
        reason = f"malformed record ({type(e).__name__}: {e})"
    return {"path": str(path), "status": "corrupt", "reason": reason}


def load_runs(paths: list[str]) -> pd.DataFrame:
    """All runs under the paths, one row each, in table order (task, model, paper row, seed)."""
    runs = pd.DataFrame([run_row(p) for p in find_results(paths)], columns=[*CSV_COLUMNS, "setting", "history"])
    runs = runs.astype({k: "Int64" for k in ("seed", "params_trainable", "params_total", "steps")})
    runs["order"] = runs.label.map({row: i for i, row in enumerate(ROWS)}).fillna(len(ROWS))
    return runs.sort_values(["task", "model", "order", "label", "seed", "path"], ignore_index=True)


# ---- runs → tables ---------------------------------------------------------------------------------------------------


@dataclass
class Table:
    title: str
    metric_name: str
    rows: pd.DataFrame  # display strings, one row per row label, indexed by section, columns (group, name)
    runs: pd.DataFrame  # the completed runs behind it, for the plots
    footnotes: list[str]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per row label: test metric mean, std and count over seeds, epochs, trainable/all."""
    runs = runs.assign(
        epochs=runs.epochs_to_convergence.fillna(runs.best_epoch),
        lower_bound=runs.epochs_to_convergence.isna() & runs.best_epoch.notna(),
    )
    return runs.groupby("label", sort=False).agg(
        emb=("emb", "first"),
        att=("att", "first"),
        ffn=("ffn", "first"),
        metric=("test_metric", "mean"),
        std=("test_metric", "std"),
        n=("test_metric", "count"),
        epochs=("epochs", "mean"),
        lower_bound=("lower_bound", "any"),
        ratio=("trainable_ratio", "mean"),
    )


def number(x: float, digits: int = 1) -> str:
    return "–" if pd.isna(x) else f"{x:.{digits}f}"


def fraction(x: float) -> str:
    return number(x, 2)


def epochs(x: float) -> str:
    return "–" if pd.isna(x) else f"{round(x, 2):g}"


def display(summary: pd.DataFrame, metric: str, reference: Optional[Reference]) -> pd.DataFrame:
    """The summary as the paper prints it, indexed by section; columns are (group, name) pairs so that LaTeX can
    group the reference columns under one heading. With a reference: the paper's cells and both fractions of (0)."""
    metric_cells, epoch_cells = summary.metric.map(number), summary.epochs.map(epochs)
    columns = {
        ("", "Row"): summary.index,
        ("", "EMB"): summary.emb.map(mark),
        ("", "ATT"): summary.att.map(mark),
        ("", "FFN"): summary.ffn.map(mark),
        ("", metric): metric_cells.mask(summary.n > 1, metric_cells + " ± " + summary["std"].map(number)),
        ("", "Epochs"): epoch_cells.mask(summary.lower_bound, "≥" + epoch_cells),
        ("", "Trainable/All"): summary.ratio.map(fraction),
        ("", "n"): summary.n.astype(str),
    }
    if reference:
        paper = pd.DataFrame.from_dict(reference.rows, orient="index", columns=["metric", "epochs", "ratio"])
        paper = paper.reindex(summary.index)
        ratio_cells, doubtful = paper.ratio.map(fraction), paper.index.isin(reference.doubtful_ratios)
        ours_0, paper_0 = summary.metric.get(BASELINE, float("nan")), reference.rows[BASELINE][0]
        columns |= {
            ("Paper", metric): paper.metric.map(number),
            ("Paper", "Epochs"): paper.epochs.map(epochs),
            ("Paper", "Trainable/All"): ratio_cells.mask(doubtful, ratio_cells + "†"),
            (f"{metric} / (0)", "ours"): (summary.metric / ours_0).map(fraction),
            (f"{metric} / (0)", "paper"): (paper.metric / paper_0).map(fraction),
        }
    sections = summary.index.map(lambda label: SECTION_OF.get(label, OTHER_SECTION)).rename("section")
    return pd.DataFrame(columns).set_axis(sections)


def distinguishing(settings: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Setting → the overrides that tell it apart from the other settings of the same task × model."""
    parsed = {s: dict(o.partition("=")[::2] for o in s) for s in settings}
    keys = sorted({k for overrides in parsed.values() for k in overrides})
    differing = [k for k in keys if len({overrides.get(k) for overrides in parsed.values()}) > 1]
    return {s: " ".join(f"{k}={overrides.get(k, '(default)')}" for k in differing) for s, overrides in parsed.items()}


def build_tables(runs: pd.DataFrame, reference: Optional[Reference] = None) -> list[Table]:
    """One table per task × model × setting, from the completed runs only."""
    done = runs[runs.status == "completed"]
    tables = []
    for (task, model), group in done.groupby(["task", "model"], sort=False, dropna=False):
        names = distinguishing(list(group.setting.unique()))
        for (metric_name, setting), table_runs in group.groupby(["metric_name", "setting"], dropna=False):
            metric = METRIC_LABELS.get(metric_name, metric_name)
            summary = summarise(table_runs)
            footnotes = [LOWER_BOUND_NOTE] if summary.lower_bound.any() else []
            if reference:
                footnotes.append(f"Paper: {reference.title}. {metric} / (0): as a fraction of row (0).")
                if summary.index.isin(reference.doubtful_ratios).any():
                    footnotes.append(f"† {reference.footnote}.")
            title = " · ".join(filter(None, [task, model, names[setting]]))
            tables.append(Table(title, metric_name, display(summary, metric, reference), table_runs, footnotes))
    return tables


# ---- tables → text ---------------------------------------------------------------------------------------------------


def problems(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.loc[runs.status != "completed", ["path", "status", "reason"]]


def alignment(name: str) -> str:
    return "l" if name == "Row" else "c" if name in ("EMB", "ATT", "FFN") else "r"


def markdown(tables: list[Table], runs: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown: a table per task × model × setting, then the runs left out."""

    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", r"\|") for c in cells) + " |"

    rules = {"l": ":--", "c": ":-:", "r": "--:"}
    out = []
    for table in tables:
        columns = table.rows.columns
        out += [f"### {table.title}", "", line(" ".join(filter(None, c)) for c in columns)]
        out.append(line(rules[alignment(name)] for _, name in columns))
        for section, block in table.rows.groupby(level="section", sort=False):
            if section:
                out.append(line([f"*{section}*"] + [""] * (len(columns) - 1)))
            out += [line(cells) for cells in block.itertuples(index=False)]
        out.append("")
        if table.footnotes:
            out += [f"{note}  " for note in table.footnotes] + [""]
    left_out = problems(runs)
    if len(left_out):
        out += [f"### Not included ({len(left_out)} runs)", ""]
        out += [f"- `{r.path}` — {r.status}: {r.reason}" for r in left_out.itertuples()] + [""]
    return "\n".join(out)


LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "≥": r"$\geq$", "≈": r"$\approx$",
    "✓": r"$\checkmark$", "✗": r"$\times$", "†": r"$^\dagger$", "·": "--", "–": "--", "—": "---", "→": r"$\to$",
}  # fmt: skip


def latex_escape(text) -> str:
    return "".join(LATEX_ESCAPES.get(ch, ch) for ch in str(text))


def latex_header(columns: pd.MultiIndex) -> list[str]:
    """Column names, under a row of group headings with \\cmidrule when a reference adds groups."""
    names = " & ".join(latex_escape(name) for _, name in columns) + r" \\"
    groups = [(group, len(list(members))) for group, members in itertools.groupby(columns.get_level_values(0))]
    if len(groups) == 1:
        return [names]
    cells, rules, first = [], [], 1
    for group, width in groups:
        cells.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(group)}}}" if group else " & " * (width - 1))
        rules += [rf"\cmidrule(lr){{{first}-{first + width - 1}}}"] if group else []
        first += width
    return [" & ".join(cells) + r" \\", "".join(rules), names]


def latex(tables: list[Table], runs: pd.DataFrame) -> str:
    """booktabs tables for pdflatex; the preamble needs \\usepackage{booktabs,amssymb} (amssymb: \\checkmark)."""
    out = ["% frozen_sweep.collect tables: \\usepackage{booktabs} and \\usepackage{amssymb} in the preamble"]
    for table in tables:
        columns = table.rows.columns
        spec = "".join(alignment(name) for _, name in columns)
        out += [r"\begin{table}[ht]", r"\centering\small\setlength{\tabcolsep}{4pt}"]
        out.append(rf"\caption{{{latex_escape(table.title)}}}")
        out += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", *latex_header(columns)]
        for section, block in table.rows.groupby(level="section", sort=False):
            out.append(r"\midrule")
            if section:
                out.append(rf"\multicolumn{{{len(columns)}}}{{l}}{{\textit{{{latex_escape(section)}}}}} \\")
            out += [" & ".join(map(latex_escape, cells)) + r" \\" for cells in block.itertuples(index=False)]
        out += [r"\bottomrule", r"\end{tabular}"]
        out += [rf"\par\smallskip{{\footnotesize {latex_escape(note)}\par}}" for note in table.footnotes]
        out += [r"\end{table}", ""]
    out += [f"% not included: {r.path} ({r.status}: {r.reason})" for r in problems(runs).itertuples()]
    return "\n".join(out) + "\n"


def csv(runs: pd.DataFrame) -> str:
    """One row per run, completed or not, with flat columns."""
    return runs[CSV_COLUMNS].to_csv(index=False)


# ---- plots -----------------------------------------------------------------------------------------------------------


def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Every validation of every run, long format: path, label, epoch, wall_time_s, valid_metric, valid_loss..."""
    points = runs[["path", "label", "history"]].explode("history", ignore_index=True).dropna(subset=["history"])
    return points.drop(columns="history").join(pd.DataFrame(points.history.tolist(), index=points.index))


def plot_table(table: Table, path: Path) -> None:
    """Validation score against epoch and against wall-clock time, one colour per row label (a line per run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = curves(table.runs)
    metric = METRIC_LABELS.get(table.metric_name, table.metric_name)
    by_metric = "valid_metric" in points and points.valid_metric.notna().all()  # null when validation BLEU is off
    y, ylabel = ("valid_metric", f"validation {metric}") if by_metric else ("valid_loss", "validation loss")
    fig, (by_epoch, by_time) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for i, (label, label_points) in enumerate(points.groupby("label", sort=False)):
        for j, (_, run) in enumerate(label_points.groupby("path", sort=False)):
            style = dict(color=f"C{i % 10}", marker=".", linewidth=1.2, label=None if j else label)
            by_epoch.plot(run.epoch, run[y], **style)
            by_time.plot(run.wall_time_s / 60, run[y], **style)
    by_epoch.set(xlabel="epoch", ylabel=ylabel)
    by_time.set(xlabel="wall-clock time (min)")
    if by_metric and table.metric_name == "ppl":
        by_epoch.set_yscale("log")
    for ax in (by_epoch, by_time):
        ax.grid(alpha=0.3)
    by_time.legend(title="row", fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle(table.title)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_tables(tables: list[Table], path: Path) -> list[Path]:
    """One figure per table; with several tables, FILE.png becomes FILE-<i>-<title>.png."""
    written = []
    for i, table in enumerate(tables, 1):
        slug = re.sub(r"[^\w.=-]+", "_", table.title.replace(" · ", "-"))
        out = path if len(tables) == 1 else path.with_name(f"{path.stem}-{i}-{slug}{path.suffix}")
        plot_table(table, out)
        written.append(out)
    return written


# ---- command line ----------------------------------------------------------------------------------------------------


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m frozen_sweep.collect", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="directories to search for result.json, or result.json files")
    parser.add_argument("--format", choices=("md", "latex", "csv"), default="md",
                        help="GitHub Markdown (default), booktabs LaTeX, or CSV with one row per run")
    parser.add_argument("--out", type=Path, help="write the tables here instead of stdout")
    parser.add_argument("--plot", type=Path, help="convergence plots, e.g. curves.png (one file per table)")
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


if __name__ == "__main__":
    sys.exit(main())
