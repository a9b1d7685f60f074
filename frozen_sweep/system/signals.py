"""How a job or a launcher is stopped, the same from a terminal, a script, `kill` or `scancel`: it raises
KeyboardInterrupt where it is, so the job records itself `failed` (interrupted) and resumes from its last checkpoint
when run again, and a launcher says what became of its jobs.

- SIGINT: a process started in the background of a non-interactive shell (`cmd &` in a script, nohup) inherits it
  ignored, and Python then installs no handler: Ctrl-C and `kill -INT` would do nothing. restore_sigint() puts
  Python's handler back.
- SIGHUP (`kill -HUP`, a closed terminal) is handled as SIGTERM is, also under nohup: a sweep's launcher stops its
  jobs whichever of the three signals it gets.
- SIGTERM (plain `kill`, and what scancel sends first): submitit's jobs ignore it ("Bypassing signal SIGTERM"), so
  only SIGKILL stopped them, leaving their record `running`. stop_on_sigterm() makes it a KeyboardInterrupt. On
  SLURM a preemption also starts with SIGTERM, followed by the USR2 that submitit handles by checkpointing and
  requeueing the job: there the interrupt waits `grace_s` for it (well within the cluster's KillWait, 30 s by
  default) and is called off when it comes.
"""

import signal
import threading
from typing import Callable, Optional

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # handled as Ctrl-C (SIGINT) is
PREEMPTION_GRACE_S = 2.0  # on SLURM: how long a SIGTERM waits for a preemption's USR2 before it stops the job


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is."""

    def __init__(self, message: str, signal_name: str = "SIGTERM"):
        super().__init__(message)
        self.signal_name = signal_name


def signal_name(interrupt: KeyboardInterrupt) -> str:
    """The signal that raised `interrupt`: SIGINT (Ctrl-C, kill -INT) unless it was an Interrupted."""
    return getattr(interrupt, "signal_name", "SIGINT")


def restore_sigint() -> None:
    """Python's SIGINT handler (KeyboardInterrupt) when the process inherited SIGINT ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def ignore_stops() -> None:
    """Ignore further stop signals while an interrupted process records how it ended: a Ctrl-C reaches a job and its
    launcher, which then stops the job too, and a second interrupt must not cut its record short."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, *STOP_SIGNALS):
            signal.signal(signum, signal.SIG_IGN)


def answer_stops(answer: Callable[[str], None]) -> None:
    """From now on SIGINT, SIGTERM and SIGHUP only call `answer` with the signal's name: a process that is already
    stopping (a launcher stopping its jobs) says so to a second Ctrl-C or kill, instead of dying halfway."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, *STOP_SIGNALS):
            signal.signal(signum, lambda number, _frame: answer(signal.Signals(number).name))


def stop_on_sigterm(grace_s: float = 0.0, requeue_signal: Optional[signal.Signals] = None) -> None:
    """SIGTERM (and SIGHUP, without `grace_s`) raises Interrupted in the main thread; with `grace_s`, that much later,
    unless `requeue_signal` (submitit's, whose handler is kept) comes first."""

    def interrupt(signum: int, _frame) -> None:
        name = signal.Signals(signum).name
        raise Interrupted(f"stopped by {name} (kill, or scancel): interrupted like Ctrl-C", name)

    if not grace_s:
        for signum in STOP_SIGNALS:
            signal.signal(signum, interrupt)
        return
    requeue = signal.getsignal(requeue_signal) if requeue_signal else None

    def call_off(signum: int, frame) -> None:  # a preemption: submitit checkpoints and requeues the job
        signal.setitimer(signal.ITIMER_REAL, 0)
        if callable(requeue):
            requeue(signum, frame)

    def after_grace(signum: int, _frame) -> None:
        signal.signal(signal.SIGALRM, lambda _s, frame: interrupt(signal.SIGTERM, frame))
        signal.setitimer(signal.ITIMER_REAL, grace_s)

    if requeue_signal:
        signal.signal(requeue_signal, call_off)
    signal.signal(signal.SIGTERM, after_grace)
