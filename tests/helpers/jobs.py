"""One job through `python -m frozen_sweep`, and the record it writes."""

import json
import subprocess
import sys
from pathlib import Path

import sacrebleu

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


def start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "frozen_sweep", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def result(run_dir: Path) -> dict:
    return json.loads((run_dir / "result.json").read_text())


def bleu_of(run_dir: Path) -> float:
    """sacrebleu's BLEU of a run's saved test translations against the references in its corpus (not the run's copy)."""
    data = result(run_dir)["data"]
    references = (Path(data["data_dir"]) / f"test.{data['langs'][-1]}").read_text().splitlines()
    return sacrebleu.corpus_bleu((run_dir / "test.hyp.txt").read_text().splitlines(), [references]).score
