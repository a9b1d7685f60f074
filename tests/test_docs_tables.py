"""Every result table in README.md and docs/ is headed by the collector's provenance line (command, date, machine,
jobs and threads, code version, fingerprint recipe), and its recipe is the code's: when FINGERPRINT_RECIPE moves
past a documented table's, the same command no longer gives its numbers, and this test names the table to
regenerate."""

import re

from frozen_sweep.job.fingerprint import FINGERPRINT_RECIPE
from frozen_sweep.tables.provenance import RECIPE_WORDS
from tests.conftest import ROOT

# the first columns of the collector's freeze, reservoir, relearn (per base, by base size) and fine-tuning tables
RESULT_TABLE = re.compile(r"^\| (Row \| EMB|Updatable \| Reservoir|Layer \| Parts|Base N \| Base D|Pre-training \| Fine-tuned) \|")
PROVENANCE = re.compile(rf"^Made by `python -m frozen_sweep .*` · \d{{4}}-\d\d-\d\d.* · code \w+.* · {RECIPE_WORDS} (\d+)$")


def documented_tables():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if RESULT_TABLE.match(line):
                yield f"{path.relative_to(ROOT)}:{i + 1}", lines[max(0, i - 3) : i]


def test_every_documented_table_says_how_it_was_made_and_matches_the_codes_recipe():
    tables = list(documented_tables())
    assert tables, "no result table found: has the collector's header changed?"
    for where, above in tables:
        headers = [m for m in map(PROVENANCE.match, above) if m]
        assert headers, f"{where}: a result table without the collector's provenance line right above it"
        recipe = int(headers[-1].group(1))
        assert recipe == FINGERPRINT_RECIPE, (
            f"{where}: made with fingerprint recipe {recipe}, the code's is {FINGERPRINT_RECIPE}: the same command "
            "gives other numbers now; regenerate the table with the command in its provenance line"
        )
