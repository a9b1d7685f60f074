"""Reservoir step time: an all-trainable model against the same depth with reservoirs, with and without
backskipping, beside the ideal from counting matrix products.

    python benchmarks/reservoir_step.py [--model demo --encoder-layers 6] [--sentences 64 --length 32] [--repeats 7]

Every contender is the same encoder depth (reservoirs count as layers) built by `frozen_sweep.weights.build.build_model`, timed
with `Trainer._train_step` on one fixed batch, side by side, interleaved, median over rounds. Ideal ratio: matmul FLOPs
per step over the all-trainable model's (benchmarks/common.py: step_flops): a reservoir needs its forward and, when
something below it trains, its input gradient — no weight gradients; backskipping drops its backward entirely; a
reservoir with nothing trainable below it (placement=bottom) runs no backward either way.

`--experiment NAME` (e.g. reservoir_lm) times that experiment's own rows instead — the jobs of its sweep
(`hydra.sweeper.params`), each composed as the job is, on a synthetic batch of the job's `trainer.max_tokens` target
tokens (sentences of --length) — side by side in the same way, and prints the seconds per update of each as the YAML
of a stated calibration: the experiment's `trainer.step_times` (docs/training.md, the calibrated clock). The CPU
seconds of this process (time.process_time): a busy machine inflates them less than wall time.
"""

import datetime
import itertools
import tempfile
import time
from pathlib import Path

import common
from omegaconf import OmegaConf

from frozen_sweep.system.kernels import machine


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


def experiment_rows(name: str) -> dict[str, list[str]]:
    """Row name → overrides: the experiment's sweep (each `key: a,b,c` of hydra.sweeper.params), its product."""
    params = OmegaConf.load(common.CONF / "experiment" / f"{name}.yaml").hydra.sweeper.params
    axes = [[f"{key}={value.strip()}" for value in str(values).split(",")] for key, values in params.items()]
    return {" ".join(row): list(row) for row in itertools.product(*axes)}


def calibrate(args, repeats: int) -> None:
    """Each row of `args.experiment` timed side by side; its seconds per update as the YAML of trainer.step_times."""
    rows = experiment_rows(args.experiment)
    cfgs = {row: common.compose_config(f"experiment={args.experiment}", *o) for row, o in rows.items()}
    first = next(iter(cfgs.values()))
    vocab, sentences = first.task.vocab_size, max(1, first.trainer.max_tokens // args.length)
    batch = common.synthetic_batch(sentences, args.length, vocab)
    with tempfile.TemporaryDirectory() as tmp:
        steps = {row: common.train_step(c, common.build(c, vocab), Path(tmp), vocab)[1] for row, c in cfgs.items()}
        print(f"experiment={args.experiment}: {len(cfgs)} rows side by side, batch {sentences}×{args.length} "
              f"(trainer.max_tokens={first.trainer.max_tokens}), {repeats} rounds, median CPU seconds")  # fmt: skip
        times = common.interleaved({row: (lambda s=s: s(batch)) for row, s in steps.items()}, repeats, warmup=1,
                                   clock=time.process_time)  # fmt: skip
    common.table(["row", "s per update"], [[row, f"{t:.4f}"] for row, t in times.items()])
    print(f"\ntrainer:\n  step_times:  # s per update, {machine()}, {args.threads} thread(s), "
          f"{datetime.date.today()}: python benchmarks/reservoir_step.py --experiment {args.experiment}")  # fmt: skip
    for row, t in times.items():  # the row's sweep values joined by "_", as the `join` resolver names it
        print(f"    {'_'.join(o.partition('=')[2] for o in row.split())}: {t:.4f}")


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="demo")
    p.add_argument("--encoder-layers", type=int, default=6)
    p.add_argument("--reservoirs", type=int, default=2)
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32, help="tokens per side of every sentence (incl. bos/eos)")
    p.add_argument("--experiment", help="time this experiment's rows instead; print their trainer.step_times")
    args = p.parse_args()
    if args.experiment:
        common.setup(args)
        return calibrate(args, args.repeats or 7)
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
