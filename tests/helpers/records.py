"""Result records written by hand, as jobs write them: for the collector, its tables and its findings."""

from pathlib import Path

from frozen_sweep.metrics.clock import calibrated_time, clock_name
from frozen_sweep.metrics.efficiency import aucc
from frozen_sweep.run.directory import RESULT_FILE, write_result
from frozen_sweep.run.record import RunResult
from frozen_sweep.system.files import write_json_atomic

FROZEN = {  # paper row → frozen components and their init
    "(0)": {},
    "(1)": {"emb": "frozen:random"},
    "(2)": {"att": "frozen:random"},
    "(3)": {"ffn": "frozen:random"},
    "(2.1)": {"att": "frozen:identity"},
    "(3.1)": {"ffn": "frozen:identity"},
    "(4)": {"emb": "frozen:random", "ffn": "frozen:random"},
    "(5)": {"emb": "frozen:random", "att": "frozen:random"},
    "(6)": {"att": "frozen:random", "ffn": "frozen:random"},
}
RATIO = {"(0)": 1, "(1)": 0.8, "(2)": 0.7, "(3)": 0.5, "(2.1)": 0.7, "(3.1)": 0.5, "(4)": 0.3, "(5)": 0.45, "(6)": 0.2}


def write_run(root: Path, row, metric: float = 10.0, seed: int = 1, overrides=(), **fields) -> Path:
    """A record as a job writes it; `row` is a paper row label or a {component: state} dict for other patterns."""
    frozen, name = (FROZEN[row], row) if isinstance(row, str) else (row, "custom")
    freeze = {c: frozen.get(c, "trainable") for c in ("emb", "att", "ffn", "other")}
    history = [
        {"epoch": e, "step": 100 * e, "wall_time_s": 30.0 * e, "train_loss": 5 - e, "valid_loss": 6 - e,
         "valid_ppl": 400 / e, "valid_bleu": metric * e / 4, "valid_metric": metric * e / 4}
        for e in (1, 2, 3, 4)
    ]  # fmt: skip
    record = dict(
        status="completed", task="bible_es_en", model="demo", freeze=freeze, seed=seed,
        row=row if isinstance(row, str) else None, metric_name="bleu", test_metric=metric,
        best_metric=metric, best_epoch=4, epochs_to_convergence=4, stopped_reason="early_stop",
        trainable_ratio=RATIO.get(row, 0.6) if isinstance(row, str) else 0.6, params_total=1000, history=history,
        overrides=[f"freeze={name}", f"seed={seed}", "name=sweep", *overrides],
    )  # fmt: skip
    record.update(fields)
    run_dir = root / f"{record['task']}-{record['model']}-{name}-{seed}-{'_'.join(overrides)}-{record['status']}"
    run_dir.mkdir(parents=True)
    write_result(run_dir, RunResult(**record))
    return run_dir / "result.json"


def write_reservoir_run(root, name, pattern, kind, best, reach_s, seed=1, backskip=False, updates=40, step_time_s=None):
    """A completed reservoir-study record whose validation BLEU climbs linearly to `best` at `reach_s` seconds,
    validated 4 times, the last after `updates`; with `step_time_s`, on the calibrated clock."""
    history = [{"epoch": i, "step": updates * i // 4, "wall_time_s": reach_s * i / 4, "valid_loss": 5 - i,
                "valid_metric": best * i / 4, **calibrated_time(updates * i // 4, step_time_s)}
               for i in (1, 2, 3, 4)]  # fmt: skip
    record = RunResult(
        status="completed", study="reservoir", task="bible_es_en", model="demo", seed=seed, metric_name="bleu",
        test_metric=best - 1, best_metric=best, best_epoch=4, trainable_ratio=1 - pattern.count("R") / 10,
        reservoir={"type": kind, "stack": "encoder", "pattern": pattern, "reservoir_layers": pattern.count("R"),
                   "updatable_layers": pattern.count("L"), "backskip": backskip},
        aucc=aucc(history, 100, initial=0.0), aucc_cutoff_s=100, history=history, step_time_s=step_time_s,
        clock=clock_name(step_time_s),
        fingerprint={"config": {"model.encoder_layers": len(pattern)}},  # the model's shape, as evidence reads it
        overrides=[f"reservoir={kind}", f"model.encoder_layers={len(pattern)}", f"seed={seed}", "name=reservoir_mt"],
    )  # fmt: skip
    (root / name).mkdir(parents=True)
    write_result(root / name, record)



def write_labelled_run(root: Path, name: str, test: dict, task: str = "text_files", labels=("no", "yes"), seed=1,
                       data=None, absent=(), overrides=(), **fields) -> Path:
    """A completed classifier's record (a regression's with `metric_name="pearson"`) as a job writes it: `test`, its
    test scores by name (accuracy, f1, macro_f1, mcc; pearson, spearman), each 0.1 lower at its best validation;
    `data` added to its data (corpus, data_dir); `absent`: keys a record from before them lacks."""
    metric_name = fields.pop("metric_name", "accuracy")
    best = {"epoch": 1, "step": 10, "wall_time_s": 6.0, "valid_metric": test[metric_name] - 0.1,
            **{f"valid_{k}": v - 0.1 for k, v in test.items()}}  # fmt: skip
    if metric_name == "accuracy":
        floor = {"labels": list(labels), "majority": {"label": labels[0], "test": 0.5},
                 "label_counts": {"test": {label: 5 for label in labels}}}  # fmt: skip
    else:
        floor = {"mean_predictor": {"value": 2.5, "test": 1.5}, "numbers": {"test": {"count": 10, "mean": 2.5,
                                                                                      "std": 1.2}}}  # fmt: skip
    record = RunResult(
        status="completed", task=task, model="mlm_micro", seed=seed, metric_name=metric_name,
        test_metric=test[metric_name], best_metric=best["valid_metric"], best_epoch=1, trainable_ratio=1.0,
        history=[best], data={**floor, **(data or {})}, overrides=[f"task={task}", f"seed={seed}", *overrides],
        updated_at="2026-11-27T17:00:00+00:00", **{f"test_{k}": v for k, v in test.items()}, **fields,
    ).to_dict()  # fmt: skip
    (root / name).mkdir(parents=True)
    write_json_atomic(root / name / RESULT_FILE, {k: v for k, v in record.items() if k not in absent})
    return root / name / RESULT_FILE
