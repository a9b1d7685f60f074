"""The fine-tuning study's tables (study=finetune, and classification or regression runs of other studies): per
pre-training and fine-tuning arm, the base's masked-LM perplexity, validation and test accuracy, macro-F1, the
majority class's test accuracy beside them (a regression: Pearson ×100, Spearman ×100, the test MSE and the mean
predictor's beside it), epochs, trainable/all and the wall-clock time to the best validation.

- One table per task × setting (overrides other than finetune.*, freeze, seed and launch keys), titled by the task.
- Pre-training: "none" (finetune.base_checkpoint=scratch, or no study=finetune), else the base's encoder: regular, or
  its reservoir type and pattern (LRLRL), with its own frozen components. Fine-tuned: what trains: "reservoirs
  frozen" (finetune.frozen=keep, the base's reservoir and frozen layers kept frozen), "all trainable" (train), plus
  the job's own freeze pattern ("emb frozen", "emb frozen (re-drawn)" with finetune.freeze_from=seed).
- Accuracies in %, mean ± sample standard deviation over the n seeds; the best validation's accuracy (the weights
  tested) and the test accuracy; majority: the test accuracy of always answering train's most frequent label; the
  mean predictor: always answering train's mean number.
"""

import pandas as pd

from frozen_sweep.tables import untrained
from frozen_sweep.tables.plots import LABELLED_METRICS, METRIC_LABELS, curves, pyplot
from frozen_sweep.tables.render import Table, fraction, number
from frozen_sweep.tables.runs import pattern_label, setting_of

SCRATCH = "scratch"  # finetune.base_checkpoint's value for no pre-training (frozen_sweep.config.finetune)
IGNORED = frozenset({"finetune", "study"})  # keys a fine-tuning table's rows differ in, not its setting
TIME_NOTE = "Time to best: training wall-clock to the best validation (the load of the machine counts)."


def pre_training(record: dict) -> str:
    ft = record.get("finetune") or {}
    if ft.get("base_run", SCRATCH) == SCRATCH:
        return "none"
    reservoir = ft.get("base_reservoir") or {}
    label = f"{reservoir['type']} reservoirs {reservoir['pattern']}" if reservoir.get("reservoir_layers") else "regular"
    frozen = pattern_label({k: v for k, v in (ft.get("base_freeze") or {}).items() if v != "trainable"})
    return label if frozen == "all trainable" else f"{label}, {frozen}"


def fine_tuned(record: dict) -> str:
    ft = record.get("finetune") or {}
    pretrained = ft.get("base_run", SCRATCH) != SCRATCH
    kept = pretrained and ft.get("frozen") == "keep" and ft.get("frozen_params", 0) > 0
    arm = "base's frozen layers frozen" if kept else "all trainable"
    own = pattern_label(record.get("freeze") or {})
    if own != "all trainable":
        arm = f"{own}" + (" (re-drawn)" if pretrained and ft.get("freeze_from") == "seed" else "")
    return arm


def time_to_best_s(record: dict) -> float:
    best = next((e for e in record.get("history") or [] if e["epoch"] == record.get("best_epoch")), None)
    return best["wall_time_s"] if best else float("nan")


def recorded(record: dict, name: str, scale: float = 100.0) -> float:
    """The record's `name` × scale, NaN where it has none."""
    return scale * record[name] if record.get(name) is not None else float("nan")


def beside(runs: pd.DataFrame) -> dict[str, pd.Series]:
    """The columns beside the test metric: a classifier's macro-F1 (older records' test_f1 is it) and majority class;
    a regression's Spearman, test MSE and the mean predictor's."""
    if (runs.metric_name == "pearson").all():
        return {"spearman": runs.record.map(lambda r: recorded(r, "test_spearman")),
                "mse": runs.record.map(lambda r: recorded(r, "test_mse", 1)),
                "floor": runs.record.map(lambda r: r["data"]["mean_predictor"]["test"])}  # fmt: skip
    return {"f1": runs.record.map(lambda r: recorded(r, "test_macro_f1" if "test_macro_f1" in r else "test_f1")),
            "majority": 100 * runs.record.map(lambda r: r["data"]["majority"]["test"])}  # fmt: skip


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    extra = beside(runs)
    runs = runs.assign(
        test=100 * runs.test_metric, valid=100 * runs.best_metric, **extra,
        untrained=runs.get("untrained", pd.Series(None, index=runs.index, dtype=object)),
        base_ppl=runs.record.map(lambda r: (r.get("finetune") or {}).get("base_test_metric", float("nan"))),
        to_best=runs.record.map(time_to_best_s), epochs=runs.best_epoch,
    )  # fmt: skip
    return runs.groupby(["pre_training", "fine_tuned"], sort=False).agg(
        base_ppl=("base_ppl", "mean"), valid=("valid", "mean"), valid_std=("valid", "std"), test=("test", "mean"),
        test_std=("test", "std"), **{name: (name, "mean") for name in extra}, epochs=("epochs", "mean"),
        ratio=("trainable_ratio", "mean"), to_best=("to_best", "mean"), n=("test", "count"),
        untrained=("untrained", "count"),  # runs no better than the majority class / the mean (tables.untrained)
    ).reset_index()  # fmt: skip


