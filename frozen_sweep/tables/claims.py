"""The findings of the papers (frozen_sweep.tables.paper.CLAIMS, RESERVOIR_CLAIMS) checked on collected tables, each
with the evidence it rests on and a verdict that knows the noise (the rule, with a worked example: docs/collect.md).

- A freeze table is checked against every claim of its metric (BLEU or perplexity) whose model list is empty or names
  the table's model; a reservoir table against every reservoir claim. Relearn tables have no claims.
- Row values are the per-row means over seeds, as the table prints them: the test metric, or for "epochs" claims the
  epochs to convergence of rows whose runs all reached early stopping. On them the claim holds (✓) or not (✗).
- Then the noise (tables.claim_noise): with several seeds, a verdict needs every seed's own check to agree (for BLEU
  claims with saved translations: and to separate the rows under the bootstrap); otherwise "inconclusive". It stands
  as a finding on FIRM_SEEDS seeds per row or more; on fewer it is marked indicative, however well the bootstrap
  separates the rows: the bootstrap measures the test set's noise, not the seeds'.
- "not enough runs": a row it needs is missing, did not converge (epochs claims), or has fewer than `min_runs` runs.
- Each check prints the numbers it compared and its evidence: seeds per row, whether the runs converged, the model,
  the seeds' agreement. With a reference of the same metric, the same check on the paper's numbers is printed beside it.
"""

from dataclasses import dataclass
from typing import Optional

import pandas as pd

from frozen_sweep.tables import finetune_tables, freeze_tables, reservoir_tables
from frozen_sweep.tables.claim_noise import SeedChecks, seed_checks
from frozen_sweep.tables.paper import CLAIMS, RESERVOIR_CLAIMS, Claim, Reference, ReservoirClaim, shown
from frozen_sweep.tables.plots import LABELLED_METRICS, higher_is_better
from frozen_sweep.tables.render import Table, parameters
from frozen_sweep.tables.untrained import row_reasons

HOLDS, FAILS, INCONCLUSIVE, NOT_ENOUGH = "✓", "✗", "inconclusive", "not enough runs"
FIRM_SEEDS = 3  # seeds per row a verdict needs to stand as a finding; on fewer it is indicative (docs/collect.md)
RESERVOIR_ROW = ["updatable_layers", "reservoir_layers", "type", "pattern", "backskip"]  # a reservoir table's row


@dataclass
class Check:
    key: str
    statement: str
    rule: str
    verdict: str  # HOLDS | FAILS | INCONCLUSIVE | NOT_ENOUGH
    compared: str  # the numbers compared, or what is missing
    paper: str = ""  # the same check on the paper's numbers: "✓ (1)/(0) = ..." ("" without a reference)
    evidence: str = ""  # seeds per row, convergence, model, the seeds' agreement
    indicative: bool = False  # fewer than FIRM_SEEDS seeds per row: a hint, not a finding
    untrained: str = ""  # the rows it uses that never learned (tables.untrained): the verdict is INCONCLUSIVE


def evaluate(claim: Claim, values: dict, why_missing: dict) -> tuple[str, str]:
    """(verdict, compared) of a claim on row values; rows in `why_missing` (row → reason) make it NOT_ENOUGH."""
    absent = [f"{row} {why_missing.get(row, 'missing')}" for row in claim.rows if row not in values]
    if absent:
        return NOT_ENOUGH, "; ".join(absent)
    results = [condition.compare(values) for condition in claim.conditions]
    return HOLDS if all(holds for holds, _ in results) else FAILS, "; ".join(text for _, text in results)


def judge(verdict: str, seeds: SeedChecks) -> tuple[str, bool]:
    """(verdict, indicative) once the seeds are heard: several must all agree, else INCONCLUSIVE; fewer than FIRM_SEEDS
    make it indicative whatever the bootstrap says."""
    if verdict not in (HOLDS, FAILS):
        return verdict, False
    if len(seeds.seeds) >= 2 and len(seeds.agreeing) != len(seeds.seeds):
        return INCONCLUSIVE, False
    return verdict, len(seeds.seeds) < FIRM_SEEDS


