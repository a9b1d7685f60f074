"""How far a claim's verdict can be trusted: its evidence (seeds, convergence, model), each seed's own check and, for
BLEU claims, the claim bootstrapped over the test sentences. The rule, with a worked example: docs/collect.md,
"Findings".

- Seeds: a claim's rows are paired by seed (the seeds that every row it needs has); each seed's runs are checked
  alone, as the means are.
- Bootstrap (BLEU claims on runs that saved their test translations): the claim is checked on RESAMPLES paired
  resamples of the test sentences, the same sentences for every row, drawn as sacrebleu's paired bootstrap draws them
  (numpy's generator seeded by $SACREBLEU_SEED, 12345 by default). Its support is the share of resamples in which the
  claim comes out as it does on the whole test set; the seed separates the rows when the support is ≥ SUPPORT.
- A seed agrees when its own check gives the means' verdict and, where it could be bootstrapped, separates the rows.
"""

import os
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pandas as pd

from frozen_sweep.tables.significance import SCORE_TOLERANCE, outputs

RESAMPLES = 1000
SUPPORT = 0.95


@dataclass
class SeedChecks:
    seeds: list  # the paired seeds
    agreeing: list = field(default_factory=list)  # seeds whose own check gives the means' verdict (and separates)
    support: dict = field(default_factory=dict)  # seed → bootstrap support, for the seeds that could be bootstrapped

    def describe(self) -> str:
        """"2 of 3 seeds agree; test-set bootstrap support seed 1 100%, …", or for one seed "one seed; test-set
        bootstrap support 97%": how far the test set's noise can move the check, not the seeds'."""
        if len(self.seeds) == 1:
            return "one seed" + "".join(f"; test-set bootstrap support {p:.0%}" for p in self.support.values())
        bootstrapped = ", ".join(f"seed {s} {p:.0%}" for s, p in self.support.items())
        text = f"{len(self.agreeing)} of {len(self.seeds)} seeds agree" if self.seeds else "no seed in every row"
        return text + (f"; test-set bootstrap support {bootstrapped}" if bootstrapped else "")


def paired_seeds(runs: pd.DataFrame, rows: tuple) -> list:
    """The seeds that every one of `rows` has a run of."""
    seeds = [set(runs.seed[runs.label == row].dropna()) for row in rows]
    return sorted(set.intersection(*seeds)) if seeds else []


def seed_checks(runs: pd.DataFrame, rows: tuple, value: str, holds: Callable[[dict], bool], expected: bool,
                bootstrap: bool) -> SeedChecks:  # fmt: skip
    """Each paired seed's check of `holds` on its own runs' `value`; with `bootstrap`, its support too."""
    checks = SeedChecks(paired_seeds(runs, rows))
    for seed in checks.seeds:
        own = runs[(runs.seed == seed) & runs.label.isin(rows)].drop_duplicates("label").set_index("label")
        support = bleu_support(holds, own.loc[list(rows)]) if bootstrap else None
        if support is not None:
            checks.support[seed] = support
        if holds(own[value].astype(float).to_dict()) == expected and (support is None or support >= SUPPORT):
            checks.agreeing.append(seed)
    return checks


def bleu_support(holds: Callable[[dict], bool], runs: pd.DataFrame) -> Optional[float]:
    """Share of paired resamples of the test sentences in which `holds` gives what it gives on the runs' test BLEU
    (one run per row label, indexed by label); None unless every run saved translations of the same references that
    score its recorded BLEU."""
    saved = {row: outputs(path) for row, path in runs.path.items()}
    references = {tuple(refs) if refs else None for _, refs in saved.values()}
    if len(references) != 1 or None in references or any(hyps is None for hyps, _ in saved.values()):
        return None
    from sacrebleu.metrics import BLEU  # here: only runs with saved translations need sacrebleu (60-90 ms to import)

    metric = BLEU(references=[list(next(iter(references)))])
    stats = {row: np.array(metric._extract_corpus_statistics(hyps, None), dtype=float) for row, (hyps, _) in saved.items()}
    for row, row_stats in stats.items():
        if abs(metric._compute_score_from_stats(row_stats.sum(0)).score - runs.test_metric[row]) > SCORE_TOLERANCE:
            return None  # these translations are not the ones the record scored
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    rng = np.random.default_rng(None if seed.lower() == "none" else int(seed))
    sentences = len(next(iter(references)))
    picks = rng.choice(sentences, size=(RESAMPLES, sentences), replace=True)
    scores = {row: [metric._compute_score_from_stats(s).score for s in row_stats[picks].sum(1)]
              for row, row_stats in stats.items()}  # fmt: skip
    expected = holds(runs.test_metric.astype(float).to_dict())
    same = sum(holds({row: scores[row][k] for row in scores}) == expected for k in range(RESAMPLES))
    return same / RESAMPLES
