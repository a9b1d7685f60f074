"""A GLUE task from GLUE's own folder as distributed (task.path): the same rows give the same prepared bytes as from
the hub, an unlabelled test file is never scored, and a folder that is not GLUE's is refused in one line naming the
file and the line, before anything is written."""

import json
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from frozen_sweep.config import GLUE_DATASET, ConfigError
from frozen_sweep.data.identity import prepared_key
from frozen_sweep.data.preparation import prepare
from frozen_sweep.data.prepared import MANIFEST
from frozen_sweep.job.job_config import job_config
from tests.conftest import CONF, ROOT, compose_config
from tests.helpers.glue_layout import SHIPPED, file_of, write_glue_folder
from tests.helpers.hub_layout import cards, example_columns, write_hub_dataset

NAMED = {task.dataset_config: task for task in map(OmegaConf.load, sorted((CONF / "task").glob("glue_*.yaml")))}
QUOTED = ['" the dog sees bread', 'the "cat" eats "water']  # GLUE's readers have no quoting: text as it stands


def glue_splits(config: str, sizes=(120, 30, 20)) -> dict[str, dict]:
    """The hub's splits of a GLUE config, from the toy corpus: labelled train and dev, withheld test labels."""
    features = cards()[GLUE_DATASET, config]
    train, dev, test = sizes
    suffixes = ["_matched", "_mismatched"] if config == "mnli" else [""]
    splits = {"train": example_columns(features, train, 0)}
    for seed, suffix in enumerate(suffixes, start=1):
        splits[f"validation{suffix}"] = example_columns(features, dev, seed)
        splits[f"test{suffix}"] = example_columns(features, test, seed + 10, withheld=True)
    first_text = next(name for name, feature in features.items() if feature.dtype == "string")
    splits["train"][first_text][:2] = QUOTED
    return splits


def task_overrides(config: str, cache) -> list[str]:
    """A GLUE config's task: its named task where there is one, else task=hf with the card's columns."""
    common = ["task.vocab_size=60", f"task.cache_dir={cache}", "model=mlm_micro"]
    if config in NAMED:  # as tests/test_hub_cards.py prepares it from the hub
        named = NAMED[config]
        return [f"task={named.name}", *common] + (["task.valid_from_train=10"] if named.get("valid_from_train") else [])
    texts = [name for name, feature in cards()[GLUE_DATASET, config].items()
             if name != "idx" and getattr(feature, "dtype", None) == "string"]  # fmt: skip
    return ["task=hf", f"task.kind={'regression' if config == 'stsb' else 'classify'}", f"task.dataset={GLUE_DATASET}",
            f"task.dataset_config={config}", f"task.text_column={texts[0]}", f"task.text_pair_column={texts[1]}",
            "task.valid_split=null", "task.valid_from_train=10", "task.test_split=validation", *common]  # fmt: skip


def glue_task(*overrides: str):
    return job_config(compose_config(*overrides), list(overrides)).task


@pytest.mark.parametrize("config, more", [(config, []) for config in SHIPPED] +
                         [("mnli", ["task.test_split=validation_mismatched"])])  # fmt: skip
def test_a_glue_folder_prepares_the_bytes_the_hub_prepares_from_the_same_rows(config, more, tmp_path):
    splits = glue_splits(config)
    features = cards()[GLUE_DATASET, config]
    # `datasets` caches a local directory by its name and config, not its content: a name no other test writes
    hub = write_hub_dataset(tmp_path / "glue_hub", {config: splits}, features)
    folder = write_glue_folder(tmp_path / "glue_data", config, splits, features)
    task = task_overrides(config, tmp_path / "cache")
    from_hub = prepare(glue_task(*task, f"task.dataset={hub}", *more))
    folder_task = glue_task(*task, f"task.path={folder}", *more)
    from_folder = prepare(folder_task)
    assert from_hub != from_folder  # two sources, two prepared datasets
    files = sorted(path.name for path in from_hub.iterdir())
    assert files == sorted(path.name for path in from_folder.iterdir()) and "train.labels.npy" in files
    for name in files:
        if name != MANIFEST:  # the token ids, offsets, lengths, labels, the vocabulary, the held-out texts
            assert (from_hub / name).read_bytes() == (from_folder / name).read_bytes(), name
    hub_manifest, folder_manifest = (json.loads((d / MANIFEST).read_text()) for d in (from_hub, from_folder))
    assert hub_manifest.get("labels") == folder_manifest.get("labels") == getattr(features["label"], "names", None)
    assert hub_manifest["splits"] == folder_manifest["splits"]
    corpus = folder_manifest["corpus"]
    assert corpus["path"] == str(folder) and corpus["config"] == config and corpus["dataset"] == GLUE_DATASET
    read = {folder_task.train_split, folder_task.valid_split, folder_task.test_split} - {None}  # GLUE's files of these
    assert set(corpus["files_sha256"]) == {f"glue/{file_of(split)}" for split in read}
    if more:  # MNLI-mm: scored on dev_mismatched.tsv
        assert "glue/dev_mismatched.tsv" in corpus["files_sha256"]


