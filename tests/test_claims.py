"""The findings checker and the significance test on constructed records: tables built to satisfy, contradict or
lack the rows of each claim; sacrebleu's paired bootstrap on constructed translations."""

import io
import random

import pandas as pd
import pytest
import sacrebleu

from frozen_sweep import collect
from frozen_sweep.tables import paper
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.claims import FAILS, HOLDS, INCONCLUSIVE, NOT_ENOUGH, paper_check, reservoir_row_name
from frozen_sweep.tables.paper import REFERENCES
from frozen_sweep.tables.render import markdown
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.tables.significance import p_values
from tests.helpers.jobs import run_cli as run_job
from tests.helpers.records import write_reservoir_run, write_run

BIG = {row: values[0] for row, values in paper.REFERENCES["paper_big"].rows.items()}
BIG_EPOCHS = {row: values[1] for row, values in paper.REFERENCES["paper_big"].rows.items()}
LM = {row: values[0] for row, values in paper.REFERENCES["paper_lm"].rows.items()}


def write_table(root, values: dict, epochs: dict = None, seeds=(1,), **fields):
    """One run per row and seed with the given test metric (the same for every seed) and epochs to convergence."""
    for row, value in values.items():
        for seed in seeds:
            epoch = (epochs or {}).get(row, 4)
            write_run(root, row, value, seed, best_epoch=epoch, epochs_to_convergence=epoch, **fields)
    return root


def verdicts(root, reference=None, min_runs=1) -> dict[str, str]:
    (table,) = build_tables(load_runs([str(root)]), reference, claims=True, min_runs=min_runs)
    return {check.key: check.verdict for check in table.checks}


def test_the_papers_own_numbers_satisfy_their_claims():
    """Every claim holds on the paper's tables that have its rows (E1 needs rows the FFN-1024 table lacks)."""
    expected = {
        ("paper_big", "big"): {"F1": HOLDS, "F2": HOLDS, "F3": HOLDS, "F4": HOLDS, "E1": HOLDS},
        ("paper_big_ffn1024", "big_ffn1024"): {"F1": HOLDS, "B1": HOLDS, "B2": HOLDS, "B3": HOLDS},
        ("paper_lm", "lm_paper"): {"F5": HOLDS},
    }
    for (name, model), verdicts_expected in expected.items():
        reference = paper.REFERENCES[name]
        checked = {c.key: paper_check(c, reference) for c in paper.CLAIMS if not c.models or model in c.models}
        assert {key: text.split(" ")[0] for key, text in checked.items() if text} == verdicts_expected, name


def test_a_table_with_the_papers_numbers_passes_with_the_numbers_printed(tmp_path):
    root = write_table(tmp_path / "big", BIG, BIG_EPOCHS)
    assert verdicts(root) == {"F1": HOLDS, "F2": HOLDS, "F3": HOLDS, "F4": HOLDS, "E1": HOLDS}
    runs = load_runs([str(root)])
    text = markdown(build_tables(runs, REFERENCES["paper_big"], claims=True), runs)
    findings = text.split("**Findings")[1]
    assert "- F1 ✓ (indicative) — one frozen component costs little" in findings  # one seed, no translations
    assert "[evidence: 1 seed per row; all converged; model demo (1,000 parameters); one seed]" in findings
    assert "(1)/(0) = 22.6/24.3 = 0.93 ≥ 0.85" in findings and "(6)/(5) = 4.4/20.8 = 0.21 < 0.5" in findings
    assert "|(3.1) − (3)| = 0.30 ≤ 0.05 × (0) = 1.22" in findings  # two significant digits below 1
    assert "(paper: ✓ (4) 21.5 ≥ (5) 20.8;" in findings


CONTRADICTIONS = {  # claim → rows changed from the paper's numbers so that this claim alone fails
    "F1": {"(1)": 19.0},  # 78% of (0)
    "F2": {"(6)": 15.0},  # 72% of (5): no collapse
    "F3": {"(5)": 21.9},  # FFN-only above ATT-only
    "F4": {"(3.1)": 21.0},  # |(3.1) - (3)| = 2.2 > 1.2
}


