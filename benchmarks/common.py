"""What the benchmark scripts share: flags, set-up, real-config models and train steps, side-by-side timing, FLOPs.

Every figure a script prints is measured in the same process as the figure it is compared with, interleaved: each
round times every contender once (in a rotated order), and a contender's figure is the median over rounds. These
machines are shared and noisy; an absolute time on its own means little, the ratios are what to read.
"""

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_dir

from frozen_sweep.config import NormPosition, ReservoirType, StackName, register_configs
from frozen_sweep.config.stack_layout import reservoir_pattern
from frozen_sweep.data import Split, TaskData
from frozen_sweep.data.batching import Batch
from frozen_sweep.data.specials import OURS
from frozen_sweep.job.runner import keep_freed_memory
from frozen_sweep.system import cpu
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "frozen_sweep" / "conf"
FREEZE_PATTERNS = ("none", "emb", "att", "ffn", "att_identity", "ffn_identity", "emb_ffn", "emb_att", "att_ffn")
register_configs()


# ---- flags and set-up ---------------------------------------------------------------------------------------------


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2: this machine's cores)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one round: a smoke test, figures meaningless")
    p.add_argument("--repeats", type=int, default=None, help="timed rounds per contender (median taken)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    return p


def setup(args) -> torch.device:
    """What a real job does before training (glibc malloc tuned, thread count), plus fixed seeds; the device."""
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device is visible")
    keep_freed_memory()
    cpu.set_threads(args.threads)  # as a job sets them
    torch.manual_seed(0)
    if args.device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()} kernels, {args.threads} threads, "
        f"{os.cpu_count()} CPUs, load average {load} at start"
        f"{' (shared machine: expect noise)' if os.getloadavg()[0] > 0.5 else ''}"
        f"{'; --quick: figures meaningless' if args.quick else ''}"
    )
    return torch.device(args.device)


def task_overrides(quick: bool, tmp: str) -> list[str]:
    """The embedded corpus; with `quick`, the tests' small synthetic corpus written under `tmp` (task=text_files)."""
    if not quick:
        return ["task=bible_es_en"]
    sys.path.insert(0, str(ROOT))
    from tests.conftest import write_corpus

    corpus = write_corpus(Path(tmp) / "corpus")
    return ["task=text_files", f"task.path={corpus}", "task.src_lang=es", "task.tgt_lang=en", "task.vocab_size=60",
            f"task.cache_dir={tmp}/cache"]  # fmt: skip


