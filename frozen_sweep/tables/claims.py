"""The findings of the papers (frozen_sweep.tables.paper.CLAIMS, RESERVOIR_CLAIMS) checked on collected tables.

- A freeze table is checked against every claim of its metric (BLEU or perplexity) whose model list is empty or names
  the table's model; a reservoir table against every reservoir claim. Relearn tables have no claims.
- Row values are the per-row means over seeds, as the table prints them: the test metric, or for "epochs" claims the
  epochs to convergence of rows whose runs all reached early stopping.
- A check says ✓ (every condition holds), ✗ (one does not) or "not enough runs" (a row it needs is missing, did not
  converge, or has fewer than `min_runs` runs), and prints the numbers it compared. A BLEU check whose reference
  scores are below BLEU_FLOOR says "not meaningful" instead: a ratio or an ordering of noise-level scores (an
  untrained model's 0.0–0.5 BLEU) says nothing about the finding. With a reference of the same
  metric, the same check on the paper's numbers is printed beside it.
"""

from dataclasses import dataclass

import pandas as pd

from frozen_sweep.tables import freeze_tables, reservoir_tables
from frozen_sweep.tables.paper import CLAIMS, RESERVOIR_CLAIMS, Claim, Close, Compare, Ratio, Reference, ReservoirClaim
from frozen_sweep.tables.plots import higher_is_better
from frozen_sweep.tables.render import Table

HOLDS, FAILS, NOT_ENOUGH, NOT_MEANINGFUL = "✓", "✗", "not enough runs", "not meaningful"
BLEU_FLOOR = 1.0  # test BLEU below which a score is noise on these test sets (docs/collect.md)


@dataclass
class Check:
    key: str
    statement: str
    rule: str
    verdict: str  # HOLDS | FAILS | NOT_ENOUGH | NOT_MEANINGFUL
    compared: str  # the numbers compared, or what is missing
    paper: str = ""  # the same check on the paper's numbers: "✓ (1)/(0) = ..." ("" without a reference)


def evaluate(claim: Claim, values: dict, why_missing: dict) -> tuple[str, str]:
    """(verdict, compared) of a claim on row values; rows in `why_missing` (row → reason) make it NOT_ENOUGH."""
    absent = [f"{row} {why_missing.get(row, 'missing')}" for row in claim.rows if row not in values]
    if absent:
        return NOT_ENOUGH, "; ".join(absent)
    results = [condition.compare(values) for condition in claim.conditions]
    compared = "; ".join(text for _, text in results)
    noise = noise_rows(claim, values)
    if noise:
        return NOT_MEANINGFUL, f"{', '.join(noise)} below the {BLEU_FLOOR:g} BLEU floor: {compared}"
    return HOLDS if all(holds for holds, _ in results) else FAILS, compared


def noise_rows(claim: Claim, values: dict) -> list[str]:
    """The reference rows of a BLEU claim's conditions that score below BLEU_FLOOR: a ratio's denominator, the scale
    of a closeness test, both sides of a comparison."""
    if claim.metric_name != "bleu" or claim.quantity != "metric":
        return []
    low = []
    for c in claim.conditions:
        references = {Ratio: lambda: [min(c.of, key=values.get)], Close: lambda: [c.scale]}.get(type(c), lambda: [])()
        if isinstance(c, Compare) and max(values[c.left], values[c.right]) < BLEU_FLOOR:
            references = [c.left, c.right]
        low += [row for row in references if values[row] < BLEU_FLOOR and row not in low]
    return low


def row_values(summary: pd.DataFrame, quantity: str, min_runs: int) -> tuple[dict, dict]:
    """({row: value} usable by a claim, {row: why it is not usable}) from a freeze table's summary."""
    values, why = {}, {}
    for row, r in summary.iterrows():
        if r.n < min_runs:
            why[row] = f"has {r.n} run{'s' * (r.n != 1)}, needs {min_runs}"
        elif quantity == "epochs" and (r.lower_bound or pd.isna(r.epochs)):
            why[row] = "did not converge (≥ epochs)"
        else:
            values[row] = float(r.epochs if quantity == "epochs" else r.metric)
    return values, why


def paper_check(claim: Claim, reference: Reference) -> str:
    if reference is None or reference.metric_name != claim.metric_name:
        return ""
    column = 1 if claim.quantity == "epochs" else 0
    verdict, compared = evaluate(claim, {row: float(v[column]) for row, v in reference.rows.items()}, {})
    return "" if verdict in (NOT_ENOUGH, NOT_MEANINGFUL) else f"{verdict} {compared}"


def freeze_checks(table: Table, reference: Reference = None, min_runs: int = 1) -> list[Check]:
    summary = freeze_tables.summarise(table.runs)
    model = table.runs.model.iloc[0]
    checks = []
    for claim in CLAIMS:
        if claim.metric_name != table.metric_name or (claim.models and model not in claim.models):
            continue
        verdict, compared = evaluate(claim, *row_values(summary, claim.quantity, min_runs))
        checks.append(Check(claim.key, claim.statement, claim.rule, verdict, compared, paper_check(claim, reference)))
    return checks


def reservoir_check(claim: ReservoirClaim, summary: pd.DataFrame, higher: bool, min_runs: int) -> Check:
    """Each reservoir row against the all-trainable row of its depth; NOT_ENOUGH when no depth has both."""
    usable = (summary.n >= min_runs) & summary[claim.column].notna()
    summary = summary[usable].assign(depth=summary.updatable_layers + summary.reservoir_layers)
    results = []
    for depth, rows in summary.groupby("depth", sort=True):
        baseline, reservoirs = rows[rows.reservoir_layers == 0], rows[rows.reservoir_layers > 0]
        if len(baseline) != 1 or reservoirs.empty:
            continue
        base = baseline[claim.column].iloc[0]
        for r in reservoirs.itertuples():
            value = getattr(r, claim.column)
            holds = value > base if higher else value < base
            symbol = (">" if holds else "≤") if higher else ("<" if holds else "≥")
            results.append((holds, f"depth {depth}: {r.type} {r.pattern} {value:.1f} {symbol} {base:.1f}"))
    if not results:
        compared = f"no depth with an all-trainable and a reservoir row of ≥ {min_runs} run(s)"
        return Check(claim.key, claim.statement, claim.rule, NOT_ENOUGH, compared)
    verdict = HOLDS if all(holds for holds, _ in results) else FAILS
    return Check(claim.key, claim.statement, claim.rule, verdict, "; ".join(text for _, text in results))


def check_tables(tables: list[Table], reference: Reference = None, min_runs: int = 1) -> None:
    """Attach the checks of every claim that applies to each table (table.checks)."""
    for table in tables:
        study = table.runs.study.iloc[0]
        if study == "freeze":
            table.checks = freeze_checks(table, reference, min_runs)
        elif study == "reservoir":
            summary = reservoir_tables.summarise(table.runs)
            higher = higher_is_better(table.metric_name)
            table.checks = [reservoir_check(claim, summary, higher, min_runs) for claim in RESERVOIR_CLAIMS]
