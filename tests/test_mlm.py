"""Masked language modelling: the masking, the encoder-only model, its jobs (learning, resume), checks and tables."""

import os
import random
import signal
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from frozen_sweep.config import ConfigError
from frozen_sweep.config.checks import validate
from frozen_sweep.data import Split
from frozen_sweep.data.masking import generator, mask_batch, mask_eval_batch, mask_tokens, mask_train_batch
from frozen_sweep.data.specials import BOS, EOS, FIRST_PIECE, MASK, PAD, UNK
from frozen_sweep.evaluate.scores import token_scores
from frozen_sweep.tables.build import build_tables
from frozen_sweep.tables.runs import load_runs
from frozen_sweep.weights import freeze
from frozen_sweep.weights.build import build_model
from tests.conftest import LEXICON, compose_config
from tests.helpers.jobs import result, run_cli, start_cli
from tests.helpers.sweeps import wait_for

V = 1000  # vocabulary size of the masking tests
WORDS = list(LEXICON)


def collate(tgt: list[list[int]], indices: list[int], length: int | None = None):
    """The language-modelling Batch of sentences `indices` of `tgt`, as the trainer collates it."""
    return Split.from_ids(None, tgt).collate(indices, length)


def mlm_task(**rates):
    return compose_config("task=mlm_bible_en", "model=mlm_micro", *(f"task.{k}={v}" for k, v in rates.items())).task


