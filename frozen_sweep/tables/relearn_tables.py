"""The layer reset-and-relearn study's tables: per reset layer, the validation before the reset, right after it and
at the end of re-training, and the training examples it took to recover, as % of what the base run consumed.

- One table per task × model × base run × setting (overrides other than relearn.*, seed and launch keys); sections
  are the stacks (encoder, decoder), one row per run: layer index, reset parts (with the init when not random, "+
  neighbours" when the layers next to it trained too), trainable/all, test metric.
- Valid loss and valid BLEU: pre (the base model), post (right after the reset), final (last validation).
- To recover, % of base (frozen_sweep.study.relearn): training sentences seen at the first validation within x of the
  pre-reset value, as % of the sentences the base run had seen at its best validation; "✗ (>b)" when the budget, b%
  of them, ran out first. A pretrained base (a checkpoint, not a run of ours): the training sentences themselves,
  against the checkpoint's own validation on the corpus before the reset.
"""

import os
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from frozen_sweep.tables.plots import METRIC_LABELS, pyplot
from frozen_sweep.tables.render import Table, number
from frozen_sweep.tables.runs import completed, per_setting, setting_of

DEFINITIONS = (
    "Pre: the base model; post: right after the reset; final: the last validation of re-training. To recover: "
    "training sentences seen at the first validation within x of the pre-reset value (loss ≤ (1+x)·pre, "
    "BLEU ≥ (1−x)·pre), as % of the sentences the base run had seen at its best validation (a pretrained base: the "
    "sentences themselves); ✗ (>b): not within the budget of b% (sentences)."
)


def short_path(path: str) -> str:
    """A path relative to the working directory when it lies under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def parts_label(rl: dict) -> str:
    label = rl["parts"] if rl["init"] == "random" else f"{rl['parts']} ({rl['init']})"
    return label + " + neighbours" if rl["train_neighbours"] else label


def recovery_cell(entry: dict, rl: dict) -> str:
    """% of the base's sentences, or a pretrained base's sentences; ✗ with the budget when not recovered."""
    if entry["sentences"] is None:
        budget = rl["budget_fraction"]
        return f"✗ (>{100 * budget:.0f})" if budget is not None else f"✗ (>{rl['final']['train_sentences']:,})"
    return f"{entry['sentences']:,}" if entry["fraction"] is None else number(100 * entry["fraction"])


def recovery_group(rl: dict) -> str:
    """The recovery columns' heading: a pretrained base's recovery is counted in sentences."""
    return "To recover, % of base" if rl["base_examples_to_best"] else "To recover, training sentences"


def recovery_heading(metric: str, threshold: float) -> str:
    """A recovery column's name: "loss 1%", "BLEU 5%"."""
    return f"{METRIC_LABELS.get(metric, metric)} {100 * threshold:g}%"


def order(record: dict) -> tuple:
    rl = record["relearn"]
    return rl["stack"] != "encoder", rl["layer"], rl["parts"], rl["init"], rl["train_neighbours"], record["seed"]


