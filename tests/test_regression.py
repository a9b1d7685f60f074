"""task.kind=regression end to end on a TSV whose number is a function of its text (one real job: it beats the mean
predictor, its record, the classify command and the collector's table), its data checks (a label that is not a number,
a classifier given many numeric labels), the stop metrics each kind allows, the scalar head and its MSE, and
model.pooling=mean (it differs from the first token's and ignores padding)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from frozen_sweep import classify
from frozen_sweep.config import ConfigError, CorpusKind, Pooling, TaskConfig, TaskKind
from frozen_sweep.config.checks import validate
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.specials import BOS, EOS, PAD
from frozen_sweep.model.head import pool
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.train.loss import TrainingLoss
from frozen_sweep.train.stopping import TrainState, add_validation
from frozen_sweep.weights import freeze
from frozen_sweep.weights.build import build_model
from frozen_sweep.use.command_line import run_command
from tests.conftest import compose_config, toy_pairs
from tests.helpers.jobs import result, run_cli

COUNTED = {"dog", "cat", "man", "woman", "house"}  # the target: 5 × the share of a sentence's words among these


def write_regression_tsv(directory: Path, sizes=(600, 80, 80)) -> Path:
    """text<TAB>number: a toy English sentence and 5 × the share of its words in COUNTED (0 … 5, like STS-B's)."""
    directory.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), sizes)):
        rows = []
        for _, text in toy_pairs(n, seed):
            words = text.split()
            rows.append(f"{text}\t{5 * sum(w in COUNTED for w in words) / len(words):.3f}\n")
        (directory / f"{split}.tsv").write_text("".join(rows))
    return directory


def tsv_task(path: Path, cache: Path, kind=TaskKind.regression):
    fields = {"name": "t", "kind": kind, "corpus": CorpusKind.text_files, "path": str(path), "src_lang": None,
              "cache_dir": str(cache), "vocab_size": 60, "header": False}  # fmt: skip
    return OmegaConf.structured(TaskConfig(**fields))


@pytest.fixture(scope="module")
def run(tmp_path_factory, cache_dir) -> Path:
    """One regression job: 150 updates of the micro encoder, mean pooling, the best validation by Pearson."""
    root = tmp_path_factory.mktemp("regression")
    corpus = write_regression_tsv(root / "corpus")
    done = run_cli("task=text_files", "task.kind=regression", "task.src_lang=null", "task.tgt_lang=en",
                   f"task.path={corpus}", "task.header=false", "task.vocab_size=60", f"task.cache_dir={cache_dir}",
                   "model=mlm_micro", "model.pooling=mean", "trainer=quick", "trainer.max_epochs=null",
                   "trainer.max_steps=150", "trainer.validate_every_steps=50", "trainer.stop_metric=pearson",
                   f"hydra.run.dir={root / 'run'}")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    return root / "run"


def test_a_regression_learns_the_number_and_beats_the_mean_predictor(run):
    record = result(run)
    data = record["data"]
    assert record["metric_name"] == "pearson" and record["stop_metric"] == "pearson"
    assert record["test_pearson"] == record["test_metric"] and record["report"] == ["pearson", "spearman"]
    assert record["test_metric"] > 0.7 and record["test_spearman"] > 0.7  # ≈0.92 and 0.93 when written
    assert record["test_mse"] < 0.5 * data["mean_predictor"]["test"]  # ≈0.13 against ≈0.90
    gold = np.array([float(line.split("\t")[1]) for line in Path(data["data_dir"], "test.tsv").read_text().splitlines()])
    assert data["mean_predictor"]["test"] == pytest.approx(np.mean((gold - data["numbers"]["train"]["mean"]) ** 2))
    best = record["history"][-1]
    assert best["valid_ppl"] is None and best["valid_metric"] == best["valid_pearson"] and "valid_spearman" in best
    manifest = json.loads((Path(data["prepared_dir"]) / "manifest.json").read_text())
    assert manifest["label_kind"] == "number" and "labels" not in manifest
    labels = np.load(Path(data["prepared_dir"]) / "test.labels.npy")
    assert labels.dtype == np.float32 and np.allclose(labels, gold)


def test_the_classify_command_prints_a_regression_runs_number_per_line(run, tmp_path):
    test = Path(result(run)["data"]["data_dir"], "test.tsv").read_text().splitlines()
    texts, out = tmp_path / "texts.txt", tmp_path / "numbers.txt"
    texts.write_text("".join(line.split("\t")[0] + "\n" for line in test))
    run_command(classify.main, [str(run), "--input", str(texts), "--output", str(out)])
    predicted = [float(line) for line in out.read_text().splitlines()]  # one number a line, nothing else
    gold = [float(line.split("\t")[1]) for line in test]
    assert len(predicted) == len(gold) and np.corrcoef(predicted, gold)[0, 1] > 0.7


def test_the_collector_shows_pearson_and_the_mean_predictor(run):
    (table,) = build_tables(load_runs([str(run)]), claims=True)
    assert table.metric_name == "pearson" and table.checks == []
    columns = list(table.rows.columns)
    assert ("Pearson ×100", "test") in columns and ("", "Mean predictor MSE") in columns
    assert ("Accuracy %", "test") not in columns and ("", "Majority %") not in columns
    assert table.rows[("Pearson ×100", "test")].iloc[0] == f"{100 * result(run)['test_metric']:.1f}"
    assert "mean predictor: train's mean" in table.footnotes[0]


