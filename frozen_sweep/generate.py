"""Text from a finished language-model run (task.kind=lm): each prompt line of standard input (or --input) followed by
the model's continuation, one line each, in input order, to standard output (or --output).

    echo "In the beginning" | python -m frozen_sweep.generate RUN
    python -m frozen_sweep.generate RUN --sample --top-p 0.9 --seed 1 < prompts.txt
    python -m frozen_sweep.generate RUN --unconditional 5 --sample --temperature 0.8

A continuation is at most --max-new-tokens subwords (and no longer than the model's positions) and ends at
end-of-sentence. Greedy search by default (what generate(do_sample=False) of the run's LLaMA export gives); --beam K
searches K hypotheses; --sample draws each token from the model's distribution, its logits divided by --temperature,
cut to the --top-k most likely and to the fewest whose probabilities sum to --top-p; line N is drawn with the seed
(--seed, N), so a seed repeats a sample (without --seed, the one drawn is said on standard error). An empty line, or
--unconditional N (N lines, no input), is continued from bos alone. The decoder reads a prompt once and then one new
position a step, its keys and values cached. RUN is the run's directory or its model file. The Python API:
frozen_sweep.load_run(RUN).generate.
"""

import sys

from frozen_sweep.config import TaskKind
from frozen_sweep.use import command_line
from frozen_sweep.use.errors import UsageError
from frozen_sweep.use.generating import MAX_NEW_TOKENS, fresh_seed, sampling_settings


def main(argv=None) -> None:
    p = command_line.parser(__doc__)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS, help=f"default {MAX_NEW_TOKENS}")
    p.add_argument("--beam", type=int, default=1, help="hypotheses searched, 1 = greedy (default 1)")
    p.add_argument("--sample", action="store_true", help="draw each token instead of searching")
    p.add_argument("--temperature", type=float, help="with --sample: logits divided by it (default 1)")
    p.add_argument("--top-k", type=int, help="with --sample: drawn from the K most likely tokens only")
    p.add_argument("--top-p", type=float, help="with --sample: drawn from the fewest most likely tokens whose "
                   "probabilities sum to P")  # fmt: skip
    p.add_argument("--seed", type=int, help="with --sample: line N drawn with the seed (SEED, N) (default: a fresh "
                   "one)")  # fmt: skip
    p.add_argument("--unconditional", type=int, metavar="N", help="N texts from bos alone; no input is read")
    args = p.parse_args(argv)
    if args.unconditional is not None and (args.unconditional < 1 or args.input or args.stream):
        raise UsageError("--unconditional N: allowed: N ≥ 1, without --input or --stream (it reads no input)")
    run = command_line.open_run(args)
    run.require("generate", TaskKind.lm)
    sampling_settings(args.sample, args.beam, args.temperature, args.top_k, args.top_p, args.seed)  # checked first
    if args.sample and args.seed is None:  # one for the whole input (every streamed batch), said so it can be repeated
        args.seed = fresh_seed()
        print(f"sampling with --seed {args.seed}", file=sys.stderr)
    settings = {key: getattr(args, key) for key in ("max_new_tokens", "beam", "sample", "temperature", "top_k",
                                                    "top_p", "seed")}  # fmt: skip

    def answer(prompts: list[str], source: str, first_line: int) -> list[str]:
        texts = run.generate(prompts, source=source, first_line=first_line, **settings)
        return [text + "\n" for text in texts]

    if args.unconditional is None:
        command_line.serve(args, run, answer)
        return
    command_line.write_output(args.output, "".join(answer([""] * args.unconditional, "--unconditional", 1)))
    print(run.speed_summary(), file=sys.stderr)


if __name__ == "__main__":
    command_line.run_command(main)
