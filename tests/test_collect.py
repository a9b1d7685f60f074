"""The collector on hand-made records: layout, averaging, what is left out, formats, plots, CLI; experiment configs."""

import io
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from frozen_sweep.tables import paper
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.paper import REFERENCES
from frozen_sweep.tables import plots
from frozen_sweep.tables.plots import SLUG_CHARS, plot_tables
from frozen_sweep.tables.provenance import sweep_commands
from frozen_sweep.tables.render import csv, latex, markdown
from frozen_sweep.tables.runs import load_runs
from tests.conftest import CONF, ROOT, compose_config, fake_run_dir
from tests.helpers.records import write_run


@pytest.fixture
def sweep(tmp_path) -> Path:
    """Nine paper rows (three seeds of row (0)), an unlisted pattern, an lr variant, a failed, a running, a corrupt."""
    root = tmp_path / "outputs"
    for seed, bleu in zip((1, 2, 3), (10.0, 11.0, 12.0)):
        write_run(root, "(0)", bleu, seed, overrides=["trainer.progress=false"] * (seed == 3))  # changes nothing
    for i, row in enumerate(paper.ROWS[1:], 1):
        write_run(root, row, 10.0 - i)
    write_run(root, {"att": "frozen:orthogonal", "other": "frozen:random"}, 7.5)
    write_run(root, "(1)", 3.0, overrides=["trainer.lr=5e-4"], epochs_to_convergence=None, best_epoch=7)
    write_run(root, "(0)", 99.0, seed=4, status="failed", error="RuntimeError: out of memory\nTraceback ...")
    write_run(root, "(0)", 99.0, seed=5, status="running", test_metric=None)
    (root / "corrupt").mkdir()
    (root / "corrupt" / "result.json").write_text('{"status": "compl')
    return root


def table_lines(text: str, title: str) -> list[str]:
    """The Markdown table under the heading `### {title}`."""
    block = text.split(f"### {title}\n\n", 1)[1].split("\n\n", 1)[1]  # after the provenance line
    return [line for line in block.split("\n\n", 1)[0].splitlines() if line.startswith("|")]


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split(" | ")]


def md(root: Path, reference=None) -> str:
    runs = load_runs([str(root)])
    return markdown(build_tables(runs, REFERENCES.get(reference)), runs)


def test_rows_are_ordered_and_labelled_like_the_paper(sweep):
    lines = table_lines(md(sweep), "bible_es_en · demo · trainer.lr=(default)")
    assert cells(lines[0]) == ["Row", "EMB", "ATT", "FFN", "BLEU", "Epochs", "Trainable/All", "n"]
    labels = [cells(line)[0] for line in lines[2:]]
    assert labels == [
        "(0)", "*One frozen component*", "(1)", "(2)", "(3)", "*Identity-initialised frozen component*", "(2.1)",
        "(3.1)", "*Multiple frozen components*", "(4)", "(5)", "(6)", "*Freeze patterns without a paper row*",
        "att (orthogonal)+other frozen",
    ]  # fmt: skip
    rows = {cells(line)[0]: cells(line) for line in lines[2:]}
    assert rows["(2.1)"][1:4] == ["✓", "✗ (identity)", "✓"]
    assert rows["(4)"][1:] == ["✗", "✓", "✗", "4.0", "4", "0.30", "1"]
    assert rows["att (orthogonal)+other frozen"][1:4] == ["✓", "✗ (orthogonal)", "✓"]


def test_seeds_are_averaged_with_std_and_count(sweep):
    rows = {cells(line)[0]: cells(line) for line in table_lines(md(sweep), "bible_es_en · demo · trainer.lr=(default)")}
    assert rows["(0)"][4:] == ["11.0 ± 1.0", "4", "1.00", "3"]


def test_the_provenance_line_gives_a_key_typed_for_some_runs_its_default_value_for_the_others(tmp_path):
    # seed 1 by default beside a later `seed=2` sweep: the line must not read seed=2 alone
    write_run(tmp_path, "(0)", 10.0, seed=1, overrides=["trainer.lr=5e-4"])
    second = write_run(tmp_path, "(0)", 11.0, seed=2, overrides=["trainer.lr=5e-4"])
    for result in tmp_path.rglob("result.json"):
        record = json.loads(result.read_text())
        record["overrides"] = [o for o in record["overrides"] if not (o == "seed=1")]
        result.write_text(json.dumps(record))
        OmegaConf.save(OmegaConf.create({"seed": record["seed"], "trainer": {"lr": 5e-4}}), result.parent / "config.yaml")
    assert "seed=2" in json.loads(second.read_text())["overrides"]
    line = md(tmp_path).split("Made by ", 1)[1].split(" · ", 1)[0]
    assert line == "`python -m frozen_sweep -m freeze=(0) name=sweep trainer.lr=5e-4 seed=1,2`", line