def test_a_changed_file_of_the_folder_is_another_prepared_dataset(tmp_path):
    folder = write_glue_folder(tmp_path, "sst2", glue_splits("sst2"), cards()[GLUE_DATASET, "sst2"])
    task = glue_task(*task_overrides("sst2", tmp_path / "cache"), f"task.path={folder}")
    key, sources, _ = prepared_key(task)
    assert sources["glue_task"] == "sst2"
    (folder / "dev.tsv").write_text((folder / "dev.tsv").read_text().replace("\t1\n", "\t0\n", 1))
    assert prepared_key(task)[0] != key


@pytest.mark.parametrize("config, split, message", [
    ("sst2", "test", r"SST-2/test.tsv is GLUE's unlabelled test file \(index, sentence\): GLUE withholds its labels; "
                     r"the dev set is scored \(task.test_split=validation\)"),
    ("cola", "test", r"CoLA/test.tsv is GLUE's unlabelled test file \(index, sentence\)"),
    ("mnli", "test_mismatched", r"MNLI/test_mismatched.tsv is GLUE's unlabelled test file \(index, promptID, .*, "
                                r"sentence2\): .*task.test_split=validation_mismatched\)"),
])  # fmt: skip
def test_an_unlabelled_test_file_is_recognised_and_never_scored(config, split, message, tmp_path):
    folder = write_glue_folder(tmp_path, config, glue_splits(config), cards()[GLUE_DATASET, config])
    with pytest.raises(ConfigError, match=message):
        prepared_key(glue_task(*task_overrides(config, tmp_path), f"task.path={folder}", f"task.test_split={split}"))


def edit_line(path, number: int, edit) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = edit(lines[number - 1])
    path.write_text("\n".join(lines) + "\n")


# where a bad line is refused: a first line that is not GLUE's with the data's identity (before any job starts), a
# bad line further down while the data is prepared
STAGES = {"identity": (ConfigError, prepared_key), "prepare": (ValueError, prepare)}


@pytest.mark.parametrize("stage, config, file, line, edit, message", [
    ("identity", "cola", "train.tsv", 1, lambda line: "source\tlabel\toriginal label\tsentence\n" + line,
     r"CoLA/train.tsv line 1 is not an example \(source, label, original label, sentence\): GLUE's CoLA train.tsv has "
     r"no header line; each line is source, label, original label, sentence \(labels 0, 1\)"),
    ("identity", "sst2", "train.tsv", 1, lambda line: "text\tlabel",
     r"SST-2/train.tsv line 1, its header, names text, label: GLUE's SST-2 train.tsv names sentence, label"),
    ("prepare", "sst2", "dev.tsv", 5, lambda line: line + "\textra", r"SST-2/dev.tsv line 5 has 3 TAB-separated cells; "
                                                                     r"expected 2 \(sentence, label\)"),
    ("prepare", "mnli", "train.tsv", 7, lambda line: line.rsplit("\t", 1)[0] + "\t-",
     r"MNLI/train.tsv line 7: label '-' is not one of GLUE's \(entailment, neutral, contradiction\)"),
    ("prepare", "stsb", "train.tsv", 3, lambda line: line.rsplit("\t", 1)[0] + "\tn/a",
     r"STS-B/train.tsv line 3: score 'n/a' is not a finite number"),
    ("prepare", "rte", "dev.tsv", 4, lambda line: "\t".join(["3", " ", *line.split("\t")[2:]]),
     r"RTE/dev.tsv line 4: its sentence1 is empty"),
    ("prepare", "cola", "dev.tsv", 2, lambda line: line.replace("\t1\t", "\tyes\t").replace("\t0\t", "\tno\t"),
     r"CoLA/dev.tsv line 2: label '(yes|no)' is not one of GLUE's \(0, 1\)"),
])  # fmt: skip
def test_a_bad_line_names_the_file_and_line(stage, config, file, line, edit, message, tmp_path):
    folder = write_glue_folder(tmp_path, config, glue_splits(config), cards()[GLUE_DATASET, config])
    edit_line(folder / file, line, edit)
    error, reach = STAGES[stage]
    with pytest.raises(error, match=message):
        reach(glue_task(*task_overrides(config, tmp_path), f"task.path={folder}"))


