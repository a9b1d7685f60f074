"""A real single-node SLURM cluster for the test session: scripts/slurm_up.sh before the first SLURM test,
scripts/slurm_down.sh after the last. slurm_up.sh installs SLURM with apt-get when it is missing, so the tests are
skipped (loudly) only where that cannot work: not root, or no apt-get and no SLURM."""

import fcntl
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Iterator, Optional

import pytest

from tests.conftest import ROOT

LOCK = Path(tempfile.gettempdir()) / "frozen_sweep_slurm.lock"  # one test cluster per machine: sessions take turns
SLURM_PROGRAMS = ("slurmctld", "slurmd", "slurmdbd", "sbatch", "munged", "mariadbd")


def why_no_cluster() -> Optional[str]:
    if os.geteuid() != 0:
        return "not root: scripts/slurm_up.sh must run as root to install SLURM and start its daemons"
    if not all(shutil.which(p) for p in SLURM_PROGRAMS) and not shutil.which("apt-get"):
        return "SLURM is not installed and there is no apt-get to install it"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[None]:
    reason = why_no_cluster()
    if reason:
        warnings.warn(f"SLURM TESTS SKIPPED: {reason}")
        pytest.skip(reason)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            up = subprocess.run([ROOT / "scripts" / "slurm_up.sh"], capture_output=True, text=True, timeout=900)
            if up.returncode != 0:
                pytest.fail(f"scripts/slurm_up.sh failed:\n{up.stdout}{up.stderr}")
            yield
        finally:
            subprocess.run([ROOT / "scripts" / "slurm_down.sh"], capture_output=True, timeout=120)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the group marks
def pytest_collection_modifyitems(items) -> None:
    """Under pytest-xdist (`make test`), every test of the cluster runs in one worker, and first: a second worker would
    wait on the machine-wide lock for the whole session of the first, and the cluster's tests, one after another, are
    the suite's longest chain."""
    on_cluster = [item for item in items if "slurm_cluster" in getattr(item, "fixturenames", ())]
    for item in on_cluster:
        item.add_marker(pytest.mark.xdist_group("slurm"))
    first = set(on_cluster)
    items[:] = on_cluster + [item for item in items if item not in first]
