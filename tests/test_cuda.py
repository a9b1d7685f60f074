"""On a GPU: a train step and a bit-identical resume, beam search against the CPU, the bf16 path, the packing
launcher. Skipped where no CUDA device is visible (CI); run on the GPU machine with `pytest -m cuda`."""

import os

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from frozen_sweep.data import load_task
from frozen_sweep.evaluate.decode import translate
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model
from tests.conftest import compose_config

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS; read when CUDA starts
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")]
CUDA = torch.device("cuda")


@pytest.fixture
def deterministic():
    """Deterministic kernels. SDPA's memory-efficient backward pass is documented as non-deterministic, so attention
    runs on its math backend."""
    torch.use_deterministic_algorithms(True)
    with sdpa_kernel(SDPBackend.MATH):
        yield
    torch.use_deterministic_algorithms(False)


def weights(model) -> list[torch.Tensor]:
    return [p.detach().cpu().clone() for p in model.parameters()]


class Killed(Exception):
    """Stands for the job being killed right after a checkpoint."""


def kill_after_first_validation(state) -> None:
    raise Killed


def test_training_resumes_bit_identical_on_the_gpu(tmp_path, micro_overrides, deterministic):
    cfg = compose_config(*micro_overrides, "trainer.max_steps=8", "trainer.validate_every_steps=4",
                         "trainer.valid_bleu_sentences=0", "trainer.amp=false")  # fmt: skip
    data = load_task(cfg.task)
    runs = {name: tmp_path / name for name in ("straight", "killed")}
    for run_dir in runs.values():
        run_dir.mkdir()
    straight_model = build_model(cfg, len(data.vocab)).to(CUDA)
    before = weights(straight_model)
    torch.manual_seed(cfg.seed)  # as a job does before training: dropout draws from the seeded generators
    straight = Trainer(cfg, data, straight_model, CUDA, runs["straight"]).fit()
    assert straight.step == 8 and any(not torch.equal(a, b) for a, b in zip(before, weights(straight_model)))

    killed_model = build_model(cfg, len(data.vocab)).to(CUDA)  # building draws from the global generator too: build, then seed
    torch.manual_seed(cfg.seed)
    with pytest.raises(Killed):
        Trainer(cfg, data, killed_model, CUDA, runs["killed"], kill_after_first_validation).fit()
    resumed_model = build_model(cfg, len(data.vocab)).to(CUDA)
    trainer = Trainer(cfg, data, resumed_model, CUDA, runs["killed"])
    assert trainer.resume_if_possible() and trainer.state.step == 4
    resumed = trainer.fit()
    assert all(torch.equal(a, b) for a, b in zip(weights(straight_model), weights(resumed_model)))
    assert [e["valid_loss"] for e in straight.history] == [e["valid_loss"] for e in resumed.history]


def test_beam_search_on_the_gpu_agrees_with_the_cpu(tmp_path, micro_overrides):
    cfg = compose_config(*micro_overrides, "trainer.valid_bleu_sentences=0")
    data = load_task(cfg.task)
    model = build_model(cfg, len(data.vocab))
    Trainer(cfg, data, model, torch.device("cpu"), tmp_path).fit()  # a trained model: few near-ties between beams
    on_cpu = translate(model, data.test.sources(), data.vocab, torch.device("cpu"), cfg.eval)
    on_gpu = translate(model.to(CUDA), data.test.sources(), data.vocab, CUDA, cfg.eval)
    same = sum(a == b for a, b in zip(on_cpu, on_gpu))
    assert same >= 0.95 * len(on_cpu), [(a, b) for a, b in zip(on_cpu, on_gpu) if a != b][:5]


