"""The LLaMA-style model options (docs/concepts.md): the 2017 defaults change nothing, each option changes the model
as LLaMA's does."""

import hashlib

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from frozen_sweep.model import Transformer
from frozen_sweep.model.rotary import Rotary
from frozen_sweep.system import cpu
from frozen_sweep.weights import ctranslate2_model, llama_hf, marian
from frozen_sweep.weights.freeze import init_and_freeze, parameter_counts
from frozen_sweep.weights.llama_hf import llama_config, llama_state_dict
from tests.conftest import compose_config

transformers = pytest.importorskip("transformers")

V, PAD = 64, 0


def two_steps(*overrides: str) -> tuple[str, list[float]]:
    """Parameters' sha256 and losses after two Adam steps on a fixed batch, dropout on, one thread."""
    cfg = compose_config(*overrides)
    threads = torch.get_num_threads()
    cpu.set_threads(1)
    try:
        model = Transformer(cfg.model, V, PAD, cfg.reservoir)
        init_and_freeze(model, cfg.freeze, seed=1)
        torch.manual_seed(0)
        src, tgt = torch.randint(4, V, (4, 9)), torch.randint(4, V, (4, 8))
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        losses = []
        for _ in range(2):
            logits = model(None if model.is_lm else src, tgt[:, :-1])  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        cpu.set_threads(threads)
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        digest.update(name.encode() + p.detach().numpy().tobytes())
    return digest.hexdigest(), losses


def test_the_tiny_step_repeats_bit_for_bit():
    """Two fresh runs of the same steps agree to the last bit: weights, dropout and data come from the seeds alone.
    Compared with each other on this machine, not with numbers recorded on another CPU, whose kernels sum in another
    order."""
    sha, losses = two_steps("model=tiny")
    assert two_steps("model=tiny") == (sha, losses) and losses[1] < losses[0]


LLAMA = ("task=lm_bible_en", "model=llama_micro")


@pytest.mark.parametrize("kv_heads, bias, tie", [(4, False, "all"), (2, False, "none"), (1, True, "all")])
def test_parameter_counts_are_hf_llamas(kv_heads, bias, tie):
    """The same dimensions in Hugging Face's LlamaForCausalLM: the same parameters, and under the export's names the
    same shapes."""
    cfg = compose_config(*LLAMA, f"model.kv_heads={kv_heads}", f"model.bias={bias}", f"model.tie_embeddings={tie}")
    ours = Transformer(cfg.model, V, PAD)
    hf = transformers.LlamaForCausalLM(llama_config(cfg, V))
    assert parameter_counts(ours)["params_total"] == sum(p.numel() for p in hf.parameters())
    hf_shapes = {name: p.shape for name, p in hf.state_dict().items()}
    assert {name: p.shape for name, p in llama_state_dict(ours).items()} == hf_shapes


@pytest.mark.parametrize("option", ["", "model.norm=pre", "model.ffn=mlp", "model.positions=sinusoidal",
                                    "model.kv_heads=4", "model.bias=true"])  # fmt: skip
def test_llama_micro_computes_hf_llamas_logits_and_each_option_matters(option):
    """llama_micro's weights in LlamaForCausalLM give its logits; with any one option back at the paper's choice, the
    model is no longer LLaMA's (other logits, or weights LLaMA has no place for)."""
    cfg = compose_config(*LLAMA, *([option] if option else []))
    torch.manual_seed(0)
    ours = Transformer(cfg.model, V, PAD).eval()
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_(std=0.3)
    llama_cfg = llama_config(compose_config(*LLAMA), V)
    hf = transformers.LlamaForCausalLM(llama_cfg).eval()
    ids = torch.randint(4, V, (2, 12))
    try:
        missing, unexpected = hf.load_state_dict(llama_state_dict(ours), strict=False)
        fits = not missing and not unexpected
    except (KeyError, RuntimeError):  # no LLaMA name, or another shape
        fits = False
    with torch.no_grad():
        same = fits and torch.allclose(hf(ids).logits, ours.decode(ids), atol=1e-5, rtol=0)
    assert same == (option == "")


def test_gqa_caches_hold_kv_heads_of_heads_and_cached_decoding_is_the_full_forward():
    cfg = compose_config(*LLAMA)
    model = Transformer(cfg.model, V, PAD).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(std=0.3)
    ids = torch.randint(4, V, (2, 9))
    full = model.decode(ids)
    caches = model.new_caches()
    steps = [model.decode(ids[:, :4], caches=caches)]  # a prompt, then one position at a time
    steps += [model.decode(ids[:, t : t + 1], caches=caches, start=t) for t in range(4, 9)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert caches[0]["self_k"].shape == (2, cfg.model.kv_heads, 9, cfg.model.d_model // cfg.model.heads)


def test_rotary_scores_depend_on_relative_positions_only():
    rotary = Rotary(dims=8, max_positions=64, base=10000.0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)  # (B, H, T, hd)

    def score(m: int, n: int) -> Tensor:  # query at position m, key at position n
        return (rotary(q, m) * rotary(k, n)).sum()

    assert torch.allclose(score(3, 1), score(40, 38), atol=1e-5) and not torch.allclose(score(3, 1), score(3, 2))


def test_every_layer_reads_one_rotary_table():
    cfg = compose_config("task=lm_bible_en", "model=llama_micro", "model.decoder_layers=4", "model.max_positions=4096")
    tables = {(m.cos.data_ptr(), m.sin.data_ptr()) for m in Transformer(cfg.model, V, PAD).modules()
              if isinstance(m, Rotary)}  # fmt: skip
    assert len(tables) == 1  # 4 layers, one table: not 4 × 4,096 positions


@pytest.mark.parametrize("head_outputs", [None, 3])  # a masked LM, a classifier
def test_an_encoder_of_llama_style_blocks_ignores_padding(head_outputs):
    options = ("model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1", "model.bias=false")
    cfg = compose_config("task=mlm_bible_en", "model=mlm_micro", *options)
    model = Transformer(cfg.model, V, PAD, head_outputs=head_outputs).eval()
    ids = torch.randint(5, V, (1, 7))
    padded = torch.cat([ids, torch.full((1, 3), PAD)], dim=1)
    out, out_padded = model(None, ids), model(None, padded)
    assert torch.allclose(out_padded if head_outputs else out_padded[:, :7], out, atol=1e-5)


@pytest.mark.parametrize("export, base, option", [
    *((llama_hf, LLAMA, option) for option in ("model.qkv_bias=true", "model.rope_fraction=0.5", "model.parallel=true",
                                                 "model.token_types=2", "model.embed_norm=true")),
    *((module, ("model=tiny",), option) for module in (marian, ctranslate2_model)
      for option in ("model.token_types=2", "model.embed_norm=true")),
])  # fmt: skip
def test_an_export_refuses_the_options_its_format_lacks(export, base, option):
    assert not export.not_expressible(compose_config(*base))
    key = option.split("=")[0].removeprefix("model.")
    assert any(key in reason for reason in export.not_expressible(compose_config(*base, option)))
