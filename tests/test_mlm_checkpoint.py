"""Masked language modelling with a pretrained checkpoint's tokenizer (task.vocab=a RoBERTa checkpoint): a row is
framed as the checkpoint frames a text (`<s> text </s>`) and masked 80/10/10 with its own ids, so the checkpoint's
masked-LM loss here is transformers'; a reservoir encoder of ours pre-trains on it from scratch, and the checkpoint
itself continues its pre-training with layers frozen and goes back to its class."""

import pytest
import torch

from frozen_sweep import export, load_run
from frozen_sweep.data import Split
from frozen_sweep.data.checkpoint_vocab import checkpoint_vocab
from frozen_sweep.data.masking import generator, mask_eval_batch, mask_tokens, mlm_rows
from frozen_sweep.evaluate.scores import token_scores
from frozen_sweep.job.job_config import job_config
from frozen_sweep.job.runner import run_job
from frozen_sweep.weights.pretrained import load_pretrained
from tests.conftest import compose_config
from tests.helpers.checkpoints import VERSES, bpe_tokenizer, save_checkpoint

transformers = pytest.importorskip("transformers")

ROBERTA_IDS = {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}


@pytest.fixture(scope="module")
def roberta(tmp_path_factory):
    """A tiny RoBERTa checkpoint with its tokenizer."""
    root = tmp_path_factory.mktemp("checkpoints")
    tokenizer = bpe_tokenizer("roberta")
    save_checkpoint(root / "roberta", tokenizer, "Roberta", **ROBERTA_IDS)
    return root, tokenizer


def test_a_checkpoints_rows_are_framed_and_masked_with_its_ids_and_score_as_transformers(roberta):
    root, tokenizer = roberta
    vocab, texts = checkpoint_vocab(str(root / "roberta")), VERSES[:200]
    batch = Split.from_ids(None, vocab.encode_batch(texts), specials=vocab.specials).collate(list(range(len(texts))))
    rows, pad = mlm_rows(batch, vocab.specials), tokenizer.pad_token_id
    assert all(rows[i][rows[i] != pad].tolist() == tokenizer(texts[i])["input_ids"] for i in range(len(texts)))
    masked = mask_eval_batch(batch, "valid", compose_config("task=mlm_bible_en").task, len(vocab), vocab.specials)
    picked, special = masked.tgt_out != pad, torch.isin(rows, torch.tensor(tokenizer.all_special_ids))
    assert not (picked & special).any() and picked.sum() / (~special).sum() == pytest.approx(0.15, abs=0.01)
    assert torch.equal(masked.tgt_out[picked], rows[picked]) and torch.equal(masked.tgt_in[~picked], rows[~picked])
    shown = masked.tgt_in[picked]
    assert (shown == tokenizer.mask_token_id).float().mean() == pytest.approx(0.8, abs=0.03)
    drawn = shown[(shown != tokenizer.mask_token_id) & (shown != rows[picked])]
    assert len(drawn) and not torch.isin(drawn, torch.tensor(tokenizer.all_special_ids)).any()
    ordinary = sorted(set(range(len(tokenizer))) - set(tokenizer.all_special_ids))  # <mask>: the last, as RoBERTa's
    tokens = torch.tensor(ordinary)[torch.randint(len(ordinary), (400, 60), generator=torch.Generator().manual_seed(0))]
    replaced = compose_config("task=mlm_bible_en", "task.mask_prob=0.9", "task.mask_replace_prob=0",
                              "task.random_replace_prob=1").task  # fmt: skip
    inputs, targets = mask_tokens(tokens, replaced, len(vocab), generator("draws"), vocab.specials)
    assert sorted(inputs[targets != pad].unique().tolist()) == ordinary  # every ordinary id drawn, nothing else

    model, _, _ = load_pretrained(root / "roberta")
    model.pad_id = pad
    nll, _ = token_scores(model, [masked], torch.device("cpu"))
    hf = transformers.RobertaForMaskedLM.from_pretrained(root / "roberta").eval()
    with torch.no_grad():
        theirs = hf(input_ids=masked.tgt_in, attention_mask=rows != pad, labels=masked.tgt_out.masked_fill(~picked, -100))
    assert nll == pytest.approx(theirs.loss.item(), rel=1e-4)


def run(run_dir, *overrides: str) -> dict:
    overrides = ["task=mlm_bible_en", "trainer=quick", "trainer.max_steps=2", "trainer.validate_every_steps=1",
                 *overrides]  # fmt: skip
    run_dir.mkdir()
    result = run_job(job_config(compose_config(*overrides), overrides), run_dir, overrides)
    assert result.status == "completed"
    return result


def test_reservoir_pretraining_from_scratch_and_continued_pretraining_of_the_checkpoint(roberta, cache_dir, tmp_path):
    root, tokenizer = roberta
    scratch = run(tmp_path / "scratch", f"task.vocab={root / 'roberta'}", f"task.cache_dir={cache_dir}",
                  "model=mlm_micro", "model.encoder_layers=3", "reservoir=transformer", "reservoir.count=1")
    assert scratch.data["vocab_size"] == len(tokenizer) and scratch.reservoir
    line = load_run(tmp_path / "scratch", device="cpu").score(VERSES[:1]).lines[0]
    assert line.tokens >= 1  # masked positions of `<s> verse </s>`, scored

    run(tmp_path / "continued", "study=finetune", f"finetune.base_checkpoint={root / 'roberta'}",
        f"task.cache_dir={cache_dir}", "finetune.frozen_layers=FT")
    export.main([str(tmp_path / "continued"), str(tmp_path / "hf"), "--format", "hf"])
    hf = transformers.RobertaForMaskedLM.from_pretrained(tmp_path / "hf").eval()
    ids = torch.tensor([tokenizer(VERSES[0])["input_ids"]])
    with torch.no_grad():
        assert (load_run(tmp_path / "continued", device="cpu").model(None, ids) - hf(ids).logits).abs().max() <= 1e-4
    before = dict(transformers.RobertaForMaskedLM.from_pretrained(root / "roberta").named_parameters())
    after = dict(hf.named_parameters())
    assert all(torch.equal(after[n], p) for n, p in before.items() if ".layer.0." in n)  # frozen: the checkpoint's
    assert any(not torch.equal(after[n], p) for n, p in before.items() if ".layer.1." in n)
