"""Datasets in the Hugging Face hub's own layout, built by the tests (no network): a folder of parquet files per config
and split, named in the README's YAML `configs:` as the hub's parquet conversions are, loaded through the same
`datasets.load_dataset(path, config, split=...)` call that a hub name takes."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import toy_pairs


def write_hub_dataset(root: Path, configs: dict[str, dict[str, pa.Table]]) -> Path:
    """`configs`: {config name: {split name: table}} → root/<config>/<split>-00000-of-00001.parquet and README.md."""
    lines = ["---", "configs:"]
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split, table in splits.items():
            (root / config).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, root / config / f"{split}-00000-of-00001.parquet")
            lines += [f"  - split: {split}", f"    path: {config}/{split}-*"]
    (root / "README.md").write_text("\n".join([*lines, "---", "# a test dataset in the hub's layout", ""]))
    return root


def wmt_table(n: int, seed: int, src: str = "es", tgt: str = "en") -> pa.Table:
    """WMT's layout: one `translation` column of {lang: text}, the toy corpus's pairs."""
    return pa.table({"translation": [{src: s, tgt: t} for s, t in toy_pairs(n, seed)]})


def glue_table(rows: list[tuple[str, int]], names: list[str]) -> pa.Table:
    """GLUE's layout: `sentence`, a ClassLabel `label` (-1: withheld), `idx`."""
    from datasets import ClassLabel, Features, Value

    features = Features({"sentence": Value("string"), "label": ClassLabel(names=names), "idx": Value("int32")})
    table = pa.table({"sentence": [s for s, _ in rows], "label": pa.array([y for _, y in rows], pa.int64()),
                      "idx": pa.array(range(len(rows)), pa.int32())})  # fmt: skip
    return table.cast(features.arrow_schema)
