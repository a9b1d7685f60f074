"""task.corpus=hf: datasets in the hub's own layouts, built here and read through `datasets.load_dataset` as a hub
name would be; which split is which; the errors that stop a job before it starts; the revision's resolution."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from datasets import Features, Value

from frozen_sweep.config import ConfigError
from frozen_sweep.data import load_task
from frozen_sweep.data.hub_splits import hub_source
from frozen_sweep.data.identity import prepared_key
from frozen_sweep.job.job_config import job_config
from tests.conftest import ROOT, compose_config, toy_pairs, write_corpus
from tests.helpers.hub_layout import cards, example_columns, translation_features, wmt_columns, write_hub_dataset


@pytest.fixture(scope="module")
def wmt_dir(tmp_path_factory):
    """A WMT-style dataset: config es-en, WMT's Translation column, train/validation/test as the toy corpus's."""
    tables = {split: wmt_columns(n, seed) for seed, (split, n) in enumerate(zip(("train", "validation", "test"),
                                                                                  (600, 60, 60)))}  # fmt: skip
    return write_hub_dataset(tmp_path_factory.mktemp("wmt"), {"es-en": tables}, translation_features())


def hf(*overrides, cache):
    return compose_config("task=hf", "task.src_lang=es", "task.vocab_size=60", f"task.cache_dir={cache}", "model=micro",
                          *overrides)  # fmt: skip


def test_a_wmt_layout_dataset_prepares_the_same_ids_as_its_text_files(wmt_dir, tmp_path):
    """The same pairs from the hub's layout and from text files: the same vocabulary, ids and held-out text."""
    hub = load_task(job_config(hf(f"task.dataset={wmt_dir}", "task.dataset_config=es-en", cache=tmp_path), []).task)
    text_dir = write_corpus(tmp_path / "text")
    text = load_task(compose_config("task=text_files", f"task.path={text_dir}", "task.src_lang=es", "task.tgt_lang=en",
                                    "task.vocab_size=60", f"task.cache_dir={tmp_path}").task)  # fmt: skip
    assert hub.vocab.model == text.vocab.model
    for split in ("train", "valid", "test"):
        a, b = getattr(hub, split), getattr(text, split)
        assert np.array_equal(a.tgt.ids, b.tgt.ids) and np.array_equal(a.src.offsets, b.src.offsets)
        assert a.tgt_text == b.tgt_text
    assert hub.stats["corpus"]["splits"] == {"train": "train", "valid": "validation", "test": "test"}
    assert hub.stats["corpus"]["dataset"] == str(wmt_dir) and hub.stats["corpus"]["files_sha256"]
    named = load_task(job_config(hf(f"task.dataset={wmt_dir}", "task.dataset_config=es-en", cache=tmp_path,
                                    *("task.src_column=translation.es", "task.tgt_column=translation.en")), []).task)
    assert np.array_equal(named.train.src.ids, hub.train.src.ids)  # a struct's field by its flattened name


def test_two_folders_of_one_name_and_config_each_read_their_own_rows(tmp_path):
    """`datasets` alone would give the second folder the first one's Arrow cache (same folder name, same configs)."""
    sizes = {}
    for n in (120, 77):
        splits = {split: wmt_columns(n, seed) for seed, split in enumerate(("train", "validation", "test"))}
        root = write_hub_dataset(tmp_path / str(n) / "wmt", {"es-en": splits}, translation_features())
        cfg = hf(f"task.dataset={root}", "task.dataset_config=es-en", cache=tmp_path / str(n))
        sizes[n] = load_task(job_config(cfg, []).task).stats["sizes"]["test"]
    assert sizes == {120: 120, 77: 77}


