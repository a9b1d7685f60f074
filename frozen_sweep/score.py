"""Score sentences with a finished language-model run, or force-decode translations with a translation run: one
line of scores per input line, in input order, and a summary on standard error.

    python -m frozen_sweep.score RUN < test.txt
    paste test.src test.ref | python -m frozen_sweep.score MT_RUN     # log p(reference | source)

Each output line is "LOGPROB<TAB>TOKENS<TAB>PPL": the natural-log probability the model gives the line, the tokens
it was scored on and exp(−LOGPROB / TOKENS).
- causal LM (task.kind=lm): every subword of the line and its end-of-sentence, each predicted from the ones before.
- masked LM (task.kind=mlm): masked-position scores, not a pseudo-log-likelihood: the positions BERT masking picks
  (task.mask_prob of the line's subwords, replaced as in training), seeded by the line's number, each predicted from
  the rest of the line; the same masks a run's test set is scored with, so line N of its test file gets the masks its
  test sentence N got.
- translation (task.kind=translation): lines `source<TAB>target`, scored log p(target | source): every target
  subword and the end-of-sentence, each predicted from the source and the target before it; on the run's test set
  (test.src.txt and test.ref.txt in its directory) the mean log-prob per token is minus the record's test_loss.
The summary is the perplexity over all scored tokens, batched as the job batched its test set (trainer.max_tokens),
so on the run's test file it is exactly the record's test perplexity (with --stream, each line is scored as it
comes and there is no summary). An empty line gives an empty line, not scored. RUN is the run's directory or its model file. The Python API:
frozen_sweep.load_run(RUN).score.
"""

import sys

from frozen_sweep.config import TaskKind
from frozen_sweep.use import command_line


def main(argv=None) -> None:
    args = command_line.parser(__doc__).parse_args(argv)
    run = command_line.open_run(args)
    run.require("score", TaskKind.lm, TaskKind.mlm, TaskKind.translation)

    def answer(lines: list[str], source: str, first_line: int) -> list[str]:
        scores = run.score(lines, source=source, first_line=first_line)
        if not args.stream:
            print(scores.summary(), file=sys.stderr)
        return [f"{line.logprob:.4f}\t{line.tokens}\t{line.perplexity:.4f}\n" if line else "\n"
                for line in scores.lines]  # fmt: skip

    command_line.serve(args, run, answer)


if __name__ == "__main__":
    command_line.run_command(main)