def model_text(runs: pd.DataFrame) -> str:
    """"demo (d=128, 2+2 layers, 1.05M parameters)": the model the table's runs trained; each shape once, joined by
    "and" where they trained several (a reservoir table's depths), its parameters as a range where they differ
    (reservoir types of one depth)."""
    shapes: dict[tuple[str, str], list[int]] = {}  # (model, shape): its parameter counts
    for record in runs.record:
        config = (record.get("fingerprint") or {}).get("config") or {}
        layers = [config.get(f"model.{stack}_layers") or 0 for stack in ("encoder", "decoder")]
        shape = [f"d={config['model.d_model']}"] if "model.d_model" in config else []
        shape += [f"{'+'.join(str(n) for n in layers if n)} layers"] if any(layers) else []
        params = shapes.setdefault((str(record.get("model")), ", ".join(shape)), [])
        params += [record["params_total"]] if record.get("params_total") else []
    return " and ".join(describe_model(model, shape, params) for (model, shape), params in shapes.items())


def describe_model(model: str, shape: str, params: list[int]) -> str:
    """"demo (d=128, 4+1 layers, 1.27–1.57M parameters)"."""
    low, high = (min(params), max(params)) if params else (None, None)
    size = [] if low is None else [f"{parameters(low)} parameters" if low == high else
                                   f"{parameters(low)}–{parameters(high)} parameters"]  # fmt: skip
    parts = [part for part in [shape, *size] if part]
    return f"{model} ({', '.join(parts)})" if parts else model


def evidence(runs: pd.DataFrame, rows: tuple, keys: list = RESERVOIR_ROW) -> str:
    """Seeds per row (a row: the runs of one label, or of one `keys`), how many runs converged (early stopping)
    rather than ran out of budget, the model."""
    used = runs[runs.label.isin(rows)] if rows else runs
    counts = used.groupby("label" if rows else keys, sort=False, dropna=False).size()
    if counts.empty:
        return f"no runs of its rows; model {model_text(runs)}"
    first = int(counts.iloc[0])
    seeds = (f"{first} seed{'s' * (first != 1)} per row" if counts.nunique() == 1
             else "seeds per row " + ", ".join(f"{row} {n}" for row, n in counts.items()))  # fmt: skip
    converged = int(used.epochs_to_convergence.notna().sum())
    state = ("none converged (a budget ended every run)" if converged == 0 else "all converged"
             if converged == len(used) else f"{converged} of {len(used)} runs converged")  # fmt: skip
    return f"{seeds}; {state}; model {model_text(runs)}"


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
    return "" if verdict == NOT_ENOUGH else f"{verdict} {compared}"


def freeze_checks(table: Table, reference: Reference = None, min_runs: int = 1) -> list[Check]:
    summary, runs = freeze_tables.summarise(table.runs), table.runs
    model = runs.model.iloc[0]
    checks = []
    for claim in CLAIMS:
        if claim.metric_name != table.metric_name or (claim.models and model not in claim.models):
            continue
        verdict, compared = evaluate(claim, *row_values(summary, claim.quantity, min_runs))
        check = Check(claim.key, claim.statement, claim.rule, verdict, compared, paper_check(claim, reference),
                      evidence(runs, claim.rows))  # fmt: skip
        untrained = row_reasons(runs[runs.label.isin(claim.rows)], "label")
        if verdict != NOT_ENOUGH and untrained:  # no verdict, and no noise to weigh, on a model that never learned
            check.verdict, check.untrained = INCONCLUSIVE, "; ".join(f"{r} {why}" for r, why in untrained.items())
        elif verdict != NOT_ENOUGH:
            column = "epochs_to_convergence" if claim.quantity == "epochs" else "test_metric"
            bootstrap = claim.metric_name == "bleu" and claim.quantity == "metric"
            holds = lambda values, claim=claim: all(c.compare(values)[0] for c in claim.conditions)  # noqa: E731
            seeds = seed_checks(runs, claim.rows, column, holds, verdict == HOLDS, bootstrap)
            check.verdict, check.indicative = judge(verdict, seeds)
            check.evidence += f"; {seeds.describe()}"
        checks.append(check)
    return checks


