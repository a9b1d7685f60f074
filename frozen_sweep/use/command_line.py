"""What the commands that use a finished run share (python -m frozen_sweep.translate, .score, ...): the RUN argument,
where its frozen weights live, the device and threads, the input read whole and checked before any output and the
output written whole (a file atomically), so that a bad line or run leaves nothing half-written — or, with --stream,
a batch of lines read and its output written before the next is read, a bad line answered with an empty line and its
error on standard error — and the speed on standard error at the end."""

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

from frozen_sweep.data.text_files import decode_lines
from frozen_sweep.run.base_run import BaseRunError
from frozen_sweep.system.files import write_text_atomic
from frozen_sweep.use.errors import TOO_LONG, TooLongError, UsageError
from frozen_sweep.use.run import Run, Speed, load_run
from frozen_sweep.use.streaming import stream_batches
from frozen_sweep.weights.build import FROZEN_MODES
from frozen_sweep.weights.checkpoint import CheckpointError
from frozen_sweep.weights.integrity import IntegrityError
from frozen_sweep.weights.model_file import ModelFileError

STREAM_LINES, STREAM_WAIT_MS = 32, 20  # a streamed batch: the lines that came within this long of its first, at most


def parser(description: str, ensemble: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", nargs="+" if ensemble else None, help="a finished run's directory, or a "
                   "model file written by python -m frozen_sweep.export" + (" (several: their ensemble, the mean of "
                   "their probabilities at every step)" if ensemble else ""))  # fmt: skip
    p.add_argument("--input", metavar="FILE", help="sentences, one a line, UTF-8 (default: standard input)")
    p.add_argument("--output", metavar="FILE", help="written once everything succeeded (default: standard output)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="auto: a GPU when there is one")
    p.add_argument("--frozen", choices=FROZEN_MODES, default="resident",
                   help="frozen weights held in memory, or drawn from the seed just before each module that uses "
                   "them and freed after it (same outputs, less memory)")  # fmt: skip
    add_checkpoint(p)
    p.add_argument("--threads", type=int, help="CPU threads (default: the job's: the threads its record says it ran "
                   "with, else trainer.threads, OMP_NUM_THREADS or the cores)")  # fmt: skip
    p.add_argument("--stream", action="store_true", help="read a batch of lines (those that came within "
                   "--stream-wait-ms of its first, at most --stream-lines) and write its output before reading on: "
                   "for a pipe; output to standard output")  # fmt: skip
    p.add_argument("--too-long", choices=TOO_LONG, default="error", help="a line longer than the model takes: "
                   "error (the default: the input refused, naming the line; in a stream that line's answer is an "
                   "empty line and the error goes to standard error), truncate (cut to fit, said on standard error) or "
                   "skip (an empty output line, said on standard error)")  # fmt: skip
    p.add_argument("--stream-lines", type=int, default=STREAM_LINES, help=f"default {STREAM_LINES}")
    p.add_argument("--stream-wait-ms", type=float, default=STREAM_WAIT_MS, help=f"default {STREAM_WAIT_MS}")
    return p


def add_checkpoint(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", default="best", help="a run directory's weights: best (its best validation's, "
                   "the default), last (its latest validation's: a running or interrupted run's too) or a checkpoint "
                   "file's path")  # fmt: skip


def open_run(args) -> Run:
    """The run of `args.run`, on `args.device`, at `args.threads`; the input file and the output's folder checked
    first, so that no work is lost to a path mistyped."""
    if args.stream and args.output:
        raise UsageError("--stream writes standard output as it goes; --output is for a file written whole")
    if args.stream_lines < 1 or args.stream_wait_ms < 0:
        raise UsageError("--stream-lines must be at least 1 and --stream-wait-ms at least 0")
    if args.input and not Path(args.input).exists():
        raise UsageError(f"--input {args.input}: no such file; expected a text file, one sentence a line")
    if args.output and not Path(args.output).absolute().parent.is_dir():
        raise UsageError(f"--output {args.output}: its folder {Path(args.output).absolute().parent} does not exist; "
                         "create it first")  # fmt: skip
    too_long = "truncate" if args.too_long == "truncate" else "error"  # skip: answered here (answer_lines)
    return load_run(args.run, frozen=args.frozen, device=args.device, threads=args.threads, checkpoint=args.checkpoint,
                    too_long=too_long)  # fmt: skip


def serve(args, run: Run, answer: Callable[[list[str], str, int], list[str]]) -> None:
    """`answer(lines, source, first_line)` → each line's output text: for the whole input (read and checked first,
    the output written once it all succeeded), or with --stream for each batch, written and flushed before reading
    on. The speed summary ends standard error."""
    source = args.input or "standard input"
    if not args.stream:
        write_output(args.output, "".join(answer_lines(args, run, answer, read_lines(args.input), source, 1)))
        total = run.speed
    else:
        total = Speed(0, 0, 0.0)
        with open(args.input, "rb") if args.input else sys.stdin.buffer as raw:
            for first_line, batch, bad in stream_batches(raw, source, args.stream_lines, args.stream_wait_ms / 1000):
                sys.stdout.write("".join(answer_lines(args, run, answer, batch, source, first_line, bad)))
                sys.stdout.flush()
                total = Speed(total.sentences + run.speed.sentences, total.tokens + run.speed.tokens,
                              total.seconds + run.speed.seconds)  # fmt: skip
    if total is not None:
        print(run.speed_summary(total), file=sys.stderr)


def answer_lines(args, run: Run, answer, lines: list[str], source: str, first_line: int,
                 bad: Optional[dict[int, str]] = None) -> list[str]:  # fmt: skip
    """Each line's output. A bad line — in `bad` (number → error), or one the answer refuses by number: any in a
    stream, one too long with --too-long skip — gets an empty output line and a line on standard error naming it;
    the others are answered as if it were empty. A line cut to fit (--too-long truncate) is said on standard error."""
    bad = dict(bad or {})
    for message in bad.values():
        print(f"error: {message}", file=sys.stderr)
    while True:
        try:
            outputs = answer(["" if number in bad else line for number, line in enumerate(lines, first_line)],
                             source, first_line)  # fmt: skip
            break
        except UsageError as e:
            skipped = isinstance(e, TooLongError) and args.too_long == "skip"
            if not e.lines or not (args.stream or skipped):
                raise
            for message in e.lines.values():
                print(f"{'skipped' if skipped else 'error'}: {message}", file=sys.stderr)
            bad.update(e.lines)
    for number in run.truncated:
        print(f"truncated: {source} line {number}, cut to the model's positions (--too-long truncate)", file=sys.stderr)
    return ["\n" if number in bad else output for number, output in enumerate(outputs, first_line)]


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
    except (UsageError, BaseRunError, CheckpointError, ModelFileError, IntegrityError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)

