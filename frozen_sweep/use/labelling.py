"""A classifier's labels (or a regression's numbers) for lines of text: one example a line, a text or, for a run
trained on pairs, `text_a<TAB>text_b`, encoded as its training batches held them (data/labelled.py)."""

import torch

from frozen_sweep.data.batching import pad_sequences
from frozen_sweep.use.errors import TooLongError, line_error


def split_examples(lines: list[str], source: str, pairs: bool, first_line: int = 1) -> list[list[str]]:
    """Each line's texts (one, or two for pairs), checked; an empty line is an empty example (no texts)."""
    columns = 2 if pairs else 1
    expected = "text_a<TAB>text_b (the run was trained on pairs)" if pairs else "one text (no TAB)"
    examples = []
    for number, line in enumerate(lines, start=first_line):
        texts = [text.strip() for text in line.split("\t")] if line.strip() else []
        if texts and len(texts) != columns:
            raise line_error(source, number, f"has {len(texts)} TAB-separated columns; expected {expected}")
        if texts and not all(texts):
            raise line_error(source, number, "has an empty text (text_a<TAB>text_b, both non-empty)")
        examples.append(texts)
    return examples


def encode(examples: list[list[str]], vocab, max_positions: int, source: str, numbers: list[int],
           too_long: str = "error") -> tuple[list[list[int]], list[int]]:  # fmt: skip
    """prefix text suffix, or prefix text_a middle text_b suffix (ours: bos text eos, bos text_a eos eos text_b eos):
    what the run's training batches held (data/labelled.py), and the numbers of the lines cut to the model's positions
    (too_long "truncate": the text's end cut, the suffix kept; else TooLongError). `numbers`: each example's line
    number, for errors."""
    rows, cut, long, specials = [], [], {}, vocab.specials
    for number, texts in zip(numbers, examples):
        ids = vocab.encode_batch(texts)
        text = ids[0] + (list(specials.middle) + ids[1] if len(ids) == 2 else [])
        row = [*specials.prefix, *text, *specials.suffix]
        if len(row) > max_positions and too_long == "truncate":
            cut.append(number)
            row = row[: max_positions - len(specials.suffix)] + list(specials.suffix)
        elif len(row) > max_positions:
            long[number] = f"{source} line {number} has {len(row)} pieces, more than the model's {max_positions}"
        rows.append(row)
    if long:
        raise TooLongError(next(iter(long.values())), long)
    return rows, cut


@torch.no_grad()
def outputs(model, rows: list[list[int]], batch_size: int) -> torch.Tensor:
    """The head's outputs per row, in order: (N, C) class logits, or a regression's (N,) numbers; batches of similar
    lengths."""
    device = next(model.parameters()).device
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    out = []
    for start in range(0, len(order), batch_size):
        tokens = pad_sequences([rows[i] for i in order[start : start + batch_size]], model.pad_id).to(device)  # (B, T)
        out.append(model(None, tokens).float().cpu())  # (B, C) or (B,)
    return torch.cat(out)[torch.tensor(order).argsort()]


def predict(model, rows: list[list[int]], batch_size: int) -> list[tuple[int, float]]:
    """(class id, its probability) per row, in order."""
    best = outputs(model, rows, batch_size).softmax(-1).max(-1)  # (N,) each
    return list(zip(best.indices.tolist(), best.values.tolist()))