def test_two_plain_columns_and_a_held_out_valid(tmp_path):
    pairs = toy_pairs(300, 0)
    columns = {"source": [s for s, _ in pairs], "target": [t for _, t in pairs]}
    features = Features({"source": Value("string"), "target": Value("string")})
    test = {name: values[:20] for name, values in columns.items()}
    root = write_hub_dataset(tmp_path / "plain", {"default": {"train": columns, "test": test}}, features)
    cfg = hf(f"task.dataset={root}", "task.src_column=source", "task.tgt_column=target", "task.valid_split=null",
             "task.valid_from_train=25", "task.tgt_lang=en", cache=tmp_path)  # fmt: skip
    data = load_task(job_config(cfg, []).task)
    assert data.stats["sizes"]["valid"] == 25 and len(data.train) + 25 == 300
    held = set(data.valid.tgt_text)
    assert held <= {t for _, t in pairs} and data.stats["corpus"]["splits"]["valid"].startswith("25 of train")


def test_wikitext_blank_rows_are_skipped_in_every_split(tmp_path):
    rows = [" = Heading = ", "", " first paragraph here . ", "", " second paragraph . ", ""]
    features = cards()["Salesforce/wikitext", "wikitext-103-raw-v1"]
    splits = {split: {"text": rows * 20} for split in ("train", "validation", "test")}
    root = write_hub_dataset(tmp_path / "wiki", {"raw": splits}, features)
    cfg = hf(f"task.dataset={root}", "task.dataset_config=raw", "task.kind=lm", "task.src_lang=null",
             "model=lm_micro", cache=tmp_path)  # fmt: skip
    data = load_task(job_config(cfg, []).task)
    assert data.stats["sizes"] == {"train": 60, "valid": 60, "test": 60}
    assert data.stats["train_skipped_empty"] == 60
    assert data.test.tgt_text[:2] == ["= Heading =", "first paragraph here ."]


NAMES = ["unacceptable", "acceptable"]  # code-point order would put "acceptable" first


def cola_columns(n: int, labels=None) -> dict[str, list]:
    return {"sentence": [f"{'good' if i % 2 else 'bad'} sentence number {i % 7}" for i in range(n)],
            "label": labels or [i % 2 for i in range(n)], "idx": list(range(n))}  # fmt: skip


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory):
    """GLUE's cola config as the hub types it (a ClassLabel, test labels withheld: -1), and a smaller config beside."""
    configs = {config: {"train": cola_columns(n), "validation": cola_columns(40), "test": cola_columns(40, [-1] * 40)}
               for config, n in (("cola", 200), ("cola_small", 120))}  # fmt: skip
    return write_hub_dataset(tmp_path_factory.mktemp("glue"), configs, cards()["nyu-mll/glue", "cola"])


def glue(glue_dir, cache, *overrides):
    return compose_config("task=hf", "task.kind=classify", f"task.dataset={glue_dir}", "task.dataset_config=cola",
                          "task.text_column=sentence", "task.vocab_size=60", f"task.cache_dir={cache}",
                          "model=mlm_micro", *overrides)  # fmt: skip


def test_glue_withheld_test_labels_are_refused_and_validation_scores(glue_dir, tmp_path):
    with pytest.raises(ValueError, match=r"test: 40 examples with label -1 \(withheld\), the first at row 0.*"
                                         r"task.test_split=validation"):  # fmt: skip
        load_task(job_config(glue(glue_dir, tmp_path), []).task)
    cfg = glue(glue_dir, tmp_path, "task.valid_split=null", "task.valid_from_train=30", "task.test_split=validation")
    data = load_task(job_config(cfg, []).task)
    assert data.stats["labels"] == NAMES  # the ClassLabel's order
    assert data.stats["corpus"]["splits"]["test"] == "validation"
    assert data.test.labels.tolist() == [i % 2 for i in range(40)]


