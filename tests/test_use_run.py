"""Using a finished run: translate and score from the command line, the seed-only model file, frozen weights drawn
on the fly. Real micro runs trained on the toy corpus (conftest's finished_runs); the commands run as a user runs them."""

import json
import math
import os
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from frozen_sweep import export, score, translate
from frozen_sweep.evaluate.decode import translate as decode
from frozen_sweep.weights.build import build_model
from frozen_sweep.use.command_line import run_command
from frozen_sweep.use.run import load_run as load_usable_run
from frozen_sweep.use.translating import ON_THE_FLY_MAX_TOKENS
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.freeze import frozen_fingerprint, parameter_counts
from frozen_sweep.weights.integrity import check_checksums
from frozen_sweep.weights.model_file import write_model_file
from tests.conftest import ROOT, compose_config
from tests.helpers.jobs import result
from tests.helpers.model_files import replace_frozen_hash


def command(*args: str, stdin: bytes = b"", cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], input=stdin, capture_output=True, cwd=cwd, env=env,
                          timeout=120)  # fmt: skip


def test_translate_piped_into_sacrebleu_gives_exactly_the_records_test_bleu(finished_runs):
    corpus, record = finished_runs["corpus"], result(finished_runs["mt"])
    pipe = (f"{sys.executable} -m frozen_sweep.translate {finished_runs['mt']} < {corpus / 'test.es'} | "
            f"{sys.executable} -m sacrebleu {corpus / 'test.en'} -b -w 10")  # fmt: skip
    out = subprocess.run(pipe, shell=True, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert record["test_metric"] > 0 and float(out.stdout) == round(record["test_metric"], 10)
    assert out.stderr.count("\n") <= 1  # no progress bar: standard error is not a terminal


def test_an_exported_file_translates_identically_elsewhere_resident_or_on_the_fly(finished_runs, tmp_path):
    run_command(export.main, [str(finished_runs["mt"]), str(tmp_path / "model.safetensors")])
    elsewhere = tmp_path / "elsewhere"  # another directory, and no prepared data: the vocabulary is in the file
    elsewhere.mkdir()
    env = os.environ | {"FROZEN_SWEEP_CACHE": str(tmp_path / "no_cache")}
    expected = (finished_runs["mt"] / "test.hyp.txt").read_text()
    out = command("frozen_sweep.translate", "../model.safetensors", "--input", str(finished_runs["corpus"] / "test.es"),
                  "--output", "hyp.txt", "--frozen", "on-the-fly", cwd=elsewhere, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (elsewhere / "hyp.txt").read_text() == expected

    resident, on_the_fly = load_run(finished_runs["mt"]), load_run(tmp_path / "model.safetensors", frozen="on-the-fly")
    sources = resident.vocab.encode_batch((finished_runs["corpus"] / "test.es").read_text().splitlines())
    assert decode(load_run(tmp_path / "model.safetensors").model, sources, resident.vocab, "cpu",
                  resident.config.eval) == expected.splitlines()  # fmt: skip
    frozen_bytes = {n: p.nbytes for n, p in resident.model.named_parameters() if not p.requires_grad}
    trainable_bytes = sum(p.nbytes for p in resident.model.parameters() if p.requires_grad)
    assert sum(p.nbytes for p in on_the_fly.model.parameters()) == trainable_bytes  # nothing frozen held at rest
    assert decode(on_the_fly.model, sources, on_the_fly.vocab, "cpu", on_the_fly.config.eval) == expected.splitlines()
    held = on_the_fly.on_the_fly.peak_held_bytes  # one module's frozen tensors: a linear layer's weight and bias
    assert max(frozen_bytes.values()) <= held <= 1.05 * max(frozen_bytes.values())

    # on the fly, the batches' padded source tokens are capped by default (decoding's tensors would dominate the peak)
    long_line = " ".join((finished_runs["corpus"] / "test.es").read_text().split()[:12])
    batches = {}
    for frozen in ("resident", "on-the-fly"):
        sizes = batches[frozen] = []
        load_usable_run(tmp_path / "model.safetensors", frozen=frozen, device="cpu").translate(
            [long_line] * 60, beam=1, max_len_a=0, max_len_b=2, batch_sentences=60, on_batch=sizes.append)
    tokens = len(resident.vocab.encode_batch([long_line])[0]) + 1
    assert batches["resident"] == [60] and 60 * tokens > ON_THE_FLY_MAX_TOKENS
    assert max(batches["on-the-fly"]) * tokens <= ON_THE_FLY_MAX_TOKENS and sum(batches["on-the-fly"]) == 60


def test_a_file_whose_frozen_tensor_does_not_regenerate_is_refused_naming_it(finished_runs, tmp_path, capsys):
    exported = tmp_path / "model.safetensors"
    run_command(export.main, [str(finished_runs["mt"]), str(exported)])
    tampered = "decoder.layers.0.ffn.fc1.weight"
    replace_frozen_hash(exported, tampered)  # as if torch drew other numbers from the seed
    with pytest.raises(SystemExit) as stop:
        run_command(translate.main, [str(exported), "--input", str(finished_runs["corpus"] / "test.es"), "--output",
                                     str(tmp_path / "hyp.txt")])  # fmt: skip
    message = capsys.readouterr().err
    assert stop.value.code == 2 and f"frozen tensor {tampered} regenerated from the seed does not match" in message
    assert not (tmp_path / "hyp.txt").exists()


def test_the_model_files_size_follows_the_trainable_ratio(finished_runs, tmp_path):
    vocab = load_run(finished_runs["mt"]).vocab
    payload = {}
    for pattern in ("none", "ffn", "emb_ffn", "att_ffn"):
        cfg = compose_config("model=micro", f"freeze={pattern}")
        model = build_model(cfg, 4000)  # the embedded corpus's vocabulary size: embeddings as large as a real run's
        write_model_file(tmp_path / pattern, model, cfg.seed, "", vocab, frozen_fingerprint(model))
        data = (tmp_path / pattern).read_bytes()
        header = 8 + int.from_bytes(data[:8], "little")  # names, shapes, offsets, a hash per tensor, the metadata
        assert header <= 16384, pattern
        payload[pattern] = (len(data) - header - len(vocab.model), parameter_counts(model))
    full = payload["none"][0]
    for pattern, (size, counts) in payload.items():
        assert size == pytest.approx(counts["trainable_ratio"] * full, abs=1), pattern


def test_score_summarises_to_the_records_test_perplexity_resident_or_on_the_fly(finished_runs, tmp_path, capsys):
    test, record = finished_runs["corpus"] / "test.en", result(finished_runs["lm"])
    outputs = []
    for frozen in ("resident", "on-the-fly"):
        output = tmp_path / f"{frozen}.txt"
        run_command(score.main, [str(finished_runs["lm"]), "--input", str(test), "--output", str(output), "--frozen", frozen])
        assert f"perplexity {record['test_metric']}," in capsys.readouterr().err
        outputs.append(output.read_text())
    lines, sentences = outputs[0].splitlines(), test.read_text().splitlines()
    assert outputs[0] == outputs[1] and len(lines) == len(sentences)
    logprob, tokens, ppl = lines[0].split("\t")
    assert float(logprob) < 0 and int(tokens) == len(load_run(finished_runs["lm"]).vocab.encode_batch(sentences[:1])[0]) + 1
    assert float(ppl) == pytest.approx(math.exp(-float(logprob) / int(tokens)), rel=1e-3)


CASES = ["not_utf8", "too_long", "empty_run", "wrong_kind", "diverged_run", "no_run", "no_input", "no_output_folder"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_stops_the_command_with_one_message_and_writes_nothing(case, finished_runs, tmp_path, capsys):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    second_line = {"not_utf8": b"el \xff gato\n", "too_long": b"perro " * 300 + b"\n"}.get(case, b"")
    source.write_bytes(b"el perro\n" + second_line)
    run = {"empty_run": tmp_path / "empty", "wrong_kind": finished_runs["lm"], "diverged_run": tmp_path / "diverged",
           "no_run": tmp_path / "model.safetensors"}.get(case, finished_runs["mt"])  # fmt: skip
    if case == "diverged_run":  # a run that failed before its first validation: a record, no checkpoint
        run.mkdir()
        for name in ("config.yaml", "result.json"):
            (run / name).write_bytes((finished_runs["mt"] / name).read_bytes())
        (run / "result.json").write_text(json.dumps(result(run) | {"status": "failed", "stopped_reason": "diverged",
                                                                   "steps": 20}))  # fmt: skip
    elif case == "empty_run":
        run.mkdir()
    source = tmp_path / "missing.txt" if case == "no_input" else source
    output = tmp_path / "no" / "out.txt" if case == "no_output_folder" else output
    with pytest.raises(SystemExit) as stop:
        run_command(translate.main, [str(run), "--input", str(source), "--output", str(output)])
    message = capsys.readouterr().err
    assert stop.value.code == 2 and not output.exists() and message.count("\n") == 1
    expected = {
        "diverged_run": "holds no checkpoint_best.pt: not a finished run's directory (the run is failed: diverged at "
                        "step 20)",
        "no_run": f"{run}: no such file or directory; expected a finished run's directory or a model file",
        "no_input": f"--input {source}: no such file; expected a text file, one sentence a line",
        "no_output_folder": f"--output {output}: its folder {output.parent} does not exist; create it first",
        "not_utf8": f"{source} line 2 is not valid UTF-8",
        "too_long": f"{source} line 2 has {3 * 300} subwords, more than 255 (model.max_positions=256",  # per-ro
        "empty_run": "holds no result.json, config.yaml, checkpoint_best.pt: not a finished run's directory",
        "wrong_kind": "is a task.kind=lm run; translate takes task.kind=translation runs: use python -m "
                      "frozen_sweep.score",
    }[case]
    assert message.startswith("error: ") and expected in message, message
    if case == "wrong_kind":  # score takes a translation run, but source<TAB>target lines
        with pytest.raises(SystemExit):
            run_command(score.main, [str(finished_runs["mt"]), "--input", str(source)])
        message = capsys.readouterr().err
        assert f"{source} line 1 has 1 TAB-separated columns; a translation run scores source<TAB>target" in message


def test_a_hf_export_is_a_marian_model_whose_greedy_search_gives_the_runs(finished_runs, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    run_command(export.main, [str(finished_runs["mt"]), str(tmp_path / "hf"), "--format", "hf"])
    check_checksums(tmp_path / "hf")  # every file as written
    tokenizer = transformers.MarianTokenizer.from_pretrained(tmp_path / "hf")
    marian = transformers.MarianMTModel.from_pretrained(tmp_path / "hf").eval()
    run = load_run(finished_runs["mt"])
    greedy = OmegaConf.merge(run.config.eval, {"beam": 1})
    lines = (finished_runs["corpus"] / "test.es").read_text().splitlines()[:20]
    expected = decode(run.model, run.vocab.encode_batch(lines), run.vocab, "cpu", greedy)
    for line, ours in zip(lines, expected):
        batch = tokenizer([line], return_tensors="pt")
        cap = int(greedy.max_len_a * batch.input_ids.shape[1] + greedy.max_len_b)  # our per-sentence length cap
        hyp = marian.generate(**batch, max_new_tokens=cap - 1)
        assert tokenizer.decode(hyp[0], skip_special_tokens=True) == ours

    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:  # the paper's language model: not LLaMA's block
        run_command(export.main, [str(finished_runs["lm"]), str(tmp_path / "lm_hf"), "--format", "hf"])
    message = capsys.readouterr().err
    assert stop.value.code == 2 and len(message.splitlines()) == 1
    assert "LLaMA cannot hold this model: model.norm=post: LLaMA normalises with RMSNorm" in message
    assert "model.ffn=mlp" in message and "model.positions=sinusoidal" in message
    assert not (tmp_path / "lm_hf").exists()
