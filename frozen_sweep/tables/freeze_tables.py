"""The freeze study's tables: the paper's rows (EMB/ATT/FFN ✓/✗), test metric, epochs to convergence, trainable/all.

- One table per task × model × setting. A run's setting is its overrides other than the freeze pattern, the seed and
  the keys that only say how it was launched (runs.NEUTRAL_KEYS); runs of one setting that differ only in seed are
  averaged, runs that differ in anything else (say trainer.lr) land in separate tables, titled by what differs.
- Rows carry the paper's labels in the paper's order and sections; a freeze pattern the paper has no row for comes
  last, labelled by its pattern. EMB/ATT/FFN: ✓ trainable, ✗ frozen, with the init when it is not random.
- BLEU / PPL / MLM PPL: the test metric, mean ± sample standard deviation over the n runs (no ± when n = 1); MLM PPL
  is a masked LM's perplexity on the masked positions, and its table adds their arg-max accuracy ("Masked acc.").
- Epochs: epochs_to_convergence, the epoch of the best validation when early stopping ended the run. When a budget
  (max_time_s, max_epochs, max_steps) ended a run first, that run counts with its best_epoch and the cell is marked
  "≥": a lower bound, since the run had not converged.
- p vs (0), where runs saved their test translations: paired bootstrap against row (0), seed by seed (significance);
  the largest p over a row's seeds, and † on its BLEU when every seed's p < 0.05.
- A row that never learned (⊘, tables.untrained), or any row when (0) never learned, gets no p vs (0), no † and no
  ratio to (0): a comparison with a model that learned nothing says nothing.
"""

from typing import Optional

import pandas as pd

from frozen_sweep.tables import untrained
from frozen_sweep.tables.paper import BASELINE, SECTION_OF, Reference
from frozen_sweep.tables.plots import LABELLED_METRICS, METRIC_LABELS, plot_convergence
from frozen_sweep.tables.render import Table, fraction, mean_std, number
from frozen_sweep.tables.runs import completed, per_setting
from frozen_sweep.tables.significance import ALPHA, MARK

OTHER_SECTION = "Freeze patterns without a paper row"
DOUBTFUL = "‡"  # a paper cell its footnote questions († marks significance)
SIGNIFICANCE_NOTE = (
    f"p vs (0): paired bootstrap resampling (sacrebleu, 1,000 resamples) of each run's test translations against "
    f"the (0) run with the same seed; the largest p over the row's seeds (k/n: only k of its n seeds could be "
    f"tested). {MARK}: p < {ALPHA} for every seed. ✓/✗ of the findings do not depend on it."
)
LOWER_BOUND_NOTE = (
    "≥: a budget (max_time_s, max_epochs or max_steps) ended a run before early stopping did: "
    "the epoch of its best validation, a lower bound on epochs to convergence."
)


def mark(state: str) -> str:
    """✓ / ✗ for trainable / frozen, with the init when it is not random: "✗ (identity)"."""
    kind, _, init = state.partition(":")
    symbol = "✗" if kind == "frozen" else "✓"
    return symbol if init in ("", "random") else f"{symbol} ({init})"


def epochs(x: float) -> str:
    return "–" if pd.isna(x) else f"{round(x, 2):g}"


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per row label: test metric mean, std and count over seeds, epochs, trainable/all."""
    runs = runs.assign(
        epochs=runs.epochs_to_convergence.fillna(runs.best_epoch),
        lower_bound=runs.epochs_to_convergence.isna() & runs.best_epoch.notna(),
        p_vs_0=runs.get("p_vs_0", float("nan")),
        untrained=runs.get("untrained", pd.Series(None, index=runs.index, dtype=object)),
    )
    by_label = runs.groupby("label", sort=False)  # one call per function over its columns: a third faster than
    first = by_label[["emb", "att", "ffn"]].first()  # a named aggregation per column
    means = by_label[["test_metric", "test_accuracy", "epochs", "trainable_ratio"]].mean()
    counts = by_label[["test_metric", "p_vs_0", "untrained"]].count()  # untrained: runs that never learned
    return pd.DataFrame({
        "emb": first.emb, "att": first.att, "ffn": first.ffn, "metric": means.test_metric,
        "std": by_label.test_metric.std(), "n": counts.test_metric, "accuracy": means.test_accuracy,
        "epochs": means.epochs, "lower_bound": by_label.lower_bound.any(), "ratio": means.trainable_ratio,
        "p": by_label.p_vs_0.max(), "tested": counts.p_vs_0, "untrained": counts.untrained,
    })  # fmt: skip


def p_cells(summary: pd.DataFrame) -> pd.Series:
    """The largest p over a row's tested seeds, "k/n" when not all of its n seeds could be tested."""
    cells = summary.p.map(lambda p: "–" if pd.isna(p) else f"{p:.3f}")
    partly = (summary.tested > 0) & (summary.tested < summary.n)
    return cells.mask(partly, cells + " (" + summary.tested.astype(str) + "/" + summary.n.astype(str) + ")")