def reservoir_outcome(claim: ReservoirClaim, summary: pd.DataFrame, higher: bool) -> list[tuple[bool, str]]:
    """Each reservoir row of `summary` against the all-trainable row of its depth: (holds, the numbers)."""
    summary = summary[summary[claim.column].notna()].assign(depth=summary.updatable_layers + summary.reservoir_layers)
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
            value_text, base_text = shown(value, base)
            results.append((holds, f"depth {depth}: {r.type} {r.pattern} {value_text} {symbol} {base_text}"))
    return results


def reservoir_check(claim: ReservoirClaim, runs: pd.DataFrame, higher: bool, min_runs: int) -> Check:
    """Each reservoir row against the all-trainable row of its depth, on the means and seed by seed; NOT_ENOUGH when
    no depth has both."""
    summary = reservoir_tables.summarise(runs)
    results = reservoir_outcome(claim, summary[summary.n >= min_runs], higher)
    if not results:
        compared = f"no depth with an all-trainable and a reservoir row of ≥ {min_runs} run(s)"
        return Check(claim.key, claim.statement, claim.rule, NOT_ENOUGH, compared, evidence=evidence(runs, ()))
    verdict = HOLDS if all(holds for holds, _ in results) else FAILS
    seeds = SeedChecks(sorted(runs.seed.dropna().unique()))
    for seed in seeds.seeds:
        own = reservoir_outcome(claim, reservoir_tables.summarise(runs[runs.seed == seed]), higher)
        if own and all(holds for holds, _ in own) == (verdict == HOLDS):
            seeds.agreeing.append(seed)
    verdict, indicative = judge(verdict, seeds)
    compared = "; ".join(text for _, text in results)
    untrained = row_reasons(runs, RESERVOIR_ROW)  # every row takes part: the baselines and the reservoir rows
    if untrained:
        verdict, indicative = INCONCLUSIVE, False
    return Check(claim.key, claim.statement, claim.rule, verdict, compared, "",
                 f"{evidence(runs, ())}; {seeds.describe()}", indicative,
                 "; ".join(f"{reservoir_row_name(row)} {why}" for row, why in untrained.items()))  # fmt: skip


def reservoir_row_name(row: tuple) -> str:
    """A reservoir table's row (RESERVOIR_ROW) as its Type and Pattern columns name it: "ffn LRLRL", "all trainable
    (3 layers)"."""
    updatable, reservoirs, kind, pattern, backskip = row
    if not reservoirs:
        return f"all trainable ({updatable} layers)"
    return f"{kind} {pattern}" + " (backskip)" * bool(backskip)


def check_tables(tables: list[Table], reference: Reference = None, min_runs: int = 1) -> None:
    """Attach the checks of every claim that applies to each table (table.checks)."""
    for table in tables:
        study = table.runs.study.iloc[0]
        if study == "freeze":
            table.checks = freeze_checks(table, reference, min_runs)
        elif study == "finetune" or table.metric_name in LABELLED_METRICS:
            # the fine-tuning findings compare test accuracies: none yet for a regression's Pearson
            accuracy = table.metric_name == "accuracy"
            table.checks = finetune_checks(finetune_tables.summarise(table.runs), min_runs) if accuracy else []
        elif study == "reservoir":
            higher = higher_is_better(table.metric_name)
            table.checks = [reservoir_check(claim, table.runs, higher, min_runs) for claim in RESERVOIR_CLAIMS]



# Fine-tuning findings: (key, statement, the two arms compared as (pre-training, fine-tuned) matchers, rule)
SCRATCH_ROW, SCRATCH_FROZEN_EMB = ("none", "all trainable"), ("none", "emb frozen")


