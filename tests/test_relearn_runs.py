"""A finished relearn run is a run like any other: `load_run(dir)` rebuilds its model (its base's weights, the layer
reset from its seed, its trained layer from its checkpoint), so it is used and exported. From a run of ours: the model
file stores what the base trained and draws again what the base drew. From a pretrained decoder: `export --format hf`
writes the checkpoint's class with the run's logits."""

import pytest
import torch

import frozen_sweep
from frozen_sweep import export
from frozen_sweep.job.job_config import job_config
from frozen_sweep.job.runner import run_job
from frozen_sweep.run.directory import BEST_CHECKPOINT
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.model_file import read_model_file
from tests.conftest import compose_config
from tests.helpers.checkpoints import VERSES, bpe_tokenizer, save_checkpoint

RELEARN = ["relearn=layer", "trainer=quick", "trainer.max_steps=2", "trainer.validate_every_steps=1"]


def relearn_run(run_dir, *overrides: str):
    """The relearn job of `overrides`, run here into `run_dir`; its trainable tensors as its best checkpoint holds
    them."""
    overrides = [*RELEARN, *overrides]
    run_dir.mkdir()
    result = run_job(job_config(compose_config(*overrides), overrides), run_dir, overrides)
    assert result.status == "completed"
    return torch.load(run_dir / BEST_CHECKPOINT, weights_only=False)["trainable"]


def parameters(model) -> dict:
    return dict(model.named_parameters())


def test_a_relearn_run_of_ours_loads_translates_and_exports_to_a_model_file(finished_runs, cache_dir, tmp_path):
    base_dir = finished_runs["mt"]  # its FFNs frozen: drawn from its seed
    trained = relearn_run(tmp_path / "relearn", f"relearn.base_checkpoint={base_dir}", "relearn.reset_layer=decoder.0",
                          f"task.cache_dir={cache_dir}", "trainer.valid_bleu_sentences=20", "eval.beam=1")
    run, base = load_run(tmp_path / "relearn"), load_run(base_dir)
    ours = parameters(run.model)
    assert set(trained) == {n for n, p in ours.items() if p.requires_grad}
    assert trained and all(n.startswith("decoder.layers.0.") and torch.equal(ours[n], v) for n, v in trained.items())
    assert all(torch.equal(p, ours[n]) for n, p in base.model.named_parameters() if n not in trained)
    frozen_ffn = {n for n in ours if ".ffn." in n and n not in trained}
    assert frozen_ffn and run.base_draws.keys() == frozen_ffn
    assert {seed for seed, _ in run.base_draws.values()} == {base.config.seed}

    export.main([str(tmp_path / "relearn"), str(tmp_path / "relearn.safetensors")])
    assert read_model_file(tmp_path / "relearn.safetensors").frozen_sha256.keys() == frozen_ffn  # drawn, not stored
    again = parameters(load_run(tmp_path / "relearn.safetensors").model)
    assert all(torch.equal(p, again[n]) and p.requires_grad == again[n].requires_grad for n, p in ours.items())
    lines = (finished_runs["corpus"] / "test.es").read_text().splitlines()[:3]
    from_dir = frozen_sweep.load_run(tmp_path / "relearn", device="cpu").translate(lines, beam=1)
    assert from_dir == frozen_sweep.load_run(tmp_path / "relearn.safetensors", device="cpu").translate(lines, beam=1)


def test_a_relearn_run_of_a_pretrained_decoder_scores_and_exports_to_its_class(cache_dir, tmp_path):
    """A GPT-NeoX base with more embedding rows than its tokenizer's tokens (Pythia's 50,304 for 50,277): its class,
    and a model file that loads back to the same scores."""
    transformers = pytest.importorskip("transformers")
    tokenizer = bpe_tokenizer("gpt_neox")
    original = save_checkpoint(tmp_path / "neox", tokenizer, "GPTNeoX", vocab_size=len(tokenizer) + 5)
    trained = relearn_run(tmp_path / "relearn", "experiment=relearn_pretrained_tiny", f"task.cache_dir={cache_dir}",
                          f"relearn.base_checkpoint={tmp_path / 'neox'}", "relearn.reset_layer=decoder.1",
                          "trainer.max_steps=2")  # fmt: skip
    run = frozen_sweep.load_run(tmp_path / "relearn", device="cpu")
    export.main([str(tmp_path / "relearn"), str(tmp_path / "hf"), "--format", "hf"])
    hf = transformers.GPTNeoXForCausalLM.from_pretrained(tmp_path / "hf").eval()
    ids = torch.tensor([tokenizer(VERSES[0])["input_ids"] + [tokenizer.eos_token_id]])  # as the run reads a line
    with torch.no_grad():
        logits = hf(ids).logits
        assert (run.model(None, ids) - logits).abs().max() <= 1e-4
    logprob = logits[0, :-1].log_softmax(-1).gather(1, ids[0, 1:, None]).sum().item()  # the first token: not scored
    line = run.score(VERSES[:1]).lines[0]
    assert line.tokens == ids.shape[1] - 1 and line.logprob == pytest.approx(logprob, abs=1e-3)
    export.main([str(tmp_path / "relearn"), str(tmp_path / "relearn.safetensors")])
    assert frozen_sweep.load_run(tmp_path / "relearn.safetensors", device="cpu").score(VERSES[:1]).lines == [line]
    theirs, before = parameters(hf), parameters(original)
    reset = [name for name in before if ".layers.1." in name]
    assert reset and all(not torch.equal(theirs[name], before[name]) for name in reset)
    assert all(torch.equal(theirs[name], before[name]) for name in before if name not in reset)
    assert trained and all(name.startswith("decoder.layers.1.") for name in trained)
