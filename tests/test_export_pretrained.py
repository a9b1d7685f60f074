"""A model imported from a pretrained checkpoint and trained here goes back to the transformers class it came from:
every family's weights under its own names (GPT-NeoX's query, key and value fused again), its config and tokenizer;
transformers loads every weight and gives our logits. End to end: a job fine-tunes a GPT-NeoX checkpoint on a corpus
with a layer frozen, `export --format hf` writes GPTNeoXForCausalLM, and its logits are the run's."""

import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf

from frozen_sweep import export
from frozen_sweep.weights.finished_run import load_run
from frozen_sweep.weights.hf_export import write_pretrained_class
from frozen_sweep.weights.pretrained import load_pretrained
from tests.conftest import ROOT
from tests.helpers.checkpoints import HEADS, VERSES, bpe_tokenizer, save_checkpoint

transformers = pytest.importorskip("transformers")

FAMILIES = {  # a case → its transformers class, its tokenizer's family and its config beyond the tiny shape
    "llama-tied-biases": ("Llama", "llama", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}),
    "qwen2": ("Qwen2", "llama", {}),
    "mistral": ("Mistral", "llama", {"sliding_window": None}),
    "gpt_neox": ("GPTNeoX", "gpt_neox", {}),  # parallel attention and FFN, a fused query_key_value
    "bert": ("Bert", "bert", {}),
    "roberta": ("Roberta", "roberta", {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}),
}  # fmt: skip


def train_steps(model, ids: torch.Tensor, steps: int = 3) -> None:
    """A few AdamW steps on the model's own objective over `ids` (next token, or the token itself for a masked LM)."""
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        logits = model(None, ids)
        targets = ids if model.is_encoder_only else ids[:, 1:]
        logits = logits if model.is_encoder_only else logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()


@pytest.mark.parametrize("case", FAMILIES)
def test_an_imported_and_trained_model_goes_back_to_its_class_with_our_logits(case, tmp_path):
    family, tokenizer_family, config = FAMILIES[case]
    tokenizer = bpe_tokenizer(tokenizer_family)
    original = save_checkpoint(tmp_path / "checkpoint", tokenizer, family, **config)
    model, _, _ = load_pretrained(tmp_path / "checkpoint")
    encoded = [tokenizer(verse)["input_ids"] for verse in VERSES[:8]]
    ids = torch.tensor([row[:16] for row in encoded if len(row) >= 16][:4])
    train_steps(model, ids)
    cfg = OmegaConf.create({"task": {"kind": "mlm" if family in HEADS else "lm"}})
    written = write_pretrained_class(tmp_path / "out", cfg, model, str(tmp_path / "checkpoint"))
    hf, loading = getattr(transformers, written).from_pretrained(tmp_path / "out", output_loading_info=True)
    assert type(hf) is type(original) and not loading["missing_keys"] and not loading["unexpected_keys"]
    hf.eval()
    with torch.no_grad():
        ours, theirs, before = model(None, ids), hf(ids).logits, original(ids).logits
    assert (ours - theirs).abs().max() <= 1e-4
    assert (theirs - before).abs().max() > 1e-2  # the trained weights went back, not the checkpoint's
    again = transformers.AutoTokenizer.from_pretrained(tmp_path / "out")
    assert again(VERSES[0])["input_ids"] == tokenizer(VERSES[0])["input_ids"]


@pytest.mark.slow
def test_a_run_fine_tuned_from_a_checkpoint_exports_to_its_class_with_the_runs_logits(cache_dir, tmp_path):
    tokenizer = bpe_tokenizer("gpt_neox")
    original = save_checkpoint(tmp_path / "neox", tokenizer, "GPTNeoX")
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "frozen_sweep", "study=finetune", f"finetune.base_checkpoint={tmp_path / 'neox'}",
         "task=lm_bible_en", f"task.cache_dir={cache_dir}", "trainer=quick", "trainer.max_steps=6",
         "trainer.validate_every_steps=3", "freeze=att", "finetune.frozen_layers=FT", f"hydra.run.dir={run_dir}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    export.main([str(run_dir), str(tmp_path / "hf"), "--format", "hf"])
    hf = transformers.GPTNeoXForCausalLM.from_pretrained(tmp_path / "hf").eval()
    run = load_run(run_dir)
    ids = torch.tensor([tokenizer(verse)["input_ids"] for verse in VERSES[:1]])
    with torch.no_grad():
        assert (run.model.eval()(None, ids) - hf(ids).logits).abs().max() <= 1e-4
    theirs, before = dict(hf.named_parameters()), dict(original.named_parameters())
    kept = [name for name in before if ".layers.0." in name]  # frozen at the checkpoint's values: still them
    assert kept and all(torch.equal(theirs[name], before[name]) for name in kept)
    trained = [name for name in before if ".layers.1.mlp." in name]
    assert trained and all(not torch.equal(theirs[name], before[name]) for name in trained)


def test_a_classifier_built_on_a_checkpoint_is_refused_saying_why(tmp_path):
    save_checkpoint(tmp_path / "bert", bpe_tokenizer("bert"), "Bert")
    model, _, _ = load_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match="task.kind=classify: a classifier or regression built on .* has a head"):
        write_pretrained_class(tmp_path / "out", OmegaConf.create({"task": {"kind": "classify"}}), model,
                               str(tmp_path / "bert"))  # fmt: skip
