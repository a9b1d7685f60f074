"""Validation's share of a quick job: a 20-step micro job (`model=micro trainer=quick trainer.max_steps=20`).

    python benchmarks/quick_validation.py [--steps 20] [--quick: the tests' toy corpus] [override ...]

Trains `model=micro` on the embedded corpus (task=bible_es_en) with `frozen_sweep.train.trainer.Trainer.fit` as a job
does, then reports the training time with validation included, the validation's part of it (wall and CPU time), and
beside it, in the same process, one validation as the job would have run it without the quick rule (500 sentences,
trainer.valid_bleu_sentences' default). Target: validation ≤ 20% of the job's training time.
"""

import os
import tempfile
import time
from pathlib import Path

import common

from frozen_sweep.data import load_task
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.train.validation import Validation
from frozen_sweep.weights.build import build_model


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. trainer.max_tokens=1024")
    args = p.parse_args()
    device = common.setup(args)
    with tempfile.TemporaryDirectory() as tmp:
        job = [*common.task_overrides(args.quick, tmp), "model=micro", "trainer=quick", f"trainer.threads={args.threads}"]
        # as a job resolves a budget given on the command line: the preset's epoch cap no longer applies
        cfg = common.compose_config(*job, f"trainer.max_steps={args.steps}", "trainer.max_epochs=null", *args.overrides)
        data = load_task(cfg.task)
        model = build_model(cfg, len(data.vocab)).to(device)
        trainer = Trainer(cfg, data, model, device, Path(tmp), on_validation=None)
        wall, cpu = time.perf_counter(), time.process_time()
        state = trainer.fit()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        settings = trainer.validation.settings()
        before = common.compose_config(*job, "trainer.valid_bleu_sentences=500", *args.overrides)
        old_wall, old_cpu = timed(lambda: Validation(before, data, device).scores(trainer.model))
    validation_s = state.train_time_s - state.step_time_s
    print(f"{state.step} steps, {len(state.history)} validation(s) of {settings['bleu_sentences']} BLEU sentences "
          f"(beam {settings['beam']}), validation loss on {settings['examples']} of {len(data.valid)} pairs")  # fmt: skip
    print(f"training, validation included: {state.train_time_s:.2f} s ({wall:.2f} s wall, {cpu:.2f} s CPU for fit)")
    print(f"validation: {validation_s:.2f} s = {validation_s / state.train_time_s:.0%} of it")
    print(f"one validation without the quick rule (500 BLEU sentences): {old_wall:.2f} s wall, {old_cpu:.2f} s CPU")
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    common.verdict("validation / training time", validation_s / state.train_time_s, 0.2, unit="", at_most=True)


if __name__ == "__main__":
    main()
