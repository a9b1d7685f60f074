"""bf16 autocast on the CPU in real jobs (`trainer.amp_cpu`): tokens/s and BLEU against fp32, side by side.

    python benchmarks/cpu_bf16.py [--steps 3400] [override ...]

Row (0) of the CPU demo (experiment=demo_table, freeze=none) trained twice with the same updates and seed, fp32 and
bf16 autocast, as one 2-job `local_gpus` sweep: both jobs run at once, one thread each (trainer.threads=1: the job
that finishes first does not hand its core to the other), so both see the same machine. Printed per job: training
tokens/s (its result.json), test BLEU (beam 4) and the best validation BLEU; then bf16/fp32 tokens/s and the paired
bootstrap p of the test BLEU difference (sacrebleu's PairedTest, 1,000 resamples). Targets: tokens/s ≥ 1.1× and
BLEU no worse (bf16 ≥ fp32, or p ≥ 0.05). Whether oneDNN computes bf16 natively here is printed
(system.kernels.native_bf16): without that it emulates bf16 and autocast is slower.
Extra arguments are config overrides for both jobs (trainer.length_multiple=1, task.max_len=40, ...).
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import torch
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from frozen_sweep.run.directory import RESULT_FILE, TEST_HYPOTHESES, TEST_REFERENCES
from frozen_sweep.system.kernels import native_bf16
from frozen_sweep.tables.significance import read_lines

PRECISIONS = {"fp32": "false", "bf16": "true"}  # name → trainer.amp_cpu


def demo_row(quick: bool, tmp: str) -> list[str]:
    """Row (0) of the CPU demo; with `quick`, a micro job on the tests' small corpus (written under `tmp`)."""
    if not quick:
        return ["experiment=demo_table", "freeze=none"]
    return [*common.task_overrides(True, tmp), "model=micro", "trainer.max_tokens=512", "eval.beam=1",
            "trainer.warmup_steps=10", "trainer.valid_bleu_sentences=20", "freeze=none"]  # fmt: skip


def local_sweep(directory: Path, overrides: list[str]) -> float:
    """Wall seconds of a `local_gpus` sweep with `overrides` into `directory`; RuntimeError with its output if it
    fails."""
    command = [sys.executable, "-m", "frozen_sweep", "-m", *overrides, "trainer.progress=false",
               "hydra/launcher=local_gpus", f"hydra.sweep.dir={directory}"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=common.ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"sweep failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def job_dir(directory: Path, amp_cpu: str) -> Path:
    """The directory of the sweep's job with trainer.amp_cpu=`amp_cpu`, found by the overrides its record keeps."""
    wanted = f"trainer.amp_cpu={amp_cpu}"  # the sweep writes the bool back as True/False
    results = directory.rglob(RESULT_FILE)
    (found,) = [p.parent for p in results if wanted in map(str.lower, json.loads(p.read_text())["overrides"])]
    return found


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--steps", type=int, default=3400, help="updates per job (the CPU demo's)")
    p.add_argument("overrides", nargs="*", help="config overrides for both jobs")
    args = p.parse_args()
    common.setup(args)  # prints torch, load; the jobs run one thread each
    native = native_bf16()
    print(f"CPU: {torch.backends.cpu.get_cpu_capability()}, bf16 instructions: {'yes' if native else 'no (emulated)'}")
    with tempfile.TemporaryDirectory() as tmp:
        steps = 20 if args.quick else args.steps
        config = [*demo_row(args.quick, tmp), f"trainer.max_steps={steps}", "trainer.max_time_s=null", *args.overrides]
        directory = Path(tmp) / "sweep"
        amp_cpu = ",".join(PRECISIONS.values())
        wall = local_sweep(directory, [*config, f"trainer.amp_cpu={amp_cpu}", "hydra.launcher.max_parallel=2",
                                       "trainer.threads=1"])  # fmt: skip
        rows, jobs = [], {}
        for name, amp_cpu in PRECISIONS.items():
            run = job_dir(directory, amp_cpu)
            record = json.loads((run / RESULT_FILE).read_text())
            jobs[name] = record, read_lines(run / TEST_HYPOTHESES), read_lines(run / TEST_REFERENCES)
            rows.append([name, record["steps"], f"{record['train_tokens_per_s']:,.0f}", f"{record['test_metric']:.2f}",
                         f"{record['best_metric']:.2f}"])  # fmt: skip
    print(f"{' '.join(config)}: 2 jobs side by side, {wall:.0f} s")
    common.table(["precision", "updates", "train tokens/s", "test BLEU", "best valid BLEU"], rows)
    (fp32, fp32_hyps, refs), (bf16, bf16_hyps, bf16_refs) = jobs["fp32"], jobs["bf16"]
    assert refs == bf16_refs, "the two jobs were tested on different references"
    _, scores = PairedTest([("fp32", fp32_hyps), ("bf16", bf16_hyps)], {"BLEU": BLEU(references=[refs])},
                           references=None, test_type="bs")()  # fmt: skip
    p_value = scores["BLEU"][1].p_value if bf16_hyps != fp32_hyps else 1.0
    difference = bf16["test_metric"] - fp32["test_metric"]
    print(f"test BLEU bf16 − fp32: {difference:+.2f} (paired bootstrap p = {p_value:.3f})")
    common.verdict("bf16 / fp32 training tokens/s", bf16["train_tokens_per_s"] / fp32["train_tokens_per_s"], 1.1)
    no_worse = bf16["test_metric"] >= fp32["test_metric"] or p_value >= 0.05
    print(f"TARGET bf16 test BLEU no worse than fp32 (higher, or p ≥ 0.05): {'met' if no_worse else 'NOT met'}")


if __name__ == "__main__":
    main()
