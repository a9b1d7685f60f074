"""A GLUE-shaped TSV of a user's own: columns chosen by header name or index, a header line detected and refused
until task.header says which it is, column keys checked against each file before any job starts, a bad label of a
single job refused in one line with nothing written, valid held out of train.tsv as the hub's protocol holds it out,
and task=text_files's monolingual kinds without src_lang."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from frozen_sweep.config import ConfigError
from frozen_sweep.data import load_task
from frozen_sweep.data.held_out import held_out
from frozen_sweep.data.identity import prepared_key
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.text_files import langs_of
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from tests.conftest import ROOT, compose_config, toy_pairs, write_corpus
from tests.helpers.hub_layout import cards, example_columns, write_hub_dataset
from tests.helpers.jobs import result, run_cli

MNLI_KEYS = ("task.text_column=sentence1", "task.text_pair_column=sentence2", "task.label_column=gold_label")


def nli_label(b: str) -> str:
    return "entailment" if "dog" in b.split() else "contradiction" if "cat" in b.split() else "neutral"


def write_files(directory: Path, rows_of, header: str | None = None, sizes=(120, 20, 20)) -> Path:
    """{train,valid,test}.tsv: `rows_of(split, index, a, b)` gives each line's cells (a toy sentence pair)."""
    directory.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), sizes)):
        lines = ["\t".join(rows_of(split, i, a, b)) for i, (a, b) in enumerate(toy_pairs(n, seed))]
        head = [] if header is None else [header.replace(" ", "\t")]
        (directory / f"{split}.tsv").write_text("\n".join(head + lines) + "\n")
    return directory


def write_mnli(directory: Path) -> Path:
    """MNLI's shape: an index column, a header, the pair in sentence1/sentence2 and word labels in gold_label; its
    train file has one annotator's label column, valid and test five (as MNLI's dev files), so gold_label moves."""
    directory.mkdir(parents=True, exist_ok=True)
    for seed, (split, n) in enumerate(zip(("train", "valid", "test"), (120, 20, 20))):
        votes = 1 if split == "train" else 5
        names = ["index", "genre", "sentence1", "sentence2", *(f"label{k + 1}" for k in range(votes)), "gold_label"]
        pairs = toy_pairs(n, seed)
        rows = [[str(i), "telephone", a, b, *[nli_label(b)] * (votes + 1)] for i, (a, b) in enumerate(pairs)]
        (directory / f"{split}.tsv").write_text("".join("\t".join(row) + "\n" for row in [names, *rows]))
    return directory


def sst2_row(split, i, a, b):
    return [b, str(int("dog" in b.split()))]


def classify_config(corpus: Path, cache: Path, *overrides: str):
    """A classification job's checked config (job_config: the column keys against the files) on `corpus`."""
    args = ["task=text_files", "task.kind=classify", f"task.path={corpus}", f"task.cache_dir={cache}",
            "task.vocab_size=60", "model=mlm_micro", *overrides]  # fmt: skip
    return job_config(compose_config(*args), args)


def test_mnli_shaped_files_are_read_by_column_name_and_a_job_trains_on_them(tmp_path, cache_dir):
    corpus = write_mnli(tmp_path / "mnli")
    data = load_task(classify_config(corpus, cache_dir, *MNLI_KEYS).task)
    assert data.stats["labels"] == ["contradiction", "entailment", "neutral"] and data.stats["pairs"] is True
    a, b = toy_pairs(20, 1)[3]
    assert data.valid.tgt_text[3] == f"{a}\t{b}"
    assert data.stats["label_counts"]["valid"][nli_label(b)] >= 1
    run = tmp_path / "run"
    trained = run_cli("task=text_files", "task.kind=classify", f"task.path={corpus}", *MNLI_KEYS, "task.vocab_size=60",
                      f"task.cache_dir={cache_dir}", "model=mlm_micro", "trainer=quick", "trainer.max_steps=5",
                      f"hydra.run.dir={run}")  # fmt: skip
    assert trained.returncode == 0, trained.stdout[-2000:]
    record = result(run)
    assert record["status"] == "completed" and record["data"]["labels"] == ["contradiction", "entailment", "neutral"]
    assert record["test_metric"] is not None


def test_cola_shaped_files_without_a_header_are_read_by_column_index(tmp_path, cache_dir):
    """CoLA: source, label, original label (often empty), sentence; no header line."""
    corpus = write_files(tmp_path / "cola", lambda split, i, a, b: ["gj04", sst2_row(split, i, a, b)[1], "", b])
    task = classify_config(corpus, cache_dir, "task.header=false", "task.text_column=3", "task.label_column=1").task
    data = load_task(task)
    assert data.stats["labels"] == ["0", "1"] and data.stats["pairs"] is False
    assert data.valid.tgt_text[0] == toy_pairs(20, 1)[0][1]


