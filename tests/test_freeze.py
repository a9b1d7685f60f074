import math

import pytest
import torch
from torch import nn

from frozen_sweep.config import Init
from frozen_sweep.model import Transformer
from frozen_sweep.system import cpu
from frozen_sweep.weights import freeze
from frozen_sweep.weights.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from tests.conftest import compose_config

ROWS = ["none", "emb", "att", "ffn", "att_identity", "ffn_identity", "emb_ffn", "emb_att", "att_ffn"]
PAPER_BIG = {"(0)": 1, "(1)": .82, "(2)": .64, "(3)": .52, "(2.1)": .64, "(3.1)": .52, "(4)": .35, "(5)": .47, "(6)": .17}
# big_ffn1024: the paper's (2) and (4) cells look swapped (docs/concepts.md); we check our accounting against the swap.
PAPER_BIG_FFN1024 = {"(0)": 1, "(1)": .73, "(2)": .45, "(3)": .82, "(4)": .55, "(5)": .18}
PAPER_LM = {"(0)": 1, "(1)": .53, "(2)": .81, "(3)": .64, "(4)": .18, "(5)": .36, "(6)": .46}
# no paper row: the LLaMA-style block of lm_paper's size (docs/concepts.md), its GQA attention smaller, its SwiGLU
# FFN larger
LLAMA_PAPER = {"(0)": 1, "(1)": .535, "(2)": .866, "(3)": .599, "(4)": .134, "(5)": .402, "(6)": .465}


def ratios(model_name: str, vocab: int, extra=()) -> tuple[int, dict]:
    out, total = {}, None
    for row in ROWS:
        cfg = compose_config(f"model={model_name}", f"freeze={row}", *extra)
        with torch.device("meta"):  # counting needs shapes only
            model = Transformer(cfg.model, vocab, 0)
        components = freeze.component_of_parameters(model)
        for name, p in model.named_parameters():
            p.requires_grad_(not cfg.freeze[components[name]].frozen)
        counts = freeze.parameter_counts(model)
        out[freeze.paper_row(cfg.freeze)] = counts["trainable_ratio"]
        total = counts["params_total"]
    return total, out


@pytest.mark.parametrize(
    "model_name, vocab, extra, paper, tol, total_m",
    [
        ("big", 36000, (), PAPER_BIG, 0.01, 213.2),
        ("big_ffn1024", 36000, (), PAPER_BIG_FFN1024, 0.01, 137.7),
        ("lm_paper", 32000, ("task=lm_bible_en",), PAPER_LM, 0.015, 35.3),
        ("llama_paper", 32000, ("task=lm_bible_en",), LLAMA_PAPER, 0.0005, 35.3),
    ],
)
def test_trainable_ratios_match_the_paper(model_name, vocab, extra, paper, tol, total_m):
    total, ours = ratios(model_name, vocab, extra)
    assert total / 1e6 == pytest.approx(total_m, abs=0.05)
    for row, expected in paper.items():
        assert ours[row] == pytest.approx(expected, abs=tol), row


def build(*overrides, seed=7):
    cfg = compose_config("model=micro", *overrides, f"seed={seed}")
    model = Transformer(cfg.model, 40, 0)
    freeze.init_and_freeze(model, cfg.freeze, cfg.seed)
    return cfg, model


def train_steps(model, n=5):
    opt = torch.optim.Adam(freeze.trainable_parameters(model), lr=1e-2)
    model.train()
    for _ in range(n):
        src, tgt = torch.randint(4, 40, (4, 6)), torch.randint(4, 40, (4, 5))
        loss = model(src, tgt).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


LLAMA_GATE = ("model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1", "model.bias=false",
              "freeze.gate.frozen=true")  # the LLaMA-style block, its SwiGLU gates frozen


@pytest.mark.parametrize("row", ["emb", "att", "ffn", "emb_ffn", "att_ffn", "none-llama-gate", "emb-llama-gate"])
def test_frozen_unchanged_trainable_changed(row):
    cfg, model = build(f"freeze={row.split('-')[0]}", *(LLAMA_GATE if row.endswith("gate") else ()))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train_steps(model)
    plan = freeze.draw_plan(model, cfg.freeze)
    assert any(".ffn.gate." in n for n, how in plan.items() if how.frozen) == row.endswith("gate")
    for name, p in model.named_parameters():
        if plan[name].frozen:
            assert not p.requires_grad and p.grad is None
            assert torch.equal(p, before[name]), name  # bit-identical
        elif p.dim() == 2:
            assert not torch.equal(p, before[name]), name


