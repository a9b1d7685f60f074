import pytest
import torch

from frozen_sweep.evaluate.decode import ENCODE_ROWS, beam_search
from frozen_sweep.model import Transformer, component_of_parameters
from tests.conftest import compose_config

V, PAD, BOS, EOS = 50, 0, 2, 3


def make(*overrides, seed=0):
    cfg = compose_config("model=micro", *overrides)
    torch.manual_seed(seed)
    model = Transformer(cfg.model, V, PAD, cfg.reservoir)
    for p in model.parameters():  # default inits give tiny logits; spread them so decoding is non-trivial
        torch.nn.init.normal_(p, std=0.3)
    return model.eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_shapes_and_causality(norm):
    model = make(f"model.norm={norm}")
    src = torch.randint(4, V, (3, 7))
    tgt = torch.randint(4, V, (3, 5))
    logits = model(src, tgt)
    assert logits.shape == (3, 5, V)
    changed = tgt.clone()
    changed[:, 3:] = torch.randint(4, V, (3, 2))
    assert torch.allclose(model(src, changed)[:, :3], logits[:, :3], atol=1e-5)  # the future is invisible
    assert not torch.allclose(model(src, changed)[:, 3:], logits[:, 3:])


LLAMA_OPTIONS = ["model.norm=rms", "model.ffn=swiglu", "model.positions=rope", "model.kv_heads=1", "model.bias=false"]
RESERVOIRS = {  # one reservoir of each type, in each stack it may sit in
    "none": [],
    **{f"encoder-{kind}": ["model.encoder_layers=3", f"reservoir={kind}", "reservoir.count=1"]
       for kind in ("transformer", "ffn", "bigru", "conv")},
    **{f"decoder-{kind}": ["model.decoder_layers=3", f"reservoir={kind}", "reservoir.count=1", "reservoir.stack=decoder"]
       for kind in ("transformer", "ffn")},
    **{f"llama-{stack}-{kind}": [*LLAMA_OPTIONS, f"model.{stack}_layers=3", f"reservoir={kind}", "reservoir.count=1",
                                 f"reservoir.stack={stack}"]  # the LLaMA-style block in both stacks
       for stack, kind in (("encoder", "transformer"), ("decoder", "ffn"))},
}  # fmt: skip


@pytest.mark.parametrize("reservoir", RESERVOIRS)
def test_source_padding_is_ignored(reservoir):
    model = make(*RESERVOIRS[reservoir])
    src = torch.randint(4, V, (1, 6))
    padded = torch.cat([src, torch.full((1, 3), PAD)], dim=1)
    tgt = torch.randint(4, V, (1, 4))
    assert torch.allclose(model(src, tgt), model(padded, tgt), atol=1e-5)


def test_embeddings_tied_three_ways_by_default():
    model = make()
    assert model.src_embed.tokens.weight is model.tgt_embed.tokens.weight is model.output.weight
    names = [n for n, c in component_of_parameters(model).items() if c == "emb"]
    assert names == ["tgt_embed.tokens.weight"]  # one tensor, counted once
    untied = make("model.tie_embeddings=none")
    assert len([c for c in component_of_parameters(untied).values() if c == "emb"]) == 3


