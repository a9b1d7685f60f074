"""Named points of a launcher's life cycle where a test can kill it exactly: `FROZEN_SWEEP_KILL_AT=<point>[:SIGNAL]`
(SIGKILL unless named) makes the launcher send itself the signal on reaching `<point>`. The chaos tests
(tests/test_launcher_chaos.py, benchmarks/chaos.py) place kills at the worst instants with it, not by timing."""

import os
import signal
import time

KILL_AT = "FROZEN_SWEEP_KILL_AT"


def kill_point(name: str) -> None:
    point, _, signal_name = os.environ.get(KILL_AT, "").partition(":")
    if point == name:
        os.kill(os.getpid(), getattr(signal, signal_name or "SIGKILL"))
        time.sleep(5)  # the signal arrives (SIGINT: a KeyboardInterrupt at the next bytecode)
