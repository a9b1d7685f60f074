"""A LLaMA-style language model trained for a few seconds on the toy corpus (frozen attention and SwiGLU gates),
exported with `export --format hf` and loaded by transformers as a user would: the same tokens, the same logits, the
same greedy continuations, and its frozen parts still the seed's draws."""

import json

import pytest
import torch

from frozen_sweep import export
from frozen_sweep.data.specials import BOS, EOS
from frozen_sweep.evaluate.generation import continue_prompt
from frozen_sweep.weights.build import build_model
from frozen_sweep.use.command_line import run_command
from frozen_sweep.weights.finished_run import load_run
from tests.helpers.jobs import run_cli

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def llama_run(toy_corpus, cache_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("llama") / "run"
    proc = run_cli("task=text_files", f"task.path={toy_corpus}", "task.tgt_lang=en", "task.vocab_size=60",
                   f"task.cache_dir={cache_dir}", "trainer=quick", "task.kind=lm", "task.src_lang=null",
                   "model=llama_micro", "freeze=att", "freeze.gate.frozen=true", "trainer.max_epochs=3",
                   f"hydra.run.dir={run_dir}")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    return load_run(run_dir)


def test_frozen_attention_and_gates_are_the_seeds_draws_after_training(llama_run):
    trained = dict(llama_run.model.named_parameters())
    drawn = dict(build_model(llama_run.config, len(llama_run.vocab)).named_parameters())
    frozen = [n for n in trained if ".self_attn." in n or ".ffn.gate." in n]
    assert len(frozen) == 2 * 5  # q, k, v, o and the gate of each of the 2 layers (no biases)
    for name, p in trained.items():
        assert p.requires_grad == (name not in frozen), name
        assert torch.equal(p, drawn[name]) == (name in frozen), name  # frozen: bit-identical; the rest trained


def test_a_hf_export_is_llama_with_our_tokens_logits_and_greedy_continuations(llama_run, toy_corpus, tmp_path):
    run_command(export.main, [str(llama_run.path), str(tmp_path / "hf"), "--format", "hf"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    generation = json.loads((tmp_path / "hf" / "generation_config.json").read_text())
    assert "max_length" not in generation and generation["eos_token_id"] == EOS  # max_new_tokens says how long
    llama = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf").eval()
    model, vocab = llama_run.model.eval(), llama_run.vocab
    lines = (toy_corpus / "test.en").read_text().splitlines()[:20]
    for line, ids in zip(lines, vocab.encode_batch(lines)):
        hf_ids = tokenizer(line, return_tensors="pt").input_ids  # (1, T)
        assert hf_ids[0].tolist() == [BOS, *ids]
        with torch.no_grad():
            assert torch.allclose(llama(hf_ids).logits, model.decode(hf_ids), atol=1e-5, rtol=0)
    for line in lines[:8]:
        prompt = tokenizer(" ".join(line.split()[:2]), return_tensors="pt").input_ids
        ours = continue_prompt(model, prompt, 12, EOS)  # eos left out
        theirs = llama.generate(prompt, max_new_tokens=12, do_sample=False)[0, prompt.shape[1] :].tolist()
        assert theirs == ours + [EOS] * (len(ours) < 12)


def test_a_seed_only_model_file_gives_the_same_logits_resident_or_drawn_on_the_fly(llama_run, tmp_path):
    run_command(export.main, [str(llama_run.path), str(tmp_path / "model.safetensors")])
    ids = torch.tensor([[BOS, *llama_run.vocab.encode_batch(["And God said"])[0]]])  # (1, T)
    with torch.no_grad():
        expected = llama_run.model.eval().decode(ids)
        for frozen in ("resident", "on-the-fly"):
            model = load_run(tmp_path / "model.safetensors", frozen=frozen).model.eval()
            assert torch.equal(model.decode(ids), expected), frozen
