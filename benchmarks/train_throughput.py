"""Training throughput: target tokens/s of one training step against nn.Transformer and MarianMT, and FLOP/s.

    python benchmarks/train_throughput.py [--models tiny base] [--sentences 64 --length 32] [--repeats 5]
        [--precision fp32|bf16]

For each model (frozen_sweep/conf/model/*.yaml), at the same fixed batch (sentences × length tokens on each side, collated by the
project's code), times side by side, interleaved, median over rounds:
- ours: `frozen_sweep.train.trainer.Trainer._train_step` on `frozen_sweep.weights.build.build_model` (forward, label-smoothed loss,
  backward, Adam, schedule), as a job runs it on this CPU;
- nn.Transformer: `torch.nn.Transformer` of identical dimensions (post-norm, ReLU, same dropout, one tied
  embedding/output matrix, sinusoidal positions), the same loss, Adam and schedule;
- MarianMT: Hugging Face `transformers`' MarianMTModel of identical dimensions (skipped when transformers is not
  installed: `pip install -e '.[bench]'`), the same loss, Adam and schedule;
- ours NAME (`--variant NAME:override,...`, information): our step under other trainer settings, e.g.
  `--variant compiled:trainer.compile=true`;
- the machine's matmul peak: n×n matmuls in the run's precision, n = 1024, in the same rounds.
Every contender runs in one precision, printed in each header: `--precision` (fp32 on the CPU, bf16 autocast on
CUDA by default; ours through trainer.amp and trainer.amp_cpu, the others under the same autocast). A step that
takes less than its own matrix products (achieved FLOP/s above the matmul peak; the LLaMA step below its products
alone) is a measurement error, reported as one and counted as a failure, never as a target met.
Achieved FLOP/s counts the matrix products of a step (benchmarks/common.py: step_flops). Targets: ours ≥ 1.3× the
nn.Transformer's tokens/s and ≥ 1.5× MarianMT's; for `base`, ≥ 50% of the measured matmul peak.

Then the LLaMA-style decoder (`--llama llama_paper`: `base`'s width, heads and 6 layers, SwiGLU 1536, 4 key/value
heads; no dropout, as LLaMA) as a language model at the same batch: ours, Hugging Face LlamaForCausalLM of the same
config, and torch.nn's causal pre-LayerNorm stack of the same width, heads, layers and FFN width (benchmarks/
llama_reference.py), the same loss, Adam and schedule, timed in CPU seconds on the CPU (fairer than wall time on a
busy machine), and on the CPU the step's matrix products alone at the same shapes (the floor under any implementation
with these kernels; it bounds how far ours can beat LlamaForCausalLM). Target: ours ≥ 1.2× LlamaForCausalLM's
tokens/s. And the key/value cache of decoding 256 positions with kv_heads and with one key/value head per query head:
grouped-query attention holds kv_heads/heads of it.

`--device cuda`: the peak is an 8192² matmul in the same rounds, and the targets are base ≥ 35% and big ≥ 50% of
it at the paper's batch (≈ 25k target tokens: 512 sentences of 48):
    python benchmarks/train_throughput.py --device cuda --models base big --sentences 512 --length 48 --vocab 32000
"""

import math
import tempfile
import time
from pathlib import Path

import common
import llama_reference
import torch
import torch.nn.functional as F
from torch import nn

from frozen_sweep.data.specials import BOS, EOS, PAD
from frozen_sweep.model.layers import sinusoidal_positions
from frozen_sweep.train.optim import inverse_sqrt_schedule


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with the project's dimensions, tied embeddings and sinusoidal positions."""

    def __init__(self, m, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, m.d_model, padding_idx=PAD)
        self.scale = math.sqrt(m.d_model)
        self.register_buffer("positions", sinusoidal_positions(m.max_positions, m.d_model), persistent=False)
        self.dropout = nn.Dropout(m.dropout)
        self.transformer = nn.Transformer(
            m.d_model, m.heads, m.encoder_layers, m.decoder_layers, m.ffn_dim, m.dropout,
            batch_first=True, norm_first=m.norm.value == "pre",
        )  # fmt: skip

    def embed_ids(self, ids):
        return self.dropout(self.embed(ids) * self.scale + self.positions[: ids.shape[1]])

    def forward(self, src, tgt_in):
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)  # True = masked
        pad = src == PAD
        out = self.transformer(
            self.embed_ids(src), self.embed_ids(tgt_in), tgt_mask=causal, src_key_padding_mask=pad,
            memory_key_padding_mask=pad, tgt_is_causal=True,
        )  # fmt: skip
        return out @ self.embed.weight.t()


