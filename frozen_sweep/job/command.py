"""How `python -m frozen_sweep` starts and ends, from a terminal or a script: stoppable by Ctrl-C, `kill -INT` and
plain `kill` (frozen_sweep.system.signals), its keys checked before Hydra composes (frozen_sweep.config.keys), and ended by
the tool's own message, once: a handled error (a bad key, a refused sweep, failed jobs) or an interruption prints
what happened and what to do, without a traceback or Hydra's advice to set HYDRA_FULL_ERROR for one; a real crash
keeps Hydra's traceback and that advice."""

import functools
import sys
from typing import Any, Callable

import hydra._internal.utils as hydra_utils
from hydra.errors import CompactHydraException
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config.keys import exit_on_unknown_key
from frozen_sweep.system.signals import restore_sigint, stop_on_sigterm

INTERRUPTED_EXIT = 130  # the shell's status for a command ended by SIGINT
JOB_INTERRUPTED = "Interrupted. Run the same command again to resume the job from its last checkpoint."


def _report(func: Callable[[], Any], hydras_report: Callable = hydra_utils.run_and_report) -> Any:
    """Hydra's run_and_report, less its HYDRA_FULL_ERROR advice after a message that is the whole story."""
    try:
        return func()
    except CompactHydraException as error:
        if hydra_utils._is_env_set("HYDRA_FULL_ERROR"):
            raise
        sys.stderr.write(f"{error}\n")
        if isinstance(error.__cause__, OmegaConfBaseException):  # the reason, as Hydra writes it
            sys.stderr.write(f"{error.__cause__}\n")
        sys.exit(1)
    except Exception as crash:  # a crash: Hydra's report, of this very exception
        return hydras_report(functools.partial(_raise, crash))


def _raise(error: BaseException) -> None:
    raise error


def run(main: Callable[[], Any]) -> None:
    """Run the Hydra app `main` as the command."""
    restore_sigint()
    stop_on_sigterm()
    exit_on_unknown_key(sys.argv[1:])
    hydra_utils.run_and_report = _report
    try:
        main()
    except KeyboardInterrupt:  # a single job's (a sweep's launcher ends with its own message)
        sys.stderr.write(f"{JOB_INTERRUPTED}\n")
        sys.exit(INTERRUPTED_EXIT)
