"""The Python API (frozen_sweep.load_run) gives the commands' outputs; the commands take --threads and end with their
speed, a model file at its job's threads; --stream answers each line before the next is written and a bad line with
an empty line; --too-long skips or cuts a long line; an empty line gives an empty line. Real micro runs (conftest's
finished_runs)."""

import math
import queue
import re
import subprocess
import sys
import threading

import pytest
from omegaconf import OmegaConf

from frozen_sweep import export, load_run, score
from frozen_sweep.run.directory import TEST_SOURCES
from frozen_sweep.run.record import best_entry
from frozen_sweep.system.cpu import usable_cores
from frozen_sweep.use.command_line import run_command
from frozen_sweep.use.errors import UsageError
from frozen_sweep.weights.model_file import read_model_file, write_model_file
from tests.conftest import ROOT
from tests.helpers.jobs import result

SPEED = r"\d+ sentences, \d+ tokens in [\d.]+ s: [\d.]+ sentences/s, [\d.]+ tokens/s \({} threads?\); weights: {}\n$"


def test_load_run_translates_and_scores_as_the_job_did(finished_runs):
    mt = load_run(finished_runs["mt"], device="cpu")
    sources = (finished_runs["mt"] / TEST_SOURCES).read_text().splitlines()  # the run keeps its test source
    assert sources == (finished_runs["corpus"] / "test.es").read_text().splitlines()
    expected = (finished_runs["mt"] / "test.hyp.txt").read_text().splitlines()
    assert mt.translate(sources) == expected and mt.threads == result(finished_runs["mt"])["threads"]
    assert mt.speed.sentences == len(sources) and mt.speed.tokens == sum(map(len, mt.vocab.encode_batch(sources)))
    with_empty = mt.translate([sources[0], "", sources[1]], beam=1, nbest=1)
    assert [hyps[0][1] for hyps in with_empty] == [mt.translate(sources[:1], beam=1)[0], "",
                                                   mt.translate(sources[1:2], beam=1)[0]]  # fmt: skip
    assert with_empty[1] == [(0.0, "")]
    with pytest.raises(UsageError, match="is a task.kind=translation run; classify takes task.kind=classify or "
                       "task.kind=regression runs: use python -m frozen_sweep.translate"):  # fmt: skip
        mt.classify(sources)

    lm = load_run(finished_runs["lm"], threads=1)
    scores = lm.score((finished_runs["corpus"] / "test.en").read_text().splitlines())
    assert scores.perplexity == result(finished_runs["lm"])["test_metric"] and lm.threads == 1
    with pytest.raises(UsageError, match="line 3 has 900 subwords, more than 255"):
        lm.score(["the dog", "a", "dog " * 300], source="notes.txt")


