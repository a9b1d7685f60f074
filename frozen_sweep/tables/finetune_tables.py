"""The fine-tuning study's tables (classification and regression runs: study=finetune's and other studies'): per
pre-training and fine-tuning arm, the base's masked-LM perplexity, the metrics the task reports (its records'
`report`: GLUE's for a GLUE task, e.g. F1 and accuracy for MRPC; else the stop metric, then accuracy and macro-F1, or
Pearson ×100 and Spearman ×100), the majority class's test accuracy beside them (a regression: the test MSE and the
mean predictor's), epochs, trainable/all and the wall-clock time to the best validation.

- One table per task × data × setting (overrides other than finetune.*, bases.*, model, freeze, seed and launch
  keys), titled by the task and the data it read (a hub dataset and config, a directory; nothing more for the
  embedded corpus).
- Pre-training: "none" (finetune.base_checkpoint=scratch, or no study=finetune), a pretrained checkpoint's name and
  class, else the base's encoder: regular, or its reservoir type and pattern (LRLRL), with its own frozen components.
  Fine-tuned: what trains: "reservoirs frozen" (finetune.frozen=keep, the base's reservoir and frozen layers kept
  frozen), "all trainable" (train), plus the job's own freeze pattern ("emb frozen", "emb frozen (re-drawn)" with
  finetune.freeze_from=seed, "emb frozen (pretrained)" from a checkpoint's values), its frozen layers ("layers FFTT
  frozen") and re-initialised top layers ("top 1 re-initialised"). Each row shows its parameter count (runs of
  another size are another row: e.g. a scratch row of its own model).
- Accuracies and F1 in %, correlations ×100: the first reported metric as mean ± sample standard deviation over the
  n seeds, at the best validation (the weights tested) and on test; the others' test means; majority: the test
  accuracy of always answering train's most frequent label; the mean predictor: always answering train's mean number.
"""

import pandas as pd

from frozen_sweep.tables import untrained
from frozen_sweep.run.record import best_entry
from frozen_sweep.tables.plots import LABELLED_METRICS, curves, pyplot
from frozen_sweep.tables.render import Table, fraction, number, parameters
from frozen_sweep.tables.reported import column, table_report, value
from frozen_sweep.tables.runs import DATA_KEYS, pattern_label, setting_of

SCRATCH = "scratch"  # finetune.base_checkpoint's value for no pre-training (frozen_sweep.config.finetune)
# keys a fine-tuning table's rows differ in, not its setting, and the data's, which its title names (runs.data_read)
# (a base's overrides, `bases.NAME=[…]`: the pre-training column names the base; the model's keys: a row's parameter
# count tells the sizes of a table's rows apart, a scratch row sized otherwise stays beside the others)
IGNORED = frozenset({"finetune", "study", "bases", "model"}) | DATA_KEYS
TIME_NOTE = "Time to best: training wall-clock to the best validation (the load of the machine counts)."


def pre_training(record: dict) -> str:
    ft = record.get("finetune") or {}
    if ft.get("base_run", SCRATCH) == SCRATCH:
        return "none"
    checkpoint = ft.get("base_checkpoint")
    if checkpoint:  # a pretrained checkpoint: its name (a directory's last part) and class
        return f"{checkpoint['source'].rstrip('/').rsplit('/', 1)[-1]} ({checkpoint['architecture']})"
    reservoir = ft.get("base_reservoir") or {}
    label = f"{reservoir['type']} reservoirs {reservoir['pattern']}" if reservoir.get("reservoir_layers") else "regular"
    frozen = pattern_label({k: v for k, v in (ft.get("base_freeze") or {}).items() if v != "trainable"})
    return label if frozen == "all trainable" else f"{label}, {frozen}"


def fine_tuned(record: dict) -> str:
    ft = record.get("finetune") or {}
    pretrained = ft.get("base_run", SCRATCH) != SCRATCH
    checkpoint = bool(ft.get("base_checkpoint"))  # a pretrained checkpoint froze nothing of its own
    kept = pretrained and not checkpoint and ft.get("frozen") == "keep" and ft.get("frozen_params", 0) > 0
    arm = "base's frozen layers frozen" if kept else "all trainable"
    own = pattern_label(record.get("freeze") or {})
    if own != "all trainable":
        from_seed = pretrained and ft.get("freeze_from") == "seed"
        arm = f"{own}" + (" (re-drawn)" if from_seed else " (pretrained)" if checkpoint else "")
    frozen_layers, reinit_top = ft.get("frozen_layers") or "", ft.get("reinit_top")  # absent from older records
    layers = [f"layers {frozen_layers} frozen"] * ("F" in frozen_layers)
    layers += [f"top {reinit_top} re-initialised"] * bool(reinit_top)
    return ", ".join(layers) if layers and arm == "all trainable" else ", ".join([arm, *layers])


def time_to_best_s(record: dict) -> float:
    best = best_entry(record)
    return best["wall_time_s"] if best else float("nan")