@pytest.mark.parametrize("claim", sorted(CONTRADICTIONS))
def test_a_table_built_to_contradict_a_claim_fails_it(tmp_path, claim):
    found = verdicts(write_table(tmp_path / claim, BIG | CONTRADICTIONS[claim], BIG_EPOCHS))
    assert found == {key: FAILS if key == claim else HOLDS for key in ("F1", "F2", "F3", "F4", "E1")}


def test_identity_attention_above_random_attention_fails_f4(tmp_path):
    assert verdicts(write_table(tmp_path / "t", BIG | {"(2.1)": 22.5}, BIG_EPOCHS))["F4"] == FAILS


def test_epochs_claim_fails_when_a_frozen_row_converges_first(tmp_path):
    assert verdicts(write_table(tmp_path / "t", BIG, BIG_EPOCHS | {"(4)": 12}))["E1"] == FAILS


def test_missing_rows_and_too_few_runs_are_not_enough_runs(tmp_path):
    without_6 = {row: v for row, v in BIG.items() if row != "(6)"}
    found = verdicts(write_table(tmp_path / "t", without_6, BIG_EPOCHS))
    assert found == {"F1": HOLDS, "F2": NOT_ENOUGH, "F3": NOT_ENOUGH, "F4": HOLDS, "E1": NOT_ENOUGH}
    (table,) = build_tables(load_runs([str(tmp_path / "t")]), claims=True)
    assert table.checks[1].compared == "(6) missing"

    assert set(verdicts(tmp_path / "t", min_runs=2).values()) == {NOT_ENOUGH}
    (table,) = build_tables(load_runs([str(tmp_path / "t")]), claims=True, min_runs=2)
    assert table.checks[0].compared.startswith("(1) has 1 run, needs 2")
    two_seeds = write_table(tmp_path / "seeds", BIG, BIG_EPOCHS, seeds=(1, 2))
    assert set(verdicts(two_seeds, min_runs=2).values()) == {HOLDS}


@pytest.mark.parametrize("seeds", [(1,), (1, 2), (1, 2, 3)])
def test_a_verdict_stands_as_a_finding_on_three_seeds_per_row_and_is_indicative_on_fewer(tmp_path, seeds):
    (table,) = build_tables(load_runs([str(write_table(tmp_path / "t", BIG, BIG_EPOCHS, seeds=seeds))]), claims=True)
    assert {(c.verdict, c.indicative) for c in table.checks} == {(HOLDS, len(seeds) < 3)}


def test_seeds_that_disagree_make_a_claim_inconclusive(tmp_path):
    """Row (0) at 28 ± 20 BLEU over two seeds: F1 fails on the means, holds on seed 1; F3 holds on both seeds
    (docs/collect.md's worked example)."""
    by_seed = {1: {"(0)": 8, "(1)": 10, "(2)": 10, "(3)": 10, "(4)": 30, "(5)": 20, "(6)": 10},
               2: {"(0)": 48, "(1)": 20, "(2)": 20, "(3)": 20, "(4)": 35, "(5)": 25, "(6)": 5}}  # fmt: skip
    for seed, values in by_seed.items():
        for row, value in values.items():
            write_run(tmp_path / "t", row, value, seed, best_epoch=2, epochs_to_convergence=None)
    (table,) = build_tables(load_runs([str(tmp_path / "t")]), claims=True)
    checks = {c.key: c for c in table.checks}
    assert (checks["F1"].verdict, checks["F3"].verdict, checks["F2"].verdict) == (INCONCLUSIVE, HOLDS, INCONCLUSIVE)
    assert checks["F3"].indicative and "2 of 2 seeds agree" in checks["F3"].evidence  # two seeds: a hint
    assert checks["F1"].evidence.startswith("2 seeds per row; none converged (a budget ended every run); model demo")
    assert "1 of 2 seeds agree" in checks["F1"].evidence