def display(summary: pd.DataFrame, metric: str, reference: Optional[Reference]) -> pd.DataFrame:
    """The summary as the paper prints it, indexed by section; columns are (group, name) pairs so that LaTeX can
    group the reference columns under one heading. With a reference: the paper's cells and both fractions of (0)."""
    epoch_cells = summary.epochs.map(epochs)
    untrained_pair = (summary.untrained > 0) | (summary.untrained.get(BASELINE, 0) > 0)  # this row or (0)
    columns = {
        ("", "Row"): summary.index,
        ("", "EMB"): summary.emb.map(mark),
        ("", "ATT"): summary.att.map(mark),
        ("", "FFN"): summary.ffn.map(mark),
        ("", metric): mean_std(summary),
    }
    if summary.accuracy.notna().any():
        columns[("", "Masked acc.")] = summary.accuracy.map(lambda x: number(100 * x) + "%" if pd.notna(x) else "–")
    if summary.tested.any():  # † only between two trained rows
        significant = (summary.tested == summary.n) & (summary.p < ALPHA) & ~untrained_pair
        columns[("", metric)] = columns[("", metric)].mask(significant, columns[("", metric)] + MARK)
        columns[("", "p vs (0)")] = p_cells(summary).mask(untrained_pair, "–")
    columns[("", metric)] = columns[("", metric)].mask(summary.untrained > 0, columns[("", metric)] + untrained.MARK)
    columns |= {
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
            ("Paper", "Trainable/All"): ratio_cells.mask(doubtful, ratio_cells + DOUBTFUL),
            (f"{metric} / (0)", "ours"): (summary.metric / ours_0).map(fraction).mask(untrained_pair, "–"),
            (f"{metric} / (0)", "paper"): (paper.metric / paper_0).map(fraction),
        }
    sections = summary.index.map(lambda label: SECTION_OF.get(label, OTHER_SECTION)).rename("section")
    return pd.DataFrame(columns).set_axis(sections)


def freeze_tables(runs: pd.DataFrame, reference: Optional[Reference] = None) -> list[Table]:
    """One table per task × model × setting, from the completed freeze-study runs only."""
    tables = []
    done = completed(runs, "freeze")
    done = done[~done.metric_name.isin(LABELLED_METRICS)]  # classifiers and regressions: the fine-tuning tables
    for (task, data, model), metric_name, setting, table_runs in per_setting(done, ["task", "data", "model"]):
        metric = METRIC_LABELS.get(metric_name, metric_name)
        summary = summarise(table_runs)
        footnotes = [LOWER_BOUND_NOTE] if summary.lower_bound.any() else []
        footnotes += [SIGNIFICANCE_NOTE] if summary.tested.any() else []
        footnotes += [untrained.NOTE] if summary.untrained.any() else []
        if reference:
            footnotes.append(f"Paper: {reference.title}. {metric} / (0): as a fraction of row (0).")
            if summary.index.isin(reference.doubtful_ratios).any():
                footnotes.append(f"{DOUBTFUL} {reference.footnote}.")
        title = " · ".join(filter(None, [task, data, model, setting]))
        rows = display(summary, metric, reference)
        tables.append(Table(title, metric_name, rows, table_runs, footnotes, plot=plot_convergence))
    return tables
