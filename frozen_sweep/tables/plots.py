"""Figures: validation curves per table (against epoch and time: the calibrated clock where every run counted on it,
else the wall clock), and the training loss every N steps from the runs' metrics.jsonl where they have one; one file
per table."""

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from frozen_sweep.metrics.clock import CALIBRATED, time_key
from frozen_sweep.metrics.efficiency import WALL
from frozen_sweep.metrics.sinks import read_metrics
from frozen_sweep.run.directory import METRICS_FILE

METRIC_LABELS = {"bleu": "BLEU", "ppl": "PPL", "mlm_ppl": "MLM PPL", "accuracy": "Accuracy", "pearson": "Pearson"}
PERPLEXITIES = frozenset({"ppl", "mlm_ppl"})  # metrics where lower is better
SLUG_CHARS = 80  # of a table's title in its plot's file name: far below a file system's 255 bytes
LABELLED_METRICS = ("accuracy", "pearson")  # classifiers' and regressions' metric_name: the fine-tuning tables'


def higher_is_better(metric_name: str) -> bool:
    return metric_name not in PERPLEXITIES


def pyplot():
    """matplotlib without a display; imported on first use so that the tables do not pay for it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Every validation of every run, long format: path, label, epoch, wall_time_s, valid_metric, valid_loss..."""
    points = runs[["path", "label", "history"]].explode("history", ignore_index=True).dropna(subset=["history"])
    return points.drop(columns="history").join(pd.DataFrame(points.history.tolist(), index=points.index))


def time_axis(runs: pd.DataFrame) -> tuple[str, str]:
    """The time axis (a history key) and its name: the calibrated clock when every run counted its budget and AUCC on
    it (updates × trainer.step_time_s: the same at any load), else the wall clock."""
    if len(runs) and all(time_key(record) == CALIBRATED for record in runs.record):
        return CALIBRATED, "calibrated time (min): updates × trainer.step_time_s"
    return WALL, "wall-clock time (min)"


def train_curves(run_dirs: Iterable[Path]) -> dict[Path, pd.DataFrame]:
    """{run directory: its train records (step, epoch, wall_time_s, loss, ...)}, for runs with a metrics.jsonl."""
    found = {}
    for run_dir in map(Path, run_dirs):
        if (run_dir / METRICS_FILE).is_file():
            records = [r for r in read_metrics(run_dir / METRICS_FILE) if r.get("event") == "train"]
            if records:
                found[run_dir] = pd.DataFrame(records)
    return found


def plotted_metric(points: pd.DataFrame, metric_name: str) -> tuple[str, str]:
    """The validation metric when every point has one (BLEU may be off), else the validation loss: (column, label)."""
    if "valid_metric" in points and points.valid_metric.notna().all():
        return "valid_metric", f"validation {METRIC_LABELS.get(metric_name, metric_name)}"
    return "valid_loss", "validation loss"


def over_seeds(points: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """A row's points averaged over its runs step by step (its seeds validate, or log, at the same steps): the mean
    of `x` and of `y`, y's min and max (the band), and how many runs have the step."""
    return points.groupby("step", sort=True).agg(
        x=(x, "mean"), mean=(y, "mean"), low=(y, "min"), high=(y, "max"), runs=(y, "count")
    )


def sharing(runs: pd.DataFrame) -> str:
    """How the runs shared the machine, from their records: "2 jobs at a time, 1 thread each"."""
    records = list(runs.record)
    jobs = sorted({r.get("jobs_at_a_time") or 1 for r in records})
    threads = sorted({r["threads"] for r in records if r.get("threads")})
    text = f"{', '.join(map(str, jobs))} job{'s' * (jobs != [1])} at a time"
    text += f", {', '.join(map(str, threads))} thread{'s' * (threads != [1])} each" if threads else ""
    return text + (", following the free cores" if any(r.get("follow_free_cores") for r in records) else "")


def draw(ax, points: pd.DataFrame, x: str, y: str, scale: float = 1.0, **style) -> None:
    """The mean over seeds as a line, the min–max over seeds as a band (when there are several)."""
    mean = over_seeds(points, x, y)
    ax.plot(mean.x / scale, mean["mean"], **style)
    if mean.runs.max() > 1:
        ax.fill_between(mean.x / scale, mean.low, mean.high, color=style["color"], alpha=0.2, linewidth=0)


def plot_convergence(table, path: Path) -> None:
    """Validation score against epoch and against time (time_axis), one colour per row label: the mean over its seeds
    with their min–max band, the seeds counted in the legend; a third panel with the training loss against time
    when the runs logged metrics.jsonl. The time panel says how many jobs shared the machine, with how many threads."""
    plt = pyplot()
    points = curves(table.runs)
    y, ylabel = plotted_metric(points, table.metric_name)
    train = train_curves(Path(path).parent for path in table.runs.path)
    clock, clock_label = time_axis(table.runs)
    if clock == CALIBRATED:  # the training loss's points on the same clock: its update × the run's step time
        step_time = {Path(p).parent: record["step_time_s"] for p, record in zip(table.runs.path, table.runs.record)}
        train = {d: steps.assign(**{CALIBRATED: steps.step * step_time[d]}) for d, steps in train.items()}
    fig, axes = plt.subplots(1, 3 if train else 2, figsize=(16 if train else 11, 4.2))
    by_epoch, by_time = axes[:2]
    by_time.sharey(by_epoch)
    for i, (label, label_points) in enumerate(points.groupby("label", sort=False)):
        seeds = label_points.path.nunique()
        style = dict(color=f"C{i % 10}", marker=".", linewidth=1.2)
        draw(by_epoch, label_points, "epoch", y, label=f"{label} ({seeds} seed{'s' * (seeds != 1)})", **style)
        draw(by_time, label_points, clock, y, scale=60, **style)
        logged = [steps.assign(path=str(run_dir)) for run_dir, steps in train.items()
                  if str(run_dir / "result.json") in set(label_points.path)]  # fmt: skip
        if logged:
            draw(axes[2], pd.concat(logged), clock, "loss", scale=60, color=style["color"], linewidth=0.8)
    by_epoch.set(xlabel="epoch", ylabel=ylabel)
    by_time.set(xlabel=clock_label, title=sharing(table.runs))
    if train:
        axes[2].set(xlabel=clock_label, ylabel="training loss (metrics.jsonl)")
    if y == "valid_metric" and not higher_is_better(table.metric_name):
        by_epoch.set_yscale("log")
    for ax in axes:
        ax.grid(alpha=0.3)
    legend = dict(title="row: mean over seeds, band min–max", fontsize="small", loc="upper left",
                  bbox_to_anchor=(1.02, 1))  # fmt: skip
    axes[-1].legend(*by_epoch.get_legend_handles_labels(), **legend)
    fig.suptitle(table.title)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_tables(tables: list, path: Path) -> list[Path]:
    """One figure per table, drawn by the table's study; with several tables, FILE.png becomes
    FILE-<i>-<title>.png, the title cut to SLUG_CHARS and a hash of the whole (a title holds a table's overrides)."""
    written = []
    for i, table in enumerate(tables, 1):
        slug = re.sub(r"[^\w.=-]+", "_", table.title.replace(" · ", "-"))
        if len(slug) > SLUG_CHARS:
            slug = f"{slug[:SLUG_CHARS - 13]}-{hashlib.sha256(slug.encode()).hexdigest()[:12]}"
        out = path if len(tables) == 1 else path.with_name(f"{path.stem}-{i}-{slug}{path.suffix}")
        (table.plot or plot_convergence)(table, out)
        written.append(out)
    return written