def rows(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One display row per run (in table order), indexed by section: the stack."""
    recovery_keys = [(e["metric"], e["threshold"]) for e in runs.record.iloc[0]["relearn"]["examples_to_recover"]]
    sections, table = [], []
    for run in runs.itertuples():
        rl = run.record["relearn"]
        stages = {stage.split("_")[0]: rl[stage] for stage in ("pre_reset", "post_reset", "final")}
        row = {
            ("", "Layer"): str(rl["layer"]),
            ("", "Parts"): parts_label(rl),
            ("", "Trainable/All"): number(run.trainable_ratio, 3),
            ("", f"Test {metric}"): number(run.test_metric),
            **{("Valid loss", stage): number(v["valid_loss"], 2) for stage, v in stages.items()},
        }
        if rl["pre_reset"].get("valid_bleu") is not None:
            row |= {("Valid BLEU", stage): number(v["valid_bleu"]) for stage, v in stages.items()}
        found = {(e["metric"], e["threshold"]): e for e in rl["examples_to_recover"]}
        for name, x in recovery_keys:
            row[(recovery_group(rl), recovery_heading(name, x))] = recovery_cell(found[name, x], rl)
        if runs.seed.nunique() > 1:
            row[("", "Seed")] = str(run.seed)
        sections.append(rl["stack"])
        table.append(row)
    return pd.DataFrame(table, index=pd.Index(sections, name="section"))


def base_note(rl: dict) -> str:
    base = rl["base_examples_to_best"]
    if base is None:
        pretrained = rl["base_checkpoint"]
        commit = f"commit {pretrained['commit'][:12]}" if pretrained["commit"] else "a local directory"
        return (f"Base: the pretrained {pretrained['architecture']} {short_path(rl['base_run'])} ({commit}, "
                f"{pretrained['params_total']:,} parameters); its validation loss on this corpus, read with its own "
                f"tokenizer, before the reset: {number(rl['pre_reset']['valid_loss'], 3)}.")  # fmt: skip
    approx = "≈" if base["estimated"] else ""
    return (
        f"Base run {short_path(rl['base_run'])}: best validation after {approx}{base['sentences']:,} training "
        f"sentences; its test score {number(rl['base_test_metric'])}."
    )


def relearn_tables(runs: pd.DataFrame) -> list[Table]:
    """One table per task × model × base run × setting, from the completed relearn runs."""
    runs = completed(runs, "relearn")
    if runs.empty:
        return []
    runs = runs.assign(
        base_run=runs.record.map(lambda r: r["relearn"]["base_run"]),
        setting=runs.record.map(lambda r: setting_of([str(o) for o in r["overrides"]], frozenset({"relearn"}))),
    )
    tables = []
    for (task, data, model, base_run), metric_name, setting, table_runs in per_setting(
        runs, ["task", "data", "model", "base_run"], sort=False
    ):
        table_runs = table_runs.loc[sorted(table_runs.index, key=lambda i: order(table_runs.record[i]))]
        metric = METRIC_LABELS.get(metric_name, metric_name)
        title = " · ".join(filter(None, [task, data, model, f"relearn from {short_path(base_run)}", setting]))
        footnotes = [base_note(table_runs.record.iloc[0]["relearn"]), DEFINITIONS]
        tables.append(Table(title, metric_name, rows(table_runs, metric), table_runs, footnotes, plot=plot_recovery))
    for (task, data), metric_name, setting, table_runs in per_setting(runs, ["task", "data"], sort=False):
        if table_runs.base_run.nunique() > 1:
            tables.append(size_table(" · ".join(filter(None, [task, data])), metric_name, setting, table_runs))
    return tables


def base_size(rl: dict) -> tuple[int, int, int]:
    """(encoder layers, decoder layers, d_model) of a run's base: its record's, or the base run's config.yaml (records
    from before the record held it)."""
    if "base_size" in rl:
        return tuple(rl["base_size"])
    model = OmegaConf.load(Path(rl["base_run"]) / "config.yaml").model
    return model.encoder_layers, model.decoder_layers, model.d_model


def size_table(heading: str, metric_name: str, setting: str, runs: pd.DataFrame) -> Table:
    """Bases of several sizes side by side: per base and stack, the examples each reset layer took to recover, as %
    of the base's, from the bottom layer to the top; "✗" where the budget ran out first."""
    table, sections, bases = [], [], []
    sizes = {base_run: base_size(record["relearn"]) for base_run, record in zip(runs.base_run, runs.record)}
    for base_run, base_runs in sorted(runs.groupby("base_run"), key=lambda item: sizes[item[0]]):
        encoder_layers, decoder_layers, width = sizes[base_run]
        first = base_runs.record.iloc[0]["relearn"]
        bases.append(f"N={encoder_layers}+{decoder_layers}, D={width}: {short_path(base_run)}")
        for stack, depth in (("encoder", encoder_layers), ("decoder", decoder_layers)):
            layers = sorted((r["relearn"] for r in base_runs.record if r["relearn"]["stack"] == stack),
                            key=lambda rl: rl["layer"])  # fmt: skip
            if not layers:
                continue
            row = {("Base", "N"): str(depth), ("Base", "D"): str(width),
                   ("Base", f"Test {METRIC_LABELS.get(metric_name, metric_name)}"): number(first["base_test_metric"]),
                   ("", "Layers reset"): ", ".join(str(rl["layer"]) for rl in layers)}  # fmt: skip
            for entry in first["examples_to_recover"]:
                cells = [recovery_cell(recovery(rl, entry), rl) for rl in layers]
                heading = recovery_heading(entry["metric"], entry["threshold"])
                row[(f"{recovery_group(first)}, bottom → top layer", heading)] = " · ".join(cells)
            table.append(row)
            sections.append(stack)
    title = " · ".join(filter(None, [heading, "relearn by base size (depth N, width D)", setting]))
    footnotes = ["Bases: " + "; ".join(bases) + ".", DEFINITIONS]
    return Table(title, metric_name, pd.DataFrame(table, index=pd.Index(sections, name="section")), runs, footnotes)


def recovery(rl: dict, like: dict) -> dict:
    """The run's examples-to-recover entry for the metric and threshold of `like`."""
    return next(e for e in rl["examples_to_recover"] if (e["metric"], e["threshold"]) == (like["metric"], like["threshold"]))


def plot_recovery(table: Table, path) -> None:
    """Recovery curves, one line per run: validation loss (and BLEU) against training sentences seen, as % of the
    base run's examples to its best; the dashed line is the base model's value before the reset."""
    plt = pyplot()
    records = [r["relearn"] for r in table.runs.record]
    panels = [("valid_loss", "validation loss")]
    if records[0]["pre_reset"].get("valid_bleu") is not None:
        panels.append(("valid_bleu", "validation BLEU"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels):
        for i, (record, rl) in enumerate(zip(table.runs.record, records)):
            base = rl["base_examples_to_best"]
            curve = [rl["post_reset"], *record["history"]]
            x = [100 * p["train_sentences"] / base["sentences"] if base else p["train_sentences"] for p in curve]
            name = f"{rl['stack']}.{rl['layer']} {parts_label(rl)}"
            ax.plot(x, [p[key] for p in curve], color=f"C{i % 10}", marker=".", linewidth=1.2, label=name)
        ax.axhline(records[0]["pre_reset"][key], color="black", linestyle="--", linewidth=1, label="before the reset")
        seen = "training sentences seen" + (", % of the base run's to its best" if records[0]["base_examples_to_best"]
                                            else "")  # fmt: skip
        ax.set(xlabel=seen, ylabel=label)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(title="reset", fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.suptitle(table.title)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
