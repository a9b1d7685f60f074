"""What a job costs before it runs: its training time from a measured probe of its own step (frozen_sweep.job.probe),
its update budget, its validations and its test, and a sweep's total and wall time at its launcher's parallelism.
No torch here: the launchers' plan and the status line use it.

The update budget: trainer.max_steps as it is; trainer.max_epochs as the epochs' updates (the plan's batches per
epoch ÷ batches per update); trainer.max_time_s as the time itself; the first of them to end. Early stopping
(trainer.patience) may end a run sooner: the updates that completed runs of the same shape (the same config but its
seed and budgets, the same data) needed when early stopping ended them stand in for the budget, said as such.
"""

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from frozen_sweep.run.directory import completed_runs, read_record

# what sets a job's result apart without changing what a step, a validation or the test costs: left out of a probe's
# key (job/probe.py), and what sets runs of one shape apart (`same_shape`)
COST_NEUTRAL_KEYS = frozenset(
    {"seed", "trainer.max_epochs", "trainer.max_steps", "trainer.max_time_s", "trainer.patience", "trainer.lr",
     "trainer.warmup_steps", "trainer.warmup_init_lr", "trainer.betas", "trainer.adam_eps", "trainer.weight_decay",
     "trainer.label_smoothing", "trainer.stop_metric", "trainer.aucc_cutoff_s", "trainer.step_time_s",
     "trainer.diverge_ratio", "trainer.diverge_uniform_ratio", "trainer.diverge_validations"}
)  # fmt: skip


@dataclass
class Probe:
    """A job's step measured on the hardware it runs on, and what its data gives (the probe's cache entry)."""

    startup_s: float  # a job process's start: its imports, its data loaded and its model built
    batch_s: float  # seconds per training batch (forward, loss, backward, optimizer step), after the first
    first_step_s: float  # the first step: the same plus one-off costs (torch.compile's compilation)
    valid_example_s: float  # seconds per held-out example scored (loss and the task's scores)
    greedy_sentence_s: float  # seconds per sentence decoded greedily (validation BLEU); 0: no decoding
    beam_sentence_s: float  # seconds per sentence decoded with eval.beam (the test); 0: no decoding
    batches_per_epoch: int  # the training plan's batches in an epoch (all ranks')
    valid_examples: int  # held-out examples a validation scores
    bleu_sentences: int  # validation sentences decoded for BLEU
    test_examples: int
    test_sentences: int  # test sentences beam-decoded (translation), else 0
    device: str = ""  # where it was measured: "cpu, 2 threads, <CPU model>" or the GPU's name
    measured_at: str = ""


@dataclass
class Estimate:
    updates: int  # updates still to train (a resumed job: those after its checkpoint)
    budget: str  # where the updates come from, said for the reader
    train_s: float
    validations: int
    validation_s: float
    test_s: float
    compile_s: float = 0.0  # one-off cost of the first step over the others (torch.compile)
    startup_s: float = 0.0
    done_updates: int = 0  # those its checkpoint holds (a resumed job)

    @property
    def total_s(self) -> float:
        return self.startup_s + self.train_s + self.validation_s + self.test_s + self.compile_s

    def describe(self) -> str:
        resumed = f" after the {self.done_updates:,} its checkpoint holds" if self.done_updates else ""
        parts = [f"start {duration(self.startup_s)}",
                 f"training {duration(self.train_s)} ({self.updates:,} updates{resumed}: {self.budget})",
                 f"{self.validations} validation{'s' * (self.validations != 1)} {duration(self.validation_s)}",
                 f"test {duration(self.test_s)}"]  # fmt: skip
        if self.compile_s >= 1:
            parts.append(f"compile {duration(self.compile_s)}")
        return f"{duration(self.total_s)}: " + ", ".join(parts)


