"""`python -m frozen_sweep.classify RUN [--input FILE] [--output FILE]`: label text with a finished classification
run's best model.

Reads one example a line, UTF-8 (from stdin, or --input): a text, or for a run trained on pairs `text_a<TAB>text_b`;
writes `label<TAB>probability` a line, in the input's order (to stdout, or --output, written whole or not at all).
The run is loaded by the one loader of finished runs (frozen_sweep.weights.finished_run.load_run): its frozen
parameters regenerated from their seed (a fine-tuned run's from its base run) and verified. Errors name the line:
invalid UTF-8, a wrong number of columns, an empty text, one longer than the model's positions.
"""

import argparse
import sys
from pathlib import Path
from typing import Optional

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.data.batching import pad_sequences
from frozen_sweep.data.text_files import decode_lines
from frozen_sweep.data.vocab import BOS, EOS, Vocab
from frozen_sweep.run.base_run import BaseRunError, load_base_run
from frozen_sweep.system.files import write_text_atomic
from frozen_sweep.weights.finished_run import load_run


class InputError(ValueError):
    """A line the run cannot classify; the message names it."""


def read_examples(raw: list[bytes], source: str, pairs: bool) -> list[list[str]]:
    """Each line's texts (one, or two for pairs), checked."""
    columns = 2 if pairs else 1
    expected = "text_a<TAB>text_b (the run was trained on pairs)" if pairs else "one text (no TAB)"
    examples = []
    for number, line in enumerate(decode_lines(Path(source), raw, 0, strip=False), start=1):
        texts = line.split("\t")
        if len(texts) != columns:
            raise InputError(f"{source} line {number} has {len(texts)} TAB-separated columns; expected {expected}")
        if not all(text.strip() for text in texts):
            raise InputError(f"{source} line {number}: empty text")
        examples.append([text.strip() for text in texts])
    return examples


def encode(examples: list[list[str]], vocab: Vocab, max_positions: int, source: str) -> list[list[int]]:
    """bos text eos, or bos text_a eos eos text_b eos: what the run's training batches held (data/labelled.py)."""
    sides = [vocab.encode_batch([example[k] for example in examples]) for k in range(len(examples[0]))]
    rows = []
    for number, ids in enumerate(zip(*sides), start=1):
        row = [BOS, *ids[0], EOS] + ([EOS, *ids[1], EOS] if len(ids) == 2 else [])
        if len(row) > max_positions:
            raise InputError(f"{source} line {number}: {len(row)} pieces, more than the model's {max_positions}")
        rows.append(row)
    return rows


@torch.no_grad()
def predict(model, rows: list[list[int]], batch_size: int) -> list[tuple[int, float]]:
    """(class id, its probability) per row, in order; batches of similar lengths."""
    model.eval()
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    out: list[tuple[int, float]] = [(0, 0.0)] * len(rows)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        best = model(None, pad_sequences([rows[i] for i in chunk])).float().softmax(-1).max(-1)  # (B,) each
        for i, label, probability in zip(chunk, best.indices.tolist(), best.values.tolist()):
            out[i] = (label, probability)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m frozen_sweep.classify", description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a completed classification run's directory (result.json, config.yaml, ...)")
    parser.add_argument("--input", type=Path, help="read the lines here instead of stdin")
    parser.add_argument("--output", type=Path, help="write the labels here instead of stdout")
    parser.add_argument("--batch-size", type=int, default=64, help="examples per forward pass (default 64)")
    args = parser.parse_args(argv)
    try:
        base = load_base_run(args.run)
        kind = base.config.task.kind
        if kind != TaskKind.classify.value:
            raise InputError(f"{args.run} is a task.kind={kind} run (task={base.config.task.name}), not a "
                             "classification run (task.kind=classify)")  # fmt: skip
        source = str(args.input) if args.input else "<stdin>"
        raw = args.input.read_bytes() if args.input else sys.stdin.buffer.read()
        examples = read_examples(raw.splitlines(keepends=True), source, base.record["data"]["pairs"])
        run = load_run(args.run)
        labels = run.record["data"]["labels"]
        vocab = Vocab.load(run.record["data"]["vocab_path"])
        rows = encode(examples, vocab, run.config.model.max_positions, source) if examples else []
        predictions = predict(run.model, rows, args.batch_size)
    except (BaseRunError, InputError, OSError, ValueError) as e:
        print(f"classify: {e}", file=sys.stderr)
        return 1
    text = "".join(f"{labels[label]}\t{probability:.4f}\n" for label, probability in predictions)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
