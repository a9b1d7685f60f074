"""The LLaMA-style model options (docs/concepts.md): the 2017 defaults change nothing, each option changes the model
as LLaMA's does."""

import hashlib

import torch
import torch.nn.functional as F

from frozen_sweep.model import Transformer
from frozen_sweep.system import cpu
from frozen_sweep.weights.freeze import init_and_freeze
from tests.conftest import compose_config

V, PAD = 64, 0
# sha256 of the `tiny` translation model's parameters after two Adam steps, and its losses, computed before the
# LLaMA-style options existed: the defaults must keep every bit
TINY_STEP_SHA256 = "69e4e32e1d71b122a097b9c24195d3f94cd4dc4f63514d50a56b76d10b7917cd"


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


def test_defaults_reproduce_the_tiny_step_bit_for_bit():
    sha, losses = two_steps("model=tiny")
    assert losses == [4.554532051086426, 3.4720523357391357]
    assert sha == TINY_STEP_SHA256
