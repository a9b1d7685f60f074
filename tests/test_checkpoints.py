"""Which weights a command uses: a running or interrupted run's last checkpoint, any checkpoint file, the average
of a run's last checkpoints (python -m frozen_sweep.average), several runs as an ensemble. Real micro runs
(conftest's finished_runs: the translation run kept its last 3 validations' checkpoints)."""

import json
import math
import shutil

import pytest
import torch

from frozen_sweep import average, export, load_run, translate
from frozen_sweep.run.directory import TEST_SOURCES, step_checkpoints
from frozen_sweep.use.errors import UsageError
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.model_file import read_model_file, write_model_file
from tests.helpers.jobs import result


def test_a_running_runs_last_checkpoint_or_any_checkpoint_file_translates_and_exports(finished_runs, tmp_path,
                                                                                      capsys):  # fmt: skip
    running = tmp_path / "running"
    shutil.copytree(finished_runs["mt"], running)
    record = result(running) | {"status": "running", "test_metric": None}
    (running / "result.json").write_text(json.dumps(record))
    lines = (running / TEST_SOURCES).read_text().splitlines()[:5]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines))
    expected = load_run(running, checkpoint="last").translate(lines)
    run_command(translate.main, [str(running), "--checkpoint", "last", "--input", str(source)])
    out, err = capsys.readouterr()
    last = f"weights: checkpoint_last.pt, step {record['steps']} (the run is running)"
    assert out.splitlines() == expected and err.endswith(last + "; float32\n")  # the precision used

    run_command(export.main, [str(running), str(tmp_path / "m.safetensors"), "--checkpoint", "last"])
    assert last in capsys.readouterr().err
    assert load_run(tmp_path / "m.safetensors").translate(lines) == expected

    copied = tmp_path / "kept.pt"
    shutil.copy(running / "checkpoint_best.pt", copied)
    assert load_run(running, checkpoint=str(copied)).step == result(finished_runs["mt"])["steps"]
    with pytest.raises(SystemExit):
        run_command(translate.main, [str(running), "--checkpoint", "newest", "--input", str(source)])
    message = capsys.readouterr().err
    assert "checkpoint newest: no such file; allowed: best, last, or a checkpoint file's path" in message


def test_average_writes_the_mean_of_the_last_checkpoints_and_an_ensemble_means_probabilities(finished_runs, tmp_path,
                                                                                             capsys):  # fmt: skip
    run_dir = finished_runs["mt"]
    kept = step_checkpoints(run_dir)
    assert len(kept) == 3 and kept[-1].name == f"checkpoint_step{result(run_dir)['steps']}.pt"  # older ones removed
    averaged = tmp_path / "avg.safetensors"
    run_command(average.main, [str(run_dir), "--last", "3", str(averaged)])
    assert "weights: the mean of 3 checkpoints (steps " in capsys.readouterr().err
    saved = [torch.load(path, weights_only=False) for path in kept]
    stored = read_model_file(averaged)
    for name, tensor in stored.trainable.items():
        mean = sum(state["trainable"][name].double() for state in saved) / 3
        assert torch.equal(tensor, mean.float()), name
    assert stored.frozen_sha256 == saved[0]["frozen_sha256"] == saved[2]["frozen_sha256"]
    with pytest.raises(SystemExit):
        run_command(average.main, [str(run_dir), "--last", "4", str(tmp_path / "x.safetensors")])
    assert "kept 3 validation checkpoint(s), fewer than --last 4: train with trainer.keep_checkpoints=4" in \
        capsys.readouterr().err

    lines = (run_dir / TEST_SOURCES).read_text().splitlines()[:8]
    single, member = load_run(run_dir), load_run(averaged)
    assert load_run([run_dir, run_dir]).translate(lines) == single.translate(lines)  # a model with itself: itself
    ensemble = load_run([run_dir, averaged], device="cpu")
    src = torch.tensor([single.vocab.encode_batch(lines[:1])[0] + [3]])  # (1, S) with eos
    search = ensemble.search_model
    memory, mask = search.encode(src)
    bos = torch.tensor([[2]])
    mixed = search.decode(bos, memory, mask, search.new_caches())[0, -1]  # (V,)
    probs = [torch.softmax(m.model.decode(bos, *m.model.encode(src))[0, -1], -1) for m in (single, member)]
    assert torch.allclose(mixed, torch.log((probs[0] + probs[1]) / 2), atol=1e-5)
    assert len(ensemble.translate(lines)) == len(lines)
    assert ensemble.weights_summary().startswith(f"{run_dir}: checkpoint_best.pt, step ")  # each run named
    assert ensemble.weights_summary().endswith(" + avg.safetensors; float32")

    other_vocab = tmp_path / "other_vocab.safetensors"
    lm_vocab = load_run(finished_runs["lm"]).vocab  # another corpus' vocabulary, as large
    write_model_file(other_vocab, member.model, member.config.seed, stored.config_yaml, lm_vocab, stored.frozen_sha256)
    with pytest.raises(UsageError, match="its vocabulary is not .*; an ensemble's runs share one vocabulary"):
        load_run([run_dir, other_vocab])
    with pytest.raises(UsageError, match="an ensemble is of translation runs only"):
        load_run([run_dir, finished_runs["lm"]])
    assert math.isfinite(single.score([f"{lines[0]}\tthe dog"]).perplexity)
