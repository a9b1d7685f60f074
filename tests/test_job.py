"""End to end through the real Hydra entry point (`python -m frozen_sweep`), in subprocesses."""

import os
import shutil
from pathlib import Path

from frozen_sweep.run.lock import exclusive_run
from tests.conftest import ROOT, fake_run_dir
from tests.helpers.jobs import bleu_of, result, run_cli


def test_micro_translation_job_writes_a_complete_result(tmp_path, micro_overrides):
    run_dir = tmp_path / "run"
    cap = ["eval.max_len_a=0", "eval.max_len_b=3"]  # hypotheses of at most 2 tokens, then end-of-sentence
    proc = run_cli(*micro_overrides, *cap, "freeze=emb_ffn", f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stdout
    r = result(run_dir)
    assert r["status"] == "completed" and r["error"] is None
    assert (r["task"], r["model"], r["row"], r["seed"], r["metric_name"]) == ("text_files", "micro", "(4)", 1, "bleu")
    assert r["freeze"] == {"emb": "frozen:random", "att": "trainable", "ffn": "frozen:random", "other": "trainable"}
    assert 0 < r["params_trainable"] < r["params_total"]
    assert r["trainable_ratio"] == r["params_trainable"] / r["params_total"]
    assert sum(c["total"] for c in r["params_by_component"].values()) == r["params_total"]
    assert len(r["history"]) == 2 and r["stopped_reason"] == "max_epochs"
    assert set(r["history"][0]) >= {"epoch", "step", "wall_time_s", "train_loss", "valid_loss", "valid_metric"}
    assert r["epochs_to_convergence"] is None  # a budget, not early stopping, ended the run
    assert r["test_metric"] == bleu_of(run_dir) and r["sacrebleu_signature"].startswith("nrefs:1")
    assert r["versions"]["torch"] and r["data"]["sizes"]["train"] == 600
    hyps = (run_dir / "test.hyp.txt").read_text().splitlines()
    assert len(hyps) == 60 and all(len(h.split()) <= 2 for h in hyps)
    decoding = r["decoding"]
    assert decoding == {"beam": 2, "len_penalty": 1.0, "max_len_a": 0.0, "max_len_b": 3, "sentences": 60,
                        "at_length_cap": decoding["at_length_cap"]}  # fmt: skip
    assert decoding["at_length_cap"] > 6 and "test hypotheses ran to the length cap" in proc.stdout
    assert r["validation"] == {"examples": 60, "bleu_sentences": 50, "beam": 1}  # trainer=quick: 50 of 60
    assert "trainer.quick_validation_examples" not in r["fingerprint"]["config"]  # no step budget under 100

    again = run_cli(*micro_overrides, *cap, "freeze=emb_ffn", f"hydra.run.dir={run_dir}")
    assert again.returncode == 0 and "already holds a completed result" in again.stdout


def test_language_model_job(tmp_path, micro_overrides):
    run_dir = tmp_path / "lm"
    overrides = [o for o in micro_overrides if not o.startswith(("model=", "task.src_lang"))]
    proc = run_cli(*overrides, "task.kind=lm", "task.src_lang=null", "model=lm_micro", f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stdout
    r = result(run_dir)
    # 60 tokens: a uniform guess scores 60, the untrained model ≈140; 20 words in random order leave ≈20 to learn
    assert r["metric_name"] == "ppl" and 1 < r["test_metric"] < r["data"]["vocab_size"] / 2
    assert r["history"][-1]["valid_metric"] == r["history"][-1]["valid_ppl"]


def test_bad_config_fails_before_training_and_leaves_nothing_on_disk(tmp_path, micro_overrides):
    proc = run_cli(*micro_overrides, "model.heads=5", f"hydra.run.dir={tmp_path / 'out' / 'bad'}")
    assert proc.returncode != 0
    assert "model.heads=5" in proc.stdout and "model.d_model=32" in proc.stdout
    proc = run_cli(*micro_overrides, "+trainer.lrr=0.1", f"hydra.run.dir={tmp_path / 'out' / 'typo'}")
    assert proc.returncode != 0 and "trainer.lrr: no such key" in proc.stdout
    assert not list((tmp_path / "out").iterdir())

    proc = run_cli(*micro_overrides, "freeze.ffn.init=diagonal", f"hydra.run.dir={tmp_path / 'bad2'}")
    assert proc.returncode != 0 and "identity" in proc.stdout and "orthogonal" in proc.stdout


def test_bad_data_stops_a_single_job_before_its_directory_is_written(tmp_path, micro_overrides, toy_corpus):
    data = tmp_path / "data"
    data.mkdir()
    for f in toy_corpus.iterdir():
        (data / f.name).write_bytes(f.read_bytes())
    (data / "valid.en").write_text("only one line\n")
    overrides = [o if not o.startswith("task.path=") else f"task.path={data}" for o in micro_overrides]
    proc = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode != 0 and "valid.en has 1 (in" in proc.stdout and "The job did not start" in proc.stdout
    assert "Traceback" not in proc.stdout and not (tmp_path / "run").exists(), proc.stdout


def test_a_held_out_example_longer_than_the_models_positions_stops_the_job_before_it_starts(tmp_path, micro_overrides):
    """Held-out examples are scored whole (only training examples over task.max_len are dropped): one that the
    model's positions cannot hold would fail at the first validation, after training; it is refused up front."""
    proc = run_cli(*micro_overrides, "model.max_positions=8", "task.max_len=6", "eval.max_len_a=1", "eval.max_len_b=0",
                   f"hydra.run.dir={tmp_path / 'run'}")  # the decoder's length cap within the positions too
    assert proc.returncode != 0 and "more than model.max_positions=8: raise model.max_positions to at least" in proc.stdout
    assert "Traceback" not in proc.stdout and not (tmp_path / "run").exists(), proc.stdout


def test_budgets_mean_what_they_say_and_a_changed_corpus_is_not_taken_for_the_finished_run(
    tmp_path, micro_overrides, toy_corpus
):
    corpus = tmp_path / "corpus"
    shutil.copytree(toy_corpus, corpus)
    args = [o if not o.startswith("task.path=") else f"task.path={corpus}" for o in micro_overrides]
    args += ["trainer.max_steps=70", "trainer.valid_bleu_sentences=0", "eval.beam=1", f"hydra.run.dir={tmp_path / 'run'}"]
    first = run_cli(*args)
    assert first.returncode == 0, first.stdout
    r = result(tmp_path / "run")
    # trainer=quick caps runs at 2 epochs (fewer than 70 steps here); a budget given on the command line replaces it
    assert (r["steps"], r["stopped_reason"]) == (70, "max_steps") and r["history"][-1]["epoch"] > 2
    assert r["budgets"] == {"max_epochs": None, "max_steps": 70, "max_time_s": None}
    assert r["validation"] == {"examples": 60, "bleu_sentences": 0, "beam": 1}  # valid_bleu_sentences=0 wins
    assert "training stopped by trainer.max_steps=70" in first.stdout

    (corpus / "test.en").write_text((corpus / "test.en").read_text().replace("dog", "cat"))
    again = run_cli(*args)
    assert again.returncode != 0 and "holds a completed run of a different config: data file test.en" in again.stdout
    assert "force=true" in again.stdout and result(tmp_path / "run") == r  # the old result is left as it was
    forced = run_cli(*args, "force=true")
    assert forced.returncode == 0, forced.stdout
    assert result(tmp_path / "run")["fingerprint"]["data"]["test.en"] != r["fingerprint"]["data"]["test.en"]


def test_user_errors_of_a_single_job_print_one_message_as_a_sweep_does_not_a_traceback(tmp_path, micro_overrides):
    other = fake_run_dir(tmp_path / "other", *micro_overrides)  # a directory holding a run of another config
    proc = run_cli(*micro_overrides, "seed=7", f"hydra.run.dir={other}")
    assert proc.returncode != 0 and "holds a completed run of a different config: seed: 1 → 7" in proc.stdout
    assert "The job did not start" in proc.stdout and "Traceback" not in proc.stdout, proc.stdout
    busy = tmp_path / "busy"
    busy.mkdir()
    with exclusive_run(busy):  # this process runs the directory: a second runner stops, saying how to stop the first
        proc = run_cli(*micro_overrides, f"hydra.run.dir={busy}")
    assert proc.returncode != 0 and f"already being run by pid {os.getpid()}" in proc.stdout
    assert f"kill -INT {os.getpid()}" in proc.stdout and "Traceback" not in proc.stdout, proc.stdout


def test_relative_paths_mean_the_directory_the_command_ran_in_when_the_job_runs_in_its_own(tmp_path, micro_overrides):
    relative = [
        f"{key}={os.path.relpath(value, ROOT)}" if key in ("task.path", "task.cache_dir") else f"{key}={value}"
        for key, value in (o.split("=", 1) for o in micro_overrides)
    ]
    proc = run_cli(*relative, "hydra.job.chdir=true", "trainer.max_steps=2", "eval.beam=1",
                   f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    r = result(tmp_path / "run")
    assert r["data"]["data_dir"] == str(Path(micro_overrides[1].split("=")[1]))
    assert r["validation"] == {"examples": 2, "bleu_sentences": 2, "beam": 1}  # a 2-update budget: 2 examples
    assert r["fingerprint"]["config"]["trainer.quick_validation_examples"] == 2  # never taken for a full validation


def test_a_crash_is_reported_as_itself_with_hydras_traceback():
    """A real crash keeps Hydra's report of that exception (a handled error gets the tool's one-line message)."""
    from frozen_sweep.job.command import _report

    def crash() -> None:
        raise ZeroDivisionError("the job's own crash")

    reported = []

    def hydras_report(func):  # what Hydra's run_and_report does first: run it again to get the exception
        try:
            func()
        except Exception as e:
            reported.append(e)

    _report(crash, hydras_report)
    assert [type(e) for e in reported] == [ZeroDivisionError] and str(reported[0]) == "the job's own crash"