def test_one_seed_is_indicative_however_well_the_bootstrap_separates_the_rows(tmp_path):
    """(6) far below (4) and (5) (BLEU 2.9 and 42): F2 holds in every resample of the test sentences (its evidence); (4)
    and (5) translate equally well, F3 a coin toss. Both indicative: the bootstrap measures the test set, not seeds."""
    refs = sentences(300, 0)
    for row, keep, seed in (("(4)", 0.7, 1), ("(5)", 0.7, 2), ("(6)", 0.3, 3)):  # (6): BLEU 2.9, above the floor
        write_translated(tmp_path / "t", row, degrade(refs, keep, seed), refs)
    (table,) = build_tables(load_runs([str(tmp_path / "t")]), claims=True)
    checks = {c.key: c for c in table.checks}
    assert checks["F2"].verdict == HOLDS and checks["F2"].indicative
    assert checks["F2"].evidence.endswith("one seed; test-set bootstrap support 100%")
    assert checks["F3"].indicative and checks["F3"].verdict in (HOLDS, FAILS)


def test_rows_ended_by_a_budget_leave_the_epochs_claim_undecided(tmp_path):
    root = write_table(tmp_path / "t", {row: v for row, v in BIG.items() if row != "(4)"}, BIG_EPOCHS)
    write_run(root, "(4)", BIG["(4)"], best_epoch=30, epochs_to_convergence=None, stopped_reason="max_steps")
    (table,) = build_tables(load_runs([str(root)]), claims=True)
    e1 = next(c for c in table.checks if c.key == "E1")
    assert (e1.verdict, e1.compared) == (NOT_ENOUGH, "(4) did not converge (≥ epochs)")


def test_language_model_claim_f5(tmp_path):
    lm = dict(task="lm_bible_en", model="lm_demo", metric_name="ppl")
    assert verdicts(write_table(tmp_path / "holds", LM, **lm), paper.REFERENCES["paper_lm"]) == {"F5": HOLDS}
    (table,) = build_tables(load_runs([str(write_table(tmp_path / "fails", LM | {"(3)": 130.0}, **lm))]),
                                    claims=True)  # fmt: skip
    assert (table.checks[0].verdict, table.checks[0].compared) == (
        FAILS, "(1) is not the highest of (1) 118.4, (2) 47.5, (3) 130.0")
    assert verdicts(write_table(tmp_path / "few", {"(0)": 37.4, "(1)": 118.4, "(3)": 50.3}, **lm)) == {"F5": NOT_ENOUGH}
    # a vocabulary of 100 pieces: (1)'s 118.4 is worse than a uniform guess, so (1) never learned and F5 says nothing
    (table,) = build_tables(load_runs([str(write_table(tmp_path / "small", LM, **lm, data={"vocab_size": 100}))]),
                            claims=True)  # fmt: skip
    assert table.checks[0].verdict == INCONCLUSIVE
    assert table.checks[0].untrained == "(1) 1 of 1 run: test PPL 118.4 ≥ vocabulary 100"
    assert table.rows.droplevel(0, axis=1).set_index("Row").PPL["(1)"] == "118.4⊘"


def test_ffn1024_claims_only_on_ffn1024_tables(tmp_path):
    ffn1024 = {row: v[0] for row, v in paper.REFERENCES["paper_big_ffn1024"].rows.items()}
    found = verdicts(write_table(tmp_path / "narrow", ffn1024, model="big_ffn1024"))
    assert {k: found[k] for k in ("B1", "B2", "B3")} == {"B1": HOLDS, "B2": HOLDS, "B3": HOLDS}
    found = verdicts(write_table(tmp_path / "big_numbers", BIG, model="big_ffn1024"))
    assert {k: found[k] for k in ("B1", "B2", "B3")} == {"B1": HOLDS, "B2": HOLDS, "B3": FAILS}  # (5) 97% of (4)
    assert not {"B1", "B2", "B3"} & set(verdicts(write_table(tmp_path / "base", ffn1024, model="base")))


