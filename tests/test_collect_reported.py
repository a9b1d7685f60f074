"""The collector on hand-made records of classifiers and regressions: each table shows the metrics its task reports
(GLUE's for the GLUE tasks, the stop metric for data of your own, older records' too), and every table's heading names
the data its runs read."""

import pytest

from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.runs import load_runs
from tests.helpers.records import write_labelled_run, write_run

GLUE = {"dataset": "nyu-mll/glue", "splits": {"train": "train less 400 held out", "test": "validation"}}
MRPC = {"accuracy": 0.8, "f1": 0.85, "macro_f1": 0.75, "mcc": 0.5}


def tables_of(root) -> dict:
    return {table.title: table for table in build_tables(load_runs([str(root)]))}


def columns_of(table) -> list[tuple[str, str]]:
    """The score columns: between the base's perplexity and the epochs."""
    names = list(table.rows.columns)
    return names[names.index(("", "Base MLM PPL")) + 1 : names.index(("", "Epochs"))]


def test_glue_tasks_tables_show_what_glue_reports(tmp_path):
    """MRPC: F1 of `equivalent` (label 1) first, then accuracy; CoLA: Matthews correlation alone; STS-B: Pearson and
    Spearman, from the records' `report`."""
    for seed, f1 in ((1, 0.85), (2, 0.87)):
        write_labelled_run(tmp_path, f"mrpc{seed}", {**MRPC, "f1": f1}, "glue_mrpc", ("not_equivalent", "equivalent"),
                           seed, data={"corpus": {**GLUE, "config": "mrpc"}}, report=["f1", "accuracy"])  # fmt: skip
    write_labelled_run(tmp_path, "cola", {**MRPC, "mcc": 0.31}, "glue_cola", ("unacceptable", "acceptable"),
                       data={"corpus": {**GLUE, "config": "cola"}}, report=["mcc"])  # fmt: skip
    write_labelled_run(tmp_path, "stsb", {"pearson": 0.82, "spearman": 0.8}, "glue_stsb", metric_name="pearson",
                       data={"corpus": {**GLUE, "config": "stsb"}}, report=["pearson", "spearman"])  # fmt: skip
    tables = tables_of(tmp_path)
    mrpc = tables["glue_mrpc · nyu-mll/glue (mrpc) · fine-tuning"]
    assert columns_of(mrpc) == [("F1 (equivalent) %", "valid"), ("F1 (equivalent) %", "test"), ("", "Accuracy %"),
                                ("", "Majority %")]  # fmt: skip
    assert mrpc.rows.iloc[0][("F1 (equivalent) %", "test")] == "86.0 ± 1.4"  # the positive class's F1, two seeds
    assert mrpc.rows.iloc[0][("F1 (equivalent) %", "valid")] == "76.0 ± 1.4"  # at the best validation
    assert mrpc.rows.iloc[0][("", "Accuracy %")] == "80.0"
    cola = tables["glue_cola · nyu-mll/glue (cola) · fine-tuning"]
    assert columns_of(cola) == [("MCC ×100", "valid"), ("MCC ×100", "test"), ("", "Majority %")]
    assert cola.rows.iloc[0][("MCC ×100", "test")] == "31.0"
    stsb = tables["glue_stsb · nyu-mll/glue (stsb) · fine-tuning"]
    assert columns_of(stsb) == [("Pearson ×100", "valid"), ("Pearson ×100", "test"), ("", "Spearman ×100"),
                                ("", "MSE"), ("", "Mean predictor MSE")]  # fmt: skip
    assert stsb.rows.iloc[0][("Pearson ×100", "test")] == "82.0"


def test_data_of_your_own_reports_its_stop_metric_first_older_records_too(tmp_path):
    """No `report` (task=text_files, or a record from before the key): the stop metric on valid and test, then
    accuracy and macro-F1; f1 with more than two labels is macro-F1, named so. A regression's record from before
    test_pearson: Pearson from its test_metric."""
    def own(name, test, stop_metric, **fields):
        write_labelled_run(tmp_path, name, test, data={"data_dir": f"/data/{name}"}, stop_metric=stop_metric,
                           overrides=[f"task.path=/data/{name}", f"trainer.stop_metric={stop_metric}"],
                           fingerprint={"config": {"task.corpus": "text_files"}}, **fields)  # fmt: skip

    own("reviews", MRPC, "f1", report=["f1", "accuracy", "macro_f1"])
    own("topics", {**MRPC, "f1": 0.6, "macro_f1": 0.6}, "f1", labels=("a", "b", "c"), absent=("report",))
    own("mcc", MRPC, "mcc", report=["mcc", "accuracy", "macro_f1"])
    own("sts", {"pearson": 0.7, "spearman": 0.6}, "loss", metric_name="pearson", absent=("report", "test_pearson"))
    tables = tables_of(tmp_path)
    binary = tables["text_files · /data/reviews · fine-tuning · trainer.stop_metric=f1"]
    assert columns_of(binary)[:3] == [("F1 (yes) %", "valid"), ("F1 (yes) %", "test"), ("", "Accuracy %")]
    three = tables["text_files · /data/topics · fine-tuning · trainer.stop_metric=f1"]
    assert columns_of(three) == [("Macro-F1 %", "valid"), ("Macro-F1 %", "test"), ("", "Accuracy %"),
                                 ("", "Majority %")]  # fmt: skip
    assert three.rows.iloc[0][("Macro-F1 %", "test")] == "60.0"  # f1 (its test_f1 is macro-F1 with three labels)
    mcc = tables["text_files · /data/mcc · fine-tuning · trainer.stop_metric=mcc"]
    assert columns_of(mcc)[:3] == [("MCC ×100", "valid"), ("MCC ×100", "test"), ("", "Accuracy %")]
    regression = tables["text_files · /data/sts · fine-tuning · trainer.stop_metric=loss"]
    assert regression.rows.iloc[0][("Pearson ×100", "test")] == "70.0"
    assert regression.rows.iloc[0][("", "Spearman ×100")] == "60.0"


@pytest.mark.parametrize(
    "task, corpus, data, heading",
    [
        ("wmt18_tren", "hf", {"corpus": {"dataset": "/some/dir", "config": "de-en"}},
         "wmt18_tren · /some/dir (de-en) · micro"),
        ("wmt18_tren", "hf", {"corpus": {"dataset": "wmt/wmt18", "config": "tr-en"}},
         "wmt18_tren · wmt/wmt18 (tr-en) · micro"),
        ("text_files", "text_files", {"data_dir": "/data/de_en"}, "text_files · /data/de_en · micro"),
        ("bible_es_en", "bible", {"corpus": {"verses": 31102}, "data_dir": "/cache/bible"}, "bible_es_en · micro"),
    ],
)  # fmt: skip
def test_a_heading_names_the_data_read_not_only_the_task(tmp_path, task, corpus, data, heading):
    write_run(tmp_path, "(0)", task=task, model="micro", data=data, fingerprint={"config": {"task.corpus": corpus}})
    assert list(tables_of(tmp_path)) == [heading]