def compose_config(*overrides: str):
    """The real config tree, composed as `python -m frozen_sweep` would."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


# ---- synthetic data of fixed shape, and models built by the project's own code ----------------------------------


class StubVocab:
    """Stands in for a SentencePiece vocabulary: only its size, its special ids and a decode are used."""

    specials = OURS

    def __init__(self, size: int):
        self.size = size

    def __len__(self) -> int:
        return self.size

    def decode(self, ids: list[int]) -> str:
        return " ".join(map(str, ids))


def synthetic_sentences(n: int, min_len: int, max_len: int, vocab: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab) for _ in range(rng.randint(min_len, max_len))] for _ in range(n)]


def synthetic_batch(sentences: int, length: int, vocab: int, seed: int = 0) -> Batch:
    """A Batch as the trainer sees it (collated by the project's code): every side `length` tokens incl. eos/bos."""
    src = synthetic_sentences(sentences, length - 1, length - 1, vocab, seed)
    tgt = synthetic_sentences(sentences, length - 1, length - 1, vocab, seed + 1)
    return Split.from_ids(src, tgt).collate(np.arange(sentences))


def stub_data(vocab: int, n: int = 8) -> TaskData:
    split = Split.from_ids(synthetic_sentences(n, 3, 8, vocab, 1), synthetic_sentences(n, 3, 8, vocab, 2), None, [""] * n)
    return TaskData(StubVocab(vocab), split, split, split, {})


def build(cfg, vocab: int) -> torch.nn.Module:
    """The model as a job builds it: seeded init and the freeze pattern applied (frozen_sweep.weights.build.build_model)."""
    return build_model(cfg, vocab)


def train_step(cfg, model, run_dir: Path, vocab: int, device=torch.device("cpu")) -> tuple[Trainer, Callable]:
    """The trainer's own step (forward, loss, backward, Adam, schedule) on `model`, moved to `device`."""
    trainer = Trainer(cfg, stub_data(vocab), model.to(device), device, run_dir)
    return trainer, trainer._train_step


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a timer measures it (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- timing side by side ------------------------------------------------------------------------------------------


def interleaved(
    contenders: dict[str, Callable[[], object]], repeats: int, warmup: int = 1, device=torch.device("cpu"),
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median seconds per call of each contender, timed round-robin (order rotated every round); on a GPU each call
    is timed until its work is done. `clock=time.process_time`: CPU seconds of this process, which other work on a
    busy machine inflates less than wall time."""
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            synchronize(device)
            started = clock()
            contenders[name]()
            synchronize(device)
            elapsed = clock() - started
            if r >= warmup:
                times[name].append(elapsed)
    return {n: statistics.median(t) for n, t in times.items()}


def matmul_flops_per_s(n: int = 1024, calls: int = 8, device=torch.device("cpu"), dtype=torch.float32) -> Callable:
    """A contender for `interleaved`: `calls` n×n matmuls; FLOPs per call of the returned function: 2n³·calls."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)

    def run():
        for _ in range(calls):
            torch.mm(a, b, out=out)

    run.flops = 2 * n**3 * calls
    return run


def verdict(label: str, value: float, target: float, unit: str = "×", at_most: bool = False) -> bool:
    met = value <= target if at_most else value >= target
    sign = "≤" if at_most else "≥"
    print(f"TARGET {label}: {value:.3g}{unit} (target {sign} {target:g}{unit}): {'met' if met else 'NOT MET'}")
    return met


def measured(label: str, floor_s: float, step_s: float, floor: str) -> bool:
    """Whether a step took at least the time its own matrix products need (`floor_s`); a faster step is a
    measurement error (a clock, a contender that skipped work), said so and counted as a failure, not a result."""
    if step_s >= floor_s:
        return True
    print(f"MEASUREMENT ERROR {label}: {step_s * 1e3:.1f} ms, below {floor} ({floor_s * 1e3:.1f} ms): not a result")
    return False


def table(header: list[str], rows: Iterable[list]) -> None:
    rows = [[f"{c:.3g}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    sys.stdout.flush()


# ---- counting matrix products -------------------------------------------------------------------------------------


@dataclass
class Flops:
    forward: int = 0
    backward: int = 0

    @property
    def total(self) -> int:
        return self.forward + self.backward


def step_flops(
    m, vocab: int, sentences: int, src_len: int, tgt_len: int, frozen: frozenset = frozenset(), reservoir=None
) -> Flops:
    """Matmul FLOPs of one training step of the model `m` (cfg.model), following autograd's rules.

    Forward: 2·N·in·out per Linear; attention scores and weighted values 2·B·Tq·Tk·d each (causal ones counted in
    full); the output projection. Backward of a Linear: the input gradient (= its forward) when its input depends
    on something trainable, plus the weight gradient (= its forward) when its weight is trainable. Backward of the
    attention products: the gradient of each operand that depends on something trainable. So a frozen weight drops
    its weight gradient, and a block with nothing trainable in or below it drops its whole backward. Embedding
    look-ups, norms and element-wise work are not counted. `frozen`: components (emb, att, ffn, other) frozen.
    """
    d, f, B = m.d_model, m.ffn_dim, sentences
    post = NormPosition(m.norm) == NormPosition.post
    c = Flops()

    def trains(component: str) -> bool:
        return component not in frozen

    def linear(n: int, i: int, o: int, x_grad: bool, component: str) -> bool:
        cost = 2 * n * i * o
        c.forward += cost
        c.backward += cost * x_grad + cost * trains(component)
        return x_grad or trains(component)

    def attention(tq: int, q_grad: bool, tk: int, kv_grad: bool) -> bool:
        q = linear(B * tq, d, d, q_grad, "att")
        k = linear(B * tk, d, d, kv_grad, "att")
        v = linear(B * tk, d, d, kv_grad, "att")
        unit = 2 * B * tq * tk * d
        c.forward += 2 * unit  # q·kᵀ, then probabilities · v
        c.backward += unit * ((q or k) + v + q + k)  # d(probs) = dy·vᵀ; dv; dq; dk
        return linear(B * tq, d, d, q or k or v, "att")  # (every argument evaluated before the call)

    def ffn(n: int, x_grad: bool) -> bool:
        return linear(n, f, d, linear(n, d, f, x_grad, "ffn"), "ffn")

    def sublayer(x_grad: bool, fn) -> bool:  # residual + layer norm (component "other")
        out = fn(x_grad if post else x_grad or trains("other"))  # called first: `or` would skip it
        return x_grad or out or (post and trains("other"))

    def stack_end(x_grad: bool) -> bool:
        return x_grad or (not post and trains("other"))  # a pre-norm stack ends with a norm

    def encoder_layer(x: bool) -> bool:
        x = sublayer(x, lambda h: attention(src_len, h, src_len, h))
        return sublayer(x, lambda h: ffn(B * src_len, h))

    def encoder_reservoir(x: bool) -> bool:
        """A frozen layer: forward, and input gradients when something below trains — none with backskipping."""
        nonlocal frozen
        everything, backward = frozen, c.backward
        frozen = frozenset({"emb", "att", "ffn", "other"})
        kind, n = ReservoirType(reservoir.type), B * src_len
        if kind == ReservoirType.transformer:
            encoder_layer(x)
        elif kind == ReservoirType.ffn:
            ffn(n, x)
        elif kind == ReservoirType.bigru:  # two directions: input and recurrent projections to 3 gates of d/2
            for _ in range(2):
                linear(n, d, 3 * d // 2, x, "other"), linear(n, d // 2, 3 * d // 2, x, "other")
        else:  # a convolution: a linear map of `kernel` neighbouring positions
            linear(n, d * reservoir.conv_kernel, d, x, "other")
        frozen = everything
        if reservoir.backskip:
            c.backward = backward
        return x  # residual: the gradient reaches the layers below exactly when it did before

    memory = False
    if m.encoder_layers:
        on_encoder = reservoir is not None and StackName(reservoir.stack) == StackName.encoder
        if reservoir is not None and not on_encoder and reservoir.count:
            raise ValueError("step_flops counts encoder reservoirs only")
        pattern = reservoir_pattern(m.encoder_layers, reservoir) if on_encoder else "L" * m.encoder_layers
        x = trains("emb")
        for kind in pattern:
            x = encoder_reservoir(x) if kind == "R" else encoder_layer(x)
        memory = stack_end(x)
    y = trains("emb")
    for _ in range(m.decoder_layers):
        y = sublayer(y, lambda h: attention(tgt_len, h, tgt_len, h))
        if m.encoder_layers:
            y = sublayer(y, lambda h: attention(tgt_len, h, src_len, memory))
        y = sublayer(y, lambda h: ffn(B * tgt_len, h))
    linear(B * tgt_len, d, vocab, stack_end(y), "emb")  # output projection (tied to the embeddings or not: emb)
    return c


def frozen_components(freeze_cfg) -> frozenset:
    return frozenset(c for c in ("emb", "att", "ffn", "other") if freeze_cfg[c].frozen)


def optional_import(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def fmt_rate(x: float | None, unit: str = "") -> str:
    if x is None:
        return "–"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{prefix}{unit}"
    return f"{x:.3g}{unit}"
