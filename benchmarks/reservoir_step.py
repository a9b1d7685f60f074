"""Reservoir step time: an all-trainable model against the same depth with reservoirs, with and without
backskipping, beside the ideal from counting matrix products.

    python benchmarks/reservoir_step.py [--model demo --encoder-layers 6] [--sentences 64 --length 32] [--repeats 7]

Every contender is the same encoder depth (reservoirs count as layers) built by `frozen_sweep.weights.build.build_model`, timed
with `Trainer._train_step` on one fixed batch, side by side, interleaved, median over rounds. Ideal ratio: matmul FLOPs
per step over the all-trainable model's (benchmarks/common.py: step_flops): a reservoir needs its forward and, when
something below it trains, its input gradient — no weight gradients; backskipping drops its backward entirely; a
reservoir with nothing trainable below it (placement=bottom) runs no backward either way.
"""

import tempfile
from pathlib import Path

import common


def contenders(encoder_layers: int, count: int) -> dict[str, list[str]]:
    """Name → overrides: all-trainable, then each reservoir type interleaved, with and without backskipping."""
    out = {"all trainable": []}
    for kind in ("transformer", "ffn", "bigru", "conv"):
        for backskip in (False, True):
            name = f"{kind} ×{count}{' backskip' if backskip else ''}"
            out[name] = [f"reservoir={kind}", f"reservoir.count={count}", f"reservoir.backskip={backskip}"]
    out[f"transformer ×{count} bottom"] = ["reservoir=transformer", f"reservoir.count={count}",
                                            "reservoir.placement=bottom", "freeze=emb"]  # fmt: skip
    out["all trainable, emb frozen"] = ["freeze=emb"]
    return out


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="demo")
    p.add_argument("--encoder-layers", type=int, default=6)
    p.add_argument("--reservoirs", type=int, default=2)
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32, help="tokens per side of every sentence (incl. bos/eos)")
    args = p.parse_args()
    if args.quick:
        args.model, args.encoder_layers, args.reservoirs, args.sentences, args.length = "micro", 3, 1, 4, 8
        args.repeats = 1
    repeats = args.repeats or 7
    common.setup(args)

    base = [f"model={args.model}", f"model.encoder_layers={args.encoder_layers}"]
    cfgs = {
        name: common.compose_config(*base, *o) for name, o in contenders(args.encoder_layers, args.reservoirs).items()
    }
    vocab = next(iter(cfgs.values())).task.vocab_size
    batch = common.synthetic_batch(args.sentences, args.length, vocab)
    flops = {name: common.step_flops(c.model, vocab, args.sentences, args.length, args.length,
                                     common.frozen_components(c.freeze), c.reservoir)
             for name, c in cfgs.items()}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        models = {name: common.build(c, vocab) for name, c in cfgs.items()}
        steps = {name: common.train_step(c, models[name], Path(tmp), vocab)[1] for name, c in cfgs.items()}
        m = cfgs["all trainable"].model
        print(f"model={args.model}, encoder {args.encoder_layers} layers ({args.reservoirs} reservoirs), "
              f"decoder {m.decoder_layers}, d {m.d_model}, FFN {m.ffn_dim}; vocab {vocab}; "
              f"batch {args.sentences}×{args.length}; {len(cfgs)} contenders side by side, {repeats} rounds, medians")  # fmt: skip
        times = common.interleaved({name: (lambda s=s: s(batch)) for name, s in steps.items()}, repeats, warmup=1)

    base_t, base_f = times["all trainable"], flops["all trainable"].total
    rows = []
    for name, c in cfgs.items():
        pattern = models[name].encoder.pattern
        measured, ideal = times[name] / base_t, flops[name].total / base_f
        rows.append([name, pattern, f"{times[name] * 1e3:.0f} ms", f"{flops[name].total / 1e9:.2f}",
                     f"{measured:.3f}", f"{ideal:.3f}", f"{1 / measured:.2f}×"])  # fmt: skip
    common.table(["contender", "encoder", "step", "GFLOP", "measured ratio", "ideal ratio", "speed-up"], rows)


if __name__ == "__main__":
    main()