def floors(runs: pd.DataFrame) -> dict[str, pd.Series]:
    """What a test score is read against: a classifier's majority class; a regression's test MSE and the mean
    predictor's."""
    if (runs.metric_name == "pearson").all():
        return {"mse": runs.record.map(lambda r: float("nan") if r.get("test_mse") is None else r["test_mse"]),
                "floor": runs.record.map(lambda r: r["data"]["mean_predictor"]["test"])}  # fmt: skip
    return {"majority": 100 * runs.record.map(lambda r: r["data"]["majority"]["test"])}


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per arm: means (and standard deviations) over its seeds of the reported metrics on valid and test
    ("<metric>_valid", "<metric>_test"), of the test metric (`test`: what the findings compare), the floors and the
    rest."""
    scores = {f"{m}_{split}": runs.record.map(lambda r, m=m, split=split: value(r, m, split))
              for m in table_report(runs) for split in ("valid", "test")}  # fmt: skip
    extra = floors(runs)
    runs = runs.assign(
        test=100 * runs.test_metric, **scores, **extra,
        untrained=runs.get("untrained", pd.Series(None, index=runs.index, dtype=object)),
        base_ppl=runs.record.map(lambda r: (r.get("finetune") or {}).get("base_test_metric", float("nan"))),
        to_best=runs.record.map(time_to_best_s), epochs=runs.best_epoch,
    )  # fmt: skip
    spreads = {f"{name}_std": (name, "std") for name in ("test", *scores)}
    return runs.groupby(["pre_training", "fine_tuned", "params_total"], sort=False, dropna=False).agg(
        base_ppl=("base_ppl", "mean"), test=("test", "mean"), **spreads,
        **{name: (name, "mean") for name in (*scores, *extra)}, epochs=("epochs", "mean"),
        ratio=("trainable_ratio", "mean"), to_best=("to_best", "mean"), n=("test", "count"),
        untrained=("untrained", "count"),  # runs no better than the majority class / the mean (tables.untrained)
    ).reset_index()  # fmt: skip


def spread(mean: pd.Series, std: pd.Series, n: pd.Series) -> pd.Series:
    cells = mean.map(number)
    return cells.mask(n > 1, cells + " ± " + std.map(number))


def display(summary: pd.DataFrame, report: list[str], record: dict) -> pd.DataFrame:
    """The arms' rows: the first reported metric on valid and test (± over seeds), the others on test, the floors;
    `record`, one of the table's, names the F1's positive class."""
    first, *others = report
    valid, test = (spread(summary[f"{first}_{s}"], summary[f"{first}_{s}_std"], summary.n) for s in ("valid", "test"))
    scores = {(column(first, record), "valid"): valid,
              (column(first, record), "test"): test.mask(summary.untrained > 0, test + untrained.MARK),
              **{("", column(m, record)): summary[f"{m}_test"].map(number) for m in others}}  # fmt: skip
    if "majority" in summary:
        extra = {("", "Majority %"): summary.majority.map(number)}
    else:
        extra = {("", "MSE"): summary.mse.map(lambda x: number(x, 3)),
                 ("", "Mean predictor MSE"): summary.floor.map(lambda x: number(x, 3))}  # fmt: skip
    columns = {
        ("", "Pre-training"): summary.pre_training,
        ("", "Fine-tuned"): summary.fine_tuned,
        ("", "Parameters"): summary.params_total.map(parameters),
        ("", "Base MLM PPL"): summary.base_ppl.map(number),
        **scores,
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
    done = runs[(runs.status == "completed") & runs.metric_name.isin(LABELLED_METRICS)]  # a language model's: none
    if done.empty:
        return []
    done = done.assign(
        pre_training=done.record.map(pre_training), fine_tuned=done.record.map(fine_tuned),
        setting=done.record.map(lambda r: setting_of([str(o) for o in r["overrides"]], IGNORED)),
    )  # fmt: skip
    order = {"none": 0}
    done = done.assign(order=done.pre_training.map(lambda p: order.get(p, 1))).sort_values(["order", "pre_training"])
    tables = []
    keys = ["task", "data", "setting", "metric_name"]
    for (task, data, setting, metric_name), table_runs in done.groupby(keys, sort=False):
        title = " · ".join(filter(None, [task, data, "fine-tuning", " ".join(setting)]))
        seeds = ", ".join(map(str, sorted(set(table_runs.seed))))
        notes = [class_balance(table_runs.record.iloc[0]), f"Seeds: {seeds}. {TIME_NOTE}"]
        summary = summarise(table_runs)
        notes += [untrained.NOTE] * bool(summary.untrained.any())
        rows = display(summary, table_report(table_runs), table_runs.record.iloc[0])
        tables.append(Table(title, metric_name, rows, table_runs, notes, plot_metric))
    return tables


def plot_metric(table: Table, path) -> None:
    """The first reported metric on validation (accuracy %, MCC ×100, ...) against training updates, one colour per
    arm, a line per seed."""
    plt = pyplot()
    runs = table.runs.assign(label=table.runs.pre_training + " / " + table.runs.fine_tuned)
    points = curves(runs)
    metric = table_report(table.runs)[0]
    key = f"valid_{metric}" if f"valid_{metric}" in points else "valid_metric"  # older records: their metric only
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (label, arm) in enumerate(points.groupby("label", sort=False)):
        for j, (_, run) in enumerate(arm.groupby("path", sort=False)):
            ax.plot(run.step, 100 * run[key], color=f"C{i % 10}", marker=".", label=None if j else label)
    ax.set(xlabel="training updates", ylabel=f"validation {column(metric, table.runs.record.iloc[0])}",
           title=table.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
