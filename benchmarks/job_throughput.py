"""Job throughput: the real training loop against its own isolated step, and the first epoch against later ones.

    python benchmarks/job_throughput.py [--device cuda] [--model base] [--epochs 3] [override ...]

Trains `--model` on the embedded corpus (task=bible_es_en; on the GPU machine pass task.sword_dir=$FS_SWORD) with
`frozen_sweep.train.trainer.Trainer.fit` as a job does (its model preset's trainer, validation loss every epoch, no
validation BLEU), for `--epochs` epochs, then reports:
- each epoch's training time (the loop: steps and batch preparation, validation excluded; with trainer.compile=true
  the first epoch's includes the compilation), target tokens/s, distinct (batch, length) shapes and validation loss
  (compare runs' curves: `trainer.compile=true` against eager). Target: epoch 1 ≤ 1.2× the median later epoch
  (nothing planned per new shape);
- the real loop's tokens/s against the isolated step's: the trainer's own step on the last epoch's batches, collated
  and on the device beforehand, back to back. Target: ≥ 0.8;
- the dry run's estimate of a later epoch's training time (frozen_sweep.job.probe, measured after the run on a fresh
  model: the probe a dry run makes on this device) against the median later epoch's. Target: within 25%.
Extra arguments are config overrides (trainer.length_multiple=1, trainer.cudnn_attention=true, ...): compare settings
by running it once per setting.
"""

import statistics
import tempfile
import time
from pathlib import Path

import common

from frozen_sweep.data import load_task
from frozen_sweep.job.probe import measure
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--model", default="base")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. trainer.max_tokens=4096")
    args = p.parse_args()
    device = common.setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        task = common.task_overrides(args.quick, tmp)
        if args.quick:
            task, args.model = [*task, "trainer.max_tokens=512"], "micro"
        trainer_overrides = [f"trainer.max_epochs={args.epochs}", "trainer.max_time_s=null", "trainer.patience=1000",
                             "trainer.valid_bleu_sentences=0", "trainer.progress=false",
                             f"trainer.threads={args.threads}"]  # fmt: skip
        cfg = common.compose_config(*task, f"model={args.model}", *trainer_overrides, *args.overrides)
        data = load_task(cfg.task)
        marks = []  # (loop seconds, target tokens, validation loss) after every epoch

        def mark(state) -> None:
            marks.append((state.step_time_s, state.train_tokens, state.history[-1]["valid_loss"]))

        model = build_model(cfg, len(data.vocab)).to(device)
        trainer = Trainer(cfg, data, model, device, Path(tmp), on_validation=mark)
        tr = cfg.trainer
        print(f"model={args.model}, {len(data.train)} training pairs, trainer={tr.name} (lr {tr.lr}, warmup "
              f"{tr.warmup_steps}, {tr.max_tokens}-token batches, lengths × {tr.length_multiple}), "
              f"{args.epochs} epochs on {device}")  # fmt: skip
        state = trainer.fit()

        rows, previous = [], (0.0, 0)
        for epoch, (seconds, tokens, valid_loss) in enumerate(marks, 1):
            shapes = {(len(g.indices), g.length) for g in trainer._plan(epoch - 1)}
            took, trained = seconds - previous[0], tokens - previous[1]
            rows.append([epoch, f"{took:.2f} s", f"{trained / took:,.0f}", len(shapes), f"{valid_loss:.4f}"])
            previous = (seconds, tokens)
        common.table(["epoch", "training time", "tokens/s", "shapes", "valid loss"], rows)

        batches = [trainer._collate(g).to(device) for g in trainer._plan(state.epoch - 1)]
        common.synchronize(device)
        started = time.perf_counter()
        for batch in batches:
            trainer._train_step(batch)
        common.synchronize(device)
        isolated = sum(b.n_tokens for b in batches) / (time.perf_counter() - started)
        probe = measure(cfg, device, imports_s=0.0)  # the estimate's step, as a dry run probes it on this device
    real = state.train_tokens / state.step_time_s
    print(f"real loop: {real:,.0f} tokens/s; isolated step on the last epoch's batches: {isolated:,.0f} tokens/s")
    epoch_times = [float(r[1].split()[0]) for r in rows]
    later = statistics.median(epoch_times[1:]) if len(epoch_times) > 1 else epoch_times[0]
    common.verdict("first epoch / median later epoch", epoch_times[0] / later, 1.2, at_most=True)
    common.verdict("real loop / isolated step tokens/s", real / isolated, 0.8)
    estimated = probe.batch_s * tr.update_freq * (probe.batches_per_epoch // (tr.devices * tr.update_freq))
    print(f"estimated epoch: {estimated:.2f} s (probe: {probe.batch_s * 1000:.1f} ms a batch); measured: {later:.2f} s")
    common.verdict("estimate's error on a later epoch", abs(estimated / later - 1), 0.25, unit="", at_most=True)


if __name__ == "__main__":
    main()
