"""Batching: pad fraction of a training epoch of the embedded corpus, and the time to build an epoch's batches.

    python benchmarks/batching.py [--max-tokens 2048 4096]

Loads the embedded Spanish→English corpus (`task=bible_es_en`: the Bible modules must be installed, `make data`)
with `frozen_sweep.data.load_task`, builds one shuffled training epoch with `frozen_sweep.data.batching.make_batches`
as the trainer does (trainer.max_tokens 4096 by default, 2048 in experiment=demo_table) and reports
`pad_fraction` (pad tokens / all tokens of the source and target tensors), batches, sentences per batch and the
time to build the epoch (the trainer does it once per epoch). Target: pad fraction ≤ 10%.
`--quick` uses a small synthetic corpus instead (task=text_files).
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import common

from frozen_sweep.data import load_task
from frozen_sweep.data.batching import make_batches, pad_fraction


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--max-tokens", type=int, nargs="+", default=[2048, 4096])
    p.add_argument("--epochs", type=int, default=3, help="epochs (shuffles) measured; the pad fraction is their mean")
    args = p.parse_args()
    common.setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            sys.path.insert(0, str(common.ROOT))
            from tests.conftest import write_corpus

            corpus = write_corpus(Path(tmp) / "corpus")
            overrides = ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en",
                         "task.vocab_size=60", f"task.cache_dir={tmp}/cache"]  # fmt: skip
            args.max_tokens, args.epochs = [512], 1
        else:
            overrides = ["task=bible_es_en"]
        cfg = common.compose_config(*overrides)
        started = time.perf_counter()
        data = load_task(cfg.task)
        print(
            f"task {cfg.task.name}: {len(data.train)} training pairs, loaded in {time.perf_counter() - started:.1f} s"
        )
        rows, worst = [], 0.0
        for max_tokens in args.max_tokens:
            fractions, seconds, counts = [], [], []
            for epoch in range(args.epochs):
                started = time.perf_counter()
                batches = make_batches(data.train.src, data.train.tgt, max_tokens, True, cfg.seed, epoch)
                seconds.append(time.perf_counter() - started)
                fractions.append(pad_fraction(batches))
                counts.append(len(batches))
            fraction = statistics.mean(fractions)
            worst = max(worst, max(fractions))
            per_batch = len(data.train) / statistics.mean(counts)
            rows.append([max_tokens, f"{statistics.mean(counts):.0f}", f"{per_batch:.1f}", f"{fraction:.2%}",
                         f"{max(fractions):.2%}", f"{statistics.median(seconds):.2f} s"])  # fmt: skip
        common.table(["max_tokens", "batches", "sentences/batch", "pad fraction", "worst epoch", "build epoch"], rows)
    common.verdict("pad fraction of a training epoch (worst)", worst * 100, 10, unit="%", at_most=True)


if __name__ == "__main__":
    main()