@pytest.mark.parametrize("reservoir", RESERVOIRS)
def test_cached_decoding_matches_full_forward(reservoir):
    model = make(*RESERVOIRS[reservoir])
    src = torch.randint(4, V, (2, 6))
    tgt = torch.randint(4, V, (2, 5))
    full = model(src, tgt)
    memory, mask = model.encode(src)
    caches = model.new_caches()
    steps = [model.decode(tgt[:, t : t + 1], memory, mask, caches, start=t) for t in range(5)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def naive_greedy(model, src, max_len):
    """Greedy search that re-runs the whole decoder every step: no cache, no beam bookkeeping."""
    out = torch.full((1, 1), BOS)
    for _ in range(max_len):
        logits = model(src, out)[:, -1]
        logits[:, [BOS, PAD]] = -float("inf")
        nxt = logits.argmax(-1, keepdim=True)
        if nxt.item() == EOS:
            break
        out = torch.cat([out, nxt], dim=1)
    return out[0, 1:].tolist()


def test_beam_one_is_greedy_search():
    model = make(seed=3)
    src = torch.randint(4, V, (4, 6))
    src[:, -1] = EOS
    hyps = beam_search(model, src, beam=1, bos=BOS, eos=EOS, max_len_a=0, max_len_b=12)
    for i in range(4):
        assert hyps[i] == naive_greedy(model, src[i : i + 1], 11)  # the 12th token is a forced eos


def test_beam_search_batch_independent_and_bounded():
    model = make(seed=4)
    src = torch.randint(4, V, (3, 8))
    src[1, 5:] = PAD
    src[:, -1] = torch.where(src[:, -1] == PAD, PAD, EOS)
    together = beam_search(model, src, beam=4, bos=BOS, eos=EOS, max_len_a=1.0, max_len_b=3)
    alone = [beam_search(model, src[i : i + 1, : (src[i] != PAD).sum()], beam=4, bos=BOS, eos=EOS,
                         max_len_a=1.0, max_len_b=3)[0] for i in range(3)]
    assert together == alone
    assert all(len(h) < 8 + 3 for h in together)
    assert all(EOS not in h and BOS not in h for h in together)


def test_beam_search_encodes_length_groups_reads_memory_once_a_sentence_and_removes_done_sentences_together():
    """The search's economies, seen by hooks on the real modules, with its output still each sentence's own search:
    the encoder runs on groups of ENCODE_ROWS sources each padded to its own longest; cross-attention keys come from
    one memory row a sentence, not one a hypothesis; done sentences leave the batch only an eighth or more at a time."""
    model = make(seed=5)
    lengths = [3 + (7 * i) % 12 for i in range(24)]
    src = torch.full((24, max(lengths)), PAD)
    for i, n in enumerate(lengths):
        src[i, : n - 1] = torch.randint(4, V, (n - 1,))
        src[i, n - 1] = EOS
    encoder_inputs, cross_rows, step_rows = [], [], []
    model.encoder.register_forward_pre_hook(lambda _, args: encoder_inputs.append(tuple(args[0].shape[:2])))
    model.decoder.layers[0].cross_attn.k_proj.register_forward_pre_hook(
        lambda _, args: cross_rows.append(args[0].shape[0]))
    model.decoder.register_forward_pre_hook(lambda _, args: step_rows.append(args[0].shape[0]))
    hyps = beam_search(model, src, beam=4, bos=BOS, eos=EOS, max_len_a=0.5, max_len_b=2)
    by_length = sorted(lengths)
    groups = [by_length[i : i + ENCODE_ROWS] for i in range(0, 24, ENCODE_ROWS)]
    assert encoder_inputs == [(len(g), max(g)) for g in groups]
    assert cross_rows == [24]
    removals = [(a, b) for a, b in zip(step_rows, step_rows[1:]) if b < a]
    assert removals and all((a - b) * 8 >= a for a, b in removals), step_rows
    for i in (0, 11):
        assert hyps[i] == beam_search(model, src[i : i + 1, : lengths[i]], beam=4, bos=BOS, eos=EOS, max_len_a=0.5,
                                      max_len_b=2)[0]  # fmt: skip


class ActivationCasts(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the fp32 → bf16 casts of (B, T, D) activations that autocast's dispatch makes."""

    def __init__(self, shapes):
        super().__init__()
        self.shapes, self.count = shapes, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._to_copy.default and kwargs.get("dtype") == torch.bfloat16:
            self.count += args[0].dtype == torch.float32 and tuple(args[0].shape) in self.shapes
        return func(*args, **kwargs)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_under_autocast_each_sublayer_reads_its_input_cast_once(norm):
    """A sublayer's input is cast to bf16 once for all the projections that read it (queries, keys and values), the
    encoder's output once for every decoder layer's cross-attention, the decoder's once for the output projection."""
    model = make(f"model.norm={norm}", "model.encoder_layers=2", "model.decoder_layers=2").train()
    src, tgt = torch.randint(4, V, (3, 7)), torch.randint(4, V, (3, 5))
    D = model.output.weight.shape[1]
    casts = ActivationCasts({(3, 7, D), (3, 5, D)})
    with torch.autocast("cpu", dtype=torch.bfloat16), casts:
        model(src, tgt)
    sublayers = 2 * len(model.encoder.layers) + 3 * len(model.decoder.layers)
    assert casts.count == sublayers + 2