@pytest.mark.parametrize(
    "files, kind, message",
    [
        ({"valid.tsv": "a b\t1.5\nc d\tsimilar\n"}, TaskKind.regression,
         r"valid.tsv line 2: label 'similar' is not a number \(task.kind=regression"),
        ({"test.tsv": "a b\tnan\n"}, TaskKind.regression, r"test.tsv line 1: label 'nan' is not a number"),
        ({"train.tsv": "".join(f"w{i} x\t{i / 10}\n" for i in range(25))}, TaskKind.classify,
         r"train.tsv: 25 distinct labels, all numbers \(0 … 2.4\): .* use task.kind=regression"),
    ],
)
def test_labels_that_are_not_numbers_or_look_like_a_regressions_are_refused(tmp_path, files, kind, message):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        (corpus / f"{split}.tsv").write_text("a b\t0.5\nc d\t2\n")
    for name, text in files.items():
        (corpus / name).write_text(text)
    with pytest.raises(ValueError, match=message):
        prepare(tsv_task(corpus, tmp_path / "cache", kind))
    assert [p.name for p in (tmp_path / "cache" / "prepared").iterdir() if not p.name.endswith(".lock")] == []


FILES = ("task=text_files", "task.path=/data", "task.src_lang=null", "task.tgt_lang=en", "model=mlm_micro")


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["task=cls_bible_en", "model=mlm_micro", "trainer.stop_metric=pearson"],
         "trainer.stop_metric=pearson needs task.kind=regression; allowed for task.kind=classify: loss, accuracy, f1, "
         "mcc"),
        ([*FILES, "task.kind=regression", "trainer.stop_metric=accuracy"],
         "trainer.stop_metric=accuracy needs task.kind=classify; allowed for task.kind=regression: loss, pearson, "
         "spearman"),
        ([*FILES, "task.kind=regression", "trainer.stop_metric=f1"], "trainer.stop_metric=f1 needs task.kind=classify;"),
        (["task=mlm_bible_en", "model=mlm_micro", "trainer.stop_metric=mcc"],
         "trainer.stop_metric=mcc needs task.kind=classify; allowed for task.kind=mlm: loss"),
        (["task=bible_es_en", "model=micro", "trainer.stop_metric=spearman"],
         "trainer.stop_metric=spearman needs task.kind=regression; allowed for task.kind=translation: loss, bleu"),
        (["task=cls_bible_en", "model=mlm_micro", "task.kind=regression"],
         "task.kind=regression reads a number per example from your files"),
        ([*FILES, "task.kind=regression", "model=micro"], "task.kind=regression needs an encoder-only model"),
    ],
)
def test_stop_metrics_and_models_that_do_not_fit_the_task_kind_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(compose_config(*overrides))


def test_each_labelled_kind_takes_its_own_stop_metrics():
    validate(compose_config(*FILES, "task.kind=classify", "trainer.stop_metric=mcc"))
    validate(compose_config(*FILES, "task.kind=regression", "trainer.stop_metric=spearman"))


def test_higher_is_better_for_every_stop_metric_but_the_loss():
    tr = compose_config("trainer.stop_metric=pearson").trainer
    state = TrainState()
    for pearson, loss in ((0.5, 1.0), (0.7, 2.0), (0.6, 0.5)):
        add_validation(state, {"valid_pearson": pearson, "valid_loss": loss}, tr)
    assert state.best_index == 1 and state.bad_validations == 1
    tr.stop_metric = "loss"
    state = TrainState()
    for pearson, loss in ((0.5, 1.0), (0.7, 2.0), (0.6, 0.5)):
        add_validation(state, {"valid_pearson": pearson, "valid_loss": loss}, tr)
    assert state.best_index == 2


def test_the_scalar_head_is_its_own_component_and_its_loss_the_summed_squared_error():
    cfg = compose_config("task=cls_bible_en", "task.kind=regression", "model=mlm_micro", "freeze.head.frozen=true",
                         "trainer.label_smoothing=0.1", "trainer.amp_cpu=false")  # fmt: skip
    model = build_model(cfg, 100, head_outputs=1).eval()
    d = cfg.model.d_model
    assert freeze.parameter_counts(model)["params_by_component"]["head"] == {"total": d * d + d + d + 1, "trainable": 0}
    tokens, targets = torch.tensor([[BOS, 7, 8, EOS], [BOS, 9, EOS, PAD]]), torch.tensor([1.5, -2.0])
    predicted = model(None, tokens)  # (B,)
    assert predicted.shape == (2,)
    loss = TrainingLoss(model, cfg.trainer, torch.device("cpu"), model.pad_id, regression=True)(None, tokens, targets)
    assert loss.item() == pytest.approx(((predicted - targets) ** 2).sum().item(), rel=1e-5)  # no smoothing


def test_mean_pooling_averages_the_real_tokens_and_padding_changes_nothing():
    states = torch.arange(2 * 4 * 3, dtype=torch.float).view(2, 4, 3)  # (B, T, D)
    real = torch.tensor([[True, True, True, False], [True, True, True, True]])
    assert torch.equal(pool(states, real, Pooling.mean)[0], states[0, :3].mean(0))  # the padded state left out
    assert torch.equal(pool(states, real, Pooling.first), states[:, 0])

    short, long = [BOS, 7, 8, EOS], [BOS, 9, 10, 11, 12, 13, EOS]
    outputs = {}
    for pooling in ("first", "mean"):
        cfg = compose_config("task=cls_bible_en", "model=mlm_micro", f"model.pooling={pooling}")
        model = build_model(cfg, 100, head_outputs=3).eval()
        alone = model(None, torch.tensor([short]))[0]
        padded = model(None, torch.tensor([short + [PAD] * 3, long]))[0]
        assert torch.allclose(alone, padded, atol=1e-5)  # padding does not reach the head
        outputs[pooling] = alone
    assert not torch.allclose(outputs["first"], outputs["mean"], atol=1e-3)  # same seed and weights, another pooling
