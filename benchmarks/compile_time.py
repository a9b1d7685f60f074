"""Compile time: the first training step (compilation included) and the steady step of eager, the whole step compiled
as one graph (`trainer.compile_scope=step`) and each layer compiled on its own (`trainer.compile_scope=layers`), and how
each scope's compile time grows with depth.

    python benchmarks/compile_time.py [--models base [big]] [--depth-model tiny --depths 2 6 12] [--device cuda]
        [--sentences 64 --length 32] [--vocab 32000]

For each model (frozen_sweep/conf/model/*.yaml), at one fixed batch (sentences × length tokens a side), in the job's
own precision (fp32 on the CPU, bf16 autocast on CUDA), one after the other in one process, each with a fresh
compiler and torch's compile caches off (a cold compile, as a new machine's first job): the first step of the
trainer's own step (forward, loss, backward, Adam) per contender; then their steady steps side by side, interleaved,
median over rounds. Compile time is the first step less the steady one. Then the depth model with 2, 6, 12 layers a
stack (`--depths`): the compile time of each scope. Targets: per layer, `base` compiles ≥ 2× faster than the whole
step, and compiling the deepest model per layer takes ≤ 1.5× the shallowest's (one graph serves a stack); the steady
step of either scope against eager is information (the GPU decides which scope pays).
"""

import sys
import tempfile
import time
from pathlib import Path

import common
import torch
import torch._inductor.config

from frozen_sweep.system.kernels import KERNELS_VARIABLE, kernel_level

SCOPES = {"eager": ("trainer.compile=false",), "step": ("trainer.compile=true", "trainer.compile_scope=step"),
          "layers": ("trainer.compile=true", "trainer.compile_scope=layers")}  # fmt: skip


def first_step(cfg, batch, device, tmp: Path) -> tuple[float, object]:
    """Seconds of a fresh model's first step (compilation included), and its step for more rounds."""
    torch._dynamo.reset()
    vocab = cfg.task.vocab_size
    _, step = common.train_step(cfg, common.build(cfg, vocab), tmp, vocab, device)
    common.synchronize(device)
    started = time.perf_counter()
    step(batch)
    common.synchronize(device)
    return time.perf_counter() - started, step


def compare(model: str, layers: list[str], args, repeats: int, device, tmp: Path) -> dict[str, tuple[float, float]]:
    """(first step, steady step) seconds of each scope for `model`, `layers` overrides applied."""
    firsts, steps = {}, {}
    for scope, overrides in SCOPES.items():
        vocab = [f"task.vocab_size={args.vocab}"] if args.vocab else []
        cfg = common.compose_config(f"model={model}", *layers, *vocab, *overrides)
        batch = common.synthetic_batch(args.sentences, args.length, cfg.task.vocab_size).to(device)
        (tmp / scope).mkdir(parents=True)
        firsts[scope], step = first_step(cfg, batch, device, tmp / scope)
        steps[scope] = lambda s=step, b=batch: s(b)
    steady = common.interleaved(steps, repeats, warmup=1, device=device)
    return {scope: (firsts[scope], steady[scope]) for scope in SCOPES}


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="*", default=["base"])
    p.add_argument("--depth-model", default="tiny")
    p.add_argument("--depths", nargs="*", type=int, default=[2, 6, 12], help="layers a stack ('': no depth scan)")
    p.add_argument("--sentences", type=int, default=64)
    p.add_argument("--length", type=int, default=32, help="tokens per side of every sentence (incl. bos/eos)")
    p.add_argument("--vocab", type=int, default=None, help="default: the task's vocab_size (4000)")
    args = p.parse_args()
    if args.quick:
        args.models, args.depth_model, args.depths = ["micro"], "micro", [1]
        args.sentences, args.length, args.repeats = 4, 8, 1
    repeats = args.repeats or 3
    device = common.setup(args)
    if device.type == "cpu" and kernel_level() == "DEFAULT":  # as a job with trainer.compile=true is refused there
        sys.exit(f"torch's compiler cannot build CPU code with {KERNELS_VARIABLE}=default: run it with "
                 f"{KERNELS_VARIABLE} unset, avx2 or avx512")  # fmt: skip
    # every compile cold: none reuses another's kernels (--quick: warm, for a smoke test within seconds)
    torch._inductor.config.force_disable_caches = not args.quick
    checks = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            print(f"\nmodel={model}: batch {args.sentences}×{args.length}; first step (compile included) one after "
                  f"the other, steady step {repeats} rounds interleaved, medians")  # fmt: skip
            times = compare(model, [], args, repeats, device, Path(tmp) / model)
            eager = times["eager"][1]
            common.table(["scope", "first step", "steady step", "compile", "steady / eager"],
                         [[scope, f"{first:.1f} s", f"{steady * 1e3:.0f} ms", f"{first - steady:.1f} s",
                           f"{steady / eager:.2f}"] for scope, (first, steady) in times.items()])  # fmt: skip
            compile_s = {scope: times[scope][0] - times[scope][1] for scope in ("step", "layers")}
            checks.append(common.verdict(f"{model}: whole-step compile / per-layer compile",
                                         compile_s["step"] / compile_s["layers"], 2.0))  # fmt: skip
        by_depth = {}
        for depth in args.depths:
            layers = [f"model.encoder_layers={depth}", f"model.decoder_layers={depth}"]
            times = compare(args.depth_model, layers, args, 1, device, Path(tmp) / f"depth{depth}")
            by_depth[depth] = {scope: first - steady for scope, (first, steady) in times.items()}
        if by_depth:
            print(f"\ncompile time (first step less steady step) by depth, model={args.depth_model}, layers a stack:")
            common.table(["layers", "step", "layers scope"],
                         [[d, f"{c['step']:.1f} s", f"{c['layers']:.1f} s"] for d, c in by_depth.items()])  # fmt: skip
            low, high = by_depth[min(by_depth)], by_depth[max(by_depth)]
            print(f"deepest / shallowest: whole step {high['step'] / low['step']:.2f}×, per layer "
                  f"{high['layers'] / low['layers']:.2f}×")  # fmt: skip
            checks.append(common.verdict("per-layer compile, deepest / shallowest", high["layers"] / low["layers"],
                                         1.5, at_most=True))  # fmt: skip
    print(f"\n{'all targets met' if all(checks) else 'targets not met'}")


if __name__ == "__main__":
    main()
