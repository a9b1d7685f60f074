"""Translate sentences with a finished translation run: standard input (or --input) to standard output (or --output),
one sentence a line, in input order.

    python -m frozen_sweep.translate RUN < test.src | sacrebleu test.ref

RUN is the run's directory or its model file (python -m frozen_sweep.export). The search defaults to the run's own
settings (its config's eval section: beam, length penalty, length limits, sentences per batch), so the pipe above
gives exactly the BLEU its record holds for its test set. The input is read whole and checked (UTF-8, lengths) before
anything is translated; sentences are sorted by length and decoded in batches of at most --batch-sentences sentences
and --max-tokens padded source tokens. With --nbest N, each sentence gives N lines "LINE<TAB>SCORE<TAB>TRANSLATION"
(LINE from 1, SCORE the hypothesis' log-probability / length ** len_penalty), best first.
"""

import sys

from omegaconf import OmegaConf
from tqdm import tqdm

from frozen_sweep.config import TaskKind
from frozen_sweep.evaluate.decode import translate_nbest
from frozen_sweep.weights import command_line
from frozen_sweep.weights.command_line import UsageError

MAX_TOKENS = 6000  # padded source tokens per batch: with beam 4 a batch holds 4× this many decoder states


def main(argv=None) -> None:
    p = command_line.parser(__doc__)
    p.add_argument("--beam", type=int, help="beam size, 1 = greedy (default: the run's eval.beam)")
    p.add_argument("--nbest", type=int, default=1, help="hypotheses written per sentence, at most --beam")
    p.add_argument("--len-penalty", type=float, help="default: the run's eval.len_penalty")
    p.add_argument("--max-len-a", type=float, help="hypotheses stop at a × source length + b (default: the run's)")
    p.add_argument("--max-len-b", type=int, help="see --max-len-a (default: the run's eval.max_len_b)")
    p.add_argument("--batch-sentences", type=int, help="most sentences per batch (default: the run's)")
    p.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help=f"most padded source tokens per batch "
                   f"(default {MAX_TOKENS}); a longer sentence is a batch of its own")  # fmt: skip
    args = p.parse_args(argv)
    run = command_line.open_run(args, "translate", (TaskKind.translation,))
    search = OmegaConf.to_container(run.config.eval)
    for key in ("beam", "len_penalty", "max_len_a", "max_len_b", "batch_sentences"):
        if getattr(args, key) is not None:
            search[key] = getattr(args, key)
    if search["beam"] < 1 or not 1 <= args.nbest <= search["beam"]:
        raise UsageError(f"--beam {search['beam']} --nbest {args.nbest}: allowed: beam ≥ 1, 1 ≤ nbest ≤ beam")
    if search["batch_sentences"] < 1 or args.max_tokens < 1:
        raise UsageError("--batch-sentences and --max-tokens must be at least 1")

    lines = command_line.read_lines(args.input)
    vocab = run.vocab
    sources = vocab.encode_batch(lines)
    positions = run.config.model.max_positions
    command_line.check_lengths(sources, positions - 1, args.input, f"model.max_positions={positions}, less one for "
                               "the end-of-sentence")  # fmt: skip
    device = next(run.model.buffers()).device
    with tqdm(total=len(sources), unit="sentence", file=sys.stderr, disable=not sys.stderr.isatty()) as progress:
        ranked = translate_nbest(run.model, sources, vocab, device, OmegaConf.create(search), nbest=args.nbest,
                                 max_tokens=args.max_tokens, on_batch=progress.update)  # fmt: skip
    if args.nbest == 1:
        text = "".join(hyps[0][1] + "\n" for hyps in ranked)
    else:
        text = "".join(f"{line}\t{score:.4f}\t{hyp}\n" for line, hyps in enumerate(ranked, 1) for score, hyp in hyps)
    command_line.write_output(args.output, text)


if __name__ == "__main__":
    command_line.run_command(main)
