"""Metric logging's cost per training step (frozen_sweep/metrics/log.py): metrics.jsonl and TensorBoard against the
step they log, at the default job's sizes.

    python benchmarks/logging_overhead.py [--model demo] [--sentences 128 --length 32] [--every 50] [--repeats 7]

Every `--every` steps, where the trainer reads its loss back from the device anyway, logging writes one record
(learning rate, gradient norm over the trainable parameters, one JSON line, TensorBoard scalars); nothing happens in
the steps between. A record is timed side by side with the trainer's own step (`Trainer._train_step`, model and batch
as a default job), interleaved, medians; the cost per step is a record's cost divided by the interval. Target: < 1%
of the step.
"""

import tempfile
from pathlib import Path

import common

from frozen_sweep.metrics.log import MetricsLog
from frozen_sweep.train.stopping import TrainState

CALLS = 50  # logger calls per timed call of a logging contender (a step is long; one call is microseconds)


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="demo")
    p.add_argument("--sentences", type=int, default=128)
    p.add_argument("--length", type=int, default=32, help="tokens per side (128×32: the default 4096-token batch)")
    p.add_argument("--every", type=int, default=None, help="trainer.log_every_steps (default: the config's)")
    args = p.parse_args()
    if args.quick:
        args.model, args.sentences, args.length, args.repeats = "micro", 4, 8, 1
    repeats = args.repeats or 7
    common.setup(args)

    cfg = common.compose_config(f"model={args.model}")
    every = args.every or cfg.trainer.log_every_steps
    if every < 2:
        p.error("--every must be >= 2 (with 1 every step writes a record: read the 'one record / step' column)")
    vocab = cfg.task.vocab_size
    batch = common.synthetic_batch(args.sentences, args.length, vocab)
    with tempfile.TemporaryDirectory() as tmp:
        trainer, step = common.train_step(cfg, common.build(cfg, vocab), Path(tmp), vocab)
        step(batch)  # gradients in place, as at a real log point
        loggers = {}
        for names in ("jsonl", "jsonl,tensorboard"):
            overrides = [f"trainer.loggers=[{names}]", f"trainer.log_every_steps={every}"]
            tr = common.compose_config(f"model={args.model}", *overrides).trainer
            loggers[names] = MetricsLog(Path(tmp) / names, tr, trainer.optimizer)

        def records(log: MetricsLog, state: TrainState):
            def run():
                for _ in range(CALLS):
                    log.train(state, 0.5, 4.2, 1e4)

            return run

        contenders = {"step": lambda: step(batch)}
        for name, log in loggers.items():
            contenders[f"{name}: record ×{CALLS}"] = records(log, TrainState(step=every))
        print(f"model={args.model}, batch {args.sentences}×{args.length}, a record every {every} steps; "
              f"{len(contenders)} contenders side by side, {repeats} rounds, medians")  # fmt: skip
        times = common.interleaved(contenders, repeats, warmup=1)
        for log in loggers.values():
            log.close()

    step_s = times["step"]
    rows, worst = [], 0.0
    for name in loggers:
        per_record = times[f"{name}: record ×{CALLS}"] / CALLS
        share = per_record / every / step_s * 100
        worst = max(worst, share)
        rows.append([name, f"{per_record * 1e3:.2f} ms", f"{share:.3f}%", f"{per_record / step_s * 100:.2f}%"])
    print(f"training step: {step_s * 1e3:.1f} ms")
    common.table(["loggers", "per record", f"cost per step (every {every})", "one record / step"], rows)
    common.verdict(f"logging cost per training step (every {every} steps)", worst, 1.0, unit="%", at_most=True)


if __name__ == "__main__":
    main()
