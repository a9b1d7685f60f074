"""What limits a training step: a profile of the trainer's own step, kernel by kernel.

    python benchmarks/step_profile.py --device cuda --models base big --llama llama_paper --sentences 512 --length 48 \
        --vocab 32000 [--variant compiled:trainer.compile=true]

For each model (and each `--variant NAME:override,...` of it), the step `benchmarks/train_throughput.py` times
(`Trainer._train_step`: forward, loss, backward, Adam, schedule; in a job's default precision: bf16 autocast on
CUDA, fp32 on the CPU) is run to warm up, then timed over `--steps` steps, then profiled over as many with
torch.profiler. Reported per step:
- the step's wall time (timed without the profiler) and the device's busy time (the union of its kernels'
  intervals): busy / wall below 0.8 means the device waits for the host to launch work (launch-bound), near 1 that
  the kernels themselves set the pace;
- the kernel count and the mean gap between one kernel's end and the next one's start;
- device time by kind of kernel: matrix products (cuBLAS/CUTLASS), attention (the SDPA backend chosen: flash,
  memory-efficient, cuDNN or the math fallback), the rest (norms, dropout, activations, loss, optimiser);
- the kernels that take the most device time, and the operators that launched them.
On the CPU (`--device cpu`, the `--quick` smoke test) the "kernels" are torch's own operators on the host thread, and
busy is their self time: a profile of the host, not of a device.
"""

import tempfile
import time
from collections import defaultdict
from pathlib import Path

import common
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

KINDS = {  # a kernel's kind from its name, first match wins (lower case)
    "attention": ("flash", "fmha", "attention", "efficient", "cudnn", "sdpa", "softmax_warp"),
    "matrix products": ("gemm", "cutlass", "nvjet", "cublas", "sm90_xmma", "matmul", "addmm", "aten::mm", "aten::bmm"),
}


def kind_of(name: str) -> str:
    lower = name.lower()
    return next((kind for kind, marks in KINDS.items() if any(m in lower for m in marks)), "other")


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals: the time at least one kernel ran."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def kernels(prof, device: torch.device) -> list[tuple[str, float, float]]:
    """(name, start µs, duration µs) of the device's kernels; on the CPU, torch's operators with their self time."""
    if device.type == "cuda":
        return [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in prof.events()
                if e.device_type == DeviceType.CUDA]  # fmt: skip
    return [(e.name, e.time_range.start, e.self_cpu_time_total) for e in prof.events()
            if e.device_type == DeviceType.CPU and e.name.startswith("aten::")]  # fmt: skip


def report(label: str, found: list[tuple[str, float, float]], steps: int, wall_s: float, device) -> dict:
    """Prints the profile of `steps` steps that took `wall_s`; returns its per-step figures. Busy: the union of the
    kernels' intervals on a device; on the CPU the sum of the operators' self times."""
    wall_us = wall_s / steps * 1e6
    on_device = device.type == "cuda"
    busy = (busy_us([(s, s + d) for _, s, d in found]) if on_device else sum(d for *_, d in found)) / steps
    ordered = sorted(found, key=lambda k: k[1])
    gaps = [max(0.0, b[1] - a[1] - a[2]) for a, b in zip(ordered, ordered[1:])] if on_device else []
    by_kind, by_name = defaultdict(float), defaultdict(lambda: [0.0, 0])
    for name, _, d in found:
        by_kind[kind_of(name)] += d / steps
        by_name[name][0] += d / steps
        by_name[name][1] += 1
    attention = sorted({n for n, _, _ in found if kind_of(n) == "attention"})
    figures = {"wall_ms": wall_us / 1e3, "busy": busy / wall_us, "kernels": len(found) / steps,
               "gap_us": sum(gaps) / max(len(gaps), 1)}  # fmt: skip
    print(f"\n{label}: step {wall_us / 1e3:.1f} ms, {'device' if on_device else 'operators'} busy {busy / 1e3:.1f} ms "
          f"({figures['busy']:.0%}), {figures['kernels']:.0f} {'kernels' if on_device else 'operators'} a step"
          + (f", mean gap between kernels {figures['gap_us']:.1f} µs" if on_device else ""))  # fmt: skip
    common.table(["kind", "ms a step", "of busy"],
                 [[k, f"{t / 1e3:.2f}", f"{t / busy:.0%}"] for k, t in sorted(by_kind.items(), key=lambda x: -x[1])])
    print("attention kernels: " + ("; ".join(n[:90] for n in attention) if attention else "none found by name"))
    top = sorted(by_name.items(), key=lambda x: -x[1][0])[:8]
    common.table(["kernel (top 8 by time)", "ms a step", "calls a step"],
                 [[n[:100], f"{t / 1e3:.2f}", f"{c / steps:.0f}"] for n, (t, c) in top])  # fmt: skip
    common.verdict(f"{label}: device busy / step (below: launch-bound, the device waits for the host)",
                   figures["busy"], 0.8)  # fmt: skip
    return figures


