"""A dataset split's rows, all or some, read in chunks by plain reads of the Arrow files that hold it
(data/hub_convert.py) rather than through a memory map: a mapped page, once read, counts in the process's memory until
the process ends, so preparation's two passes over a corpus read through a map would hold all of it (O(corpus): ≈60 MB
at 205k pairs, ten times that at 2M), while a read's buffers are freed with their chunk. pyarrow alone: `datasets`
is not imported here."""

import json
from typing import Iterator

import numpy as np
import pyarrow as pa

from frozen_sweep.data.hub_convert import ArrowSplit


def flat_names(fields, prefix: str = "") -> list[str]:
    """Column names with a struct's fields named as `datasets` (and pyarrow) flatten them: `translation.de`."""
    names = []
    for f in fields:
        name = prefix + f.name
        names.extend(flat_names(f.type, name + ".") if pa.types.is_struct(f.type) else [name])
    return names


class Rows:
    """The rows of `split` numbered in `keep` (sorted; None: every row), by column. `features`: each column's
    `datasets` feature as the files' schema records it (`{"_type": "ClassLabel", "names": [...]}`; a struct: a dict
    of its fields)."""

    def __init__(self, split: ArrowSplit, keep: np.ndarray | None = None):
        self.split, self.keep = split, keep
        with pa.OSFile(split.files[0]) as first:
            schema = pa.ipc.open_stream(first).schema
        self.column_names, self.flat_names = schema.names, flat_names(schema)
        stored = json.loads((schema.metadata or {}).get(b"huggingface", b"{}"))
        self.features = stored.get("info", {}).get("features", {})

    def __len__(self) -> int:
        return self.split.rows if self.keep is None else len(self.keep)

    def name_row(self, index: int) -> str:
        """The `index`-th of these rows as a message names it: by its row in the dataset's split where it is a
        selection (valid held out of train)."""
        return f"row {index}" if self.keep is None else f"{self.split.name} row {int(self.keep[index])}"

    def column(self, name: str) -> pa.Array:
        """One top-level column of the rows, whole (a label column: a few bytes a row)."""
        column = pa.chunked_array([batch.column(name) for batch in self._batches()]).combine_chunks()
        pa.default_memory_pool().release_unused()
        return column if self.keep is None else column.take(pa.array(self.keep))

    def chunks(self, columns: list[str], size: int) -> Iterator[dict[str, list]]:
        """The rows' `columns` (flattened names) as Python lists, `size` rows a chunk (the last one fewer)."""
        start, pending, held = 0, [], 0
        for batch in self._batches():
            n = batch.num_rows
            if self.keep is not None:
                lo, hi = np.searchsorted(self.keep, (start, start + n))
                batch = batch.take(pa.array(self.keep[lo:hi] - start))
            start += n
            pending.append(batch)
            held += batch.num_rows
            while held >= size:
                table = pa.Table.from_batches(pending)
                yield table.slice(0, size).flatten().select(columns).to_pydict()
                pending, held = table.slice(size).to_batches(), held - size
        if held:
            yield pa.Table.from_batches(pending).flatten().select(columns).to_pydict()
        pa.default_memory_pool().release_unused()  # the pool would keep the freed read buffers for the next pass

    def _batches(self) -> Iterator[pa.RecordBatch]:
        """The split's record batches in order, checked to be all its rows."""
        rows = 0
        for name in self.split.files:
            with pa.OSFile(name) as file:
                for batch in pa.ipc.open_stream(file):
                    rows += batch.num_rows
                    yield batch
        if rows != self.split.rows:
            raise RuntimeError(f"{self.split.files}: {rows} rows read, the split has {self.split.rows}")
