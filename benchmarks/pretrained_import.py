"""A pretrained checkpoint here against transformers, side by side in one run: import time and peak memory of a
checkpoint of SmolLM2-135M's shape (random weights, saved locally) against `LlamaForCausalLM.from_pretrained`; our
training step against the transformers model on the same shapes and precision (fp32, bf16 autocast); a
frozen-majority step (one layer trainable, as a relearn job trains) against a full step, with the saving an ideal
step would make.

    python benchmarks/pretrained_import.py [--threads 2] [--batch 4] [--length 256]

Each import runs in a fresh process, alternated over rounds: its seconds, its peak RSS and the RSS it still holds
after, both above the RSS before the import (the peak restarted there: /proc/self/clear_refs); the steps are timed
round-robin in one process (benchmarks/common.py). Time grows with the checkpoint's bytes (import) and with batch ×
length × parameters (steps); the frozen step's ideal is counted in matrix-product terms from parameter counts
(`ideal_frozen_ratio`).
"""

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import common  # noqa: E402

# SmolLM2-135M's config.json (HuggingFaceTB/SmolLM2-135M); --quick: a tiny model of the same kind
SMOLLM2_135M = {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
                "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                "tie_word_embeddings": True, "rope_theta": 100000.0}  # fmt: skip
TINY = SMOLLM2_135M | {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "vocab_size": 512}  # fmt: skip
CHILD = """
import json, sys, time, torch, transformers
from frozen_sweep.weights.pretrained import load_pretrained
def kib(key):  # this process's memory from /proc/self/status
    return int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith(key)))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) restarts from the current RSS: the imports' own peak is not counted
base, start = kib("VmRSS:"), time.perf_counter()
model = load_pretrained(sys.argv[2])[0] if sys.argv[1] == "ours" else transformers.LlamaForCausalLM.from_pretrained(
    sys.argv[2], dtype=torch.float32)
seconds = time.perf_counter() - start
print(json.dumps({"s": seconds, "peak_mib": (kib("VmHWM:") - base) / 1024, "held_mib": (kib("VmRSS:") - base) / 1024}))
"""


def save_checkpoint(directory: Path, shape: dict) -> None:
    import transformers

    torch.manual_seed(0)
    transformers.LlamaForCausalLM(transformers.LlamaConfig(**shape)).save_pretrained(directory)


def imports(directory: Path, rounds: int, threads: int) -> dict[str, dict[str, float]]:
    """Median import seconds, peak and held RSS (MiB above the RSS before it) of each loader, alternated over fresh
    processes."""
    runs = {"ours": [], "from_pretrained": []}
    env = {"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
    for r in range(rounds):
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            out = subprocess.run([sys.executable, "-c", CHILD, name, str(directory)], capture_output=True, text=True,
                                 check=True, cwd=common.ROOT, env=env)  # fmt: skip
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = ("s", "peak_mib", "held_mib")
    return {name: {key: statistics.median(x[key] for x in xs) for key in keys} for name, xs in runs.items()}


def step(model, ids: torch.Tensor, bf16: bool, ours: bool):
    """One AdamW update of next-token loss on `ids` (fp32 weights; bf16: autocast, as trainer.amp_cpu=true)."""
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)

    def run() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(None, ids) if ours else model(ids).logits
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()

    run.model, run.optimiser = model, optimiser
    return run


def held_mib(run) -> float:
    """What a step holds beyond the weights, measured on its tensors: gradients and the optimiser's state."""
    grads = sum(p.grad.numel() * p.grad.element_size() for p in run.model.parameters() if p.grad is not None)
    state = sum(t.numel() * t.element_size() for s in run.optimiser.state.values() for t in s.values()
                if torch.is_tensor(t))  # fmt: skip
    return (grads + state) / 2**20


def ideal_frozen_ratio(model, layer: int) -> float:
    """The frozen step's share of a full step's matrix-product work, one layer of N trainable: the forward pass (1
    unit per parameter), activation gradients from the output down to that layer (1 a parameter: the head and the
    layers at and above it), and weight gradients of that layer alone (1 a parameter); a full step is 3 a parameter
    everywhere (the embedding lookup has no product: the tied output projection counts once, as the head)."""
    layers = model.decoder.layers
    per_layer = sum(p.numel() for p in layers[0].parameters())
    head = model.output.weight.numel()
    forward = head + per_layer * len(layers)
    frozen = forward + head + per_layer * (len(layers) - layer) + per_layer
    return frozen / (3 * forward)


def only_layer_trainable(model, layer: int) -> None:
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(f"decoder.layers.{layer}."))


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--length", type=int, default=256)
    args = p.parse_args()
    common.setup(args)
    import transformers

    from frozen_sweep.weights.pretrained import load_pretrained

    shape, repeats = (TINY, 1) if args.quick else (SMOLLM2_135M, args.repeats or 3)
    batch, length = (2, 16) if args.quick else (args.batch, args.length)
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        save_checkpoint(Path(tmp), shape)
        size = sum(f.stat().st_size for f in Path(tmp).glob("*.safetensors"))
        loaded = imports(Path(tmp), 2 if args.quick else 3, args.threads)
        print(f"checkpoint: SmolLM2-135M's shape{' (--quick: tiny)' if args.quick else ''}, {size / 2**20:.0f} MiB "
              f"of safetensors; import in a fresh process each, median of rounds")  # fmt: skip
        common.table(["loader", "seconds", "peak MiB", "held MiB"],
                     [[name, x["s"], x["peak_mib"], x["held_mib"]] for name, x in loaded.items()])  # fmt: skip
        common.verdict("import time from_pretrained / ours", loaded["from_pretrained"]["s"] / loaded["ours"]["s"], 1.0)
        ours = load_pretrained(tmp)[0].train()
        hf = transformers.LlamaForCausalLM.from_pretrained(tmp, dtype=torch.float32).train()
    ids = torch.randint(0, shape["vocab_size"], (batch, length), generator=torch.Generator().manual_seed(0))
    print(f"training step: batch {batch} × {length} tokens, AdamW, {sum(p.numel() for p in ours.parameters()):,} "
          "parameters")  # fmt: skip
    rows = []
    for precision, bf16 in (("fp32", False), ("bf16 autocast", True)):
        times = common.interleaved({"ours": step(ours, ids, bf16, True), "transformers": step(hf, ids, bf16, False)},
                                   repeats)  # fmt: skip
        rows.append([precision, times["ours"], times["transformers"], times["transformers"] / times["ours"]])
        common.verdict(f"{precision} step transformers / ours", times["transformers"] / times["ours"], 1.0)
    common.table(["precision", "ours s", "transformers s", "ratio"], rows)
    layer = len(ours.decoder.layers) // 2
    full = step(ours, ids, False, True)
    frozen_model = load_pretrained_copy(ours, layer)
    trainable = sum(p.numel() for p in frozen_model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in frozen_model.parameters())
    ideal = ideal_frozen_ratio(frozen_model, layer)
    print(f"frozen-majority step (fp32): layer {layer} of {len(ours.decoder.layers)} trainable, {trainable:,} of "
          f"{total:,} parameters; held beyond the weights: gradients and AdamW's two moments (ideal: 12 bytes a "
          "trainable parameter)")  # fmt: skip
    one = step(frozen_model, ids, False, True)
    times = common.interleaved({"full": full, "one layer": one}, repeats)
    common.table(["step", "seconds", "of full", "ideal of full", "held MiB", "ideal MiB"],
                 [["full", times["full"], 1.0, 1.0, held_mib(full), 12 * total / 2**20],
                  ["one layer", times["one layer"], times["one layer"] / times["full"], ideal, held_mib(one),
                   12 * trainable / 2**20]])  # fmt: skip
    common.verdict("one-layer step / full step, against the ideal", times["one layer"] / times["full"], ideal,
                   at_most=True)  # fmt: skip


def load_pretrained_copy(model, layer: int):
    import copy

    frozen = copy.deepcopy(model)
    only_layer_trainable(frozen, layer)
    return frozen


if __name__ == "__main__":
    main()
