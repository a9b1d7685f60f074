"""Runs that never learned: no finding may rest on them (the rule: docs/collect.md, "Untrained rows").

A completed run is untrained when its test outputs are degenerate or its score is no better than a model that never
trained would get:
- translation: more than CAPPED_SHARE of its test hypotheses ran to the length cap (the model rarely predicts
  end-of-sentence: "which which which …"), or its test BLEU is at most BLEU_FLOOR (an untrained model scores 0.0–0.5);
- language models (causal or masked): a test perplexity of at least the vocabulary size, a uniform guess's;
- classifiers: a test accuracy at most the majority class's; regressions: a Pearson correlation at most 0.
A table row is untrained when any of its runs is: its mean rests on that run.
"""

from typing import Optional

import pandas as pd

MARK = "⊘"
CAPPED_SHARE = 0.5
BLEU_FLOOR = 1.0
NOTE = (
    f"{MARK} untrained: a run of the row is no better than a model that never trained (more than "
    f"{CAPPED_SHARE:.0%} of its test hypotheses at the length cap, test BLEU ≤ {BLEU_FLOOR:g}, perplexity ≥ the "
    "vocabulary size, accuracy ≤ the majority class's, Pearson ≤ 0); every finding that uses the row is inconclusive, "
    "and † needs both sides trained."
)


def untrained_reason(record: dict) -> Optional[str]:
    """Why a completed run counts as untrained ("97 of 100 test hypotheses at the length cap"), None when it learned
    (or its record cannot tell)."""
    value, metric = record.get("test_metric"), record.get("metric_name")
    decoding, data = record.get("decoding") or {}, record.get("data") or {}
    capped, sentences = decoding.get("at_length_cap"), decoding.get("sentences")
    if capped is not None and sentences and capped > CAPPED_SHARE * sentences:
        return f"{capped} of {sentences} test hypotheses at the length cap"
    if value is None:
        return None
    vocab, majority = data.get("vocab_size"), (data.get("majority") or {}).get("test")
    floors = {  # only the run's own metric is formatted: all five took 60 ms of collecting 10,000 records
        "bleu": lambda: (value <= BLEU_FLOOR, f"test BLEU {value:.3g} ≤ {BLEU_FLOOR:g}"),
        "ppl": lambda: (bool(vocab) and value >= vocab, f"test PPL {value:.1f} ≥ vocabulary {vocab}"),
        "mlm_ppl": lambda: (bool(vocab) and value >= vocab, f"test MLM PPL {value:.1f} ≥ vocabulary {vocab}"),
        "accuracy": lambda: (majority is not None and value <= majority,
                             f"test accuracy {value:.3f} ≤ the majority class's {majority}"),
        "pearson": lambda: (value <= 0, f"test Pearson {value:.3f} ≤ 0"),
    }  # fmt: skip
    below, why = floors.get(metric, lambda: (False, ""))()
    return why if below else None


def row_reasons(runs: pd.DataFrame, key) -> dict:
    """{row key: "(how many) of its runs untrained: first reason"} for the rows (grouped by `key`) with an untrained
    run."""
    reasons = {}
    for row, group in runs.groupby(key, sort=False, dropna=False):
        bad = group.untrained.dropna()
        if len(bad):
            reasons[row] = f"{len(bad)} of {len(group)} run{'s' * (len(group) != 1)}: {bad.iloc[0]}"
    return reasons
