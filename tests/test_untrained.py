"""Rows that never learned, from a real sweep: marked in the table, no verdict and no significance mark on them
(frozen_sweep.tables.untrained; docs/collect.md, "Untrained rows")."""

from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.claims import INCONCLUSIVE
from frozen_sweep.tables.paper import REFERENCES
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.tables.significance import p_values
from tests.helpers.records import write_run
from tests.helpers.sweeps import LOCAL, run_sweep


def test_a_sweep_that_never_learned_gets_no_verdict_and_no_dagger(tmp_path, micro_overrides):
    """A real sweep of (0), (4), (5), (6), side by side, stopped after 3 updates: nearly every test sentence runs to
    the length cap, yet the bootstrap separates rows from (0) (p 0.001). Every row is marked untrained, F2 and F3
    (which use them) come out inconclusive, never ✓ or ✗, and no row gets a †, a p vs (0) or a ratio to (0); each
    record says 4 jobs ran at a time.
    Which rows separate is the kernels' business: (5) and (6) decode other degenerate strings than (0) in fp32 and
    in bf16, while (4) decodes (0)'s very hypotheses in bf16 (p 1.0) and differs in a few in fp32."""
    proc = run_sweep(tmp_path / "sweep", *micro_overrides, LOCAL, "hydra.launcher.max_parallel=5",
                     "trainer.max_steps=3", "trainer.valid_bleu_sentences=0", "trainer.stop_metric=loss",
                     "eval.beam=1", "eval.max_len_a=0", "eval.max_len_b=12", "freeze=none,emb_ffn,emb_att,att_ffn")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    runs = load_runs([str(tmp_path / "sweep")])
    assert [r["jobs_at_a_time"] for r in runs.record] == [4] * 4  # the four that ran together, not the five slots
    assert runs.untrained.str.contains("test hypotheses at the length cap").all() and len(runs) == 4
    p = p_values(runs).dropna()
    assert len(p) == 3 and (p < 0.05).any()  # "significant" differences between models that never learned
    (table,) = build_tables(runs, REFERENCES["paper_big"], claims=True)
    cells = table.rows[("", "BLEU")]
    assert cells.str.endswith("⊘").all() and not cells.str.contains("†").any()
    assert (table.rows[("", "p vs (0)")] == "–").all() and (table.rows[("BLEU / (0)", "ours")] == "–").all()
    checks = {check.key: check for check in table.checks}
    assert [checks[key].verdict for key in ("F2", "F3")] == [INCONCLUSIVE, INCONCLUSIVE]
    assert "F3 inconclusive (untrained: (4) 1 of 1 run: " in markdown([table], runs)


def test_an_untrained_row_beside_a_trained_baseline_gets_no_ratio_to_it(tmp_path):
    """(1) decoded 40 of its 50 test sentences to the length cap: whatever its BLEU, no fraction of (0)'s."""
    write_run(tmp_path, "(0)", 20.0)
    write_run(tmp_path, "(1)", 5.0, decoding={"at_length_cap": 40, "sentences": 50})
    (table,) = build_tables(load_runs([str(tmp_path)]), REFERENCES["paper_big"])
    ratio = table.rows.set_index(("", "Row"))[("BLEU / (0)", "ours")]
    assert (ratio["(0)"], ratio["(1)"]) == ("1.00", "–")
