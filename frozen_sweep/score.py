"""Score sentences with a finished language-model run: one line of scores per input line, in input order, and a
summary on standard error.

    python -m frozen_sweep.score RUN < test.txt

Each output line is "LOGPROB<TAB>TOKENS<TAB>PPL": the natural-log probability the model gives the line, the tokens
it was scored on and exp(−LOGPROB / TOKENS).
- causal LM (task.kind=lm): every subword of the line and its end-of-sentence, each predicted from the ones before.
- masked LM (task.kind=mlm): masked-position scores, not a pseudo-log-likelihood: the positions BERT masking picks
  (task.mask_prob of the line's subwords, replaced as in training), seeded by the line's number, each predicted from
  the rest of the line; the same masks a run's test set is scored with, so line N of its test file gets the masks its
  test sentence N got.
The summary is the perplexity over all scored tokens, batched as the job batched its test set (trainer.max_tokens),
so on the run's test file it is exactly the record's test perplexity. RUN is the run's directory or its model file.
"""

import sys

from frozen_sweep.config import TaskKind
from frozen_sweep.data import Split
from frozen_sweep.data.masking import held_out_batches
from frozen_sweep.evaluate.scores import perplexity, token_scores
from frozen_sweep.weights import command_line


def main(argv=None) -> None:
    args = command_line.parser(__doc__).parse_args(argv)
    run = command_line.open_run(args, "score", (TaskKind.lm, TaskKind.mlm))
    lines = command_line.read_lines(args.input)
    vocab, cfg = run.vocab, run.config
    ids = vocab.encode_batch(lines)
    positions = cfg.model.max_positions
    command_line.check_lengths(ids, positions - 1, args.input, f"model.max_positions={positions}, less one for the "
                               "end-of-sentence")  # fmt: skip
    batches = held_out_batches(Split.from_ids(None, ids), "test", cfg.task, len(vocab), cfg.trainer.max_tokens)
    scores: dict[int, tuple[float, int]] = {}
    nll, accuracy = token_scores(run.model, batches, next(run.model.buffers()).device, scores)
    out = []
    for i in range(len(ids)):
        summed, tokens = scores[i]
        out.append(f"{-summed:.4f}\t{tokens}\t{perplexity(summed / tokens) if tokens else float('nan'):.4f}\n")
    command_line.write_output(args.output, "".join(out))
    tokens = sum(n for _, n in scores.values())
    kind = "masked-position " if TaskKind(cfg.task.kind) == TaskKind.mlm else ""
    print(f"{len(ids)} lines, {tokens} {kind}tokens: perplexity {perplexity(nll)}, mean log-prob per token "
          f"{-nll:.6f}, accuracy {accuracy:.4f}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    command_line.run_command(main)
