"""Freeze speed-up: step time of each freeze pattern over all-trainable, beside the ideal from counting matmuls.

    python benchmarks/freeze_speedup.py [--model tiny] [--sentences 64 --length 32] [--repeats 7]

Builds one model per freeze pattern (frozen_sweep/conf/freeze/*.yaml, the paper's nine rows) with `frozen_sweep.weights.build.build_model`
and times `Trainer._train_step` on the same fixed batch, all nine side by side, interleaved, median over rounds.
The ideal is the ratio of matmul FLOPs per step (benchmarks/common.py: step_flops): a frozen weight needs no weight
gradient, and a block with nothing trainable in or below it needs no backward at all. Per pattern it prints the
measured step-time ratio, the ideal ratio, and saving achieved / ideal saving (1 − measured) / (1 − ideal).
Target: every pattern's saving ≥ 80% of its ideal saving. Frozen weights also leave Adam (no state, no update),
which the ideal does not count, so a pattern can beat its ideal.
"""

import tempfile
from pathlib import Path

import common

from frozen_sweep.weights.freeze import paper_row


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="tiny")
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32, help="tokens per side of every sentence (incl. bos/eos)")
    p.add_argument("--patterns", nargs="+", default=list(common.FREEZE_PATTERNS))
    args = p.parse_args()
    if args.quick:
        args.model, args.sentences, args.length, args.repeats = "micro", 4, 8, 1
    repeats = args.repeats or 7
    device = common.setup(args)
    patterns = ["none", *[x for x in args.patterns if x != "none"]]

    cfgs = {f: common.compose_config(f"model={args.model}", f"freeze={f}") for f in patterns}
    m, vocab = cfgs["none"].model, cfgs["none"].task.vocab_size
    batch = common.synthetic_batch(args.sentences, args.length, vocab).to(device)
    flops = {
        f: common.step_flops(m, vocab, args.sentences, args.length, args.length, common.frozen_components(c.freeze))
        for f, c in cfgs.items()
    }
    with tempfile.TemporaryDirectory() as tmp:
        steps = {f: common.train_step(c, common.build(c, vocab), Path(tmp), vocab, device)[1] for f, c in cfgs.items()}
        print(f"model={args.model} ({m.encoder_layers}+{m.decoder_layers} layers, d {m.d_model}, FFN {m.ffn_dim}), "
              f"vocab {vocab}, batch {args.sentences}×{args.length}; {len(patterns)} patterns side by side, "
              f"{repeats} rounds, medians")  # fmt: skip
        contenders = {f: (lambda s=s: s(batch)) for f, s in steps.items()}
        times = common.interleaved(contenders, repeats, warmup=1, device=device)

    rows, failed = [], []
    base_t, base_f = times["none"], flops["none"].total
    for f in patterns:
        measured, ideal = times[f] / base_t, flops[f].total / base_f
        achieved = (1 - measured) / (1 - ideal) if f != "none" else None
        rows.append([f, paper_row(cfgs[f].freeze) or "–", f"{times[f] * 1e3:.0f} ms", f"{flops[f].total / 1e9:.1f}",
                     f"{measured:.3f}", f"{ideal:.3f}", "–" if achieved is None else f"{achieved:.0%}"])  # fmt: skip
        if achieved is not None and achieved < 0.8:
            failed.append(f)
    common.table(["freeze", "row", "step", "GFLOP", "measured ratio", "ideal ratio", "saving achieved/ideal"], rows)
    worst = min(((1 - times[f] / base_t) / (1 - flops[f].total / base_f) for f in patterns if f != "none"),
                default=1.0)  # fmt: skip
    common.verdict("worst pattern's saving achieved / ideal", worst * 100, 80, unit="%")
    if failed:
        print("not met for: " + ", ".join(failed))


if __name__ == "__main__":
    main()
