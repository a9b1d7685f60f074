"""The metrics a classifier's or a regression's table reports (the records' `report`, frozen_sweep/config/report.py),
their column names, and their values in a record: on test, and on the best validation (the weights tested)."""

import pandas as pd

from frozen_sweep.config.report import reported
from frozen_sweep.run.record import best_entry

# a reported metric's column, ×100 like the table's accuracies (%) and correlations; f1's names its positive class
COLUMNS = {"accuracy": "Accuracy %", "macro_f1": "Macro-F1 %", "mcc": "MCC ×100", "pearson": "Pearson ×100",
           "spearman": "Spearman ×100"}  # fmt: skip


def table_report(runs: pd.DataFrame) -> list[str]:
    """The metrics the runs' records report, in their order (records from before `report`: the default, from their
    metric and stop metric); f1 is macro_f1 where there are more than two labels (the record's test_f1 is then)."""
    names = (m for r in runs.record for m in reported(r.get("report"), r["metric_name"], r.get("stop_metric")))
    classes = len((runs.record.iloc[0].get("data") or {}).get("labels") or ())
    return list(dict.fromkeys("macro_f1" if m == "f1" and classes > 2 else m for m in names))


def column(metric: str, record: dict) -> str:
    """A metric's column name: "F1 (equivalent) %" for the F1 of the positive class (label id 1), named by the record's
    labels."""
    if metric == "f1":
        labels = (record.get("data") or {}).get("labels") or []
        return f"F1 ({labels[1]}) %" if len(labels) == 2 else "F1 %"
    return COLUMNS[metric]


def value(record: dict, metric: str, split: str) -> float:
    """The record's `metric` on "test" or at its best validation ("valid"), ×100; NaN where it has none. Older records
    hold a regression's test Pearson in test_metric only, and their test_f1 is macro-F1 (no test_macro_f1)."""
    scores = record if split == "test" else best_entry(record) or {}
    key = f"{split}_{metric}"
    if metric == "macro_f1" and split == "test" and key not in record:
        key = "test_f1"
    found = scores.get(key)
    if found is None and metric == record.get("metric_name"):
        found = scores.get(f"{split}_metric")
    return 100 * found if found is not None else float("nan")
