"""A hub dataset's splits as preparation reads them: Arrow files a child process had `datasets` write, read in chunks
by plain reads; the same rows as `datasets` gives, in any chunking and selection; `datasets` never in the preparing
process."""

import subprocess
import sys

import datasets
import numpy as np

from frozen_sweep.data.arrow_rows import Rows
from frozen_sweep.data.hub_convert import converted_splits
from tests.conftest import ROOT, compose_config
from tests.helpers.hub_layout import translation_features, wmt_columns, write_hub_dataset


def test_rows_are_datasets_rows_in_any_chunking_and_selection(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    long = {"translation": [{lang: " ".join([text] * 40) for lang, text in pair.items()}  # several Arrow batches
                            for pair in wmt_columns(5_000, 0)["translation"]]}  # fmt: skip
    root = write_hub_dataset(tmp_path / "hub", {"es-en": {"train": long}}, translation_features())
    task = compose_config("task=hf", f"task.dataset={root}", "task.dataset_config=es-en", "task.src_lang=es",
                          f"task.cache_dir={tmp_path / 'cache'}").task  # fmt: skip
    (split,) = converted_splits(task, ["train"]).values()
    columns = ["translation.en", "translation.es"]
    rows = Rows(split)
    read = [chunk for chunk in rows.chunks(columns, 750)]
    assert [len(chunk["translation.en"]) for chunk in read] == [750] * 6 + [500]
    expected = datasets.load_dataset(str(root), "es-en", split="train", cache_dir=str(tmp_path / "c")).flatten()
    assert sum((chunk["translation.es"] for chunk in read), []) == expected["translation.es"]
    keep = np.flatnonzero(np.arange(5_000) % 7 == 3)
    kept = Rows(split, keep)
    chosen = sum((chunk["translation.en"] for chunk in kept.chunks(columns, 256)), [])
    assert len(kept) == len(keep) and chosen == expected.select(keep)["translation.en"]
    assert kept.flat_names == ["translation.en", "translation.es"]
    assert kept.features["translation"] == {"languages": ["es", "en"], "_type": "Translation"}  # as the hub types it


def test_preparing_a_hub_dataset_leaves_datasets_and_pandas_out_of_the_preparing_process(tmp_path):
    """Their import and the Arrow conversion (≈120 MB at 205k pairs) are the child's, handed back when it ends."""
    root = write_hub_dataset(tmp_path / "hub", {"es-en": {split: wmt_columns(60, i) for i, split in
                                                          enumerate(("train", "validation", "test"))}},
                             translation_features())  # fmt: skip
    overrides = ["task=hf", f"task.dataset={root}", "task.dataset_config=es-en", "task.src_lang=es",
                 "task.vocab_size=60", f"task.cache_dir={tmp_path / 'cache'}"]  # fmt: skip
    check = ("import sys; from frozen_sweep.prepare import main; assert main(sys.argv[1:]) == 0; "
             "print(sorted({'datasets', 'pandas'} & set(sys.modules)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", check, *overrides], cwd=ROOT, capture_output=True, text=True,
                          env={"HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin"}, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "[]"
