"""The process tree, read from /proc: what a test started is proved gone, not assumed gone."""

import os
import signal
import subprocess
from pathlib import Path


def session_processes(session_id: int) -> list[str]:
    """'pid command' of each live process of the session `session_id` (a test starts a script with
    start_new_session=True: the script's pid; every process it starts stays in it, orphans included)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # the command may hold spaces and parentheses: the fields follow its closing one
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):  # ended meanwhile
            continue
        state, session = fields[0], int(fields[3])
        if session == session_id and state != "Z":
            found.append(f"{entry.name} {command}")
    return found


def process_state(pid: int) -> str:
    """The process's state letter (R, S, T when stopped by SIGSTOP, Z), "" when it has ended."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def stopped(pid: int) -> bool:
    """Whether the process `pid` is stopped (SIGSTOP: state T), or has ended."""
    return process_state(pid) in ("T", "Z", "")


def in_lockstep(processes: list[subprocess.Popen], timeout: float = 300) -> None:
    """Run processes that stop themselves (SIGSTOP, e.g. FROZEN_SWEEP_KILL_AT=point:SIGSTOP) at the same points, in
    lockstep: each time every live one has stopped, all go on at once; returns when all have ended."""
    while any(proc.poll() is None for proc in processes):
        step_together(processes, timeout)


def step_together(processes: list[subprocess.Popen], timeout: float = 300) -> None:
    """Wait until every live one of `processes` has stopped itself, then let all go on at once."""
    from tests.helpers.sweeps import wait_for

    def live() -> list[subprocess.Popen]:
        return [proc for proc in processes if proc.poll() is None]

    wait_for(lambda: all(stopped(proc.pid) for proc in live()), "every process to stop", timeout=timeout)
    for proc in live():
        os.kill(proc.pid, signal.SIGCONT)
    wait_for(lambda: not live() or not all(stopped(proc.pid) for proc in live()), "them to go on")