def test_the_commands_take_threads_and_end_with_their_speed(finished_runs):
    out = subprocess.run([sys.executable, "-m", "frozen_sweep.translate", str(finished_runs["mt"]), "--threads", "2",
                          "--input", str(finished_runs["mt"] / TEST_SOURCES)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == (finished_runs["mt"] / "test.hyp.txt").read_text()
    best = f"checkpoint_best.pt, step {best_entry(result(finished_runs['mt']))['step']}; float32"
    assert out.stderr.startswith("60 sentences, ") and re.search(SPEED.format(2, best), out.stderr), out.stderr


def test_a_model_file_runs_at_its_jobs_threads_else_follows_the_free_cores(finished_runs, tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    run_command(export.main, [str(finished_runs["lm"]), str(tmp_path / "lm.safetensors")])
    saved, job_threads = read_model_file(tmp_path / "lm.safetensors"), result(finished_runs["lm"])["threads"]
    assert saved.threads == job_threads
    config = OmegaConf.create(saved.config_yaml)
    config.trainer.threads = None  # a job that fixed no thread count in its config (its record holds what it used)
    model = load_run(tmp_path / "lm.safetensors").model
    for name, threads in (("fixed", job_threads), ("unfixed", None)):  # unfixed: no count held, as older files
        write_model_file(tmp_path / f"{name}.safetensors", model, saved.seed, OmegaConf.to_yaml(config), saved.vocab,
                         saved.frozen_sha256, threads=threads)  # fmt: skip
    fixed, unfixed = (load_run(tmp_path / f"{name}.safetensors") for name in ("fixed", "unfixed"))
    assert fixed.threads == job_threads and not fixed.follow_free_cores
    assert unfixed.follow_free_cores and unfixed.threads == usable_cores()
    unfixed.score(["the dog eats"])
    assert re.search(rf"\(\d(–\d)? threads?, following the free cores, at most {usable_cores()}\)",
                     unfixed.speed_summary())  # fmt: skip


@pytest.mark.parametrize("command", ["translate", "score", "generate"])
def test_stream_answers_each_line_before_the_next_is_written_and_survives_bad_ones(command, finished_runs):
    """The writer sends a line only once the answer to the one before has come: a command that read to the end of
    its input first would never answer (the test's timeout). A line that is not UTF-8 and one too long for the model
    get an empty answer and an error naming them, and the lines after them are answered."""
    kind = "mt" if command == "translate" else "lm"
    good = ["el perro come pan", "", "el gato ve agua"] if kind == "mt" else ["the dog eats", "", "the cat"]
    sent = [good[0], b"\xff" + good[0].encode(), good[1], " ".join([good[2]] * 300), good[2]]
    sent = [line if isinstance(line, bytes) else line.encode() for line in sent]
    proc = subprocess.Popen([sys.executable, "-m", f"frozen_sweep.{command}", str(finished_runs[kind]), "--stream"],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in proc.stdout], daemon=True).start()
    got = []
    try:
        for line in sent:
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            got.append(answers.get(timeout=60).decode().rstrip("\n"))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    stderr = proc.stderr.read().decode()
    assert proc.returncode == 0, stderr
    assert re.search(r"^error: standard input line 2 is not valid UTF-8 \(byte 0xff at column 1\)$", stderr, re.M)
    assert re.search(r"^error: standard input line 4 has \d+ subwords, more than \d+ \(model.max_positions", stderr,
                     re.M), stderr  # fmt: skip
    run = load_run(finished_runs[kind])
    assert got[1] == got[3] == "" and (got[2] == "" or command == "generate")  # generate: an empty prompt, bos
    answered = [got[0], got[4]]
    if command == "translate":
        assert answered == run.translate([good[0], good[2]])
    elif command == "score":
        assert answered == [f"{s.logprob:.4f}\t{s.tokens}\t{s.perplexity:.4f}" for s in run.score([good[0], good[2]]).lines]
    else:
        assert answered == run.generate([good[0], good[2]]) and answered[1].startswith(good[2])


@pytest.mark.parametrize("too_long", ["skip", "truncate"])
def test_too_long_skips_or_truncates_a_files_long_line_and_answers_the_others(too_long, finished_runs, tmp_path,
                                                                              capsys):  # fmt: skip
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = ["the dog eats", " ".join(["dog"] * 300), "the cat"]
    source.write_text("\n".join(lines) + "\n")
    run_command(score.main, [str(finished_runs["lm"]), "--input", str(source), "--output", str(output),
                             "--too-long", too_long])  # fmt: skip
    stderr, got = capsys.readouterr().err, output.read_text().splitlines()
    run = load_run(finished_runs["lm"], too_long="truncate" if too_long == "truncate" else "error")
    scores = run.score(lines if too_long == "truncate" else [lines[0], "", lines[2]]).lines
    assert got == [f"{s.logprob:.4f}\t{s.tokens}\t{s.perplexity:.4f}" if s else "" for s in scores]
    if too_long == "skip":
        assert got[1] == "" and re.search(rf"^skipped: {source} line 2 has \d+ subwords, more than 255", stderr, re.M)
    else:
        assert scores[1].tokens == 256 and run.truncated == [2]  # cut to 255 subwords, and its end-of-sentence
        assert f"truncated: {source} line 2, cut to the model's positions" in stderr


def test_score_force_decodes_a_translation_runs_test_set_to_its_records_test_loss(finished_runs, tmp_path):
    run_dir = finished_runs["mt"]
    pairs = [f"{s}\t{r}" for s, r in zip((run_dir / TEST_SOURCES).read_text().splitlines(),
                                         (run_dir / "test.ref.txt").read_text().splitlines())]  # fmt: skip
    run = load_run(run_dir)
    scores = run.score(pairs)
    test_loss = result(run_dir)["test_loss"]
    assert test_loss > 0 and scores.mean_logprob == -test_loss and scores.perplexity == math.exp(test_loss)
    first = scores.lines[0]
    assert first.tokens == len(run.vocab.encode_batch([pairs[0].split("\t")[1]])[0]) + 1 and first.logprob < 0
    assert run.score(pairs[:1]).lines[0].logprob == pytest.approx(first.logprob, abs=1e-4)  # alone or batched
