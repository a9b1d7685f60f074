"""Every benchmark script runs end to end on tiny sizes (`--quick`), so the scripts do not rot (those marked `bench`:
`make test-bench`). Nothing is timed:
the figures of a --quick run are meaningless. MarianMT is skipped when `transformers` is not installed."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["train_throughput", "freeze_speedup", "reservoir_step", "decode", "checkpoint_size", "batching",
           "sweep_overhead", "logging_overhead", "busy_cpu", "collect_records", "job_throughput", "packing", "cpu_bf16",
           "sweep_tail", "data_scale", "hub_prepare", "distributed", "on_the_fly", "inference_engines", "generate",
           "estimate_accuracy", "pretrained_import", "step_profile", "compile_time"]


def run(script: str, *args: str, timeout: int = 300) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), "--quick", "--threads", "1", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


OWN_TESTS = ("train_throughput", "sweep_overhead", "busy_cpu", "cpu_bf16", "sweep_tail")  # with their own asserts
# scripts whose --quick run launches real sweeps, rank processes or compiles (a minute and more on 2 cores): `make
# test-bench`, not `make test` (the features they time have their own end-to-end tests; these check that the scripts
# still run)
LAUNCHING = ("distributed", "on_the_fly", "packing", "data_scale", "hub_prepare", "estimate_accuracy", "compile_time")


@pytest.mark.parametrize(
    "script", [pytest.param(s, marks=pytest.mark.bench) if s in LAUNCHING else s for s in SCRIPTS if s not in OWN_TESTS]
)
def test_benchmark_runs(script):
    if script == "compile_time" and torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("torch's compiler cannot build CPU code with ATEN_CPU_CAPABILITY=default (tests/test_compile.py)")
    out = run(script)
    # every script states its target and whether it is met; reservoir_step has none: it sets figures beside the ideal
    assert ("ideal ratio" if script == "reservoir_step" else "TARGET") in out, out


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_train_throughput_compares_with_references_in_one_precision(precision):
    """Every contender, the matmul peak and the products' floor in the precision asked for (fp32 by default on the
    CPU, as a job trains), said in each header; a step below its own products is never a result."""
    out = run("train_throughput", *(["--precision", "bf16"] if precision == "bf16" else []))
    assert "TARGET" in out and "nn.Transformer" in out and "MEASUREMENT ERROR" not in out
    named = "bf16 autocast" if precision == "bf16" else "fp32"
    assert out.count(f"every contender in {named};") == 2 and f"matmul peak ({precision} 256²" in out
    if importlib.util.find_spec("transformers") is None:
        assert "MarianMT: skipped" in out
    else:
        assert "ours / MarianMT" in out and "ours / LlamaForCausalLM" in out
    assert "key/value cache after 256 positions: 65,536 bytes with 2 key/value heads, 131,072 with 4: 0.500" in out


def test_a_step_faster_than_its_own_matrix_products_is_a_measurement_error(capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common

    assert common.measured("ours", floor_s=0.010, step_s=0.012, floor="its products") and not capsys.readouterr().out
    assert not common.measured("ours", floor_s=0.010, step_s=0.008, floor="its products")
    assert capsys.readouterr().out.startswith("MEASUREMENT ERROR ours: 8.0 ms, below its products (10.0 ms)")


@pytest.mark.bench
@pytest.mark.slow
def test_sweep_overhead_runs():  # launches real sweeps (basic and local_gpus) of two micro jobs
    out = run("sweep_overhead", "--slurm", "no", timeout=600)
    assert "local_gpus" in out and "collector" in out


@pytest.mark.bench
@pytest.mark.slow
def test_cpu_bf16_runs():  # a real local_gpus sweep of two micro jobs, fp32 and bf16, and sacrebleu's paired test
    out = run("cpu_bf16")
    assert "TARGET bf16 / fp32 training tokens/s" in out and "TARGET bf16 test BLEU no worse" in out
    assert "paired bootstrap p =" in out


@pytest.mark.bench
@pytest.mark.slow
def test_sweep_tail_runs():  # three real local_gpus sweeps of three micro jobs, two at a time
    out = run("sweep_tail")
    assert "TARGET sweep wall time" in out and "TARGET jobs that ran together" in out and "job 3" in out


@pytest.mark.bench
@pytest.mark.slow
def test_busy_cpu_runs():  # worker processes, a stopped and resumed competitor, real local_gpus sweeps of micro jobs
    out = run("busy_cpu", timeout=600)
    assert "TARGET job: busy / quiet" in out and "local_gpus sweeps" in out
    assert "free cores" in out and "torch's default" in out  # the job's threads beside today's


def test_flop_count_follows_autograd():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common

    m = common.compose_config("model=micro").model
    frozen = {
        f: common.frozen_components(common.compose_config(f"freeze={f}").freeze)
        for f in ("none", "emb", "ffn", "emb_att")
    }
    flops = {f: common.step_flops(m, 100, 4, 8, 8, components) for f, components in frozen.items()}
    none = flops["none"]
    assert none.backward == 2 * none.forward  # everything trainable: input and weight gradients everywhere
    assert all(f.forward == none.forward for f in flops.values())
    assert flops["ffn"].total < none.total and flops["emb_att"].total < flops["emb"].total < none.total


def test_uncached_search_is_the_same_search():  # what benchmarks/decode.py compares the cache against
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common

    from frozen_sweep.evaluate.decode import translate

    cfg = common.compose_config("model=micro")
    model = common.build(cfg, 50)
    sources = common.synthetic_sentences(12, 2, 10, 50, seed=0)
    for beam in (1, 3):
        cached, uncached = (translate(model, sources, common.StubVocab(50), torch.device("cpu"), cfg.eval, beam=beam,
                                      cache=c) for c in (True, False))  # fmt: skip
        assert cached == uncached