def test_the_provenance_line_gives_runs_that_are_not_one_sweep_as_the_commands_that_make_them():
    runs = [["experiment=reservoir_mt", f"reservoir={kind}", f"seed={seed}"] for kind in ("none", "ffn") for seed in (1, 2)]
    runs += [["experiment=reservoir_mt", "reservoir=ffn", "reservoir.backskip=true", "seed=1"]]
    runs += [["experiment=reservoir_mt", "model.encoder_layers=2", "reservoir=none", f"seed={seed}"] for seed in (1, 2)]
    configs = [OmegaConf.create({"seed": int(run[-1][-1]), "model": {"encoder_layers": 2 if "model.encoder_layers=2" in run
                                 else 4}, "reservoir": {"backskip": "reservoir.backskip=true" in run}}) for run in runs]
    assert sweep_commands(runs, configs.__getitem__) == [
        "python -m frozen_sweep -m experiment=reservoir_mt reservoir=none,ffn seed=1,2 reservoir.backskip=False model.encoder_layers=4",
        "python -m frozen_sweep -m experiment=reservoir_mt reservoir=ffn seed=1 reservoir.backskip=true model.encoder_layers=4",
        "python -m frozen_sweep -m experiment=reservoir_mt reservoir=none seed=1,2 reservoir.backskip=False model.encoder_layers=2",
    ]  # fmt: skip
    assert sweep_commands([["seed=1"], ["seed=2"]]) == ["python -m frozen_sweep -m seed=1,2"]  # one sweep: one command

    def unread(run: int):
        raise AssertionError(f"run {run}'s config read, but it lacks no key")

    assert sweep_commands([["seed=1"], ["seed=2"]], unread) == ["python -m frozen_sweep -m seed=1,2"]


def test_runs_with_other_overrides_get_their_own_table(sweep):
    text = md(sweep)
    lines = table_lines(text, "bible_es_en · demo · trainer.lr=5e-4")
    assert [cells(line)[0] for line in lines[2:]] == ["*One frozen component*", "(1)"]
    assert cells(lines[3])[4:] == ["3.0", "≥7", "0.80", "1"]  # a budget ended it: a lower bound
    assert "≥: a budget" in text
    default = {cells(line)[0]: cells(line) for line in table_lines(text, "bible_es_en · demo · trainer.lr=(default)")}
    assert default["(1)"][4:6] == ["9.0", "4"]


def test_failed_running_and_corrupt_runs_are_listed_not_averaged(sweep):
    runs = load_runs([str(sweep)])
    assert runs.status.value_counts().to_dict() == {"completed": 13, "failed": 1, "running": 1, "corrupt": 1}
    text = md(sweep)
    assert "99.0" not in text and "### Not included (3 runs)" in text
    listed = text.split("### Not included (3 runs)")[1]
    assert "failed: RuntimeError: out of memory\n" in listed and "Traceback" not in listed
    assert "running: no final result" in listed
    assert f"`{sweep / 'corrupt' / 'result.json'}` — corrupt: unreadable result record (" in listed


def test_reference_prints_the_papers_numbers_and_fractions_of_row_0(sweep):
    lines = table_lines(md(sweep, "paper_big"), "bible_es_en · demo · trainer.lr=(default)")
    header = cells(lines[0])
    assert header[-5:] == ["Paper BLEU", "Paper Epochs", "Paper Trainable/All", "BLEU / (0) ours", "BLEU / (0) paper"]
    rows = {cells(line)[0]: dict(zip(header, cells(line))) for line in lines[2:]}
    assert rows["(0)"]["BLEU / (0) ours"] == "1.00"
    assert [rows["(0)"][f"Paper {c}"] for c in ("BLEU", "Epochs", "Trainable/All")] == ["24.3", "19", "1.00"]
    assert rows["(6)"]["Paper BLEU"] == "4.4" and rows["(6)"]["BLEU / (0) paper"] == f"{4.4 / 24.3:.2f}"
    assert rows["(4)"]["BLEU / (0) ours"] == f"{4.0 / 11.0:.2f}"
    assert rows["att (orthogonal)+other frozen"]["Paper BLEU"] == "–"


