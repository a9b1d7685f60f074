"""Classification data and model: TSV files prepared with label ids (pairs joined as RoBERTa joins them), bad lines
named before anything is kept, the embedded tasks' classes and split, the head as its own component, macro-F1, the
fine-tuning findings' noise rule, a classifier's model file."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

import frozen_sweep
from frozen_sweep import classify, export
from frozen_sweep.config import CorpusKind, TaskConfig, TaskKind
from frozen_sweep.data import load_task
from frozen_sweep.data.bible import extract_bible
from frozen_sweep.data.bible_labels import divisions, extract_labelled_bible
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.specials import BOS, EOS, PAD
from frozen_sweep.evaluate.scores import macro_f1
from frozen_sweep.tables.claims import FAILS, HOLDS, INCONCLUSIVE, NOT_ENOUGH, finetune_checks
from frozen_sweep.weights import freeze
from frozen_sweep.weights.build import build_model
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.model_file import read_model_file
from tests.conftest import compose_config, toy_pairs
from tests.helpers.jobs import result, run_cli
from tests.helpers.model_files import replace_frozen_hash


def tsv_task(path: Path, cache: Path, **fields):
    fields = {"name": "t", "kind": TaskKind.classify, "corpus": CorpusKind.text_files, "path": str(path),
              "src_lang": None, "cache_dir": str(cache), "vocab_size": 60, **fields}  # fmt: skip
    return OmegaConf.structured(TaskConfig(**fields))


def write_pairs_tsv(directory: Path, sizes=(200, 20, 20)) -> Path:
    """text_a<TAB>text_b<TAB>label: a toy sentence pair, "yes" when its English half mentions a dog."""
    directory.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), sizes)):
        rows = [(a, b, "yes" if "dog" in b.split() else "no") for a, b in toy_pairs(n, seed)]
        (directory / f"{split}.tsv").write_text("".join("\t".join(row) + "\n" for row in rows))
    return directory


def test_pairs_are_prepared_as_bos_a_eos_eos_b_eos_with_label_ids(tmp_path):
    corpus = write_pairs_tsv(tmp_path / "corpus")
    data = load_task(tsv_task(corpus, tmp_path / "cache"))
    rows = [line.split("\t") for line in (corpus / "valid.tsv").read_text().splitlines()]
    assert data.stats["labels"] == ["no", "yes"] and data.stats["pairs"] is True  # train's labels, code-point order
    counts = data.stats["label_counts"]["test"]
    assert sum(counts.values()) == 20 and data.stats["majority"]["test"] == counts[data.stats["majority"]["label"]] / 20
    batch = data.valid.collate([0, 1])
    sp = data.vocab.sp
    a, b = sp.encode(rows[1][0]), sp.encode(rows[1][1])
    assert batch.tgt_in[1, : len(a) + len(b) + 4].tolist() == [BOS, *a, EOS, EOS, *b, EOS]
    assert (batch.tgt_in[1, len(a) + len(b) + 4 :] == PAD).all()
    assert batch.tgt_out.tolist() == [data.stats["labels"].index(row[2]) for row in rows[:2]] and batch.n_tokens == 2
    assert data.valid.tgt_text[1] == f"{rows[1][0]}\t{rows[1][1]}"


@pytest.mark.parametrize(
    "files, header, message",
    [
        ({"train.tsv": "a b\tx\nc d\te\tx\n"}, False, r"train.tsv line 2 has 3 TAB-separated columns; expected 2"),
        ({"train.tsv": "a b\n"}, False, r"train.tsv line 1 has 1 TAB-separated columns; expected 2 .* or 3"),
        ({"test.tsv": "a b\tx\nc d\tz\n"}, False, r"test.tsv line 2: label 'z' does not occur in train.tsv"),
        ({"valid.tsv": "text\tlabel\na b\tx\n \ty\n"}, True, r"valid.tsv line 3: the text is empty"),
        ({"valid.tsv": "a b\t\n"}, False, r"valid.tsv line 1: the label is empty"),
        ({"test.tsv": b"a b\tx\nc\xff d\ty\n"}, False, r"test.tsv line 2 is not valid UTF-8"),
        ({"train.tsv": "text\tlabel\n"}, True, r"train.tsv holds no example after its header line"),
    ],
)
def test_bad_lines_are_named_and_nothing_is_kept(tmp_path, files, header, message):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        (corpus / f"{split}.tsv").write_text(("text\tlabel\n" if header else "") + "a b\tx\nc d\ty\n")
    for name, data in files.items():
        (corpus / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    with pytest.raises(ValueError, match=message):
        prepare(tsv_task(corpus, tmp_path / "cache", header=header))
    assert [p.name for p in (tmp_path / "cache" / "prepared").iterdir() if not p.name.endswith(".lock")] == []


def test_embedded_tasks_have_six_divisions_and_the_masked_lms_split(cache_dir):
    assert sorted(set(divisions().values())) == ["acts_epistles", "gospels", "history", "law", "prophets", "wisdom"]
    assert divisions()["Rev"] == "prophets" and divisions()["Esth"] == "history" and len(divisions()) == 66
    cls = compose_config("task=cls_bible_en", f"task.cache_dir={cache_dir}").task
    mlm = compose_config("task=mlm_bible_en", f"task.cache_dir={cache_dir}").task
    labelled, plain = extract_labelled_bible(cls), extract_bible(mlm)
    for split in ("train", "valid", "test"):  # the same verses: test chapters are unseen in pre-training
        texts = [line.split("\t")[0] for line in (labelled / f"{split}.tsv").read_text().splitlines()]
        assert texts == (plain / f"{split}.en").read_text().splitlines()
    pairs = extract_labelled_bible(compose_config("task=cls_pairs_bible_en", f"task.cache_dir={cache_dir}").task)
    labels = [line.split("\t")[2] for line in (pairs / "test.tsv").read_text().splitlines()]
    assert set(labels) == {"same", "different"} and 0.4 < labels.count("same") / len(labels) < 0.6


def test_the_head_is_its_own_component_and_freezes_like_the_others():
    cfg = compose_config("task=cls_bible_en", "model=mlm_micro", "freeze.head.frozen=true")
    model = build_model(cfg, 100, head_outputs=3)
    counts = freeze.parameter_counts(model)["params_by_component"]
    d = cfg.model.d_model
    assert counts["head"] == {"total": d * d + d + 3 * d + 3, "trainable": 0}
    assert not hasattr(model, "output") and model(None, torch.tensor([[BOS, 7, 8, EOS]])).shape == (1, 3)


def test_macro_f1_is_the_unweighted_mean_over_classes():
    gold, predicted = torch.tensor([0, 0, 1, 1, 2]), torch.tensor([0, 1, 1, 1, 0])
    # class 0: tp 1, fp 1, fn 1 → 0.5; class 1: tp 2, fp 1 → 0.8; class 2: fn 1 → 0; class 3 absent
    assert macro_f1(predicted, gold, 4) == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    assert np.isclose(macro_f1(gold, gold, 4), 1.0)


def test_fine_tuning_findings_weigh_differences_against_the_seeds_noise():
    def row(pre, tuned, test, std, n):
        return {"pre_training": pre, "fine_tuned": tuned, "test": test, "test_std": std, "n": n, "untrained": 0}

    summary = pd.DataFrame([
        row("none", "all trainable", 40.0, 2.0, 3), row("none", "emb frozen", 30.0, 2.0, 3),
        row("regular", "all trainable", 43.0, 2.0, 3),  # +3 over scratch: less than 2·SE (3.3)
        row("regular", "emb frozen (re-drawn)", 36.0, 1.0, 3),  # +6 over frozen random embeddings: beyond 2·SE
    ])  # fmt: skip
    checks = {c.key: c for c in finetune_checks(summary, min_runs=2)}
    assert checks["FT1"].verdict == INCONCLUSIVE and "2·SE 3.3" in checks["FT1"].compared
    assert checks["RE1"].verdict == INCONCLUSIVE and checks["RE2"].verdict == HOLDS
    assert checks["FT2"].verdict == NOT_ENOUGH  # no reservoir base
    assert not checks["RE2"].indicative and "seeds per row: 3" in checks["RE2"].evidence
    summary.loc[2, "test"] = 45.0
    assert {c.key: c.verdict for c in finetune_checks(summary, min_runs=2)}["FT1"] == HOLDS
    summary.loc[2, "test"] = 36.0  # below scratch beyond the noise
    assert {c.key: c.verdict for c in finetune_checks(summary, min_runs=2)}["FT1"] == FAILS
    assert {c.key: c.verdict for c in finetune_checks(summary, min_runs=4)}["RE2"] == NOT_ENOUGH
    one_seed = {c.key: c for c in finetune_checks(summary.assign(n=1, test_std=0.0), min_runs=1)}
    assert one_seed["RE2"].verdict == HOLDS and one_seed["RE2"].indicative  # no noise estimate: a hint


def test_a_classifiers_model_file_labels_as_its_run_does_and_a_tampered_one_is_refused(tmp_path, cache_dir, capsys):
    """A classifier trained for a few steps on pairs, with frozen random feed-forward layers: its model file holds the
    label names and the pairs setting, draws the frozen layers from the seed, and labels as the run directory does."""
    corpus, run = write_pairs_tsv(tmp_path / "corpus"), tmp_path / "run"
    trained = run_cli("task=text_files", "task.kind=classify", "task.src_lang=null", "task.tgt_lang=en",
                      f"task.path={corpus}", "task.vocab_size=60", f"task.cache_dir={cache_dir}", "model=mlm_micro",
                      "freeze=ffn", "trainer=quick", "trainer.max_steps=5", f"hydra.run.dir={run}")  # fmt: skip
    assert trained.returncode == 0, trained.stdout[-2000:]
    model_file = tmp_path / "model.safetensors"
    run_command(export.main, [str(run), str(model_file)])
    exported = load_run(model_file)
    assert exported.labels == result(run)["data"]["labels"] == ["no", "yes"] and exported.pairs
    assert read_model_file(model_file).frozen_stored == {}  # every frozen tensor drawn from the seed

    pairs = tmp_path / "pairs.txt"
    pairs.write_text("".join(line.rsplit("\t", 1)[0] + "\n" for line in (corpus / "test.tsv").read_text().splitlines()))
    labelled = {}
    for source, frozen in ((run, "resident"), (model_file, "resident"), (model_file, "on-the-fly")):
        out = tmp_path / f"{source.name}.{frozen}.tsv"
        run_command(classify.main, [str(source), "--input", str(pairs), "--output", str(out), "--frozen", frozen])
        labelled[source.name, frozen] = out.read_text()
    assert len(set(labelled.values())) == 1 and len(labelled[run.name, "resident"].splitlines()) == 20
    first, second = pairs.read_text().splitlines()[:2]  # the Python API, and an empty line: an empty answer
    answers = frozen_sweep.load_run(run).classify([first, "", second])
    expected = labelled[run.name, "resident"].splitlines()[:2]
    assert [f"{label}\t{p:.4f}" for label, p in (answers[0], answers[2])] == expected and answers[1] is None

    tampered = "encoder.layers.0.ffn.fc2.weight"
    replace_frozen_hash(model_file, tampered)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        run_command(classify.main, [str(model_file), "--input", str(pairs), "--output", str(tmp_path / "out.tsv")])
    assert stop.value.code == 2 and f"frozen tensor {tampered} regenerated from the seed" in capsys.readouterr().err
    assert not (tmp_path / "out.tsv").exists()
