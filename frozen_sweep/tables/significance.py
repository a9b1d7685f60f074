"""Is a row's BLEU different from row (0)'s? Paired bootstrap resampling, through sacrebleu's own implementation.

- Each job saves its test translations (`test.hyp.txt`) and references (`test.ref.txt`) beside its result.json.
- Runs are paired by seed: within one table (task × model × setting), the run of each row with seed s is tested
  against the (0) run with seed s, by `sacrebleu.significance.PairedTest(test_type="bs")` (1,000 resamples of the
  test sentences, sacrebleu's fixed seed 12345, or $SACREBLEU_SEED): p of the BLEU difference arising by chance.
- A row with several seeds is significant (†, p < ALPHA) only when every one of its seeds is (the row's p is the
  largest of its seeds' p): an intersection-union test, so † keeps its 5% level without assuming that seeds are
  interchangeable (concatenating seeds would let one lucky seed carry the others).
- A run whose translations are exactly (0)'s gets p = 1 (sacrebleu would give its smallest p, 1/1001).
- No test (p empty) for a run without both files, with references that differ from its (0) partner's, or whose
  translations do not score its recorded test BLEU: they do not belong to that result.
"""

from pathlib import Path
from typing import Optional

import pandas as pd

from frozen_sweep.run.directory import TEST_HYPOTHESES, TEST_REFERENCES
from frozen_sweep.tables.paper import BASELINE

ALPHA = 0.05
MARK = "†"
SCORE_TOLERANCE = 0.01  # BLEU points between the saved translations' score and the record's test_metric


def read_lines(path: Path) -> Optional[list[str]]:
    """The file's lines as a job wrote them (one per sentence, "\n"-terminated); None if there is no file."""
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def outputs(result_path: str) -> tuple[Optional[list[str]], Optional[list[str]]]:
    """A run's saved test translations and references (None where a file is missing)."""
    run_dir = Path(result_path).parent
    return read_lines(run_dir / TEST_HYPOTHESES), read_lines(run_dir / TEST_REFERENCES)


def paired_p_values(runs: pd.DataFrame) -> pd.Series:
    """p of the one (0) run among `runs` against each other run; NaN where untestable."""
    p = pd.Series(float("nan"), index=runs.index)
    baseline = runs.index[runs.label == BASELINE]
    if len(baseline) != 1:
        return p
    base = baseline[0]
    base_hyps, refs = outputs(runs.path[base])  # the other runs' files are read only when (0) saved its own
    if base_hyps is None or refs is None or len(base_hyps) != len(refs):
        return p
    saved = {i: (base_hyps, refs) if i == base else outputs(path) for i, path in runs.path.items()}
    others = [i for i, (hyps, run_refs) in saved.items() if i != base and hyps is not None and run_refs == refs]
    different = [i for i in others if saved[i][0] != base_hyps]
    from sacrebleu.metrics import BLEU  # here: collecting runs without saved translations never imports sacrebleu
    from sacrebleu.significance import PairedTest

    metric = BLEU(references=[refs])  # tokenised once, not once per system (PairedTest then takes references=None)
    named = [(BASELINE, base_hyps)] + [(str(i), saved[i][0]) for i in different]
    _, scores = PairedTest(named, {"BLEU": metric}, references=None, test_type="bs")()
    results = dict(zip([base, *different], scores["BLEU"]))  # sacrebleu's Results, the baseline's first
    if abs(results[base].score - runs.test_metric[base]) > SCORE_TOLERANCE:
        return p  # (0)'s saved translations are not the ones its record scored
    for i in others:
        # Translations identical to (0)'s: no difference, p = 1 (sacrebleu counts only resampled differences above
        # the observed one, so it would give them its smallest p, 1/1001).
        result = results.get(i, results[base])
        if abs(result.score - runs.test_metric[i]) <= SCORE_TOLERANCE:
            p[i] = result.p_value if i in results else 1.0
    return p


def p_values(runs: pd.DataFrame) -> pd.Series:
    """p against (0) of every completed freeze-study BLEU run, paired by task × model × setting × seed; NaN else."""
    tested = runs[(runs.status == "completed") & (runs.study == "freeze") & (runs.metric_name == "bleu")]
    keys = ["task", "model", "setting", "seed"]
    group_ids = tested.groupby(keys, sort=False, dropna=False).ngroup()
    baselines = tested[tested.label == BASELINE]  # only the groups whose (0) saved translations: one stat each
    saved = [(Path(path).parent / TEST_HYPOTHESES).is_file() for path in baselines.path]
    tested = tested[group_ids.isin(group_ids[baselines.index[saved]])]
    groups = tested.groupby(keys, sort=False, dropna=False)
    found = [paired_p_values(group) for _, group in groups]
    found = pd.concat(found) if found else pd.Series(dtype=float)
    return found.reindex(runs.index).rename("p_vs_0")


def with_p_values(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with their `p_vs_0` column (computed once: the tables and the CSV share it)."""
    return runs if "p_vs_0" in runs else runs.assign(p_vs_0=p_values(runs))