def test_reservoir_claim_per_depth(tmp_path):
    root = tmp_path / "reservoir_mt"
    write_reservoir_run(root, "base", "LLLL", "none", best=20, reach_s=80)
    write_reservoir_run(root, "fast", "LRLR", "transformer", best=20, reach_s=40)  # AUCC 16.0 > 12.0
    write_reservoir_run(root, "deep", "LRLRLL", "ffn", best=30, reach_s=40)  # no all-trainable depth-6 run: ignored
    (check,) = build_tables(load_runs([str(root)]), claims=True)[0].checks
    assert (check.key, check.verdict, check.compared) == ("R1", HOLDS, "depth 4: transformer LRLR 16.0 > 12.0")
    assert "model demo (4 layers) and demo (6 layers)" in check.evidence  # both depths the table holds
    write_reservoir_run(root, "slow", "LRLR", "ffn", best=20, reach_s=120)  # AUCC 8.3
    (check,) = build_tables(load_runs([str(root)]), claims=True)[0].checks
    assert check.verdict == FAILS and "depth 4: ffn LRLR 8.3 ≤ 12.0" in check.compared
    lonely = tmp_path / "no_baseline"
    write_reservoir_run(lonely, "deep", "LRLRLL", "ffn", best=30, reach_s=40)
    (check,) = build_tables(load_runs([str(lonely)]), claims=True)[0].checks
    assert check.verdict == NOT_ENOUGH


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """`python -m frozen_sweep.collect ARGS` in this process: (exit code, stdout, stderr)."""
    try:
        code = collect.main(list(args))
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_prints_the_checks_in_every_format(tmp_path, capsys):
    root = str(write_table(tmp_path / "big", BIG, BIG_EPOCHS))
    code, md, _ = cli(capsys, root, "--claims", "--reference", "paper_big")
    assert code == 0 and "- F2 ✓ (indicative) — (6), only the embeddings trainable, collapses" in md
    _, latex, _ = cli(capsys, root, "--claims", "--format", "latex")
    assert r"F4 $\checkmark$ (indicative) --- identity ATT" in latex and r"$|$(3.1) $-$ (3)$|$" in latex
    _, stdout, _ = cli(capsys, root, "--claims", "--format", "csv")
    runs_csv, checks_csv = stdout.split("\n\n")
    assert len(pd.read_csv(io.StringIO(runs_csv))) == 9
    checks = pd.read_csv(io.StringIO(checks_csv))
    assert list(checks.key) == ["F1", "F2", "F3", "F4", "E1"] and set(checks.verdict) == {HOLDS}
    assert checks.indicative.all() and checks.evidence[0].startswith("1 seed per row; all converged")
    code, _, err = cli(capsys, root, "--claims", "--format", "csv", "--out", str(tmp_path / "t.csv"))
    assert code == 0 and f"wrote {tmp_path / 't.claims.csv'}" in err
    assert pd.read_csv(tmp_path / "t.claims.csv").rule[2] == "(4) ≥ (5) and (5) > (6)"
    assert "F1" not in cli(capsys, root)[1]  # checks only when asked
    code, _, err = cli(capsys, root, "--claims", "--min-runs", "0")
    assert code == 2 and "--min-runs: must be a whole number ≥ 1" in err


# ---- significance ----------------------------------------------------------------------------------------------

WORDS = "the a dog cat sees eats bread water house big small and man woman drinks has red book reads good old".split()


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) for _ in range(n)]


def degrade(refs: list[str], keep: float, seed: int) -> list[str]:
    """Translations that drop each reference word with probability 1 - keep."""
    rng = random.Random(seed)
    return [" ".join(w for w in ref.split() if rng.random() < keep) or "the" for ref in refs]


def write_translated(root, row, hyps, refs, seed=1, **fields):
    path = write_run(root, row, sacrebleu.corpus_bleu(hyps, [refs]).score, seed, **fields)
    (path.parent / "test.hyp.txt").write_text("".join(h + "\n" for h in hyps))
    (path.parent / "test.ref.txt").write_text("".join(r + "\n" for r in refs))
    return path