def beats(a: pd.Series, b: pd.Series, margin: bool) -> tuple[Optional[bool], str]:
    """Test accuracy of row a against row b, with the seeds' noise: 2 standard errors of the difference (several seeds
    per row). With `margin`, a beats b beyond it (True), falls below it (False), or neither: inconclusive (None);
    without, a must not fall below b by more than it. With one seed the plain comparison decides."""
    se = (a.test_std**2 / a.n + b.test_std**2 / b.n) ** 0.5 if min(a.n, b.n) > 1 else 0.0
    diff = a.test - b.test
    if not margin:
        holds = diff >= -2 * se
    elif se == 0 or abs(diff) > 2 * se:
        holds = diff > 0 if se == 0 else diff > 2 * se
    else:
        holds = None
    noise = f"2·SE {2 * se:.1f}" if se else "n = 1: no noise estimate"
    arms = f"{a.pre_training} / {a.fine_tuned} {a.test:.1f}% vs {b.pre_training} / {b.fine_tuned} {b.test:.1f}%"
    return holds, f"{arms} ({noise})"


def finetune_checks(summary: pd.DataFrame, min_runs: int) -> list[Check]:
    """FT1 pre-training beats no pre-training; FT2 reservoirs kept frozen lose nothing beyond noise; RE1/RE2 the
    random-embeddings test. Each needs its rows (with ≥ min_runs runs), else "not enough runs"; on fewer than
    FIRM_SEEDS seeds per row its verdict is indicative."""
    rows = {(r.pre_training, r.fine_tuned): r for r in summary.itertuples() if r.n >= min_runs}
    pretrained = [r for (pre, tuned), r in rows.items() if pre != "none" and tuned == "all trainable"]
    claims = [
        ("FT1", "pre-training beats no pre-training", "every pre-trained base fine-tuned all trainable > the "
         "classifier trained from random initialisation, by 2·SE",
         [(r, rows.get(SCRATCH_ROW), True) for r in pretrained]),
        ("FT2", "reservoir layers can stay frozen in fine-tuning (the reservoir paper)", "a reservoir base with its "
         "frozen layers kept frozen ≥ the same base all trainable − 2·SE",
         [(r, rows.get((pre, "all trainable")), False) for (pre, tuned), r in rows.items()
          if "reservoirs" in pre and tuned == "base's frozen layers frozen"]),
        ("RE1", "random embeddings first: pre-training is worth more than a randomly initialised model", "the "
         "regular base fine-tuned > both rows without pre-training (embeddings trainable, frozen at random), by 2·SE",
         [(rows.get(("regular", "all trainable")), rows.get(other), True)
          for other in (SCRATCH_ROW, SCRATCH_FROZEN_EMB)]),
        ("RE2", "what survives of pre-training when its embeddings are re-drawn at random and frozen", "the regular "
         "base with its embeddings re-drawn and frozen > no pre-training with embeddings frozen at random, by 2·SE",
         [(rows.get(("regular", "emb frozen (re-drawn)")), rows.get(SCRATCH_FROZEN_EMB), True)]),
    ]  # fmt: skip
    checks = []
    for key, statement, rule, pairs in claims:
        if not pairs or any(a is None or b is None for a, b, _ in pairs):
            why = f"a row it compares is missing or has fewer than {min_runs} completed run(s)" if pairs else (
                "no such row in this table")  # fmt: skip
            checks.append(Check(key, statement, rule, NOT_ENOUGH, why))
            continue
        results = [beats(pd.Series(a._asdict()), pd.Series(b._asdict()), margin) for a, b, margin in pairs]
        outcomes = [holds for holds, _ in results]
        untrained = sorted({f"{r.pre_training} / {r.fine_tuned}" for a, b, _ in pairs for r in (a, b) if r.untrained})
        verdict = FAILS if False in outcomes else INCONCLUSIVE if None in outcomes else HOLDS
        verdict = INCONCLUSIVE if untrained else verdict  # never ✓ or ✗ on a row no better than the floor
        seeds = sorted({n for a, b, _ in pairs for n in (a.n, b.n)})
        evidence = f"seeds per row: {', '.join(map(str, seeds))}; fine-tuning runs to a fixed update budget"
        few = min(seeds) < FIRM_SEEDS and verdict != INCONCLUSIVE  # a hint, not a finding
        checks.append(Check(key, statement, rule, verdict, "; ".join(t for _, t in results), evidence=evidence,
                            indicative=few, untrained="; ".join(untrained)))  # fmt: skip
    return checks