def test_a_first_line_that_looks_like_a_header_is_refused_until_task_header_says_which_it_is(tmp_path, cache_dir):
    corpus = write_files(tmp_path / "sst2", sst2_row, header="sentence label")
    with pytest.raises(ValueError, match=r"train.tsv line 1 looks like a header \(its label 'label' occurs on no "
                                         r"other line\): set task.header=true, or task.header=false"):  # fmt: skip
        prepare(classify_config(corpus, cache_dir).task)
    with_header = load_task(classify_config(corpus, cache_dir, "task.header=true").task).stats
    assert with_header["labels"] == ["0", "1"] and with_header["header"] is True
    as_data = load_task(classify_config(corpus, cache_dir, "task.header=false").task)  # the user says: an example
    assert as_data.stats["labels"] == ["0", "1", "label"]
    (corpus / "train.tsv").write_text((corpus / "train.tsv").read_text().split("\n", 1)[1])  # a header in valid only
    with pytest.raises(ValueError, match=r"valid.tsv line 1 looks like a header \(its label 'label' occurs on no line "
                                         r"of train.tsv\)"):  # fmt: skip
        prepare(classify_config(corpus, cache_dir).task)


def test_detecting_no_header_keeps_the_prepared_key_of_header_false(tmp_path, cache_dir):
    corpus = write_files(tmp_path / "plain", sst2_row)
    detected, no_header = (classify_config(corpus, cache_dir, *o).task for o in ([], ["task.header=false"]))
    assert detected.header is None and prepared_key(detected)[0] == prepared_key(no_header)[0]
    stats = load_task(detected).stats
    assert stats["labels"] == ["0", "1"] and stats["header"] is False


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["task.text_column=sentence", "task.label_column=gold"],
         r"task.label_column=gold: .*train.tsv's header has no such column; its columns: sentence, label"),
        (["task.header=true", "task.text_column=0", "task.label_column=5"], r"task.label_column=5: .*train.tsv has 2 "
                                                                             r"columns \(indices 0 … 1\)"),
        (["task.header=false", "task.text_column=sentence", "task.label_column=1"],
         r"task.text_column=sentence: a column name needs a header line, and task.header=false"),
        (["task.text_pair_column=2"], r"choosing columns needs task.text_column and task.label_column too"),
    ],
)  # fmt: skip
def test_column_keys_are_checked_against_each_files_header_before_any_job_starts(tmp_path, cache_dir, overrides,
                                                                                 message):  # fmt: skip
    corpus = write_files(tmp_path / "sst2", sst2_row, header="sentence label")
    with pytest.raises(ConfigError, match=message):
        classify_config(corpus, cache_dir, *overrides)
    (corpus / "test.tsv").write_text("sentence\tgold\na\t1\n")  # train is right, test is not: test is named
    with pytest.raises(ConfigError, match=r"task.label_column=label: .*test.tsv's header has no such column"):
        classify_config(corpus, cache_dir, "task.text_column=sentence", "task.label_column=label")


def test_a_bad_label_in_a_single_job_is_one_line_and_leaves_nothing(tmp_path, cache_dir):
    corpus = write_files(tmp_path / "sst2", sst2_row)
    valid = (corpus / "valid.tsv").read_text().splitlines()
    valid[2] = valid[2].rsplit("\t", 1)[0] + "\tpositiv"  # a typo of a label on valid.tsv's line 3
    (corpus / "valid.tsv").write_text("\n".join(valid) + "\n")
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "task=text_files", "task.kind=classify", f"task.path={corpus}",
         f"task.cache_dir={cache_dir}", "task.vocab_size=60", "model=mlm_micro", f"hydra.run.dir={run}"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "valid.tsv line 3: label 'positiv' does not occur in train.tsv" in proc.stderr, proc.stderr
    assert not run.exists()


def test_monolingual_kinds_on_text_files_need_no_src_lang_and_translation_needs_both_languages(tmp_path, cache_dir):
    corpus = write_corpus(tmp_path / "corpus", sizes=(20, 5, 5))
    common = ["task=text_files", f"task.path={corpus}", f"task.cache_dir={cache_dir}"]
    lm = [*common, "task.kind=lm", "model=lm_micro"]
    cfg = job_config(compose_config(*lm), lm)
    assert cfg.task.src_lang is None and langs_of(cfg.task) == ["en"] and "train.en" in fingerprint(cfg)["data"]
    for languages in ([], ["task.tgt_lang=en"]):
        with pytest.raises(ConfigError, match=r"task.src_lang is not set: a translation task needs task.src_lang "
                                              r"and task.tgt_lang"):  # fmt: skip
            job_config(compose_config(*common, *languages, "model=micro"), [*common, *languages])


def write_sst2_tsv(directory: Path, splits: dict[str, dict]) -> Path:
    """{split}.tsv, sentence<TAB>label, from the hub's columns of the same rows."""
    directory.mkdir(parents=True, exist_ok=True)
    for split, columns in splits.items():
        rows = zip(columns["sentence"], columns["label"])
        (directory / f"{split}.tsv").write_text("".join(f"{text}\t{label}\n" for text, label in rows))
    return directory