def marian(m, vocab: int):
    from transformers import MarianConfig, MarianMTModel

    config = MarianConfig(
        vocab_size=vocab, d_model=m.d_model, encoder_layers=m.encoder_layers, decoder_layers=m.decoder_layers,
        encoder_attention_heads=m.heads, decoder_attention_heads=m.heads, encoder_ffn_dim=m.ffn_dim,
        decoder_ffn_dim=m.ffn_dim, dropout=m.dropout, attention_dropout=m.attention_dropout,
        activation_dropout=m.activation_dropout, activation_function=m.activation.value,
        max_position_embeddings=m.max_positions, pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=BOS,
        scale_embedding=True, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
    )  # fmt: skip
    model = MarianMTModel(config)

    def forward(src, tgt_in):
        return model(input_ids=src, attention_mask=src != PAD, decoder_input_ids=tgt_in).logits

    return model, forward


PRECISIONS = {"fp32": ("trainer.amp=false",), "bf16": ("trainer.amp=true", "trainer.amp_cpu=true")}  # → ours


def reference_step(model: nn.Module, forward, tr, autocast: bool):
    """The same step as Trainer._train_step, for a model that is not ours (in bf16 autocast when ours is)."""
    optimizer = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad], lr=tr.lr, betas=tuple(tr.betas), eps=tr.adam_eps,
        weight_decay=tr.weight_decay,
    )  # fmt: skip
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, inverse_sqrt_schedule(tr.warmup_steps, 1e-7, tr.lr))

    def step(batch):
        model.train()
        with torch.autocast(batch.tgt_in.device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = forward(batch.src, batch.tgt_in)
        loss = F.cross_entropy(
            logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD,
            label_smoothing=tr.label_smoothing, reduction="sum",
        )  # fmt: skip
        optimizer.zero_grad(set_to_none=True)
        (loss / batch.n_tokens).backward()
        optimizer.step()
        scheduler.step()

    return step


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="*", default=["tiny", "base"])
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32, help="tokens per side of every sentence (incl. bos/eos)")
    p.add_argument("--vocab", type=int, default=None, help="default: the task's vocab_size (4000)")
    p.add_argument("--no-marian", action="store_true")
    p.add_argument("--llama", nargs="*", default=["llama_paper"], help="LLaMA-style decoders to time ('': none)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME:OVERRIDE,...",
                   help="also time our step with these config overrides, as 'ours NAME'")  # fmt: skip
    p.add_argument("--precision", choices=sorted(PRECISIONS), default=None,
                   help="every contender's precision (default: fp32 on the CPU, bf16 autocast on CUDA)")  # fmt: skip
    args = p.parse_args()
    if args.quick:
        args.models, args.sentences, args.length, args.repeats, args.llama = ["micro"], 4, 8, 1, ["llama_micro"]
    repeats = args.repeats or 5
    device = common.setup(args)
    cuda = device.type == "cuda"
    args.precision = args.precision or ("bf16" if cuda else "fp32")
    bf16 = args.precision == "bf16"
    transformers = None if args.no_marian else common.optional_import("transformers")
    print(f"MarianMT: {'transformers ' + transformers.__version__ if transformers else 'skipped (not installed)'}")

    failures = []
    for name in args.models:
        cfg = common.compose_config(f"model={name}", *PRECISIONS[args.precision])
        m, vocab = cfg.model, args.vocab or cfg.task.vocab_size
        batch = common.synthetic_batch(args.sentences, args.length, vocab).to(device)
        flops = common.step_flops(m, vocab, args.sentences, args.length, args.length).total
        with tempfile.TemporaryDirectory() as tmp:
            ours = common.build(cfg, vocab)
            trainer, ours_step = common.train_step(cfg, ours, Path(tmp), vocab, device)
            torch_model = TorchTransformer(m, vocab).to(device)
            models = {"ours": ours, "nn.Transformer": torch_model}
            steps = {"ours": ours_step, "nn.Transformer": reference_step(torch_model, torch_model, cfg.trainer, bf16)}
            for variant in args.variant:
                label, overrides = variant.split(":", 1)
                variant_cfg = common.compose_config(f"model={name}", *PRECISIONS[args.precision], *overrides.split(","))
                models[f"ours {label}"] = common.build(variant_cfg, vocab)
                _, steps[f"ours {label}"] = common.train_step(variant_cfg, models[f"ours {label}"], Path(tmp), vocab,
                                                              device)  # fmt: skip
            if transformers:
                models["MarianMT"], forward = marian(m, vocab)
                steps["MarianMT"] = reference_step(models["MarianMT"].to(device), forward, cfg.trainer, bf16)
            dtype, n = torch.bfloat16 if bf16 else torch.float32, (8192 if cuda else 256 if args.quick else 1024)
            peak = common.matmul_flops_per_s(n, calls=4 if cuda else 8, device=device, dtype=dtype)
            contenders = {k: (lambda s=s, b=batch: s(b)) for k, s in steps.items()}
            contenders["matmul"] = peak
            print(
                f"\nmodel={name}: {m.encoder_layers}+{m.decoder_layers} layers, d {m.d_model}, FFN {m.ffn_dim}, "
                f"{m.heads} heads, vocab {vocab}; batch {args.sentences}×{args.length} "
                f"({batch.n_tokens} target tokens), {flops / 1e9:.1f} GFLOP/step; "
                f"every contender in {trainer.loss.precision}; {repeats} rounds, medians"
            )
            times = common.interleaved(contenders, repeats, warmup=1, device=device)
        peak_rate = peak.flops / times.pop("matmul")
        print(f"matmul peak ({args.precision} {n}², same rounds): {common.fmt_rate(peak_rate, 'FLOP/s')}")
        rows = []
        for k, t in times.items():
            rate = flops / t
            rows.append([k, f"{n_params(models[k]) / 1e6:.1f}M", f"{t * 1e3:.0f} ms", f"{batch.n_tokens / t:,.0f}",
                         f"{times['ours'] and t / times['ours']:.2f}", common.fmt_rate(rate, "FLOP/s"),
                         f"{rate / peak_rate:.0%}"])  # fmt: skip
        common.table(["model", "params", "step", "tokens/s", "step / ours", "achieved", "of peak"], rows)
        checks = [common.measured(f"{name}: {k}", flops / peak_rate, t, "the matmul peak's time for its products")
                  for k, t in times.items()]  # fmt: skip
        checks.append(common.verdict(f"{name}: ours / nn.Transformer tokens/s", times["nn.Transformer"] / times["ours"],
                                     1.3))  # fmt: skip
        if "MarianMT" in times:
            checks.append(common.verdict(f"{name}: ours / MarianMT tokens/s", times["MarianMT"] / times["ours"], 1.5))
        peak_target = {"base": 35, "big": 50} if cuda else {"base": 50}
        if name in peak_target:
            checks.append(common.verdict(f"{name}: achieved / matmul peak", flops / times["ours"] / peak_rate * 100,
                                         peak_target[name], unit="%"))  # fmt: skip
        failures += [name for ok in checks if not ok]
    for name in filter(None, args.llama):
        failures += llama_step(name, args, repeats, device, transformers)
    print(f"\n{'all targets met' if not failures else 'targets not met: ' + ', '.join(sorted(set(failures)))}")


