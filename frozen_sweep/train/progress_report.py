"""How far a job has come, for whoever watches it: tqdm's bar on the job's own terminal, and `progress.json` in its
run directory, which a sweep's launcher reads for its live status (also across a cluster's shared file system: no
server, no socket). The file is replaced atomically, at most every REPORT_EVERY_S and at each validation; then the test
phase (EvaluationReport) replaces it with its own progress. Each report says when it was written (`at`), so that a
watcher tells the current attempt's reports from a killed one's (a job's attempts record when each started)."""

import json
import time
from pathlib import Path
from typing import Callable, Optional

from tqdm import tqdm

from frozen_sweep.run.directory import PROGRESS_FILE
from frozen_sweep.system.files import write_json_atomic
from frozen_sweep.train.stopping import TrainState

REPORT_EVERY_S = 2.0
SHOWN_SCORES = ("bleu", "accuracy", "pearson", "ppl", "loss")  # the first one a validation has is shown


class ProgressReport:
    def __init__(self, run_dir: Path, tr, state: TrainState, writes: bool):
        """`writes`: whether this process writes the file (rank 0 of a job does)."""
        self.path, self.tr, self.writes = Path(run_dir) / PROGRESS_FILE, tr, writes
        # disable=None: tqdm draws only on a terminal, so logs (SLURM, `make demo > log`) stay readable
        self.bar = tqdm(desc="train", unit="step", initial=state.step, disable=None if tr.progress else True)
        self.written = float("-inf")
        self.valid = shown_score(state.history[-1]) if state.history else None  # a resumed job's last one
        self.epoch = float(state.epoch)  # fractional: within the epoch too
        # this attempt's pace: its tokens over its time in the training loop (validations left out), from its first
        # step; the state's own totals are read only when the loss is (every log_every_steps), and a resumed state's
        # tokens would count the earlier attempts' too
        self.tokens_at_start, self.stepping_s, self.clock = state.train_tokens, 0.0, time.perf_counter()

    def step(self, state: TrainState, epoch: float, train_loss: Optional[float] = None) -> None:
        now = time.perf_counter()
        self.stepping_s, self.clock = self.stepping_s + now - self.clock, now
        self.bar.update()
        self.epoch = epoch
        if train_loss is not None:
            self.bar.set_postfix(loss=f"{train_loss:.3f}", tok_s=f"{self.tokens_per_s(state):,.0f}")
        if time.monotonic() - self.written >= REPORT_EVERY_S:
            self.write(state)

    def validated(self, state: TrainState, entry: dict) -> None:
        self.valid = shown_score(entry)
        self.write(state)
        self.clock = time.perf_counter()  # the validation's time is not the steps'

    def tokens_per_s(self, state: TrainState) -> float:
        return (state.train_tokens - self.tokens_at_start) / self.stepping_s if self.stepping_s else 0.0

    def write(self, state: TrainState) -> None:
        if not self.writes:
            return
        self.written = time.monotonic()
        write_json_atomic(self.path, {
            "phase": "training", "step": state.step, "epoch": round(self.epoch, 3), "max_steps": self.tr.max_steps,
            "max_epochs": self.tr.max_epochs, "max_time_s": self.tr.max_time_s,
            "done": done_fraction(state, self.epoch, self.tr),
            "train_time_s": round(state.train_time_s, 1), "tokens_per_s": round(self.tokens_per_s(state)),
            "valid": self.valid, "at": time.time(),
        })  # fmt: skip

    def close(self) -> None:
        self.bar.close()


class EvaluationReport:
    """The test phase in progress.json: the training's last report with `phase` "testing" and the share of the test
    set done (`tested`: [done, total] where the test counts them: translation's decoding), then "scoring"."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / PROGRESS_FILE
        self.last = read_report(self.path)
        self.written = float("-inf")

    def testing(self, done: int = 0, total: Optional[int] = None) -> None:
        """At most every REPORT_EVERY_S, but the first and the last."""
        if done and done != total and time.monotonic() - self.written < REPORT_EVERY_S:
            return
        tested = {"tested": [done, total], "done": round(done / total, 4)} if total else {"tested": None, "done": None}
        self._write("testing", tested)

    def counter(self, total: int) -> Callable[[int], None]:
        """An `on_batch(n)` for a decoding of `total` examples (evaluate.decode.translate_nbest)."""
        done = [0]

        def on_batch(n: int) -> None:
            done[0] += n
            self.testing(done[0], total)

        self.testing(0, total)
        return on_batch

    def scoring(self) -> None:
        self._write("scoring", {"done": None})

    def _write(self, phase: str, fields: dict) -> None:
        self.written = time.monotonic()
        write_json_atomic(self.path, {**self.last, "phase": phase, **fields, "at": time.time()})


def read_report(path: Path) -> dict:
    """A progress.json as written, {} when absent or unreadable (being replaced)."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def shown_score(entry: dict) -> Optional[list]:
    """[name, value] of the validation `entry`'s first score in SHOWN_SCORES, None without one."""
    name = next((name for name in SHOWN_SCORES if entry.get(f"valid_{name}") is not None), None)
    return [name, entry[f"valid_{name}"]] if name else None


def clock_time(state: TrainState, tr) -> float:
    """The training time the time budget counts: the calibrated clock's (frozen_sweep.metrics.clock), else the wall's."""
    return state.train_time_s if tr.step_time_s is None else state.step * tr.step_time_s


def done_fraction(state: TrainState, epoch: float, tr) -> Optional[float]:
    """How much of its first budget to run out the job has used (early stopping may end it sooner); None without
    a budget."""
    fractions = [state.step / tr.max_steps if tr.max_steps else None,
                 epoch / tr.max_epochs if tr.max_epochs else None,
                 clock_time(state, tr) / tr.max_time_s if tr.max_time_s else None]  # fmt: skip
    known = [f for f in fractions if f is not None]
    return round(min(1.0, max(known)), 4) if known else None
