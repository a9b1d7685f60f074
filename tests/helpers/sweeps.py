"""Real sweeps through `python -m frozen_sweep -m`, and what their job directories hold."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import yaml

from tests.conftest import CONF, ROOT

LOCAL = "hydra/launcher=local_gpus"


def sweep_command(sweep_dir: Path, *args: str) -> list[str]:
    """The command of a sweep; without the probe of each job's step (`estimate=false`) unless `args` ask for it:
    the tests of the estimate ask, the others need no cost."""
    probe = [] if any(arg.startswith("estimate=") for arg in args) else ["estimate=false"]
    return [sys.executable, "-m", "frozen_sweep", "-m", f"hydra.sweep.dir={sweep_dir}", *probe, *args]


def run_sweep(
    sweep_dir: Path, *args: str, timeout: int = 300, env: Optional[dict] = None
) -> subprocess.CompletedProcess:
    """Run a sweep to its end; stdout and stderr in one stream, as a user sees them. `env`: variables to add."""
    return subprocess.run(
        sweep_command(sweep_dir, *args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip


def start_sweep(sweep_dir: Path, *args: str, output: Path, env: Optional[dict] = None) -> subprocess.Popen:
    """Start a sweep in a process group of its own (its jobs included), so that it can be killed as a whole."""
    with open(output, "w") as out:
        return subprocess.Popen(
            sweep_command(sweep_dir, *args), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(env or {})},
        )  # fmt: skip


def wait_for(condition, what: str, timeout: float = 120):
    deadline = time.time() + timeout
    while not (value := condition()):
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def job_dirs(sweep_dir: Path, *overrides: str) -> list[Path]:
    """Directories of the started jobs whose overrides include all of `overrides` (from .hydra/overrides.yaml:
    directory names can be cut short)."""
    found = sweep_dir.glob("*/.hydra/overrides.yaml")
    return [f.parent.parent for f in found if set(overrides) <= set(yaml.safe_load(f.read_text()) or [])]


def job_dir(sweep_dir: Path, *overrides: str) -> Path:
    (found,) = job_dirs(sweep_dir, *overrides)
    return found


def read_json(path: Path):
    return json.loads(path.read_text())


def record(sweep_dir: Path, *overrides: str) -> dict:
    return read_json(job_dir(sweep_dir, *overrides) / "result.json")


def attempts(sweep_dir: Path, *overrides: str) -> list[dict]:
    return read_json(job_dir(sweep_dir, *overrides) / "attempts.json")


# A user's own script around frozen_sweep's job: a resolver known to the launching process only, and a job function
# that asks Hydra where it runs and where the command ran (get_original_cwd, to_absolute_path) before the job runs;
# what it saw goes to hydra_seen.json in the job's directory.
OWN_SCRIPT = """
import json, os, sys
from pathlib import Path
import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_original_cwd, to_absolute_path
from omegaconf import OmegaConf
OmegaConf.register_new_resolver("twice", lambda x: 2 * int(x))
from frozen_sweep.__main__ import main

def job(cfg):
    seen = {"cwd": os.getcwd(), "original_cwd": get_original_cwd(), "corpus": to_absolute_path("corpus")}
    (Path(HydraConfig.get().runtime.output_dir) / "hydra_seen.json").write_text(json.dumps(seen))
    return main.__wrapped__(cfg)

hydra.main(version_base="1.3", config_path=sys.argv.pop(1), config_name="config")(job)()
"""


def run_own_script(cwd: Path, sweep_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """A sweep through OWN_SCRIPT, started in `cwd`."""
    return subprocess.run(
        [sys.executable, "-c", OWN_SCRIPT, str(CONF), "-m", f"hydra.sweep.dir={sweep_dir}",
         *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def run_sweep_on_terminal(sweep_dir: Path, *args: str, timeout: int = 300) -> tuple[int, str]:
    """Run a sweep to its end with a pseudo-terminal as its stdout and stderr, as from an interactive shell;
    returns its exit status and everything it wrote to the terminal (control sequences included)."""
    import pty

    controller, terminal = pty.openpty()
    proc = subprocess.Popen(sweep_command(sweep_dir, *args), cwd=ROOT, stdout=terminal, stderr=terminal,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
