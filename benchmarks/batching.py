"""Batching: pad fraction and distinct batch shapes of a training epoch of the embedded corpus, and build time.

    python benchmarks/batching.py [--max-tokens 2048 4096 8192] [--multiples 1 4 8]

Loads the embedded Spanish→English corpus (`task=bible_es_en`: the Bible modules must be installed, `make data`)
with `frozen_sweep.data.load_task`, builds one shuffled training epoch with `frozen_sweep.data.make_batches`
as the trainer does (trainer.max_tokens 4096 by default, 1024 in experiment=demo_table, 8192 for model=base), for
each padded-length multiple (trainer.length_multiple), and reports `pad_fraction` (pad tokens / all tokens of the
source and target tensors), batches, distinct (batch, length) shapes, sentences per batch and the time to build the
epoch. Targets at the trainer's default multiple: pad fraction ≤ 10%, ≤ 32 shapes per epoch (kernels that plan per
shape — cuDNN attention, oneDNN bf16 — plan a few dozen times, not hundreds).
`--quick` uses a small synthetic corpus instead (task=text_files).
"""

import statistics
import tempfile
import time

import common

from frozen_sweep.data import load_task, make_batches, pad_fraction


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--max-tokens", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--multiples", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--epochs", type=int, default=3, help="epochs (shuffles) measured; the pad fraction is their mean")
    args = p.parse_args()
    common.setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            args.max_tokens, args.epochs = [512], 1
        cfg = common.compose_config(*common.task_overrides(args.quick, tmp))
        started = time.perf_counter()
        data = load_task(cfg.task)
        print(
            f"task {cfg.task.name}: {len(data.train)} training pairs, loaded in {time.perf_counter() - started:.1f} s"
        )
        default = cfg.trainer.length_multiple
        rows, worst, most_shapes = [], 0.0, 0
        for max_tokens in args.max_tokens:
            for multiple in sorted({*args.multiples, default}):
                fractions, seconds, counts, shapes = [], [], [], []
                for epoch in range(args.epochs):
                    started = time.perf_counter()
                    batches = make_batches(data.train, max_tokens, True, cfg.seed, epoch, multiple)
                    seconds.append(time.perf_counter() - started)
                    fractions.append(pad_fraction(batches))
                    counts.append(len(batches))
                    shapes.append(len({b.tgt_out.shape for b in batches}))
                if multiple == default:
                    worst, most_shapes = max(worst, max(fractions)), max(most_shapes, max(shapes))
                per_batch = len(data.train) / statistics.mean(counts)
                rows.append([max_tokens, multiple, f"{statistics.mean(counts):.0f}", max(shapes), f"{per_batch:.1f}",
                             f"{statistics.mean(fractions):.2%}", f"{max(fractions):.2%}",
                             f"{statistics.median(seconds):.2f} s"])  # fmt: skip
        common.table(["max_tokens", "multiple", "batches", "shapes", "sentences/batch", "pad fraction", "worst epoch",
                      "build epoch"], rows)  # fmt: skip
    common.verdict(f"pad fraction of a training epoch (worst, multiple {default})", worst * 100, 10, unit="%",
                   at_most=True)  # fmt: skip
    common.verdict(f"distinct batch shapes per epoch (most, multiple {default})", most_shapes, 32, unit="",
                   at_most=True)  # fmt: skip


if __name__ == "__main__":
    main()
