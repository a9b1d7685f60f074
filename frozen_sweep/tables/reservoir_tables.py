"""The reservoir study's tables (Shen et al. 2021): what frozen random layers cost in quality and buy in speed.

- One table per task × model × setting; the reservoir keys (reservoir=..., reservoir.*), the stack depths and the
  AUCC cut-off are the table's rows, not separate settings. Seeds are averaged (n).
- Rows: updatable (trainable) layers, reservoir layers, type and pattern of the reservoir stack, backskipping; the test
  metric; AUCC (frozen_sweep.metrics.efficiency, T̂ in a footnote); time to target: the first validation reaching
  TARGET_FRACTION of the best validation metric of the all-trainable runs of the same depth (for perplexity: at most
  best / TARGET_FRACTION); time to best: the time of the best validation; trainable/all;
- the validation metric at the same update count for every run (the last validation they all made): it does not
  depend on the machine's speed or load, and it tells per-update learning from per-second speed;
- times are on the runs' clock (frozen_sweep.metrics.clock), which a footnote names: the wall clock depends on the
  machine's load, the calibrated one (updates × each row's step time) does not.
"""

from typing import Optional

import pandas as pd

from frozen_sweep.metrics.efficiency import time_to_target
from frozen_sweep.run.record import best_entry
from frozen_sweep.tables import untrained
from frozen_sweep.metrics.clock import CLOCK_NOTES, time_key
from frozen_sweep.tables.plots import METRIC_LABELS, curves, higher_is_better, plotted_metric, pyplot, time_axis
from frozen_sweep.tables.render import Table, fraction, mean_std, number
from frozen_sweep.tables.runs import completed, per_setting, setting_of

TARGET_FRACTION = 0.9
SWEPT_KEYS = frozenset(
    {"reservoir", "model.encoder_layers", "model.decoder_layers", "trainer.aucc_cutoff_s", "trainer.step_time_s"}
)


def reservoir_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """The record fields the reservoir table needs, one row per run."""
    records = runs.record
    reservoir = pd.DataFrame([r.get("reservoir") or {} for r in records], index=runs.index)
    return runs.assign(
        type=reservoir.get("type"),
        pattern=reservoir.get("pattern"),
        reservoir_layers=reservoir.get("reservoir_layers"),
        updatable_layers=reservoir.get("updatable_layers"),
        backskip=reservoir.get("backskip").fillna(False).astype(bool),
        aucc=[r.get("aucc") for r in records],
        aucc_cutoff_s=[r.get("aucc_cutoff_s") for r in records],
        clock=[r.get("clock", "wall") for r in records],
        time_to_best_s=[(best_entry(r) or {}).get(time_key(r)) for r in records],
        setting=[setting_of(r.get("overrides") or [], SWEPT_KEYS) for r in records],
    )


def add_time_to_target(runs: pd.DataFrame) -> pd.DataFrame:
    """time_to_target_s, against the all-trainable runs with the same number of layers (None without such runs)."""
    higher = higher_is_better(runs.metric_name.iloc[0])
    depth = runs.updatable_layers + runs.reservoir_layers
    baseline = runs[runs.reservoir_layers == 0]
    best = baseline.best_metric.groupby(depth[baseline.index]).agg("max" if higher else "min")
    targets = depth.map(best * TARGET_FRACTION if higher else best / TARGET_FRACTION)
    times = [
        None if pd.isna(target) else time_to_target(record["history"], target, higher, time_key=time_key(record))
        for record, target in zip(runs.record, targets)
    ]
    return runs.assign(time_to_target_s=pd.to_numeric(pd.Series(times, index=runs.index, dtype=object)))


def validations(history: list[dict]) -> dict[int, float]:
    """{update: validation metric} of a run's history."""
    return {
        e["step"]: e["valid_metric"] for e in history if e.get("step") is not None and e.get("valid_metric") is not None
    }


