"""How a job or a launcher is stopped, the same from a terminal, a script, `kill` or `scancel`: it raises
KeyboardInterrupt where it is, so the job records itself `failed` (interrupted) and resumes from its last checkpoint
when run again, and a launcher says what became of its jobs.

- SIGINT: a process started in the background of a non-interactive shell (`cmd &` in a script, nohup) inherits it
  ignored, and Python then installs no handler: Ctrl-C and `kill -INT` would do nothing. restore_sigint() puts
  Python's handler back.
- SIGTERM (plain `kill`, and what scancel sends first): submitit's jobs ignore it ("Bypassing signal SIGTERM"), so
  only SIGKILL stopped them, leaving their record `running`. stop_on_sigterm() makes it a KeyboardInterrupt. On
  SLURM a preemption also starts with SIGTERM, followed by the USR2 that submitit handles by checkpointing and
  requeueing the job: there the interrupt waits `grace_s` for it (well within the cluster's KillWait, 30 s by
  default) and is called off when it comes.
"""

import signal
from typing import Optional

PREEMPTION_GRACE_S = 2.0  # on SLURM: how long a SIGTERM waits for a preemption's USR2 before it stops the job


class Interrupted(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is."""


def restore_sigint() -> None:
    """Python's SIGINT handler (KeyboardInterrupt) when the process inherited SIGINT ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_on_sigterm(grace_s: float = 0.0, requeue_signal: Optional[signal.Signals] = None) -> None:
    """SIGTERM raises Interrupted in the main thread; with `grace_s`, that much later, unless `requeue_signal`
    (submitit's, whose handler is kept) comes first."""

    def interrupt(signum: int, _frame) -> None:
        raise Interrupted(f"stopped by {signal.Signals(signum).name} (kill, or scancel): interrupted like Ctrl-C")

    if not grace_s:
        signal.signal(signal.SIGTERM, interrupt)
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
