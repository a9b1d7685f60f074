"""Checkpoint size: bytes of a seed-only checkpoint over a full one, per freeze pattern, against the trainable ratio.

    python benchmarks/checkpoint_size.py [--models tiny]

For each freeze pattern (frozen_sweep/conf/freeze/*.yaml), builds the model with `frozen_sweep.weights.build.build_model`, takes one
training step (so Adam has state) and writes the trainer's two checkpoints with its own code
(`Trainer._save` → `frozen_sweep.weights.checkpoint.save_checkpoint`): checkpoint_best.pt (weights) and checkpoint_last.pt
(weights, Adam state, schedule, trainer state, RNG). A full checkpoint is pattern `none`'s, where every parameter is
trainable and stored. Prints bytes / full bytes beside the trainable ratio (`frozen_sweep.weights.freeze.parameter_counts`).
Target: every seed-only checkpoint within 2% of trainable ratio × full size.
"""

import tempfile
from pathlib import Path

import common

from frozen_sweep.run.directory import BEST_CHECKPOINT, LAST_CHECKPOINT
from frozen_sweep.weights.freeze import paper_row, parameter_counts


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="+", default=["tiny"])
    args = p.parse_args()
    if args.quick:
        args.models = ["micro"]
    common.setup(args)
    worst = 0.0
    for name in args.models:
        sizes, ratios, rows = {}, {}, []
        for f in common.FREEZE_PATTERNS:
            cfg = common.compose_config(f"model={name}", f"freeze={f}")
            vocab = cfg.task.vocab_size
            with tempfile.TemporaryDirectory() as tmp:
                model = common.build(cfg, vocab)
                trainer, step = common.train_step(cfg, model, Path(tmp), vocab)
                step(common.synthetic_batch(4, 8, vocab))
                trainer._save(best=True)
                files = (("best", BEST_CHECKPOINT), ("last", LAST_CHECKPOINT))
                sizes[f] = {kind: (Path(tmp) / file).stat().st_size for kind, file in files}
            ratios[f] = parameter_counts(model)["trainable_ratio"]
        full = sizes["none"]
        print(f"\nmodel={name}: full checkpoint_best.pt {full['best'] / 1e6:.2f} MB, "
              f"checkpoint_last.pt {full['last'] / 1e6:.2f} MB")  # fmt: skip
        for f in common.FREEZE_PATTERNS:
            cells = [f, paper_row(common.compose_config(f"freeze={f}").freeze) or "–", f"{ratios[f]:.3f}"]
            for kind in ("best", "last"):
                ratio = sizes[f][kind] / full[kind]
                deviation = ratio / ratios[f] - 1
                worst = max(worst, abs(deviation))
                cells += [f"{sizes[f][kind] / 1e6:.2f} MB", f"{ratio:.3f}", f"{deviation:+.2%}"]
            rows.append(cells)
        common.table(["freeze", "row", "trainable", "best", "best/full", "vs ratio", "last", "last/full", "vs ratio"],
                     rows)  # fmt: skip
    common.verdict("largest |size / (trainable ratio × full size) − 1|", worst * 100, 2, unit="%", at_most=True)


if __name__ == "__main__":
    main()
