"""Lines read as they come (a pipe, fairseq-interactive's way), in batches: the first line waiting and those that
come within a short wait of it, at most a number of them; each batch is handed on before the next is read. A line that
is not UTF-8 is handed on as an empty line with its error, so the lines around it are still answered."""

import queue
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

from frozen_sweep.data.text_files import decode_lines


def stream_batches(raw: BinaryIO, source: str, most_lines: int,
                   wait_s: float) -> Iterator[tuple[int, list[str], dict[int, str]]]:  # fmt: skip
    """(number of the batch's first line, its lines stripped, line number → error of each line that is not UTF-8,
    given as "") for each batch of `raw`. A reader thread blocks on the input, so a batch never waits for lines that
    have not come."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        try:
            for line in raw:  # each line as soon as it is complete
                lines.put(line)
        finally:
            lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    number, ended = 1, False
    while not ended:
        first = lines.get()
        if first is None:
            return
        batch, deadline = [first], time.monotonic() + wait_s
        while len(batch) < most_lines:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                ended = True
                break
            batch.append(line)
        decoded, bad = [], {}
        for at, line in enumerate(batch, start=number):
            try:
                decoded += decode_lines(source, [line.rstrip(b"\r\n")], lines_before=at - 1)
            except ValueError as e:
                decoded.append("")
                bad[at] = str(e)
        yield number, decoded, bad
        number += len(batch)