@pytest.fixture
def translated(tmp_path):
    """Two seeds: (1) clearly better than (0), (2) identical to (0), (3) a hair different; (4) with other
    references, (5) whose saved translations do not match its recorded BLEU; (6) clearly better on seed 1 only."""
    root, refs = tmp_path / "runs", sentences(300, 0)
    for seed in (1, 2):
        base = degrade(refs, 0.6, seed)
        write_translated(root, "(0)", base, refs, seed)
        write_translated(root, "(1)", degrade(refs, 0.9, 10 + seed), refs, seed)
        write_translated(root, "(2)", base, refs, seed)
        write_translated(root, "(3)", [refs[0]] + base[1:], refs, seed)
        write_translated(root, "(4)", degrade(refs, 0.9, 20 + seed), sentences(300, 1), seed)
        wrong = write_translated(root, "(5)", degrade(refs, 0.9, 30 + seed), refs, seed)
        (wrong.parent / "test.hyp.txt").write_text("".join(h + "\n" for h in base))
        write_translated(root, "(6)", degrade(refs, 0.9 if seed == 1 else 0.6, 40 + seed), refs, seed)
    return root


def test_paired_bootstrap_per_seed(translated):
    runs = load_runs([str(translated)])
    p = runs.assign(p=p_values(runs)).set_index(["label", "seed"]).p
    assert p["(1)", 1] < 0.05 and p["(1)", 2] < 0.05  # clearly better
    assert p["(2)", 1] == 1.0 and p["(3)", 1] > 0.05  # identical, and one sentence better
    assert pd.isna(p["(0)", 1]) and pd.isna(p["(4)", 1]) and pd.isna(p["(5)", 1])  # baseline; not comparable
    assert p["(6)", 1] < 0.05 < p["(6)", 2]


def test_significance_in_the_table_and_csv(translated, capsys):
    runs = load_runs([str(translated)])
    (table,) = build_tables(runs)
    rows = table.rows.droplevel(0, axis=1).set_index("Row")
    assert list(rows.columns[:5]) == ["EMB", "ATT", "FFN", "BLEU", "p vs (0)"]
    assert rows.loc["(1)", "BLEU"].endswith("†") and rows.loc["(1)", "p vs (0)"] == "0.001"
    assert not rows.loc["(6)", "BLEU"].endswith("†")  # significant on one seed of two: not marked
    assert rows.loc["(2)", "p vs (0)"] == "1.000" and rows.loc["(0)", "p vs (0)"] == "–"
    assert rows.loc["(4)", "p vs (0)"] == "–"
    assert any(note.startswith("p vs (0): paired bootstrap") for note in table.footnotes)
    csv = pd.read_csv(io.StringIO(cli(capsys, str(translated), "--format", "csv")[1]))
    assert csv.set_index(["row", "seed"]).p_vs_0["(1)", 1] < 0.05


def test_partly_tested_rows_say_how_many_seeds(translated):
    write_run(translated, "(1)", 50.0, seed=3)  # no saved translations, no (0) partner
    (table,) = build_tables(load_runs([str(translated)]))
    rows = table.rows.droplevel(0, axis=1).set_index("Row")
    assert rows.loc["(1)", "p vs (0)"] == "0.001 (2/3)" and not rows.loc["(1)", "BLEU"].endswith("†")


def test_real_jobs_save_what_the_bootstrap_needs(tmp_path, micro_overrides):
    """Two micro jobs: their saved translations and references score their recorded BLEU, so (3) gets its p."""
    for freeze in ("none", "ffn"):
        proc = run_job(*micro_overrides, f"freeze={freeze}", f"hydra.run.dir={tmp_path / 'runs' / freeze}")
        assert proc.returncode == 0, proc.stdout
    assert len((tmp_path / "runs" / "ffn" / "test.ref.txt").read_text().splitlines()) == 60
    runs = load_runs([str(tmp_path / "runs")])
    p = runs.assign(p=p_values(runs)).set_index("label").p
    assert pd.isna(p["(0)"]) and 0 < p["(3)"] <= 1


def test_an_untrained_reservoir_row_is_named_as_its_table_names_it():
    assert reservoir_row_name((2, 3, "ffn", "LRLRL", False)) == "ffn LRLRL"
    assert reservoir_row_name((2, 3, "transformer", "LRLRL", True)) == "transformer LRLRL (backskip)"
    assert reservoir_row_name((3, 0, "transformer", "LLL", False)) == "all trainable (3 layers)"