@pytest.mark.parametrize("overrides, message", [
    (["task.revision=main"], r"task.revision=main with task.path=.*: .*drop one"),
    (["task.test_split=validation_matched"], r"task.test_split=validation_matched: GLUE's SST-2 folder has the splits "
                                             r"train \(train.tsv\), validation \(dev.tsv\), test \(test.tsv\)"),
    (["task.dataset=other/glue"], r"task.path=.*: read only when task.corpus=text_files; or when task.corpus=hf, "
                                  r"task.dataset=nyu-mll/glue"),
    (["task.dataset_config=ax"], r"task.path reads GLUE's folder for a GLUE task, task.dataset=nyu-mll/glue with "
                                 r"task.dataset_config=cola\|sst2\|mrpc\|qqp\|stsb\|mnli\|qnli\|rte\|wnli"),
])  # fmt: skip
def test_the_keys_of_a_folder_are_checked_with_the_config(overrides, message, tmp_path):
    """Before anything is read, whether the folder is there or not."""
    with pytest.raises(ConfigError, match=message):
        glue_task(*task_overrides("sst2", tmp_path), f"task.path={tmp_path}/nowhere", *overrides)


def test_a_missing_folder_or_file_is_refused_saying_what_glue_ships(tmp_path):
    folder = write_glue_folder(tmp_path, "sst2", glue_splits("sst2"), cards()[GLUE_DATASET, "sst2"])
    with pytest.raises(ConfigError, match=r"task.path=.*/nowhere: no such folder \(GLUE's SST-2 folder, as "
                                          r"download_glue_data.py unzips it, holds train.tsv, dev.tsv, test.tsv\)"):
        prepared_key(glue_task(*task_overrides("sst2", tmp_path), f"task.path={tmp_path}/nowhere"))
    (folder / "dev.tsv").unlink()
    with pytest.raises(ConfigError, match=r"SST-2: no dev.tsv, which task.test_split=validation reads \(GLUE's SST-2 "
                                          r"folder, as download_glue_data.py unzips it, holds train.tsv, dev.tsv"):
        prepared_key(glue_task(*task_overrides("sst2", tmp_path), f"task.path={folder}"))


@pytest.mark.parametrize("edit, message", [
    (lambda line: "sentence_source\tlabel\tnote\tsentence\n" + line, "CoLA/train.tsv line 1 is not an example"),
    (lambda line: line, "CoLA/train.tsv line 100 has 3 TAB-separated cells; expected 4"),  # found while preparing
])  # fmt: skip
def test_a_bad_folder_through_the_cli_is_one_line_and_leaves_nothing(edit, message, tmp_path):
    folder = write_glue_folder(tmp_path, "cola", glue_splits("cola"), cards()[GLUE_DATASET, "cola"])
    edit_line(folder / "train.tsv", 1, edit)
    edit_line(folder / "train.tsv", 100, lambda line: line.split("\t", 1)[1])  # the source cell missing
    run, cache = tmp_path / "run", tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-m", "frozen_sweep", "task=glue_cola", f"task.path={folder}",
                           "task.vocab_size=60", "task.valid_from_train=10", f"task.cache_dir={cache}",
                           "model=mlm_micro", f"hydra.run.dir={run}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    prepared = cache / "prepared"  # the cache's folder of prepared datasets: none in it, no lock, no half-written one
    assert not run.exists() and not (prepared.exists() and any(prepared.iterdir()))
