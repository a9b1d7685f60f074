"""The fine-tuning study's tables from records as jobs write them: what keys a table, what tells its rows apart."""

from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.runs import load_runs
from tests.helpers.records import write_run


def test_a_fine_tuning_table_shows_each_rows_parameters_and_keeps_a_scratch_row_of_another_size(tmp_path):
    """Runs of a base given by its overrides and a scratch row sized by its own model: one table, its heading free of
    both, the rows told apart by their parameter counts."""
    data = {"majority": {"test": 0.25, "label": "a"}, "label_counts": {"test": {"a": 5, "b": 15}}}
    scratch = {"base_run": "scratch", "frozen": "keep", "freeze_from": "base"}
    base = {**scratch, "base_run": str(tmp_path / "base"), "frozen_params": 0, "base_test_metric": 30.0}
    arms = [(["finetune.base_checkpoint=scratch"], scratch, 171_234),
            (["finetune.base_checkpoint=scratch", "finetune.scratch_model=own", "model.d_model=256"], scratch,
             1_080_000),
            (["finetune.base_checkpoint=bases.b", '+bases.b=["experiment=finetune_bases","model=mlm_micro"]'], base,
             171_234)]  # fmt: skip
    for i, (overrides, finetune, params) in enumerate(arms):
        write_run(tmp_path / "runs", "(0)", 0.6 + i / 10, overrides=overrides, study="finetune", task="cls_bible_en",
                  model="mlm_demo", metric_name="accuracy", finetune=finetune, params_total=params, data=data)
    tables = [t for t in build_tables(load_runs([str(tmp_path / "runs")])) if t.metric_name == "accuracy"]
    assert [t.title for t in tables] == ["cls_bible_en · fine-tuning"]
    rows = tables[0].rows
    assert list(zip(rows[("", "Pre-training")], rows[("", "Parameters")])) == [
        ("none", "171,234"), ("none", "1.08M"), ("regular", "171,234")]

