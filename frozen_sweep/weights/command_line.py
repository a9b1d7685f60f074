"""What the commands that use a finished run share (python -m frozen_sweep.translate, .score, ...): the RUN argument,
its kind, where its frozen weights live, the device, the input read whole and checked before any output, and the
output written whole (a file atomically), so that a bad line or run leaves nothing half-written."""

import argparse
import sys
from pathlib import Path
from typing import Optional

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.data.text_files import decode_lines
from frozen_sweep.run.base_run import BaseRunError
from frozen_sweep.system.files import write_text_atomic
from frozen_sweep.weights.build import FROZEN_MODES
from frozen_sweep.weights.checkpoint import CheckpointError
from frozen_sweep.weights.finished_run import FinishedRun, load_run
from frozen_sweep.weights.model_file import ModelFileError

COMMAND_OF_KIND = {TaskKind.translation: "translate", TaskKind.lm: "score", TaskKind.mlm: "score",
                   TaskKind.classify: "classify", TaskKind.regression: "classify"}


class UsageError(Exception):
    """Bad input or run: the message says which and what is allowed."""


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="a finished run's directory, or a model file written by "
                   "python -m frozen_sweep.export")  # fmt: skip
    p.add_argument("--input", metavar="FILE", help="sentences, one a line, UTF-8 (default: standard input)")
    p.add_argument("--output", metavar="FILE", help="written once everything succeeded (default: standard output)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: a GPU when there is one")
    p.add_argument("--frozen", choices=FROZEN_MODES, default="resident",
                   help="frozen weights held in memory, or drawn from the seed just before each module that uses "
                   "them and freed after it (same outputs, less memory)")  # fmt: skip
    return p


def open_run(args, command: str, kinds: tuple[TaskKind, ...]) -> FinishedRun:
    """The run of `args.run`, on `args.device`; UsageError unless its task kind is one of `kinds`."""
    run = load_run(args.run, frozen=args.frozen)
    kind = TaskKind(run.config.task.kind)
    if kind not in kinds:
        other = COMMAND_OF_KIND.get(kind)
        hint = f": use python -m frozen_sweep.{other}" if other else ""
        allowed = " or ".join(f"task.kind={k.value}" for k in kinds)
        raise UsageError(f"{run.path} is a task.kind={kind.value} run; {command} takes {allowed} runs{hint}")
    run.model.to(device(args.device)).eval()
    return run


def device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible; allowed here: auto, cpu")
    return torch.device("cuda" if name != "cpu" and torch.cuda.is_available() else "cpu")


def read_lines(path: Optional[str]) -> list[str]:
    """Every input line, stripped; UsageError naming the first line that is not UTF-8."""
    raw = Path(path).read_bytes() if path else sys.stdin.buffer.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    try:
        return decode_lines(path or "standard input", [line.rstrip(b"\r") for line in lines])
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_lengths(ids: list[list[int]], most: int, path: Optional[str], what: str) -> None:
    """UsageError naming the first line longer than `most` subwords (`what` says which limit that is)."""
    for number, row in enumerate(ids, start=1):
        if len(row) > most:
            raise UsageError(f"{path or 'standard input'} line {number} has {len(row)} subwords, more than {most} "
                             f"({what})")  # fmt: skip


def write_output(path: Optional[str], text: str) -> None:
    if path:
        write_text_atomic(Path(path), text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def run_command(main, argv=None) -> None:
    """Run `main(argv)`; a bad run, file or line ends it with one line on stderr and exit status 2, no traceback."""
    try:
        main(argv)
    except (UsageError, BaseRunError, CheckpointError, ModelFileError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