def test_reference_footnotes_the_doubtful_ffn1024_cells(sweep):
    text = md(sweep, "paper_big_ffn1024")
    rows = {cells(line)[0]: cells(line) for line in table_lines(text, "bible_es_en · demo · trainer.lr=(default)")}
    assert rows["(2)"][10] == "0.55‡" and rows["(4)"][10] == "0.45‡" and rows["(3)"][10] == "0.82"
    assert "look swapped" in text


def test_csv_has_one_row_per_run(sweep, tmp_path):
    runs = pd.read_csv(io.StringIO(csv(load_runs([str(sweep)]))))
    assert len(runs) == 16
    assert {"path", "status", "reason", "emb", "att", "ffn", "test_metric", "seed", "overrides"} <= set(runs.columns)
    zero = runs[(runs.row == "(0)") & (runs.status == "completed")]
    assert sorted(zero.seed) == [1, 2, 3] and sorted(zero.test_metric) == [10.0, 11.0, 12.0]


def test_latex_is_escaped_and_compiles(sweep, tmp_path):
    runs = load_runs([str(sweep)])
    text = latex(build_tables(runs, REFERENCES["paper_big"]), runs)
    assert r"bible\_es\_en" in text and r"11.0 $\pm$ 1.0" in text and r"$\geq$7" in text and "±" not in text
    assert r"\multicolumn{13}{l}{\textit{One frozen component}}" in text
    assert r"\multicolumn{3}{c}{Paper} & \multicolumn{2}{c}{BLEU / (0)} \\" in text
    if not shutil.which("pdflatex"):
        pytest.skip("pdflatex not installed")
    (tmp_path / "tables.tex").write_text(text)
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs,amssymb}\\usepackage[margin=1cm]{geometry}"
        "\\begin{document}\\input{tables}\\end{document}\n"
    )
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_plots_one_file_per_table(sweep, tmp_path):
    tables = build_tables(load_runs([str(sweep)]))
    written = plot_tables(tables, tmp_path / "curves.png")
    assert [p.name for p in written] == [
        "curves-1-bible_es_en-demo-trainer.lr=_default_.png",
        "curves-2-bible_es_en-demo-trainer.lr=5e-4.png",
    ]
    assert all(p.stat().st_size > 10_000 for p in written)
    single = plot_tables(tables[:1], tmp_path / "one.png")
    assert single == [tmp_path / "one.png"] and single[0].stat().st_size > 10_000
    tables[0].title += " · " + " ".join(f"+bases.b{i}=[experiment=finetune_bases,model=mlm_micro]" for i in range(9))
    long = plot_tables(tables, tmp_path / "long.png")  # a title of a base's override list: a bounded file name
    assert len(long[0].name) <= len("long-1-") + SLUG_CHARS + len(".png") and long[0].stat().st_size > 10_000


def test_curves_are_means_over_seeds_with_a_band_and_say_how_the_machine_was_shared(tmp_path, monkeypatch):
    """Two rows of two seeds: a line per row (the mean), a min–max band, "(2 seeds)" in the legend; the wall-clock
    panel's title from the records' jobs at a time and threads."""
    for row in ("(0)", "(1)"):
        for seed, bleu in ((1, 20.0), (2, 24.0)):
            write_run(tmp_path / "runs", row, bleu, seed, jobs_at_a_time=2, threads=1)
    (table,) = build_tables(load_runs([str(tmp_path / "runs")]))
    plt = plots.pyplot()
    monkeypatch.setattr(plt, "close", lambda fig: None)  # keep the figure to look at it
    plots.plot_convergence(table, tmp_path / "curves.png")
    by_epoch, by_time = plt.gcf().axes[:2]
    assert len(by_epoch.lines) == 2 and len(by_epoch.collections) == 2  # a mean line and a band per row
    assert list(by_epoch.lines[0].get_ydata()) == [5.5, 11.0, 16.5, 22.0]  # the seeds' 5/10/15/20 and 6/12/18/24
    assert [t.get_text() for t in plt.gcf().axes[-1].get_legend().get_texts()] == ["(0) (2 seeds)", "(1) (2 seeds)"]
    assert by_time.get_title() == "2 jobs at a time, 1 thread each"
    plt.close(plt.gcf())