def spread(mean: pd.Series, std: pd.Series, n: pd.Series) -> pd.Series:
    cells = mean.map(number)
    return cells.mask(n > 1, cells + " ± " + std.map(number))


def display(summary: pd.DataFrame) -> pd.DataFrame:
    metric = "Accuracy %" if "majority" in summary else "Pearson ×100"  # a classifier's table, or a regression's
    if "majority" in summary:
        extra = {("", "Macro-F1 %"): summary.f1.map(number), ("", "Majority %"): summary.majority.map(number)}
    else:
        extra = {("", "Spearman ×100"): summary.spearman.map(number),
                 ("", "MSE"): summary.mse.map(lambda x: number(x, 3)),
                 ("", "Mean predictor MSE"): summary.floor.map(lambda x: number(x, 3))}  # fmt: skip
    columns = {
        ("", "Pre-training"): summary.pre_training,
        ("", "Fine-tuned"): summary.fine_tuned,
        ("", "Base MLM PPL"): summary.base_ppl.map(number),
        (metric, "valid"): spread(summary.valid, summary.valid_std, summary.n),
        (metric, "test"): spread(summary.test, summary.test_std, summary.n).mask(
            summary.untrained > 0, spread(summary.test, summary.test_std, summary.n) + untrained.MARK),
        **extra,
        ("", "Epochs"): summary.epochs.map(lambda e: number(e, 2)),
        ("", "Trainable/All"): summary.ratio.map(fraction),
        ("", "Time to best"): summary.to_best.map(lambda s: "–" if pd.isna(s) else f"{s / 60:.1f} min"),
        ("", "n"): summary.n.astype(str),
    }
    return pd.DataFrame(columns).set_axis(pd.Index([""] * len(summary), name="section"))


def class_balance(record: dict) -> str:
    data = record["data"]
    if "numbers" in data:  # a regression's
        test, floor = data["numbers"]["test"], data["mean_predictor"]
        return (f"Test set: {test['count']:,} examples, mean {test['mean']:.3g} (std {test['std']:.3g}); mean "
                f"predictor: train's mean {floor['value']:.3g}, test MSE {floor['test']:.3g}.")  # fmt: skip
    counts = data["label_counts"]["test"]
    total = sum(counts.values())
    shares = ", ".join(f"{label} {100 * n / total:.0f}%" for label, n in counts.items())
    return f"Test set: {total:,} examples ({shares}); majority class: {data['majority']['label']} (train's)."


def finetune_tables(runs: pd.DataFrame) -> list[Table]:
    done = runs[(runs.status == "completed") & ((runs.study == "finetune") | runs.metric_name.isin(LABELLED_METRICS))]
    if done.empty:
        return []
    done = done.assign(
        pre_training=done.record.map(pre_training), fine_tuned=done.record.map(fine_tuned),
        setting=done.record.map(lambda r: setting_of([str(o) for o in r["overrides"]], IGNORED)),
    )  # fmt: skip
    order = {"none": 0}
    done = done.assign(order=done.pre_training.map(lambda p: order.get(p, 1))).sort_values(["order", "pre_training"])
    tables = []
    for (task, setting, metric_name), table_runs in done.groupby(["task", "setting", "metric_name"], sort=False):
        title = " · ".join(filter(None, [task, "fine-tuning", " ".join(setting)]))
        seeds = ", ".join(map(str, sorted(set(table_runs.seed))))
        notes = [class_balance(table_runs.record.iloc[0]), f"Seeds: {seeds}. {TIME_NOTE}"]
        summary = summarise(table_runs)
        notes += [untrained.NOTE] * bool(summary.untrained.any())
        tables.append(Table(title, metric_name, display(summary), table_runs, notes, plot_metric))
    return tables


def plot_metric(table: Table, path) -> None:
    """The validation metric (accuracy %, Pearson ×100) against training updates, one colour per arm, a line per
    seed."""
    plt = pyplot()
    runs = table.runs.assign(label=table.runs.pre_training + " / " + table.runs.fine_tuned)
    points = curves(runs)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (label, arm) in enumerate(points.groupby("label", sort=False)):
        for j, (_, run) in enumerate(arm.groupby("path", sort=False)):
            ax.plot(run.step, 100 * run.valid_metric, color=f"C{i % 10}", marker=".", label=None if j else label)
    label = "accuracy (%)" if table.metric_name == "accuracy" else f"{METRIC_LABELS[table.metric_name]} (×100)"
    ax.set(xlabel="training updates", ylabel=f"validation {label}", title=table.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
