"""A finished run that a relearn job starts from: its directory, config and result record. No torch here: the
config checks that run before any job starts read it too."""

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.run.directory import BEST_CHECKPOINT, CONFIG_FILE, RESULT_FILE, is_completed, load_result
from frozen_sweep.run.record import best_entry


class BaseRunError(ValueError):
    """The directory is not a completed run that a relearn job can start from; the message says why."""


@dataclass
class BaseRun:
    path: Path
    config: DictConfig  # the base job's composed config: task, model, freeze, seed
    record: dict  # its result.json


def load_base_run(path, checkpoint: Optional[str] = BEST_CHECKPOINT, completed: bool = True) -> BaseRun:
    """The run in `path`; BaseRunError unless it left its config and `checkpoint` (a file name in it; None: a
    checkpoint elsewhere) and, with `completed`, completed (without: running, or stopped before its end)."""
    path = Path(path).expanduser().absolute()
    if not path.is_dir():
        raise BaseRunError(f"no such directory ({path})")
    needed = (RESULT_FILE, CONFIG_FILE) + ((checkpoint,) if checkpoint else ())
    missing = [name for name in needed if not (path / name).is_file()]
    if missing:
        raise BaseRunError(f"{path} holds no {', '.join(missing)}: not a finished run's directory{_state(path)}")
    try:
        record = load_result(path / RESULT_FILE)
    except ValueError as e:
        raise BaseRunError(str(e)) from e
    if completed and not is_completed(record):
        raise BaseRunError(f"the run in {path} is {recorded_state(record)}, not completed")
    return BaseRun(path, OmegaConf.load(path / CONFIG_FILE), record)


def recorded_state(record: dict) -> str:
    """A record's status and why, as a user reads it: "failed: diverged at step 20", "running at step 300"."""
    reason = record.get("stopped_reason") if record["status"] != "completed" else None
    steps = record.get("steps")
    return record["status"] + (f": {reason}" if reason else "") + (f" at step {steps}" if steps is not None else "")


def _state(path: Path) -> str:
    """ " (the run is failed: diverged at step 20)" from the record in run directory `path`, or "" without one."""
    try:
        return f" (the run is {recorded_state(load_result(path / RESULT_FILE))})"
    except (OSError, ValueError):
        return ""


def examples_to_best(record: dict) -> dict:
    """Training sentences (and target tokens) the run had consumed at its best validation.

    Records from before history entries counted them: sentences estimated as best_epoch × training-set size
    (`estimated` true; tokens unknown).
    """
    best = best_entry(record)
    if best is None:
        raise BaseRunError(f"its history has no validation at best_epoch={record['best_epoch']}")
    if best.get("train_sentences") is not None:
        return {"sentences": best["train_sentences"], "tokens": best.get("train_tokens"), "estimated": False}
    train_size: Optional[int] = (record.get("data") or {}).get("sizes", {}).get("train")
    if not train_size:
        raise BaseRunError("its record counts neither training examples nor the training-set size")
    return {"sentences": round(best["epoch"] * train_size), "tokens": None, "estimated": True}
