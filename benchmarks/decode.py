"""Decoding: sentences/s of beam search (beam 1 and 4) with the key/value cache against the same search without it.

    python benchmarks/decode.py [--model tiny] [--sentences 100] [--repeats 2]

Decodes the same sentences with `frozen_sweep.evaluate.decode.translate` (batches of `eval.batch_sentences`, the search of
`eval` in frozen_sweep/conf/config.yaml) at beam 1 and beam 4, each with the cache (`cache=True`, what a job uses) and without it
(`cache=False`: the decoder reruns the whole prefix at every step and projects only its last position onto the
vocabulary), all four side by side, interleaved (rotated order, no warm-up round), median over rounds. The model is
freshly initialised (an untrained model rarely emits eos, so most hypotheses run to the length limit
max_len_a · source length + max_len_b: the worst case). Sources are synthetic, 5–45 subwords. Also prints whether
both searches return the same translations. Target: cached ≥ 3× uncached at beam 4 on 100 sentences.
"""

import common
import torch

from frozen_sweep.evaluate.decode import translate


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="tiny")
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    args = p.parse_args()
    if args.quick:
        args.model, args.sentences, args.repeats = "micro", 6, 1
    repeats = args.repeats or 2
    common.setup(args)
    cfg = common.compose_config(f"model={args.model}")
    vocab = cfg.task.vocab_size
    model = common.build(cfg, vocab).eval()
    stub = common.StubVocab(vocab)
    sources = common.synthetic_sentences(args.sentences, 5, 45, vocab, seed=3)
    outputs = {}

    def search(beam: int, cache: bool):
        def run():
            cpu = torch.device("cpu")
            outputs[beam, cache] = translate(model, sources, stub, cpu, cfg.eval, beam=beam, cache=cache)

        return run

    contenders = {(b, c): search(b, c) for b in args.beams for c in (True, False)}
    m = cfg.model
    print(f"model={args.model} ({m.encoder_layers}+{m.decoder_layers} layers, d {m.d_model}, FFN {m.ffn_dim}), "
          f"vocab {vocab}, {args.sentences} sentences, batches of {cfg.eval.batch_sentences}, "
          f"len ≤ {cfg.eval.max_len_a}·src + {cfg.eval.max_len_b}; {repeats} rounds, medians")  # fmt: skip
    times = common.interleaved(contenders, repeats, warmup=0)
    rows, speedups = [], {}
    for b in args.beams:
        cached, uncached = times[b, True], times[b, False]
        speedups[b] = uncached / cached
        same = sum(x == y for x, y in zip(outputs[b, True], outputs[b, False]))
        rows.append([b, f"{args.sentences / cached:.1f}", f"{args.sentences / uncached:.1f}", f"{speedups[b]:.2f}",
                     f"{same}/{args.sentences}"])  # fmt: skip
    common.table(["beam", "cached sent/s", "uncached sent/s", "cached ×", "same output"], rows)
    if 4 in speedups:
        common.verdict(f"beam 4, {args.sentences} sentences: cached / uncached sentences/s", speedups[4], 3)


if __name__ == "__main__":
    main()
