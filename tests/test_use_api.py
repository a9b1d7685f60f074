"""The Python API (frozen_sweep.load_run) gives the commands' outputs; the commands take --threads and end with their
speed; --stream answers each line before the next is written; an empty line gives an empty line. Real micro runs
(conftest's finished_runs)."""

import math
import queue
import re
import subprocess
import sys
import threading

import pytest

from frozen_sweep import load_run
from frozen_sweep.run.directory import TEST_SOURCES
from frozen_sweep.run.record import best_entry
from frozen_sweep.use.errors import UsageError
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
    best = f"checkpoint_best.pt, step {best_entry(result(finished_runs['mt']))['step']}"
    assert out.stderr.startswith("60 sentences, ") and re.search(SPEED.format(2, best), out.stderr), out.stderr


@pytest.mark.parametrize("command", ["translate", "score", "generate"])
def test_stream_answers_each_line_before_the_next_is_written(command, finished_runs):
    """The writer sends a line only once the answer to the one before has come: a command that read to the end of
    its input first would never answer (the test's timeout)."""
    kind = "mt" if command == "translate" else "lm"
    lines = ["el perro come pan", "", "el gato ve agua"] if kind == "mt" else ["the dog eats", "the cat"]
    proc = subprocess.Popen([sys.executable, "-m", f"frozen_sweep.{command}", str(finished_runs[kind]), "--stream"],
                            cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in proc.stdout], daemon=True).start()
    got = []
    try:
        for line in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            got.append(answers.get(timeout=60).rstrip("\n"))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    run = load_run(finished_runs[kind])
    if command == "translate":
        assert got == run.translate(lines) and got[1] == ""
    elif command == "score":
        assert got == [f"{s.logprob:.4f}\t{s.tokens}\t{s.perplexity:.4f}" for s in run.score(lines).lines]
    else:
        assert got == run.generate(lines) and all(text.startswith(line) for text, line in zip(got, lines))


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
