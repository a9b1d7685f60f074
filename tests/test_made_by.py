"""Every "Made by" line in the README and docs/ names commands that still plan the runs of its table: each command,
run as printed with `dry_run=true`, composes and plans as many jobs as its sweep values give (and its bases), so a
renamed key, group or value in the code turns a documented table's command red here."""

import math
import re
import shlex
import subprocess
import sys

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

MADE_BY = re.compile(r"^Made by (.*?) · ", re.M)
COMMAND = re.compile(r"`(python -m frozen_sweep -m [^`]+)`")
PLANNED = re.compile(r"^dry run: (\d+) jobs", re.M)


def documented_commands() -> list[tuple[str, str]]:
    """(file, command) of every command in a "Made by" line."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in MADE_BY.findall(doc.read_text(encoding="utf-8")):
            found += [(doc.name, command) for command in COMMAND.findall(line)]
    return found


def planned_jobs(overrides: list[str]) -> int:
    """How many jobs the command's sweep values give (Hydra's parser: `a,b` is two), and one per base it names
    (`bases.NAME`), planned to run first."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    values = {o.key_or_group: list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.value()] for o in parsed}
    bases = {v for key, vs in values.items() if key.endswith(".base_checkpoint") for v in vs if v.startswith("bases.")}
    return math.prod(map(len, values.values())) + len(bases)


COMMANDS = documented_commands()


def test_the_docs_have_made_by_lines_to_check():
    assert len(COMMANDS) >= 10 and {doc for doc, _ in COMMANDS} >= {"README.md", "studies.md"}


@pytest.mark.parametrize("doc, command", COMMANDS, ids=[f"{doc}:{i}" for i, (doc, _) in enumerate(COMMANDS)])
def test_a_documented_command_plans_its_runs_as_printed(doc, command, tmp_path):
    overrides = shlex.split(command)[4:]  # after `python -m frozen_sweep -m`
    done = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "-m", *overrides, "dry_run=true", "estimate=false",  # no step probes
         f"hydra.sweep.dir={tmp_path / 's'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "FROZEN_SWEEP_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, f"{doc}: {command}\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
    planned = PLANNED.search(done.stdout)
    assert planned and int(planned[1]) == planned_jobs(overrides), f"{doc}: {command}\n{done.stdout[:1500]}"