def test_a_label_outside_its_classlabel_is_refused_naming_the_row_the_value_and_the_names(tmp_path):
    """Parquet whose metadata types `label` as the card's ClassLabel but whose column holds an id past it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = cards()["nyu-mll/glue", "cola"]
    labels = [i % 2 for i in range(60)]
    labels[17] = 5
    for split in ("train", "validation", "test"):
        table = pa.table(cola_columns(60, labels if split == "train" else None)).cast(features.arrow_schema)
        (tmp_path / "cola").mkdir(exist_ok=True)
        pq.write_table(table, tmp_path / "cola" / f"{split}-00000-of-00001.parquet")
    cfg = glue(tmp_path / "cola", tmp_path / "cache", "task.dataset_config=null")
    with pytest.raises(ValueError, match=r"train row 17: label 5 is not one of its ClassLabel's \(0 unacceptable, "
                                         r"1 acceptable; -1 withheld\); 1 rows in all"):  # fmt: skip
        load_task(job_config(cfg, []).task)
    job = subprocess.run([sys.executable, "-m", "frozen_sweep", "task=glue_cola", f"task.dataset={tmp_path / 'cola'}",
                          "task.dataset_config=null", "task.valid_from_train=10", "task.vocab_size=60",
                          f"task.cache_dir={tmp_path / 'cache'}", "model=mlm_micro", "trainer=quick"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert job.returncode != 0 and len(job.stdout.strip().splitlines() + job.stderr.strip().splitlines()) == 1
    assert "train less 10 held out train row 17: label 5" in job.stdout + job.stderr  # its row in the split
    assert not (tmp_path / "outputs").exists() and not list((tmp_path / "cache" / "prepared").iterdir())


@pytest.mark.parametrize("override, message", [
    ("task.text_column=sentense", r"no column 'sentense' \(task.text_column\); its columns: sentence, label, idx"),
    ("task.train_split=training", r"no split 'training'.*train"),
    ("task.dataset_config=colla", r"task.dataset_config=colla"),
])  # fmt: skip
def test_a_wrong_column_split_or_config_names_what_exists(glue_dir, tmp_path, override, message):
    cfg = glue(glue_dir, tmp_path, "task.test_split=validation", "task.valid_split=null", "task.valid_from_train=30",
               override)  # fmt: skip
    with pytest.raises(ValueError, match=message):
        load_task(job_config(cfg, []).task)


@pytest.mark.parametrize("overrides, message", [
    (["task.dataset=null"], "task.dataset is not set"),
    (["task.revision=main"], "a revision is a hub commit"),
    (["task.test_split=train"], "never scored on its training data"),
    (["task.valid_split=null"], "task.valid_from_train=N"),
])  # fmt: skip
def test_split_and_source_keys_are_checked_before_anything_is_read(glue_dir, tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        job_config(glue(glue_dir, tmp_path, *overrides), [])


def test_local_files_through_a_builder_and_their_content_is_the_identity(tmp_path):
    pairs = toy_pairs(200, 3)
    for split, rows in (("train", pairs), ("valid", pairs[:20]), ("test", pairs[20:40])):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps({"translation": {"es": s, "en": t}}) + "\n"
                                                         for s, t in rows))  # fmt: skip
    files = "{train: %s/train.jsonl, validation: %s/valid.jsonl, test: %s/test.jsonl}" % ((tmp_path,) * 3)
    cfg = job_config(hf("task.dataset=json", f"task.data_files={files}", cache=tmp_path), [])
    key = prepared_key(cfg.task)[0]
    assert len(load_task(cfg.task).train) == 200
    (tmp_path / "test.jsonl").write_text(json.dumps({"translation": {"es": "otra", "en": "other"}}) + "\n")
    assert prepared_key(cfg.task)[0] != key  # another file content: another prepared dataset and fingerprint


def test_a_tsv_through_the_csv_builder_is_refused_before_anything_is_read_and_reads_with_its_separator(tmp_path):
    rows = ["sentence\tlabel"] + [f"{s} , \"quoted\tpositive" if i % 2 else f"{s}\tnegative"
                                   for i, (s, _) in enumerate(toy_pairs(120, 4))]  # fmt: skip
    for split, lines in (("train", rows), ("validation", rows[:1] + rows[1:21]), ("test", rows[:1] + rows[21:41])):
        (tmp_path / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    files = "{train: %s/train.tsv, validation: %s/validation.tsv, test: %s/test.tsv}" % ((tmp_path,) * 3)
    task = ["task.dataset=csv", f"task.data_files={files}", "task.kind=classify", "task.src_lang=null",
            "task.text_column=sentence",
            "model=mlm_micro"]  # fmt: skip
    with pytest.raises(ConfigError, match=r"task.data_files.train=.*train.tsv: its first line is TAB-separated.*"
                                          r"task.builder_kwargs='\{sep: "):  # fmt: skip
        job_config(hf(*task, cache=tmp_path), [])
    data = load_task(job_config(hf(*task, 'task.builder_kwargs={sep: "\t", quoting: 3}', cache=tmp_path), []).task)
    assert data.stats["sizes"] == {"train": 120, "valid": 20, "test": 20} and data.stats["labels"] == ["negative",
                                                                                                       "positive"]
    assert data.test.tgt_text[1].endswith(', "quoted')  # GLUE's way: no quoting, a quote is text


class FakeHubApi(BaseHTTPRequestHandler):
    """The one hub API call that resolves a revision: GET /api/datasets/<repo>/revision/<rev> → its commit."""

    commit = "0123456789abcdef0123456789abcdef01234567"

    def do_GET(self):
        body = json.dumps({"id": "org/data", "sha": self.commit, "siblings": []}).encode()
        self.send_response(200 if "/api/datasets/org/data/revision/main" in self.path else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


RESOLVE = ("from omegaconf import OmegaConf; from frozen_sweep.config import TaskConfig; "
           "from frozen_sweep.data.hub import resolve_commit; "
           "print(resolve_commit(OmegaConf.structured(TaskConfig(name='t', dataset='org/data', cache_dir='{cache}'))))")


def test_an_unpinned_hub_name_is_resolved_once_and_kept_for_offline_jobs(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), FakeHubApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{server.server_port}", "HF_HOME": str(tmp_path / "hf"), "PATH": "",
           "HF_HUB_OFFLINE": "0"}

    def resolve(**more):
        return subprocess.run([sys.executable, "-c", RESOLVE.format(cache=tmp_path)], cwd=ROOT, env=env | more,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    offline = resolve(HF_HUB_OFFLINE="1")
    assert offline.returncode != 0 and "python -m frozen_sweep.prepare" in offline.stderr  # nothing kept yet
    assert "HF_HUB_OFFLINE=1 is set" in offline.stderr
    assert "HF_DATASETS_OFFLINE=1 is set" in resolve(HF_DATASETS_OFFLINE="1").stderr  # the variable that is set
    assert resolve().stdout.split()[-1] == FakeHubApi.commit  # online: the hub's answer, kept
    server.shutdown()
    server.server_close()  # refused from now on: the hub unreachable
    assert resolve(HF_HUB_OFFLINE="1").stdout.split()[-1] == FakeHubApi.commit  # offline: the kept answer
    assert resolve().stdout.split()[-1] == FakeHubApi.commit  # the hub gone: the kept answer too
    unpinned = compose_config("task=glue_cola", f"task.cache_dir={tmp_path}").task
    source = hub_source(unpinned, {"hf_commit": FakeHubApi.commit})  # what the record says: the branch and its commit
    assert (source["revision"], source["commit"]) == ("main", FakeHubApi.commit)


def test_a_sweep_over_two_configs_of_one_folder_prepares_each_and_records_which_split_each_number_comes_from(
        glue_dir, tmp_path):  # fmt: skip
    """One real job of the named task glue_cola per config of one local folder, each prepared by the plan, trained,
    scored on validation: each record names its own config and counts, the splits and GLUE's metric for CoLA
    (Matthews correlation); the collected tables are headed by the data read and show that metric."""
    from tests.helpers.sweeps import LOCAL, record, run_sweep

    overrides = ["task=glue_cola", f"task.dataset={glue_dir}", "task.dataset_config=cola,cola_small",
                 "task.valid_from_train=30", "task.vocab_size=60", f"task.cache_dir={tmp_path / 'cache'}",
                 "model=mlm_micro", "trainer=quick", "trainer.max_steps=20"]  # fmt: skip
    done = run_sweep(tmp_path / "sweep", LOCAL, *overrides, env={"HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 0, done.stdout
    for config, train in (("cola", 170), ("cola_small", 90)):
        result = record(tmp_path / "sweep", f"task.dataset_config={config}")
        corpus = result["data"]["corpus"]
        assert result["status"] == "completed" and corpus["dataset"] == str(glue_dir) and corpus["config"] == config
        assert result["data"]["sizes"] == {"train": train, "valid": 30, "test": 40}
    assert corpus["splits"] == {"train": "train less 30 held out", "valid": "30 of train held out (seeded)",
                                "test": "validation"}  # fmt: skip
    assert result["report"] == ["mcc"] and -1 <= result["test_mcc"] <= 1
    table = subprocess.run([sys.executable, "-m", "frozen_sweep.collect", str(tmp_path / "sweep")], cwd=ROOT,
                           capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    assert f"{glue_dir} (cola) @ local files: train = train less 30 held out" in table and "test = validation" in table
    assert f"### glue_cola · {glue_dir} (cola) · fine-tuning" in table
    assert f"### glue_cola · {glue_dir} (cola_small) · fine-tuning" in table
    assert "| MCC ×100 valid | MCC ×100 test | Majority % |" in table and "Accuracy %" not in table
    missing = job_config(glue(glue_dir, tmp_path / "cache", "task.dataset_config=cola_big", "task.valid_split=null",
                              "task.valid_from_train=30", "task.test_split=validation"), [])  # fmt: skip
    with pytest.raises(ValueError, match="task.dataset_config=cola_big"):  # though both others of it are prepared
        load_task(missing.task)


def test_a_loading_script_and_a_missing_datasets_package_are_refused_saying_why(tmp_path, monkeypatch):
    script = tmp_path / "scripted"
    script.mkdir()
    (script / "scripted.py").write_text("import os  # a loading script: remote code\n")
    cfg = job_config(hf(f"task.dataset={script}", cache=tmp_path), [])
    with pytest.raises(ValueError, match="loading script \\(remote code\\).*refs/convert/parquet"):
        load_task(cfg.task)
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'frozen_sweep\[datasets\]'"):
        job_config(hf(f"task.dataset={script}", cache=tmp_path), [])


def test_an_stsb_like_regression_reads_float_labels_and_refuses_a_withheld_test_split(tmp_path):
    """STS-B's layout: two sentence columns, a float label, every test label -1 (withheld)."""
    features = cards()["nyu-mll/glue", "stsb"]
    splits = {"train": example_columns(features, 120, 0), "validation": example_columns(features, 30, 1),
              "test": example_columns(features, 30, 2, withheld=True)}  # fmt: skip
    root = write_hub_dataset(tmp_path / "stsb", {"stsb": splits}, features)
    base = ["task=hf", "task.kind=regression", f"task.dataset={root}", "task.dataset_config=stsb",
            "task.text_column=sentence1", "task.text_pair_column=sentence2", "task.vocab_size=60",
            f"task.cache_dir={tmp_path}", "model=mlm_micro"]  # fmt: skip
    with pytest.raises(ValueError, match=r"test: 30 examples with label -1 \(withheld\)"):
        load_task(job_config(compose_config(*base), []).task)
    split = ["task.valid_split=null", "task.valid_from_train=20", "task.test_split=validation"]
    data = load_task(job_config(compose_config(*base, *split), []).task)
    assert data.regression and data.test.labels.tolist() == [(i % 11) / 2 for i in range(30)]
    assert data.stats["corpus"]["splits"]["test"] == "validation"