def test_orthogonal_init_does_not_depend_on_the_thread_count():
    """A job's threads follow the free cores: a frozen orthogonal matrix must regenerate the same with any count."""
    threads, drawn = torch.get_num_threads(), []
    try:
        for n in (1, 2):
            cpu.set_threads(n)
            drawn.append(torch.empty(256, 64))
            generator = torch.Generator().manual_seed(3)
            freeze.init_parameter(drawn[-1], nn.Linear(64, 256), "weight", Init.orthogonal, generator)
    finally:
        cpu.set_threads(threads)
    assert torch.equal(*drawn)


def test_init_is_a_function_of_seed_and_name():
    _, a = build("freeze=att")
    _, b = build("freeze=att")
    _, c = build("freeze=att", seed=8)
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb)
        if pa.dim() == 2:
            assert not torch.equal(pa, pc), name


def test_identity_and_orthogonal_inits():
    _, model = build("freeze=ffn_identity", "model.ffn_dim=48")
    ffn = model.encoder.layers[0].ffn
    assert torch.equal(ffn.fc1.weight, torch.eye(48, 32))  # rectangular: the leading identity
    assert torch.equal(ffn.fc2.weight, torch.eye(32, 48))
    assert not ffn.fc1.bias.any() and not ffn.fc2.bias.any()
    x = torch.randn(5, 32)
    assert torch.allclose(ffn.eval()(x), torch.relu(x))  # the frozen block carries no random transformation

    _, model = build("freeze.att.frozen=true", "freeze.att.init=orthogonal")
    w = model.decoder.layers[0].cross_attn.k_proj.weight
    assert not w.requires_grad
    assert torch.allclose(w @ w.t(), torch.eye(32), atol=1e-5)
    norm = model.decoder.layers[0].self_attn_res.norm
    assert torch.equal(norm.weight, torch.ones(32)) and norm.weight.requires_grad


def test_paper_row_labels():
    labels = [freeze.paper_row(compose_config(f"freeze={r}").freeze) for r in ROWS]
    assert labels == ["(0)", "(1)", "(2)", "(3)", "(2.1)", "(3.1)", "(4)", "(5)", "(6)"]
    assert freeze.paper_row(compose_config("freeze=att", "freeze.att.init=orthogonal").freeze) is None
    assert freeze.describe(compose_config("freeze=emb_ffn").freeze) == {
        "emb": "frozen:random", "att": "trainable", "ffn": "frozen:random", "other": "trainable"}


@pytest.mark.parametrize("options", [(), LLAMA_GATE], ids=["2017", "llama-gate"])
def test_seed_only_checkpoint_reloads_to_same_outputs(tmp_path, options):
    cfg, model = build("freeze=emb_ffn", *options)
    train_steps(model)
    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, model, cfg.seed)
    frozen_bytes = sum(p.numel() * 4 for p in model.parameters() if not p.requires_grad)
    full = tmp_path / "full.pt"
    torch.save(model.state_dict(), full)
    assert path.stat().st_size < full.stat().st_size - 0.9 * frozen_bytes  # frozen tensors are not stored

    fresh = Transformer(cfg.model, 40, 0)  # default torch init: nothing in common with the trained model
    load_checkpoint(path, fresh, cfg.freeze)
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    assert torch.equal(model.eval()(src, tgt), fresh.eval()(src, tgt))


def test_checkpoint_refuses_a_different_freeze_pattern(tmp_path):
    cfg, model = build("freeze=ffn")
    save_checkpoint(tmp_path / "c.pt", model, cfg.seed)
    other = compose_config("model=micro", "freeze=att")
    with pytest.raises(CheckpointError, match="freeze pattern"):
        load_checkpoint(tmp_path / "c.pt", Transformer(other.model, 40, 0), other.freeze)


def test_frozen_weights_keep_no_activations_for_weight_gradients():
    """A frozen FFN below trainable layers still passes gradients down, but autograd saves no activation for its
    weight gradients (fc1's input) — only its weights and the ReLU output the input gradient needs."""
    from frozen_sweep.model.layers import FeedForward

    cfg = compose_config("model=micro").model
    ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, dropout=0.0)
    x = torch.randn(5, 7, cfg.d_model, requires_grad=True)
    saved = {}
    for frozen in (False, True):
        for p in ffn.parameters():
            p.requires_grad_(not frozen)
            p.grad = None
        shapes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            ffn(x).sum().backward()
        weights = {tuple(p.shape) for p in ffn.parameters()}
        saved[frozen] = sorted(math.prod(s) for s in shapes if s not in weights)  # activations' sizes
        assert x.grad is not None and all((p.grad is None) == frozen for p in ffn.parameters())
    tokens = 5 * 7
    assert tokens * cfg.d_model in saved[False] and saved[True] == [tokens * cfg.ffn_dim]  # fc1's input is gone
