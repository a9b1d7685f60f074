"""Label text with a finished classification run's best model, or give a regression run's number for it.

    python -m frozen_sweep.classify RUN [--input FILE] [--output FILE] < lines.txt

RUN: the run's directory, or its model file (python -m frozen_sweep.export RUN OUT): the same labels and
probabilities. Reads one example a line, UTF-8 (from stdin, or --input): a text, or for a run trained on pairs
`text_a<TAB>text_b`; writes `label<TAB>probability` a line (a regression run: the predicted number), in the input's
order (to stdout, or --output, written whole or not at all). The run is loaded by the one loader of finished runs
(frozen_sweep.weights.finished_run.load_run): its frozen parameters regenerated from their seed (a fine-tuned run
directory's from its base run; its model file stores those the base trained) and verified. Errors name the line:
invalid UTF-8, a wrong number of columns, an empty text, one longer than the model's positions.
"""

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.data.batching import pad_sequences
from frozen_sweep.data.vocab import BOS, EOS, Vocab
from frozen_sweep.weights import command_line
from frozen_sweep.weights.command_line import UsageError


def split_examples(lines: list[str], source: str, pairs: bool) -> list[list[str]]:
    """Each line's texts (one, or two for pairs), checked."""
    columns = 2 if pairs else 1
    expected = "text_a<TAB>text_b (the run was trained on pairs)" if pairs else "one text (no TAB)"
    examples = []
    for number, line in enumerate(lines, start=1):
        texts = [text.strip() for text in line.split("\t")]
        if len(texts) != columns:
            raise UsageError(f"{source} line {number} has {len(texts)} TAB-separated columns; expected {expected}")
        if not all(texts):
            raise UsageError(f"{source} line {number}: empty text")
        examples.append(texts)
    return examples


def encode(examples: list[list[str]], vocab: Vocab, max_positions: int, source: str) -> list[list[int]]:
    """bos text eos, or bos text_a eos eos text_b eos: what the run's training batches held (data/labelled.py)."""
    sides = [vocab.encode_batch([example[k] for example in examples]) for k in range(len(examples[0]))]
    rows = []
    for number, ids in enumerate(zip(*sides), start=1):
        row = [BOS, *ids[0], EOS] + ([EOS, *ids[1], EOS] if len(ids) == 2 else [])
        if len(row) > max_positions:
            raise UsageError(f"{source} line {number}: {len(row)} pieces, more than the model's {max_positions}")
        rows.append(row)
    return rows


@torch.no_grad()
def outputs(model, rows: list[list[int]], batch_size: int) -> torch.Tensor:
    """The head's outputs per row, in order: (N, C) class logits, or a regression's (N,) numbers; batches of similar
    lengths."""
    device = next(model.parameters()).device
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    out = []
    for start in range(0, len(order), batch_size):
        tokens = pad_sequences([rows[i] for i in order[start : start + batch_size]]).to(device)  # (B, T)
        out.append(model(None, tokens).float().cpu())  # (B, C) or (B,)
    return torch.cat(out)[torch.tensor(order).argsort()]


def predict(model, rows: list[list[int]], batch_size: int) -> list[tuple[int, float]]:
    """(class id, its probability) per row, in order."""
    best = outputs(model, rows, batch_size).softmax(-1).max(-1)  # (N,) each
    return list(zip(best.indices.tolist(), best.values.tolist()))


def main(argv=None) -> None:
    p = command_line.parser(__doc__)
    p.add_argument("--batch-size", type=int, default=64, help="examples per forward pass (default 64)")
    args = p.parse_args(argv)
    run = command_line.open_run(args, "classify", (TaskKind.classify, TaskKind.regression))
    source = args.input or "standard input"
    examples = split_examples(command_line.read_lines(args.input), source, run.pairs)
    rows = encode(examples, run.vocab, run.config.model.max_positions, source) if examples else []
    if not rows:
        text = ""
    elif TaskKind(run.config.task.kind) == TaskKind.regression:
        text = "".join(f"{number:.4f}\n" for number in outputs(run.model, rows, args.batch_size).tolist())
    else:
        predictions = predict(run.model, rows, args.batch_size)
        text = "".join(f"{run.labels[label]}\t{probability:.4f}\n" for label, probability in predictions)
    command_line.write_output(args.output, text)


if __name__ == "__main__":
    command_line.run_command(main)