def add_metric_at_shared_step(runs: pd.DataFrame) -> tuple[pd.DataFrame, Optional[int]]:
    """metric_at_step: each run's validation metric at the last update at which every run validated, and that
    update (None, and no metric, when they share none)."""
    by_run = [validations(history) for history in runs.history]
    shared = set.intersection(*map(set, by_run)) if by_run else set()
    step = max(shared) if shared else None
    values = pd.Series([v.get(step) for v in by_run], index=runs.index, dtype=object)
    return runs.assign(metric_at_step=pd.to_numeric(values)), step


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per reservoir setting, all-trainable first within each depth: test metric mean, std, n, efficiency."""
    keys = ["updatable_layers", "reservoir_layers", "type", "pattern", "backskip"]
    runs = runs.assign(
        type=runs.type.where(runs.reservoir_layers > 0, "–"), depth=runs.updatable_layers + runs.reservoir_layers
    )
    runs = runs.sort_values(["depth", "reservoir_layers", "type", "pattern", "backskip"])
    summary = runs.groupby(keys, sort=False, dropna=False).agg(
        metric=("test_metric", "mean"),
        std=("test_metric", "std"),
        n=("test_metric", "count"),
        metric_at_step=("metric_at_step", "mean"),
        aucc=("aucc", "mean"),
        time_to_target_s=("time_to_target_s", "mean"),
        time_to_best_s=("time_to_best_s", "mean"),
        ratio=("trainable_ratio", "mean"),
        untrained=("untrained", "count"),  # runs that never learned (tables.untrained)
    )
    return summary.reset_index()


def display(summary: pd.DataFrame, metric: str, step: Optional[int]) -> pd.DataFrame:
    minutes = lambda s: "–" if pd.isna(s) else f"{s / 60:.1f} min"  # noqa: E731
    columns = {
        ("", "Updatable"): summary.updatable_layers.astype(str),
        ("", "Reservoir"): summary.reservoir_layers.astype(str),
        ("", "Type"): summary.type,
        ("", "Pattern"): summary.pattern + summary.backskip.map({True: " (backskip)", False: ""}),
        ("", metric): mean_std(summary).mask(summary.untrained > 0, mean_std(summary) + untrained.MARK),
        **({("", f"{metric} @ {step:,} updates"): summary.metric_at_step.map(number)} if step is not None else {}),
        ("", "AUCC"): summary.aucc.map(number),
        ("", f"Time to {TARGET_FRACTION:.0%}"): summary.time_to_target_s.map(minutes),
        ("", "Time to best"): summary.time_to_best_s.map(minutes),
        ("", "Trainable/All"): summary.ratio.map(fraction),
        ("", "n"): summary.n.astype(str),
    }
    return pd.DataFrame(columns).set_axis(pd.Index([""] * len(summary), name="section"))


def footnotes(runs: pd.DataFrame, metric: str, step: Optional[int]) -> list[str]:
    cutoffs = sorted(set(runs.aucc_cutoff_s.dropna().round(1)))
    cutoff = (
        f"T̂ = {cutoffs[0]:g} s"
        if len(cutoffs) == 1
        else f"T̂ differs between runs ({', '.join(map(str, cutoffs))} s): AUCCs do not compare"
    )
    direction = "higher" if higher_is_better(runs.metric_name.iloc[0]) else "lower"
    at_step = [
        f"{metric} @ {step:,} updates: validation {metric} after the same number of updates (the last validation "
        "every run made); unlike the time columns, it does not depend on the machine's speed or load."
    ] if step is not None else []  # fmt: skip
    clocks = sorted(set(runs.clock))
    clock = CLOCK_NOTES[clocks[0]] if len(clocks) == 1 else "the runs' clocks differ: their times do not compare"
    return at_step + [
        f"Clock: {clock}.",
        f"AUCC: validation {metric} averaged over the first T̂ seconds of training ({direction} is better); {cutoff}.",
        f"Time to {TARGET_FRACTION:.0%}: first validation within {TARGET_FRACTION:.0%} of the best all-trainable run "
        "of the same depth (– when it never got there, or there is no such run); time to best: the best validation.",
    ]


def reservoir_tables(runs: pd.DataFrame) -> list[Table]:
    done = completed(runs, "reservoir")
    if done.empty:
        return []
    done = reservoir_columns(done)
    tables = []
    for (task, data, model), metric_name, setting, table_runs in per_setting(done, ["task", "data", "model"]):
        metric = METRIC_LABELS.get(metric_name, metric_name)
        table_runs, step = add_metric_at_shared_step(add_time_to_target(table_runs))
        title = " · ".join(filter(None, [task, data, model, "reservoirs", setting]))
        summary = summarise(table_runs)
        notes = footnotes(table_runs, metric, step) + [untrained.NOTE] * bool(summary.untrained.any())
        tables.append(Table(title, metric_name, display(summary, metric, step), table_runs, notes, plot_aucc))
    return tables


def plot_aucc(table: Table, path) -> None:
    """Validation metric against time per run (the clock its AUCC counted on: plots.time_axis), T̂ marked; the legend
    gives each run's AUCC."""
    plt = pyplot()
    runs = table.runs.assign(label=[
        f"{p}{' backskip' if b else ''} {t if r else ''}".strip() + f" (AUCC {number(a)})"
        for p, b, t, r, a in zip(table.runs.pattern, table.runs.backskip, table.runs.type, table.runs.reservoir_layers,
                                 table.runs.aucc)
    ])  # fmt: skip
    points = curves(runs)
    y, ylabel = plotted_metric(points, table.metric_name)
    clock, clock_label = time_axis(runs)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (_, run) in enumerate(points.groupby("path", sort=False)):
        ax.plot(run[clock] / 60, run[y], marker=".", linewidth=1.2, color=f"C{i % 10}", label=run.label.iloc[0])
    for cutoff in set(runs.aucc_cutoff_s.dropna()):
        ax.axvline(cutoff / 60, color="grey", linestyle="--", linewidth=1)
    ax.set(xlabel=f"{clock_label}; dashed: T̂", ylabel=ylabel, title=table.title)
    if not higher_is_better(table.metric_name) and y == "valid_metric":
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