def estimate(tr, probe: Probe, done_updates: int = 0, needed: Optional[list[int]] = None) -> Estimate:
    """The remaining cost of a job with trainer config `tr` whose step is `probe`; `done_updates`: those its checkpoint
    holds; `needed`: the updates completed, early-stopped runs of its shape took."""
    batches_per_update = tr.devices * tr.update_freq
    per_epoch = max(1, probe.batches_per_epoch // batches_per_update)
    update_s = probe.batch_s * tr.update_freq  # the ranks' batches side by side
    validation_s = probe.valid_example_s * probe.valid_examples + probe.greedy_sentence_s * probe.bleu_sentences
    updates, budget = budget_updates(tr, per_epoch, update_s, validation_s)
    if needed and tr.patience is not None:
        typical = int(statistics.median(needed))
        if typical < updates:
            runs = f"{len(needed)} completed run{'s' * (len(needed) != 1)}"
            updates, budget = typical, f"what {runs} of this shape needed until early stopping (median)"
    elif tr.patience is not None and budget and updates:
        budget += ", or fewer: early stopping, and no completed run of this shape to tell"
    remaining = max(0, updates - done_updates)
    every = tr.validate_every_steps or per_epoch
    validations = math.ceil(remaining / every) if remaining else 0
    test_s = probe.valid_example_s * probe.test_examples + probe.beam_sentence_s * probe.test_sentences
    compile_s = max(0.0, probe.first_step_s - probe.batch_s) if remaining else 0.0
    return Estimate(remaining, budget, remaining * update_s, validations, validations * validation_s, test_s,
                    compile_s, probe.startup_s, done_updates)  # fmt: skip


def budget_updates(tr, per_epoch: int, update_s: float, validation_s: float) -> tuple[int, str]:
    """(updates, which budget ends the run first) of trainer config `tr`: max_steps, max_epochs or max_time_s."""
    ends = []
    if tr.max_steps is not None:
        ends.append((tr.max_steps, f"trainer.max_steps={tr.max_steps}"))
    if tr.max_epochs is not None:
        ends.append((tr.max_epochs * per_epoch, f"trainer.max_epochs={tr.max_epochs} × {per_epoch:,} updates an epoch"))
    if tr.max_time_s is not None:  # on the calibrated clock: its seconds per update; else the wall clock's
        per_update = tr.step_time_s or update_s + validation_s / (tr.validate_every_steps or per_epoch)
        ends.append((math.ceil(tr.max_time_s / max(per_update, 1e-9)), f"trainer.max_time_s={tr.max_time_s:g}"))
    if not ends:  # the schema refuses a job without a budget; early stopping alone would end it
        return 0, "no budget"
    return min(ends)


def same_shape(config: dict, prepared: str) -> str:
    """The shape a fingerprint's config and data give: what its runs share whatever their seed and budgets."""
    kept = {key: value for key, value in config.items() if key not in COST_NEUTRAL_KEYS}
    return json.dumps([kept, prepared], sort_keys=True)


def needed_updates(folder: Path) -> dict[str, list[int]]:
    """Shape → the updates each completed run under `folder` took when early stopping ended it."""
    found: dict[str, list[int]] = {}
    for run_dir in completed_runs(folder).values() if folder.is_dir() else ():
        record = read_record(run_dir) or {}
        fingerprint = record.get("fingerprint") or {}
        if record.get("stopped_reason") == "early_stop" and record.get("steps") and "config" in fingerprint:
            shape = same_shape(fingerprint["config"], fingerprint.get("prepared", ""))
            found.setdefault(shape, []).append(int(record["steps"]))
    return found


def wall_s(totals: list[float], at_a_time: int) -> float:
    """A sweep's wall time: its jobs started in order, each on the first slot free, `at_a_time` slots."""
    slots = [0.0] * max(1, at_a_time)
    for seconds in totals:
        slots[slots.index(min(slots))] += seconds
    return max(slots, default=0.0)


def sweep_summary(estimates: list[Optional[Estimate]], at_a_time: int, where: str) -> str:
    """One line: the estimated jobs' total and wall time at the launcher's parallelism, and those without one."""
    known = [e.total_s for e in estimates if e is not None]
    unknown = len(estimates) - len(known)
    line = (f"estimated cost: {len(known)} job{'s' * (len(known) != 1)} to run, {duration(sum(known))} in all, "
            f"{duration(wall_s(known, at_a_time))} wall at {at_a_time} at a time ({where})")  # fmt: skip
    return line + (f"; {unknown} without an estimate (see each)" if unknown else "")


def duration(seconds: float) -> str:
    """0.4 s, 31 s, 4 min 10 s, 2 h 05 min, 3.2 d."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 86400:.1f} d"
