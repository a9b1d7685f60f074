"""Generation: tokens/s of a language model's greedy continuations with the key/value cache against the same search
without it.

    python benchmarks/generate.py [--model llama_demo] [--prompts 8] [--new-tokens 200] [--repeats 2]

Continues the same prompts with `frozen_sweep.evaluate.generation.continue_prompt` (one prompt at a time, as
`python -m frozen_sweep.generate` does), greedy, each with the cache (what the command uses: the prompt read once,
then one new position a step) and without it (`cache=False`: the decoder reruns the whole prefix at every step and
projects only its last position), side by side, interleaved, median over rounds. The model is freshly initialised
and eos is never taken as the end, so every continuation is --new-tokens long. Prompts are synthetic, 5–20 subwords.
Also prints whether both give the same tokens. Target: cached ≥ 3× uncached tokens/s at 200 new tokens.
"""

import common
import torch

from frozen_sweep.data.specials import BOS
from frozen_sweep.evaluate.generation import continue_prompt


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="llama_demo")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=200)
    args = p.parse_args()
    if args.quick:
        args.model, args.prompts, args.new_tokens, args.repeats = "llama_micro", 2, 8, 1
    repeats = args.repeats or 2
    common.setup(args)
    cfg = common.compose_config(f"model={args.model}", "task.kind=lm", "task.src_lang=null")
    vocab = cfg.task.vocab_size
    model = common.build(cfg, vocab).eval()
    prompts = [torch.tensor([[BOS, *ids]]) for ids in common.synthetic_sentences(args.prompts, 5, 20, vocab, seed=3)]
    outputs = {}

    def search(cache: bool):
        def run():
            outputs[cache] = [continue_prompt(model, ids, args.new_tokens, eos=-1, cache=cache) for ids in prompts]

        return run

    m = cfg.model
    print(f"model={args.model} ({m.decoder_layers} layers, d {m.d_model}, {m.heads} heads, {m.kv_heads or m.heads} "
          f"key/value heads), vocab {vocab}, {args.prompts} prompts, {args.new_tokens} new tokens each; {repeats} "
          "rounds, medians")  # fmt: skip
    times = common.interleaved({cache: search(cache) for cache in (True, False)}, repeats, warmup=0)
    tokens = args.prompts * args.new_tokens
    common.table(["cached tokens/s", "uncached tokens/s", "cached ×", "same tokens"],
                 [[f"{tokens / times[True]:.1f}", f"{tokens / times[False]:.1f}", f"{times[False] / times[True]:.2f}",
                   str(outputs[True] == outputs[False])]])  # fmt: skip
    common.verdict(f"{args.new_tokens} new tokens: cached / uncached tokens/s", times[False] / times[True], 3)


if __name__ == "__main__":
    main()