def launching_operators(prof, steps: int) -> None:
    """The operators whose kernels take the most device time: where the copies, casts and reductions come from."""
    ops = [e for e in prof.key_averages() if e.device_type == DeviceType.CPU and e.self_device_time_total > 0]
    top = sorted(ops, key=lambda e: -e.self_device_time_total)[:10]
    if not top:  # on the CPU: no device kernels
        return
    common.table(["operator (top 10 by its kernels' time)", "ms a step", "calls a step"],
                 [[e.key[:70], f"{e.self_device_time_total / steps / 1e3:.2f}", f"{e.count / steps:.0f}"]
                  for e in top])  # fmt: skip


def profile_step(label: str, cfg, vocab: int, args, device: torch.device) -> None:
    batch = common.synthetic_batch(args.sentences, args.length, vocab).to(device)
    with tempfile.TemporaryDirectory() as tmp:
        _, step = common.train_step(cfg, common.build(cfg, vocab), Path(tmp), vocab, device)
        for _ in range(args.warmup):  # compiles a compiled step; plans and caches
            step(batch)
        common.synchronize(device)
        clock = time.perf_counter()  # the steps' wall time without the profiler's own cost on the host
        for _ in range(args.steps):
            step(batch)
        common.synchronize(device)
        wall_s = time.perf_counter() - clock
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(args.steps):
                step(batch)
            common.synchronize(device)
    flops = common.step_flops(cfg.model, vocab, args.sentences, args.length, args.length).total
    figures = report(label, kernels(prof, device), args.steps, wall_s, device)
    launching_operators(prof, args.steps)
    print(f"{label}: {flops / 1e9:.0f} GFLOP a step, {flops / (figures['wall_ms'] / 1e3) / 1e12:.1f} TFLOP/s achieved")


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="*", default=["base"])
    p.add_argument("--llama", nargs="*", default=[], help="LLaMA-style language models to profile too")
    p.add_argument("--sentences", type=int, default=256)
    p.add_argument("--length", type=int, default=48, help="tokens per side of every sentence (incl. bos/eos)")
    p.add_argument("--vocab", type=int, default=None, help="default: the task's vocab_size")
    p.add_argument("--steps", type=int, default=3, help="steps profiled (after --warmup steps)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--variant", action="append", default=[], metavar="NAME:OVERRIDE,...",
                   help="also profile each model under these config overrides")  # fmt: skip
    args = p.parse_args()
    if args.quick:
        args.models, args.llama, args.sentences, args.length, args.steps, args.warmup = ["micro"], [], 4, 8, 1, 1
    device = common.setup(args)
    language_model = ("task=lm_bible_en", "model.dropout=0.0")  # as train_throughput.py times the LLaMA-style models
    runs = [(name, ()) for name in args.models] + [(name, language_model) for name in args.llama]
    for name, task in runs:
        for variant in ["eager:"] + args.variant:
            label, overrides = variant.split(":", 1)
            cfg = common.compose_config(*task, f"model={name}", *filter(None, overrides.split(",")))
            vocab = args.vocab or cfg.task.vocab_size
            print(f"\n== model={name} {label}: batch {args.sentences}×{args.length}, vocab {vocab}, on {device}")
            try:
                profile_step(f"{name} {label}", cfg, vocab, args, device)
            except Exception as e:  # one model's failure (memory, a compiler error) leaves the others' profiles
                print(f"{name} {label}: FAILED: {type(e).__name__}: {str(e)[:400]}")


if __name__ == "__main__":
    main()
