"""A table's "Made by" line reruns as printed: the commands of its runs, with the --config-dir they came from."""

import subprocess
import sys

import pytest

from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.provenance import sweep_commands
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from tests.conftest import ROOT
from tests.helpers.jobs import run_cli


def test_runs_of_a_config_dir_are_made_by_a_command_that_names_it():
    assert sweep_commands([["seed=1"], ["seed=2"]], config_dir="/my conf") == [
        "python -m frozen_sweep --config-dir '/my conf' -m seed=1,2"]  # fmt: skip


@pytest.mark.slow
def test_a_made_by_line_names_the_config_dir_its_runs_came_from_and_reruns_as_printed(tmp_path, micro_overrides):
    mine = tmp_path / "myconf"
    (mine / "model").mkdir(parents=True)
    (mine / "model" / "wide_micro.yaml").write_text("defaults:\n  - micro\n\nname: wide_micro\nd_model: 48\n")
    run = tmp_path / "run"
    trained = run_cli("--config-dir", str(mine), *micro_overrides, "model=wide_micro", "trainer.max_steps=5",
                          f"hydra.run.dir={run}")  # fmt: skip
    assert trained.returncode == 0, trained.stdout[-2000:]
    runs = load_runs([str(run)])
    command = markdown(build_tables(runs), runs).split("Made by `", 1)[1].split("`", 1)[0]
    assert command.startswith(f"python -m frozen_sweep --config-dir {mine} "), command
    again = subprocess.run([sys.executable, *command.split()[1:], "dry_run=true", f"hydra.run.dir={run}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0 and "skip" in again.stdout, again.stdout[-2000:] + again.stderr[-2000:]
