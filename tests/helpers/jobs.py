"""One job through `python -m frozen_sweep`, and the record it writes."""

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def run_cli(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "frozen_sweep", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # Hydra logs to stdout, errors go to stderr: one stream to search
        text=True,
        timeout=timeout,
    )


def result(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())