def test_perplexity_tables_and_loss_curves_when_no_validation_metric(tmp_path):
    root = tmp_path / "lm"
    for seed, ppl in ((1, 40.0), (2, 50.0)):
        write_run(root, "(0)", ppl, seed, task="lm_bible_en", model="lm_demo", metric_name="ppl")
    no_bleu = write_run(root, "(3)", 5.0, model="tiny")  # validation BLEU switched off: history has only losses
    record = json.loads(no_bleu.read_text())
    record["history"] = [h | {"valid_bleu": None, "valid_metric": None} for h in record["history"]]
    no_bleu.write_text(json.dumps(record))
    text = md(root, "paper_lm")
    rows = {cells(line)[0]: cells(line) for line in table_lines(text, "lm_bible_en · lm_demo")}
    assert rows["(0)"][4] == "45.0 ± 7.1" and rows["(0)"][8] == "37.4"
    written = plot_tables(build_tables(load_runs([str(root)])), tmp_path / "c.png")
    assert len(written) == 2 and all(p.stat().st_size > 10_000 for p in written)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "frozen_sweep.collect", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_cli_succeeds_despite_corrupt_records(sweep, tmp_path):
    proc = run_cli(str(sweep), "--format", "latex", "--out", str(tmp_path / "t.tex"), "--plot", str(tmp_path / "c.png"))
    assert proc.returncode == 0, proc.stderr
    assert r"\toprule" in (tmp_path / "t.tex").read_text()
    assert "c-1-bible_es_en-demo-trainer.lr=_default_.png" in proc.stderr and "not included" in proc.stderr
    single = run_cli(str(sweep / "corrupt" / "result.json"))
    assert single.returncode == 0 and "corrupt: unreadable" in single.stdout
    assert run_cli(str(tmp_path / "nothing")).returncode == 1


def test_paper_rows_match_the_freeze_patterns():
    from frozen_sweep.weights.freeze import PAPER_ROWS

    assert set(paper.ROWS) == set(PAPER_ROWS.values())
    for reference in paper.REFERENCES.values():
        assert paper.BASELINE in reference.rows and set(reference.rows) <= set(paper.ROWS)


EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
FREEZE_NAME = {
    "(0)": "none", "(1)": "emb", "(2)": "att", "(3)": "ffn", "(2.1)": "att_identity", "(3.1)": "ffn_identity",
    "(4)": "emb_ffn", "(5)": "emb_att", "(6)": "att_ffn",
}  # fmt: skip


def experiment_sweep(experiment: str) -> dict[str, list[str]]:
    """The experiment's own sweep: key → values."""
    params = OmegaConf.load(CONF / "experiment" / f"{experiment}.yaml").get("hydra", {}).get("sweeper", {})
    return {key: str(values).split(",") for key, values in params.get("params", {}).items()}


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_configs_compose(experiment, tmp_path):
    """Each composes and validates at every point of its sweep, and names its output folder."""
    from frozen_sweep.config.checks import validate

    needs_data = []
    if experiment.startswith("relearn") and not experiment.endswith("_bases"):  # a demo-model base run (the default job's)
        needs_data = [f"relearn.base_checkpoint={fake_run_dir(tmp_path / 'base')}"]
    axes = experiment_sweep(experiment)
    for point in itertools.product(*([f"{key}={value}" for value in values] for key, values in axes.items())):
        cfg = compose_config(f"experiment={experiment}", *needs_data, *point)
        validate(cfg)
        assert cfg.name == experiment


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if "freeze" in experiment_sweep(e)])
def test_freeze_experiments_sweep_the_rows_of_their_paper_table(experiment):
    """The rows of the paper's table (the LM table's for language models; a demo may sweep fewer of them), in the
    paper's order; paper_* experiments train to early stopping on validation loss."""
    cfg = compose_config(f"experiment={experiment}")
    lm = paper.REFERENCES["paper_lm"] if cfg.task.kind.value == "lm" else None
    reference = paper.REFERENCES.get(experiment) or lm
    sweep = experiment_sweep(experiment)["freeze"]
    rows = reference.rows if reference else [row for row in paper.ROWS if FREEZE_NAME[row] in sweep]
    assert sweep == [FREEZE_NAME[row] for row in rows]
    if experiment in paper.REFERENCES:
        assert cfg.model.name == experiment.replace("paper_", "") or reference.metric_name == "ppl"
    if experiment.startswith("paper_"):
        assert cfg.trainer.max_time_s is None and cfg.trainer.max_steps is None
        assert cfg.trainer.stop_metric.value == "loss" and cfg.trainer.patience == 5


def test_gpu_tables_sweep_three_seeds_with_the_settings_measured_on_the_h100():
    for experiment in ("paper_base_bible", "paper_lm_bible"):
        cfg = compose_config(f"experiment={experiment}")
        assert experiment_sweep(experiment)["seed"] == ["1", "2", "3"]
        assert (cfg.trainer.lr, cfg.trainer.warmup_steps, cfg.trainer.max_tokens) == (7e-4, 1000, 8192)
        assert cfg.task.name == ("bible_es_en" if experiment == "paper_base_bible" else "lm_bible_en")

