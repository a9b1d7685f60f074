"""Frozen weights drawn on the fly against held in memory: weight bytes, peak RSS, decoding speed, export size.

    python benchmarks/on_the_fly.py [--models demo big] [--batches 1 16 128]

For each freeze pattern (the nine rows) of each model, two processes, one after the other: the model built as a
finished run builds it (`frozen_sweep.weights.build`), frozen weights resident or drawn on the fly
(`build_model_on_the_fly`: each frozen tensor drawn from (seed, name) just before the module that uses it runs, freed
after it). Each measures its weights at rest, the most weight bytes it ever held (on the fly: trainable + the most
frozen bytes the hooks held at once), its peak RSS (ru_maxrss: building included), sentences/s of greedy and beam-4
translation (`frozen_sweep.evaluate.decode.translate`) at each batch size, and the seconds spent drawing (median
of --repeats rounds: 3, big 1). Weights are untrained (speed and memory do not depend on their values): an untrained
model rarely ends a sentence, so every hypothesis runs to the cap of --max-len-b tokens; sources are synthetic,
--src-len subwords. The resident process also writes the model file (`frozen_sweep.weights.model_file`, with a 1-byte
stand-in vocabulary) and reports its size. A reservoir model (demo, reservoir=transformer) is measured too.

With --memory, peak RSS split into weights and decoding instead, for --patterns (default rows (3) and (6)): one
process per row, mode and setting, each reading its RSS once the model is built (torch + weights) and its peak RSS
once the sentences are translated (decoding = the difference); settings: batch 1 greedy, the translate command's
default batch (eval.batch_sentences sentences, --max-tokens 6,000 padded source tokens) at the default beam, and the
same capped at --cap-tokens padded source tokens a batch. Sources --src-len subwords, hypotheses --max-len-b tokens.

Targets: on the fly, the most weight bytes held ≤ trainable + the largest frozen tensor + 5%; row (3), 128 sentences
a batch: on-the-fly sentences/s ≥ 0.5× resident's, greedy and beam 4.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import common
import torch
from omegaconf import OmegaConf

from frozen_sweep.evaluate.decode import translate
from frozen_sweep.weights.build import build_model, build_model_on_the_fly
from frozen_sweep.weights.freeze import frozen_fingerprint, paper_row, parameter_counts
from frozen_sweep.weights.model_file import write_model_file

VOCAB = {"big": 36000, "demo": 4000, "micro": 60}  # big: the paper's shared vocabulary (213M parameters)
RESERVOIR = ("reservoir=transformer", "model.encoder_layers=6", "reservoir.count=2")
MB = 1e6


def worker(spec: dict) -> dict:
    """One model in one mode, measured; run in a process of its own so that its peak RSS is its own."""
    cfg = common.compose_config(f"model={spec['model']}", f"freeze={spec['freeze']}", *spec["extra"])
    vocab = VOCAB[spec["model"]]
    resident = spec["mode"] == "resident"
    model, hooks = (build_model(cfg, vocab), None) if resident else build_model_on_the_fly(cfg, vocab)
    model.eval()
    out = {"at_rest": sum(p.nbytes for p in model.parameters())}
    if resident:
        frozen = [p.nbytes for p in model.parameters() if not p.requires_grad]
        out |= {"full": out["at_rest"], "largest_frozen": max(frozen, default=0),
                "trainable": out["at_rest"] - sum(frozen), "ratio": parameter_counts(model)["trainable_ratio"]}
    search = OmegaConf.merge(cfg.eval, {"max_len_a": 0, "max_len_b": spec["max_len_b"]})
    stub = common.StubVocab(vocab)
    for beam in (1, 4):
        for batch in spec["batches"]:
            sources = common.synthetic_sentences(batch, spec["src_len"], spec["src_len"], vocab, seed=batch)
            timings = []
            for _ in range(spec["repeats"]):
                drawn = hooks.draw_s if hooks else 0.0
                started = time.perf_counter()
                translate(model, sources, stub, torch.device("cpu"),
                          OmegaConf.merge(search, {"batch_sentences": batch}), beam=beam)  # fmt: skip
                timings.append((time.perf_counter() - started, (hooks.draw_s if hooks else 0.0) - drawn))
            elapsed, draw_s = sorted(timings)[len(timings) // 2]  # the median round (by time) and its drawing
            out[f"{beam}/{batch}"] = {"sent_s": batch / elapsed, "draw_s": draw_s, "s": elapsed}
    out["held"] = out["at_rest"] + (hooks.peak_held_bytes if hooks else 0)
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # before the export: it holds the file
    if resident:  # the file's bytes are built in memory
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.safetensors"
            write_model_file(path, model, cfg.seed, OmegaConf.to_yaml(cfg), SimpleNamespace(model=b"\0"),
                             frozen_fingerprint(model))  # fmt: skip
            out["file"] = path.stat().st_size
    return out


def rss_now() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def memory_worker(spec: dict) -> dict:
    """Peak RSS of one model, mode and setting, split into what building it left resident and what decoding added."""
    cfg = common.compose_config(f"model={spec['model']}", f"freeze={spec['freeze']}")
    vocab = VOCAB[spec["model"]]
    resident = spec["mode"] == "resident"
    model, hooks = (build_model(cfg, vocab), None) if resident else build_model_on_the_fly(cfg, vocab)
    model.eval()
    built = rss_now()  # torch, the weights at rest (and allocator slack)
    search = OmegaConf.merge(cfg.eval, {"max_len_a": 0, "max_len_b": spec["max_len_b"],
                                        "batch_sentences": spec["sentences"]})  # fmt: skip
    sources = common.synthetic_sentences(spec["sentences"], spec["src_len"], spec["src_len"], vocab, seed=1)
    translate(model, sources, common.StubVocab(vocab), torch.device("cpu"), search, beam=spec["beam"],
              max_tokens=spec["max_tokens"])  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    held = sum(p.nbytes for p in model.parameters()) + (hooks.peak_held_bytes if hooks else 0)
    return {"built": built, "peak": peak, "held": held}


def measure_memory(args, model: str) -> None:
    """The peak-RSS table of rows --patterns of `model`, resident against on the fly."""
    default_batch = common.compose_config().eval
    settings = {"batch 1, greedy": (1, 1, None), f"default: {default_batch.batch_sentences} sentences, beam "
                f"{default_batch.beam}": (default_batch.batch_sentences, default_batch.beam, 6000),
                f"capped: --max-tokens {args.cap_tokens}": (default_batch.batch_sentences, default_batch.beam,
                                                              args.cap_tokens)}  # fmt: skip
    rows = []
    for freeze in args.patterns:
        label = paper_row(common.compose_config(f"freeze={freeze}").freeze)
        for setting, (sentences, beam, max_tokens) in settings.items():
            got = {}
            for mode in ("resident", "on-the-fly"):
                spec = {"model": model, "freeze": freeze, "mode": mode, "sentences": sentences, "beam": beam,
                        "max_tokens": max_tokens, "src_len": args.src_len, "max_len_b": args.max_len_b}  # fmt: skip
                got[mode] = run_worker(args, spec, "--memory-worker")
            res, otf = got["resident"], got["on-the-fly"]
            rows.append([label, setting, *[f"{r[k] / MB:.0f}" for r in (res, otf) for k in ("held", "built", "peak")],
                         f"{(res['peak'] - res['built']) / MB:.0f}", f"{(otf['peak'] - otf['built']) / MB:.0f}",
                         f"{(res['peak'] - otf['peak']) / MB:.0f} ({1 - otf['peak'] / res['peak']:.0%})"])  # fmt: skip
    print(f"\nmodel={model}: MB; sources {args.src_len} subwords, hypotheses {args.max_len_b} tokens")
    common.table(["row", "setting", "weights res.", "built res.", "peak res.", "weights otf", "built otf", "peak otf",
                  "decoding res.", "decoding otf", "saved"], rows)  # fmt: skip


def run_worker(args, spec: dict, flag: str = "--worker") -> dict:
    done = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), flag, json.dumps(spec)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode:
        sys.exit(f"worker {spec} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args, model: str, freeze: str, extra: tuple = ()) -> dict:
    results = {}
    for mode in ("resident", "on-the-fly"):
        spec = {"model": model, "freeze": freeze, "extra": list(extra), "mode": mode, "batches": args.batches,
                "src_len": args.src_len, "max_len_b": args.max_len_b,
                "repeats": args.repeats or (1 if model == "big" else 3)}  # fmt: skip
        results[mode] = run_worker(args, spec)
    return results


def report(model: str, rows: dict, batches: list[int]) -> bool:
    """Prints the memory and speed tables of one model; whether its targets are met."""
    print(f"\nmodel={model}, vocabulary {VOCAB[model]}: weights and memory (MB)")
    mem = []
    met = True
    for label, r in rows.items():
        res, otf = r["resident"], r["on-the-fly"]
        bound = (res["trainable"] + res["largest_frozen"]) * 1.05
        met &= otf["held"] <= bound
        full_file = rows["(0)"]["resident"]["file"] if "(0)" in rows else float("nan")
        mem.append([label, f"{res['ratio']:.3f}", res["full"] / MB, res["trainable"] / MB, res["largest_frozen"] / MB,
                    otf["held"] / MB, "yes" if otf["held"] <= bound else "NO", res["rss"] / MB, otf["rss"] / MB,
                    res["file"] / MB, f"{res['file'] / full_file:.3f}"])  # fmt: skip
    common.table(["row", "trainable", "resident", "trainable", "largest frozen", "on-the-fly held", "≤ bound",
                  "RSS resident", "RSS on-the-fly", "file", "file/full"], mem)  # fmt: skip
    print(f"\nmodel={model}: sentences/s resident → on the fly (ratio; seconds drawing / decoding on the fly)")
    speed = []
    for label, r in rows.items():
        cells = [label]
        for key in [f"{beam}/{b}" for beam in (1, 4) for b in batches]:
            res, otf = r["resident"][key], r["on-the-fly"][key]
            cells.append(f"{res['sent_s']:.3g}→{otf['sent_s']:.3g} ({otf['sent_s'] / res['sent_s']:.2f}; "
                         f"{otf['draw_s']:.2g}/{otf['s']:.2g})")  # fmt: skip
        speed.append(cells)
    common.table(["row", *[f"{'greedy' if beam == 1 else 'beam 4'} @{b}" for beam in (1, 4) for b in batches]], speed)
    if "(3)" in rows:
        for beam in (1, 4):
            key = f"{beam}/{max(batches)}"
            ratio = rows["(3)"]["on-the-fly"][key]["sent_s"] / rows["(3)"]["resident"][key]["sent_s"]
            met &= common.verdict(f"model={model} row (3) beam {beam} @{max(batches)}: on-the-fly / resident "
                                  "sentences/s", ratio, 0.5)  # fmt: skip
    return met


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--models", nargs="+", default=["demo", "big"])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 128])
    p.add_argument("--src-len", type=int, default=12, help="subwords per synthetic source sentence")
    p.add_argument("--max-len-b", type=int, default=8, help="tokens per hypothesis, end-of-sentence included")
    p.add_argument("--patterns", nargs="+", default=list(common.FREEZE_PATTERNS), help="freeze patterns (default: "
                   "the nine rows); the reservoir model is measured with demo when `none` is among them")  # fmt: skip
    p.add_argument("--memory", action="store_true", help="the peak-RSS table instead (default rows (3) and (6))")
    p.add_argument("--cap-tokens", type=int, default=1000, help="--memory: the capped setting's padded source tokens")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # one measurement, in a process of its own
    p.add_argument("--memory-worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker or args.memory_worker:
        common.cpu.set_threads(args.threads)
        common.keep_freed_memory()
        measured = worker(json.loads(args.worker)) if args.worker else memory_worker(json.loads(args.memory_worker))
        print(json.dumps(measured))
        return
    if args.memory and args.patterns == list(common.FREEZE_PATTERNS):
        args.patterns = ["ffn", "att_ffn"]
    patterns = args.patterns
    if args.quick:
        args.models, args.batches, args.max_len_b, patterns = ["micro"], [1, 4], 4, ("none", "ffn")
        args.patterns, args.cap_tokens = ["ffn"], 20
    common.setup(args)
    if args.memory:
        for model in args.models:
            measure_memory(args, model)
        return
    met = True
    for model in args.models:
        rows = {}
        for freeze in patterns:
            label = paper_row(common.compose_config(f"freeze={freeze}").freeze)
            rows[label] = measure(args, model, freeze)
        if model == "demo" and "none" in patterns:
            rows["reservoir"] = measure(args, model, "none", RESERVOIR)
        met &= report(model, rows, args.batches)
        held = max(r["on-the-fly"]["held"] / (r["resident"]["trainable"] + r["resident"]["largest_frozen"])
                   for r in rows.values())  # fmt: skip
        met &= common.verdict(f"model={model}: on-the-fly weights held / (trainable + largest frozen tensor), worst "
                              "row", held, 1.05, at_most=True)  # fmt: skip
    print("all targets met" if met else "some targets NOT met")


if __name__ == "__main__":
    main()
