"""Data-parallel training on the CPU: scaling of 2 gloo ranks over 1, and the bytes DDP all-reduces per update.

    python benchmarks/distributed.py [--model demo] [--updates 12] [--repeats 3]

1. Tokens/s of the trainer's own update (Trainer._update: collate, forward, backward, all-reduce, Adam) with 2 ranks ×
   1 thread against 1 rank × 1 thread, on the same global batch stream (synthetic sentences, the real batch plan):
   a 2-rank update takes two batches. Both run in spawned processes, interleaved over rounds, median per contender.
   Scaling efficiency = tokens/s(2 ranks) / (2 × tokens/s(1 rank)). Target ≥ 0.8: gloo's all-reduce of a small
   model is cheap, but the two ranks share this machine's two cores with whatever else runs (the load is printed).
2. Bytes all-reduced per update by 2 ranks, for each freeze row, counted by a DDP communication hook around the
   ordinary all-reduce; also with update_freq=2 (no_sync: one all-reduce per update, not per batch). Target: equal
   to the row's trainable parameter bytes: frozen parameters are never communicated.
"""

import json
import os
import tempfile
import time
from pathlib import Path

import common
import torch
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from frozen_sweep.data import Split, TaskData
from frozen_sweep.parallel.distributed import process_group, run_ranks
from frozen_sweep.system import cpu
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.train.updates import update_batches
from frozen_sweep.weights.freeze import paper_row

TIMEOUT_S = 600


def synthetic_data(vocab: int, sentences: int) -> TaskData:
    src = common.synthetic_sentences(sentences, 10, 40, vocab, 1)
    tgt = common.synthetic_sentences(sentences, 10, 40, vocab, 2)
    split = Split.from_ids(src, tgt, None, [""] * sentences)
    return TaskData(common.StubVocab(vocab), split, split, split, {})


def trainer_for(world, overrides: list[str], sentences: int, run_dir: str) -> Trainer:
    cfg = common.compose_config(*overrides, "trainer.amp=false")
    data = synthetic_data(cfg.task.vocab_size, sentences)
    torch.manual_seed(0)
    return Trainer(cfg, data, common.build(cfg, cfg.task.vocab_size), torch.device("cpu"), run_dir, world=world)


def throughput(world, overrides: list[str], sentences: int, updates: int, out: str) -> None:
    """A rank: `updates` timed updates after one warm-up; rank 0 writes target tokens/s."""
    cpu.set_threads(1)
    with tempfile.TemporaryDirectory() as tmp, process_group(world, torch.device("cpu"), TIMEOUT_S):
        trainer = trainer_for(world, overrides, sentences, tmp)
        plan, per_update = trainer._plan(0), trainer.batches_per_update
        assert len(plan) >= (updates + 1) * per_update, "too few sentences for the updates: raise --sentences"
        trainer._update(update_batches(plan, 0, per_update))
        if world.size > 1:
            torch.distributed.barrier()  # both ranks start the clock together
        started, tokens = time.perf_counter(), 0
        for update in range(1, updates + 1):
            tokens += trainer._update(update_batches(plan, update, per_update))[0]
        float(trainer._loss_sum)
        if world.is_main:
            Path(out).write_text(json.dumps({"tokens_per_s": tokens / (time.perf_counter() - started)}))


def bytes_per_update(world, rows: list[tuple[str, int]], overrides: list[str], sentences: int, out: str) -> None:
    """A rank: for each (freeze, update_freq), the bytes of the gradient buckets all-reduced over 2 updates, per
    update, beside the trainable and all parameter bytes; rank 0 writes them."""
    cpu.set_threads(1)
    results = []
    with tempfile.TemporaryDirectory() as tmp, process_group(world, torch.device("cpu"), TIMEOUT_S):
        for freeze, update_freq in rows:
            row_overrides = [*overrides, f"freeze={freeze}", f"trainer.update_freq={update_freq}"]
            trainer = trainer_for(world, row_overrides, sentences, tmp)
            counted = [0]

            def counting_allreduce(state, bucket, counted=counted):
                counted[0] += bucket.buffer().numel() * bucket.buffer().element_size()
                return default_hooks.allreduce_hook(state, bucket)

            trainer.ddp.register_comm_hook(None, counting_allreduce)
            plan = trainer._plan(0)
            assert len(plan) >= 2 * trainer.batches_per_update, "too few sentences for 2 updates: raise --sentences"
            for update in range(2):
                trainer._update(update_batches(plan, update, trainer.batches_per_update))
            params = list(trainer.model.parameters())
            results.append({
                "bytes": counted[0] / 2,
                "trainable": sum(p.numel() * p.element_size() for p in params if p.requires_grad),
                "total": sum(p.numel() * p.element_size() for p in params),
            })  # fmt: skip
    if world.is_main:
        Path(out).write_text(json.dumps(results))


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="demo")
    p.add_argument("--updates", type=int, default=12, help="timed updates per measurement")
    p.add_argument("--sentences", type=int, default=4000, help="synthetic training sentences (10-40 tokens)")
    p.add_argument("--max-tokens", type=int, default=2048, help="trainer.max_tokens: per rank and batch")
    args = p.parse_args()
    if args.quick:
        args.model, args.updates, args.sentences, args.repeats, args.max_tokens = "micro", 2, 200, 1, 256
    repeats = args.repeats or 3
    common.setup(args)
    overrides = [f"model={args.model}", f"trainer.max_tokens={args.max_tokens}"]
    print(f"model={args.model}, trainer.max_tokens={args.max_tokens} per rank and batch, {args.updates} updates per "
          "measurement")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")

        def measure(ranks: int) -> float:
            run_ranks(throughput, ranks, (overrides, args.sentences, args.updates, out))
            return json.loads(Path(out).read_text())["tokens_per_s"]

        rates: dict[int, list[float]] = {1: [], 2: []}
        for r in range(repeats):
            for ranks in (1, 2) if r % 2 == 0 else (2, 1):
                rates[ranks].append(measure(ranks))
        median = {ranks: sorted(v)[len(v) // 2] for ranks, v in rates.items()}
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        common.table(["ranks × threads", "target tokens/s (median)", "rounds"],
                     [[f"{ranks} × 1", f"{median[ranks]:,.0f}", len(rates[ranks])] for ranks in (1, 2)])  # fmt: skip
        print(f"load average after: {load}")
        common.verdict("scaling efficiency of 2 ranks", median[2] / (2 * median[1]), 0.8, unit="")

        cases = [(f, 1) for f in common.FREEZE_PATTERNS] + [("none", 2), ("att_ffn", 2)]
        run_ranks(bytes_per_update, 2, (cases, overrides, args.sentences, out))
        rows, equal = [], True
        for (freeze, update_freq), got in zip(cases, json.loads(Path(out).read_text())):
            equal &= got["bytes"] == got["trainable"]
            rows.append([paper_row(common.compose_config(f"freeze={freeze}").freeze) or freeze, update_freq,
                         f"{got['bytes']:,.0f}", f"{got['trainable']:,}", f"{got['bytes'] / got['total']:.3f}",
                         f"{got['trainable'] / got['total']:.3f}"])  # fmt: skip
        common.table(["row", "update_freq", "bytes all-reduced / update", "trainable bytes", "all-reduced / all",
                      "trainable ratio"], rows)  # fmt: skip
        print(f"TARGET bytes all-reduced per update = trainable parameter bytes, every row: {'met' if equal else 'NOT MET'}")


if __name__ == "__main__":
    main()