def test_valid_held_out_of_train_tsv_is_the_one_the_hub_holds_out_of_the_same_rows(tmp_path, cache_dir):
    features = cards()["nyu-mll/glue", "sst2"]
    train, test = example_columns(features, 120, 0), example_columns(features, 20, 1)
    # `datasets` caches a local directory by its name and config, not its content: a name no other test writes
    hub = write_hub_dataset(tmp_path / "sst2_hub", {"sst2": {"train": train, "test": test}}, features)
    corpus = write_sst2_tsv(tmp_path / "tsv", {"train": train, "test": test})
    files = load_task(classify_config(corpus, cache_dir, "task.valid_from_train=10").task)
    args = ["task=hf", "task.kind=classify", f"task.dataset={hub}", "task.dataset_config=sst2", "task.valid_split=null",
            "task.text_column=sentence", "task.valid_from_train=10", "task.vocab_size=60",
            f"task.cache_dir={cache_dir}", "model=mlm_micro"]  # fmt: skip
    from_hub = load_task(job_config(compose_config(*args), args).task)
    assert files.stats["sizes"] == from_hub.stats["sizes"] == {"train": 110, "valid": 10, "test": 20}
    assert files.valid.tgt_text == from_hub.valid.tgt_text
    assert files.valid.labels.tolist() == from_hub.valid.labels.tolist()
    for name in ("train.text.bin", "train.labels.npy", "spm.model"):  # the same train set, in the same order
        prepared = (Path(data.stats["prepared_dir"]) / name for data in (files, from_hub))
        assert next(prepared).read_bytes() == next(prepared).read_bytes(), name
    assert prepared_key(classify_config(corpus, cache_dir, "task.valid_from_train=11").task)[0] != prepared_key(
        classify_config(corpus, cache_dir, "task.valid_from_train=10").task)[0]


def test_a_held_out_examples_error_names_its_line_of_train_tsv(tmp_path, cache_dir):
    features = cards()["nyu-mll/glue", "stsb"]
    splits = {"train": example_columns(features, 120, 0), "test": example_columns(features, 20, 1)}
    corpus = tmp_path / "stsb"
    corpus.mkdir()
    for split, columns in splits.items():
        rows = zip(columns["sentence1"], columns["sentence2"], columns["label"])
        (corpus / f"{split}.tsv").write_text("".join(f"{a}\t{b}\t{score}\n" for a, b, score in rows))
    line = int(np.flatnonzero(held_out(120, 10))[0]) + 1  # a line held out as valid
    lines = (corpus / "train.tsv").read_text().splitlines()
    lines[line - 1] = lines[line - 1].rsplit("\t", 1)[0] + "\tn/a"
    (corpus / "train.tsv").write_text("\n".join(lines) + "\n")
    task = classify_config(corpus, cache_dir, "task.kind=regression", "task.valid_from_train=10").task
    with pytest.raises(ValueError, match=rf"stsb/train.tsv line {line}: .*'n/a'"):
        prepare(task)
    with pytest.raises(ValueError, match=r"task.valid_from_train=120: .*train.tsv has 120 examples"):
        prepare(classify_config(corpus, cache_dir, "task.kind=regression", "task.valid_from_train=120").task)


def test_valid_from_train_on_text_files_is_refused_with_a_valid_tsv_or_outside_classification(tmp_path, cache_dir):
    corpus = write_files(tmp_path / "sst2", sst2_row)
    with pytest.raises(ConfigError, match=r"task.valid_from_train=10 holds valid out of train.tsv, and .*valid.tsv "
                                          r"exists: remove it, or score on it with task.valid_from_train=0"):
        prepared_key(classify_config(corpus, cache_dir, "task.valid_from_train=10").task)
    lm = ["task=text_files", "task.kind=lm", f"task.path={corpus}", "task.valid_from_train=10", "model=lm_micro"]
    with pytest.raises(ConfigError, match=r"task.valid_from_train=10: read only when task.corpus=hf; or when "
                                          r"task.corpus=text_files, task.kind=classify\|regression"):  # fmt: skip
        job_config(compose_config(*lm), lm)


def test_an_unlabelled_test_file_with_a_header_is_refused_as_one(tmp_path, cache_dir):
    """GLUE's test.tsv (index<TAB>sentence) among a user's files read with their headers: never read as labels."""
    corpus = write_files(tmp_path / "sst2", sst2_row, header="sentence label")
    (corpus / "test.tsv").write_text("index\tsentence\n0\ta moving very with very quite\n")
    with pytest.raises(ValueError, match=r"test.tsv's header \(index, sentence\) has no 'label' column, as train.tsv's "
                                         r"has: a file without labels \(GLUE's test files withhold theirs\) is never "
                                         r"scored"):  # fmt: skip
        prepare(classify_config(corpus, cache_dir, "task.header=true").task)
    run = tmp_path / "run"  # a single job's dry run reads the data as the sweep's plan does: refused, not "run"
    dry = run_cli("task=text_files", "task.kind=classify", f"task.path={corpus}", f"task.cache_dir={cache_dir}",
                  "task.vocab_size=60", "model=mlm_micro", "task.header=true", "dry_run=true", f"hydra.run.dir={run}")
    assert dry.returncode == 1 and "refuse" in dry.stdout and "has no 'label' column" in dry.stdout, dry.stdout
    assert "Traceback" not in dry.stdout and not run.exists()
