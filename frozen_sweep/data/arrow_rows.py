"""A `datasets.Dataset`'s rows, all or some, read in chunks by plain reads of its Arrow cache files rather than
through the memory map `datasets` opens them with: a mapped page, once read, counts in the process's memory until the
process ends, so preparation's two passes over a corpus read through the map would hold all of it (O(corpus): ≈60 MB
at 205k pairs, ten times that at 2M), while a read's buffers are freed with their chunk."""

from typing import Iterator

import numpy as np
import pyarrow as pa


class Rows:
    """The rows of `dataset` (as loaded: a selection is `keep`, not `dataset.select`) numbered in `keep` (sorted;
    None: every row), by column: a struct's fields are named as `datasets` flattens them (`translation.de`)."""

    def __init__(self, dataset, keep: np.ndarray | None = None):
        self.dataset, self.keep = dataset, keep
        self.column_names, self.features = dataset.column_names, dataset.features
        self.flat_names = list(dataset.features.flatten())

    def __len__(self) -> int:
        return len(self.dataset) if self.keep is None else len(self.keep)

    def name_row(self, index: int) -> str:
        """The `index`-th of these rows as a message names it: by its row in the dataset's split where it is a
        selection (valid held out of train)."""
        return f"row {index}" if self.keep is None else f"{self.dataset.split} row {int(self.keep[index])}"

    def column(self, name: str) -> pa.Array:
        """One top-level column of the rows, whole (a label column: a few bytes a row)."""
        column = self.dataset.with_format("arrow")[name].combine_chunks()
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
        """The dataset's record batches in order: from its cache files where they hold exactly its table (a dataset
        loaded, not transformed since), else from the table itself (one built in memory)."""
        table = self.dataset.data
        files = [entry["filename"] for entry in self.dataset.cache_files]
        readers = [pa.ipc.open_stream(pa.OSFile(name)) for name in files]
        exact = bool(readers) and all(reader.schema.equals(table.schema) for reader in readers)
        if not exact:
            yield from table.to_batches()
            return
        rows = 0
        for reader in readers:
            for batch in reader:
                rows += batch.num_rows
                yield batch
        if rows != table.num_rows:
            raise RuntimeError(f"{files}: {rows} rows read, the dataset has {table.num_rows}")