def random_tokens(rows=400, length=60, seed=0) -> torch.Tensor:
    """(rows, length) ordinary pieces, with specials sprinkled in and ragged right padding, like collated batches."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(FIRST_PIECE, V, (rows, length), generator=g)
    specials = torch.tensor([UNK, BOS, EOS, MASK])
    sprinkled = torch.rand(rows, length, generator=g) < 0.05
    tokens[sprinkled] = specials[torch.randint(0, 4, (int(sprinkled.sum()),), generator=g)]
    for r, n in enumerate(torch.randint(length // 2, length + 1, (rows,), generator=g).tolist()):
        tokens[r, n:] = PAD
    return tokens


def test_masking_rates_are_berts():
    tokens = random_tokens()
    inputs, targets = mask_tokens(tokens, mlm_task(), V, generator("stats"))
    picked = targets != PAD
    assert picked.sum() / (tokens >= FIRST_PIECE).sum() == pytest.approx(0.15, abs=0.01)
    assert torch.equal(targets[picked], tokens[picked])  # the target is the original token
    shown = inputs[picked]
    masked, kept = (shown == MASK).float().mean(), (shown == tokens[picked]).float().mean()
    assert masked == pytest.approx(0.8, abs=0.02)
    assert kept == pytest.approx(0.1 + 0.1 / V, abs=0.02)  # a random draw hits the original 1 time in V
    assert 1 - masked - kept == pytest.approx(0.1, abs=0.02)
    assert torch.equal(inputs[~picked], tokens[~picked])  # nothing else changes

    inputs, targets = mask_tokens(tokens, mlm_task(mask_prob=0.3, mask_replace_prob=0.5), V, generator("stats"))
    picked = targets != PAD
    assert picked.sum() / (tokens >= FIRST_PIECE).sum() == pytest.approx(0.3, abs=0.01)
    assert (inputs[picked] == MASK).float().mean() == pytest.approx(0.5, abs=0.02)


def test_specials_are_never_masked_nor_drawn():
    tokens = random_tokens()
    inputs, targets = mask_tokens(tokens, mlm_task(mask_prob=0.9, random_replace_prob=0.2), V, generator("s"))
    special = tokens < FIRST_PIECE  # pad, unk, bos, eos, <mask>
    assert (targets[special] == PAD).all() and torch.equal(inputs[special], tokens[special])
    random_drawn = (targets != PAD) & (inputs != MASK) & (inputs != tokens)
    assert random_drawn.any() and (inputs[random_drawn] >= FIRST_PIECE).all()
    short = torch.tensor([[7, EOS, PAD, PAD]])  # one maskable token: still one target
    assert (mask_tokens(short, mlm_task(), V, generator("s"))[1] != PAD).sum() == 1


def test_masks_are_deterministic_and_evaluation_masks_do_not_depend_on_batching():
    task, tgt = mlm_task(), [[random.Random(i).randrange(FIRST_PIECE, V) for _ in range(5 + i % 20)] for i in range(50)]
    batch = collate(tgt, list(range(10, 40)), 28)
    a, b = (mask_train_batch(batch, task, V, seed=1, epoch=3) for _ in range(2))
    assert torch.equal(a.tgt_in, b.tgt_in) and torch.equal(a.tgt_out, b.tgt_out)
    assert not torch.equal(a.tgt_out, mask_train_batch(batch, task, V, seed=1, epoch=4).tgt_out)
    assert not torch.equal(a.tgt_out, mask_train_batch(batch, task, V, seed=2, epoch=3).tgt_out)
    # a sentence keeps its validation masks whatever batch, order and padding it comes in
    whole = mask_eval_batch(collate(tgt, list(range(50))), "valid", task, V)
    part = mask_eval_batch(collate(tgt, [33, 7], 40), "valid", task, V)
    for row, example in enumerate([33, 7]):
        n = len(tgt[example]) + 1
        assert torch.equal(part.tgt_in[row, :n], whole.tgt_in[example, :n])
        assert torch.equal(part.tgt_out[row, :n], whole.tgt_out[example, :n])
    assert part.n_tokens == int((part.tgt_out != PAD).sum()) > 0


def test_the_loss_counts_masked_positions_only():
    cfg = compose_config("task=mlm_bible_en", "model=mlm_micro")
    model = build_model(cfg, 50).eval()
    tgt = [[random.Random(i).randrange(FIRST_PIECE, 50) for _ in range(12)] for i in range(8)]
    batch = mask_batch(collate(tgt, list(range(8))), cfg.task, 50, generator("loss"))
    picked = batch.tgt_out != PAD
    assert batch.n_tokens == int(picked.sum()) < 0.4 * len(tgt) * 13  # ≈15% of 12 tokens a row, at least one
    logits = model(None, batch.tgt_in)  # (B, T, V): the encoder-only model reads the masked tokens
    expected = F.cross_entropy(logits[picked], batch.tgt_out[picked])
    nll, accuracy = token_scores(model, [batch], torch.device("cpu"))
    assert nll == pytest.approx(expected.item(), rel=1e-5)
    assert accuracy == (logits[picked].argmax(-1) == batch.tgt_out[picked]).float().mean().item()


def test_encoder_only_model_ties_its_output_and_keeps_frozen_components_bit_identical():
    cfg = compose_config("task=mlm_bible_en", "model=mlm_micro", "freeze=emb_att")
    model = build_model(cfg, 50)
    assert model.output.weight is model.src_embed.tokens.weight and not hasattr(model, "decoder")
    assert set(freeze.component_of_parameters(model).values()) == {"emb", "att", "ffn", "other"}
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    opt = torch.optim.Adam(freeze.trainable_parameters(model), lr=1e-2)
    for step in range(3):
        batch = mask_train_batch(collate([[5 + step, 9, 17, 30]] * 4, [0, 1, 2, 3]), cfg.task, 50, 1, step)
        loss = F.cross_entropy(model(None, batch.tgt_in).flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    components = freeze.component_of_parameters(model)
    for name, p in model.named_parameters():
        frozen = cfg.freeze[components[name]].frozen
        assert torch.equal(p, before[name]) == frozen or p.dim() == 1, name  # frozen: bit-identical; else moved


@pytest.mark.parametrize("kind", ["transformer", "bigru", "conv"])
def test_reservoirs_sit_in_the_encoder_of_an_mlm(kind):
    cfg = compose_config("experiment=reservoir_mlm", f"reservoir={kind}")
    validate(cfg)
    model = build_model(cfg, 50)
    assert model.encoder.pattern == "LRLRL" and not any(p.requires_grad for p in model.encoder.layers[1].parameters())
    assert model(None, torch.tensor([[5, 6, MASK, 7, EOS, PAD]])).shape == (1, 6, 50)


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["task=bible_es_en", "task.kind=mlm", "model=mlm_demo"], "task.src_lang"),  # a translation corpus
        (["task=mlm_bible_en", "model=demo"], "task.kind=mlm needs an encoder-only model"),
        (["task=mlm_bible_en", "model=mlm_demo", "task.mask_prob=0"], "task.mask_prob=0"),
        (["task=mlm_bible_en", "model=mlm_demo", "task.mask_prob=1.5"], "must be in (0, 1)"),
        (["task=mlm_bible_en", "model=mlm_demo", "task.random_replace_prob=0.3"], "task.mask_replace_prob=0.8 +"),
        (["task=mlm_bible_en", "model=mlm_demo", "trainer.stop_metric=bleu"], "trainer.stop_metric=bleu"),
        (["task=mlm_bible_en", "model=mlm_demo", "reservoir=ffn", "reservoir.stack=decoder"], "has no decoder"),
    ],
)
def test_bad_mlm_configs_name_the_key(overrides, key):
    with pytest.raises(ConfigError, match=key.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        validate(compose_config(*overrides))


def write_cyclic_corpus(directory: Path) -> Path:
    """Monolingual text where each word is known from its neighbours: runs of 4-10 words along a fixed cycle of 20."""
    for seed, (split, n) in enumerate((("train", 600), ("valid", 60), ("test", 60))):
        rng = random.Random(seed)
        lines = []
        for _ in range(n):
            start = rng.randrange(len(WORDS))
            lines.append(" ".join(WORDS[(start + i) % len(WORDS)] for i in range(rng.randint(4, 10))))
        (directory / f"{split}.en").write_text("".join(line + "\n" for line in lines))
    return directory


@pytest.fixture(scope="module")
def mlm_overrides(tmp_path_factory, cache_dir) -> list[str]:
    corpus = write_cyclic_corpus(tmp_path_factory.mktemp("cyclic"))
    return ["task=text_files", f"task.path={corpus}", "task.kind=mlm", "task.src_lang=null", "task.tgt_lang=en",
            "task.vocab_size=60", f"task.cache_dir={cache_dir}", "model=mlm_micro", "model.dropout=0", "trainer=quick",
            "trainer.lr=1e-2", "trainer.patience=30"]  # fmt: skip


def test_micro_mlm_learns_the_toy_corpus(tmp_path, mlm_overrides):
    proc = run_cli(*mlm_overrides, "trainer.max_epochs=30", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stdout
    r = result(tmp_path)
    assert (r["metric_name"], r["model"], r["stopped_reason"]) == ("mlm_ppl", "mlm_micro", "max_epochs")
    assert r["test_accuracy"] > 0.5  # chance: 1 in 20 words; measured 0.81
    assert r["test_metric"] < 4 and r["aucc"] is not None  # perplexity on the masked positions
    last = r["history"][-1]
    assert last["valid_metric"] == last["valid_ppl"] and last["valid_accuracy"] > 0.5 and last["valid_bleu"] is None


def test_killed_mlm_job_resumes_to_the_same_record(tmp_path, mlm_overrides):
    args = [*mlm_overrides, "trainer.max_epochs=3"]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert run_cli(*args, f"hydra.run.dir={straight}").returncode == 0
    proc = start_cli(*args, f"hydra.run.dir={resumed}")
    wait_for((resumed / "checkpoint_last.pt").exists, "the first checkpoint", timeout=120)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert result(resumed)["status"] == "running"
    second = run_cli(*args, f"hydra.run.dir={resumed}")
    assert second.returncode == 0 and "resumed from" in second.stdout, second.stdout
    a, b = result(straight), result(resumed)
    strip = lambda h: [{k: v for k, v in e.items() if k != "wall_time_s"} for e in h]  # noqa: E731
    assert strip(a["history"]) == strip(b["history"])
    assert (a["test_metric"], a["test_accuracy"], a["steps"]) == (b["test_metric"], b["test_accuracy"], b["steps"])


def test_collector_builds_the_mlm_table_and_checks_m1(tmp_path):
    from tests.helpers.records import write_run

    ppl = {"(0)": 30.0, "(1)": 90.0, "(2)": 40.0, "(3)": 35.0, "(4)": 120.0, "(5)": 110.0, "(6)": 60.0}
    for row, value in ppl.items():
        write_run(tmp_path, row, value, task="mlm_bible_en", model="mlm_demo", metric_name="mlm_ppl",
                  test_accuracy=1 / value)  # fmt: skip
    (table,) = build_tables(load_runs([str(tmp_path)]), claims=True)
    assert ("", "MLM PPL") in table.rows.columns and ("", "Masked acc.") in table.rows.columns
    assert table.rows[("", "Masked acc.")].tolist()[:2] == ["3.3%", "1.1%"]
    assert [(c.key, c.verdict) for c in table.checks] == [("M1", "✓")]
    assert table.checks[0].compared == "(1) is the highest of (1) 90.0, (2) 40.0, (3) 35.0"
