"""A loaded dataset's rows read in chunks by plain reads: the same rows as `datasets` gives, in any chunking and
selection, without reading the memory map's pages in."""

import re
from pathlib import Path

import datasets
import numpy as np

from frozen_sweep.data.arrow_rows import Rows
from tests.helpers.hub_layout import translation_features, wmt_columns, write_hub_dataset


def mapped_kb(path: str) -> int:
    """The resident kB of this process's memory maps of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.endswith(path)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_rows_are_datasets_rows_in_any_chunking_and_selection_and_leave_the_map_unread(tmp_path):
    long = {"translation": [{lang: " ".join([text] * 40) for lang, text in pair.items()}  # 1000-row batches of
                            for pair in wmt_columns(5_000, 0)["translation"]]}  # ≈2.5 MB: a map's fault-around is 64 kB
    root = write_hub_dataset(tmp_path / "hub", {"es-en": {"train": long}}, translation_features())
    dataset = datasets.load_dataset(str(root), "es-en", split="train", cache_dir=str(tmp_path / "cache"))
    (cache_file,) = (entry["filename"] for entry in dataset.cache_files)
    columns = ["translation.en", "translation.es"]
    rows, loaded = Rows(dataset), mapped_kb(cache_file)  # loading maps the pages around each batch's header in
    read = [chunk for chunk in rows.chunks(columns, 750)]
    assert [len(chunk["translation.en"]) for chunk in read] == [750] * 6 + [500]
    assert mapped_kb(cache_file) - loaded < Path(cache_file).stat().st_size / 1024 / 10  # reading mapped none in
    expected = dataset.flatten()
    assert sum((chunk["translation.es"] for chunk in read), []) == expected["translation.es"]
    keep = np.flatnonzero(np.arange(5_000) % 7 == 3)
    kept = Rows(dataset, keep)
    chosen = sum((chunk["translation.en"] for chunk in kept.chunks(columns, 256)), [])
    assert len(kept) == len(keep) and chosen == expected.select(keep)["translation.en"]
    assert kept.flat_names == ["translation.en", "translation.es"]
