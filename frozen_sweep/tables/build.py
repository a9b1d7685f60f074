"""Every study's tables from a frame of runs: freeze patterns first, then reservoirs and relearn, with significance
against row (0) and, when asked, the papers' findings checked under each table."""

from typing import Optional

import pandas as pd

from frozen_sweep.tables.claims import check_tables
from frozen_sweep.tables.duplicates import disagreements
from frozen_sweep.tables.finetune_tables import finetune_tables
from frozen_sweep.tables.freeze_tables import freeze_tables
from frozen_sweep.tables.paper import Reference
from frozen_sweep.tables.relearn_tables import relearn_tables
from frozen_sweep.tables.render import Table
from frozen_sweep.tables.reservoir_tables import reservoir_tables
from frozen_sweep.tables.significance import with_p_values


def build_tables(
    runs: pd.DataFrame, reference: Optional[Reference] = None, claims: bool = False, min_runs: int = 1
) -> list[Table]:
    """The tables of every study found among the runs (freeze patterns first), with significance against row (0)
    where runs saved their test translations, and with `claims` the papers' findings checked under each table; a
    footnote for each run of a table that another run of it contradicts (tables.duplicates)."""
    runs = with_p_values(runs)
    tables = freeze_tables(runs, reference) + reservoir_tables(runs) + relearn_tables(runs) + finetune_tables(runs)
    for table in tables:
        table.footnotes += disagreements(table.runs, runs)
    if claims:
        check_tables(tables, reference, min_runs)
    return tables
