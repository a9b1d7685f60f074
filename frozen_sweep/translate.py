"""Translate sentences with a finished translation run: standard input (or --input) to standard output (or --output),
one sentence a line, in input order.

    python -m frozen_sweep.translate RUN < test.src | sacrebleu test.ref

RUN is the run's directory or its model file (python -m frozen_sweep.export). The search defaults to the run's own
settings (its config's eval section: beam, length penalty, length limits, sentences per batch), so the pipe above
gives exactly the BLEU its record holds for its test set. The input is read whole and checked (UTF-8, lengths) before
anything is translated (with --stream, a batch at a time as it comes); sentences are sorted by length and decoded in
batches of at most --batch-sentences sentences and --max-tokens padded source tokens (fewer by default with frozen
weights drawn on the fly, whose point is a small peak); an empty line gives an empty line. With --nbest N, each sentence gives N lines "LINE<TAB>SCORE<TAB>TRANSLATION" (LINE from 1, SCORE the
hypothesis' log-probability / length ** len_penalty), best first. Several RUNs translate as an ensemble: at every
step the log of the mean of their next-token probabilities (fairseq's rule); they must share one vocabulary, and the
first run's search settings apply. The Python API: frozen_sweep.load_run(RUN).translate.
"""

import sys

from tqdm import tqdm

from frozen_sweep.config import TaskKind
from frozen_sweep.use.translating import MAX_TOKENS, ON_THE_FLY_MAX_TOKENS
from frozen_sweep.use import command_line


def main(argv=None) -> None:
    p = command_line.parser(__doc__, ensemble=True)
    p.add_argument("--beam", type=int, help="beam size, 1 = greedy (default: the run's eval.beam)")
    p.add_argument("--nbest", type=int, default=1, help="hypotheses written per sentence, at most --beam")
    p.add_argument("--len-penalty", type=float, help="default: the run's eval.len_penalty")
    p.add_argument("--max-len-a", type=float, help="hypotheses stop at a × source length + b (default: the run's)")
    p.add_argument("--max-len-b", type=int, help="see --max-len-a (default: the run's eval.max_len_b)")
    p.add_argument("--batch-sentences", type=int, help="most sentences per batch (default: the run's)")
    p.add_argument("--max-tokens", type=int, help=f"most padded source tokens per batch (default {MAX_TOKENS}, "
                   f"{ON_THE_FLY_MAX_TOKENS} with --frozen on-the-fly); a longer sentence is a batch of its own")
    args = p.parse_args(argv)
    run = command_line.open_run(args)
    run.require("translate", TaskKind.translation)
    search = {key: getattr(args, key) for key in ("beam", "len_penalty", "max_len_a", "max_len_b", "batch_sentences")}

    def answer(lines: list[str], source: str, first_line: int) -> list[str]:
        with tqdm(total=len(lines), unit="sentence", file=sys.stderr,
                  disable=args.stream or not sys.stderr.isatty()) as progress:  # fmt: skip
            ranked = run.translate(lines, nbest=args.nbest, max_tokens=args.max_tokens, source=source,
                                   first_line=first_line, on_batch=progress.update, **search)  # fmt: skip
        if args.nbest == 1:
            return [hyps[0][1] + "\n" for hyps in ranked]
        return ["".join(f"{line}\t{score:.4f}\t{hyp}\n" for score, hyp in hyps)
                for line, hyps in enumerate(ranked, first_line)]  # fmt: skip

    command_line.serve(args, run, answer)


if __name__ == "__main__":
    command_line.run_command(main)