def llama_step(name: str, args, repeats: int, device, transformers) -> list[str]:
    """Our LLaMA-style language model's step beside LlamaForCausalLM's and torch.nn's; its GQA cache. Failures."""
    cfg = common.compose_config("task=lm_bible_en", f"model={name}", "model.dropout=0.0", *PRECISIONS[args.precision])
    bf16 = args.precision == "bf16"
    m, vocab = cfg.model, args.vocab or cfg.task.vocab_size
    batch = common.synthetic_batch(args.sentences, args.length, vocab).to(device)
    with tempfile.TemporaryDirectory() as tmp:
        models = {"ours": common.build(cfg, vocab)}
        trainer, ours_step = common.train_step(cfg, models["ours"], Path(tmp), vocab, device)
        models["nn causal stack"] = llama_reference.TorchDecoder(m, vocab).to(device)
        steps = {
            "ours": ours_step,
            "nn causal stack": reference_step(models["nn causal stack"], models["nn causal stack"], cfg.trainer, bf16),
        }
        if transformers:
            models["LlamaForCausalLM"], forward = llama_reference.hf_llama(cfg, vocab)
            steps["LlamaForCausalLM"] = reference_step(models["LlamaForCausalLM"].to(device), forward, cfg.trainer,
                                                       bf16)  # fmt: skip
        cpu = device.type == "cpu"  # CPU seconds: a busy shared machine distorts wall time more
        if cpu:
            dtype = torch.bfloat16 if bf16 else torch.float32
            steps["matrix products alone"] = llama_reference.matrix_products(m, vocab, batch.tgt_in.numel(), dtype)
        print(f"\nmodel={name} (language model): {m.decoder_layers} layers, d {m.d_model}, SwiGLU {m.ffn_dim}, "
              f"{m.heads} heads, {m.kv_heads} key/value heads, vocab {vocab}; batch {args.sentences}×{args.length} "
              f"({batch.n_tokens} target tokens); every contender in {trainer.loss.precision}; {repeats} rounds, "
              "medians")  # fmt: skip
        times = common.interleaved({k: (lambda s=s: s(batch)) for k, s in steps.items()}, repeats, 1, device,
                                   time.process_time if cpu else time.perf_counter)  # fmt: skip
    print(f"timed in {'CPU seconds of this process (time.process_time)' if cpu else 'wall seconds'}")
    common.table(["model", "params", "step", "tokens/s", "step / ours"],
                 [[k, f"{n_params(models[k]) / 1e6:.1f}M" if k in models else "", f"{t * 1e3:.0f} ms",
                   f"{batch.n_tokens / t:,.0f}", f"{t / times['ours']:.2f}"] for k, t in times.items()])  # fmt: skip
    checks = []
    if "matrix products alone" in times:
        floor = times.pop("matrix products alone")
        checks += [common.measured(f"{name}: {k}", floor, t, "its matrix products alone") for k, t in times.items()]
        if "LlamaForCausalLM" in times:
            print(f"the step's matrix products alone take {floor / times['ours']:.0%} of ours: no implementation with "
                  f"these kernels beats LlamaForCausalLM by more than {times['LlamaForCausalLM'] / floor:.2f}×")
    length = min(256, m.max_positions)
    gqa = llama_reference.kv_cache_bytes(models["ours"].cpu(), length)
    mha_cfg = common.compose_config("task=lm_bible_en", f"model={name}", f"model.kv_heads={m.heads}")
    mha = llama_reference.kv_cache_bytes(common.build(mha_cfg, vocab), length)
    print(f"key/value cache after {length} positions: {gqa:,} bytes with {m.kv_heads} key/value heads, {mha:,} with "
          f"{m.heads}: {gqa / mha:.3f} (kv_heads/heads = {m.kv_heads / m.heads:.3f})")  # fmt: skip
    checks.append(gqa * m.heads == mha * m.kv_heads)
    if "LlamaForCausalLM" in times:
        checks.append(common.verdict(f"{name}: ours / LlamaForCausalLM tokens/s",
                                     times["LlamaForCausalLM"] / times["ours"], 1.2))  # fmt: skip
    return [name for ok in checks if not ok]


if __name__ == "__main__":
    main()