def test_bf16_training_on_the_gpu_learns_like_fp32(tmp_path, micro_overrides):
    valid_loss = {}
    for amp in (False, True):
        cfg = compose_config(*micro_overrides, f"trainer.amp={amp}", "trainer.valid_bleu_sentences=0")
        data = load_task(cfg.task)
        (tmp_path / str(amp)).mkdir()
        trainer = Trainer(cfg, data, build_model(cfg, len(data.vocab)).to(CUDA), CUDA, tmp_path / str(amp))
        assert trainer.autocast == amp
        history = trainer.fit().history
        valid_loss[amp] = history[-1]["valid_loss"]
        assert history[-1]["valid_loss"] < history[0]["valid_loss"]
    assert valid_loss[True] == pytest.approx(valid_loss[False], rel=0.05)


def test_packed_jobs_share_the_gpu(tmp_path, micro_overrides):
    from tests.helpers.sweeps import LOCAL, attempts, record, run_sweep

    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "hydra.launcher.gpus=[0]", "hydra.launcher.jobs_per_gpu=2",
                     "trainer.device=cuda", "seed=1,2")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    runs = [attempts(sweep, f"seed={seed}")[0] for seed in (1, 2)]
    assert all(run["cuda_visible_devices"] == "0" for run in runs)
    assert all(record(sweep, f"seed={seed}")["device"] == torch.cuda.get_device_name(0) for seed in (1, 2))
    a, b = runs
    assert a["started"] < b["ended"] and b["started"] < a["ended"], "the two jobs did not share the GPU"


# compile mode default: the modes that capture CUDA graphs are refused (frozen_sweep/config/checks.py), reduce-overhead
# having segfaulted this test with torch 2.11.0+cu130 on an H100 (2026-11-23)
def test_compiled_training_on_the_gpu_matches_eager(tmp_path, micro_overrides):
    valid_loss = {}
    for scope in ("eager", "layers", "step"):  # per layer, and the whole step as one graph
        compiling = ["trainer.compile=true", f"trainer.compile_scope={scope}"] if scope != "eager" else []
        cfg = compose_config(*micro_overrides, *compiling, "model.dropout=0", "trainer.max_steps=6",
                             "trainer.validate_every_steps=6", "trainer.valid_bleu_sentences=0",
                             "trainer.amp=false")  # fmt: skip
        data = load_task(cfg.task)
        (tmp_path / scope).mkdir()
        trainer = Trainer(cfg, data, build_model(cfg, len(data.vocab)).to(CUDA), CUDA, tmp_path / scope)
        valid_loss[scope] = trainer.fit().history[-1]["valid_loss"]
    assert valid_loss["layers"] == pytest.approx(valid_loss["eager"], rel=1e-3)
    assert valid_loss["step"] == pytest.approx(valid_loss["eager"], rel=1e-3)


def test_a_llama_style_language_model_trains_on_the_gpu_in_bf16_like_fp32(tmp_path, micro_overrides):
    """Rotary positions, grouped-query attention and SwiGLU under bf16 autocast: it learns as in fp32, and the frozen
    attention and gates stay the seed's draws."""
    valid_loss = {}
    for amp in (False, True):
        cfg = compose_config(*micro_overrides, "task.kind=lm", "task.src_lang=null", "model=llama_micro",
                             "freeze=att", "freeze.gate.frozen=true", f"trainer.amp={amp}",
                             "trainer.valid_bleu_sentences=0")  # fmt: skip
        data = load_task(cfg.task)
        (tmp_path / str(amp)).mkdir()
        model = build_model(cfg, len(data.vocab)).to(CUDA)
        drawn = {n: p.detach().clone() for n, p in model.named_parameters()}
        trainer = Trainer(cfg, data, model, CUDA, tmp_path / str(amp))
        assert trainer.autocast == amp
        history = trainer.fit().history
        assert history[-1]["valid_loss"] < history[0]["valid_loss"]
        valid_loss[amp] = history[-1]["valid_loss"]
        for name, p in model.named_parameters():
            assert torch.equal(p, drawn[name]) == (not p.requires_grad), name
    assert valid_loss[True] == pytest.approx(valid_loss[False], rel=0.05)
