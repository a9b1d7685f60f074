"""The training loop on the toy corpus, in-process: optimiser contents, schedule, early stopping, budgets."""

import json
import subprocess

import pytest
import torch

from frozen_sweep.config import ConfigError
from frozen_sweep.data import load_task
from frozen_sweep.job.runner import run_job
from frozen_sweep.train.optim import inverse_sqrt_schedule
from frozen_sweep.train.stopping import Diverged
from frozen_sweep.train.trainer import Trainer
from frozen_sweep.weights.build import build_model
from tests.conftest import CONF, ROOT, compose_config


def make_trainer(tmp_path, micro_overrides, *extra):
    cfg = compose_config(*micro_overrides, *extra)
    data = load_task(cfg.task)
    return Trainer(cfg, data, build_model(cfg, len(data.vocab)), torch.device("cpu"), tmp_path)


def test_optimizer_holds_only_trainable_parameters(tmp_path, micro_overrides):
    trainer = make_trainer(tmp_path, micro_overrides, "freeze=emb_ffn")
    in_optimizer = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    for name, p in trainer.model.named_parameters():
        assert (id(p) in in_optimizer) == p.requires_grad, name
    trainer.fit()
    state_of = trainer.optimizer.state
    assert all(id(p) not in {id(q) for q in state_of} for p in trainer.model.parameters() if not p.requires_grad)


def test_inverse_sqrt_schedule():
    f = inverse_sqrt_schedule(warmup_steps=100, warmup_init_lr=0.0, lr=1e-3)
    assert f(0) == 0 and f(50) == pytest.approx(0.5) and f(100) == 1.0
    assert f(400) == pytest.approx(0.5)  # sqrt(100 / 400)


def test_early_stopping_and_epochs_to_convergence(tmp_path, micro_overrides):
    # lr 0: nothing changes after the first validation, so patience 2 stops the run after the third.
    trainer = make_trainer(tmp_path, micro_overrides, "trainer.lr=1e-12", "trainer.warmup_steps=1",
                           "trainer.patience=2", "trainer.max_epochs=10", "trainer.valid_bleu_sentences=0")
    state = trainer.fit()
    assert state.stopped_reason == "early_stop"
    assert [e["epoch"] for e in state.history] == [1.0, 2.0, 3.0]
    assert state.best_index == 0


def test_validation_every_n_steps_and_step_budget(tmp_path, micro_overrides):
    trainer = make_trainer(tmp_path, micro_overrides, "trainer.validate_every_steps=4", "trainer.max_steps=10",
                           "trainer.valid_bleu_sentences=20")
    state = trainer.fit()
    assert [e["step"] for e in state.history] == [4, 8, 10]
    assert state.stopped_reason == "max_steps"
    assert 0 < state.history[0]["epoch"] < state.history[-1]["epoch"]
    assert all(e["valid_bleu"] is not None and e["valid_metric"] == e["valid_bleu"] for e in state.history)


def test_the_cpu_trains_in_fp32_on_every_cpu_unless_bf16_is_asked_for(tmp_path, micro_overrides):
    """fp32 by default whatever the CPU; trainer.amp_cpu=true: bf16 autocast; null: where oneDNN computes bf16
    natively (system.kernels.native_bf16 reads the CPU's flags as oneDNN does)."""
    default = make_trainer(tmp_path, micro_overrides)
    assert not default.autocast and default.loss.precision == "fp32"
    assert make_trainer(tmp_path, micro_overrides, "trainer.amp_cpu=true").loss.precision == "bf16 autocast"
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()  # what oneDNN says of this CPU
    assert make_trainer(tmp_path, micro_overrides, "trainer.amp_cpu=null").autocast == native
    assert not make_trainer(tmp_path, micro_overrides, "trainer.amp=false", "trainer.amp_cpu=true").autocast


def test_bf16_autocast_on_the_cpu_learns_like_fp32_with_attention_on_the_math_backend(tmp_path, micro_overrides):
    valid_loss = {}
    for amp in (False, True):
        (tmp_path / str(amp)).mkdir()
        trainer = make_trainer(tmp_path / str(amp), micro_overrides, f"trainer.amp_cpu={amp}",
                               "trainer.valid_bleu_sentences=0")  # fmt: skip
        assert trainer.autocast == amp
        flash = set()  # whether torch may pick its flash-attention kernel, at each training forward of an attention
        attention = trainer.model.encoder.layers[0].self_attn
        hook = attention.register_forward_hook(
            lambda *_: flash.add(torch.backends.cuda.flash_sdp_enabled()) if trainer.model.training else None
        )
        history = trainer.fit().history
        hook.remove()
        assert flash == {not amp}  # bf16 on the CPU: the math backend (torch's CPU flash backward is slow in bf16)
        assert history[-1]["valid_loss"] < history[0]["valid_loss"]
        valid_loss[amp] = history[-1]["valid_loss"]
    assert valid_loss[True] == pytest.approx(valid_loss[False], rel=0.05)


def test_a_nan_loss_fails_the_job_as_diverged_naming_lr_and_warmup(tmp_path, micro_overrides):
    cfg = compose_config(*micro_overrides, "trainer.lr=1e30", "trainer.warmup_steps=1")
    with pytest.raises(Diverged, match=r"training loss is nan .* trainer.lr=1e\+30 and trainer.warmup_steps=1"):
        run_job(cfg, tmp_path, ["trainer.lr=1e30"])
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["status"] == "failed" and record["stopped_reason"] == "diverged"
    assert "Diverged" in record["error"] and "trainer.lr=1e+30" in record["error"]
    assert record["test_metric"] is None  # never "completed, BLEU 0.0"
    # how it computed, and the code that ran: uncommitted changes to tracked files too
    assert record["precision"] == "fp32" and record["kernels"] == torch.backends.cpu.get_cpu_capability()
    changed = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ROOT).returncode  # 1: tracked files differ
    assert record["versions"]["git_dirty"] is {0: False, 1: True}.get(changed) and record["versions"]["git_sha"]


def test_a_validation_loss_far_above_its_best_ends_the_run(tmp_path, micro_overrides):
    # lr 1: the micro model learns a little during warmup, then its validation loss climbs (finite: no NaN)
    # (the uniform-guess rule out of reach, so that "far above its best" alone ends it, however high the loss climbs:
    # that height changed with the tests run before this one in the same process)
    trainer = make_trainer(tmp_path, micro_overrides, "trainer.lr=1", "trainer.warmup_steps=40",
                           "trainer.validate_every_steps=5", "trainer.max_steps=80", "trainer.patience=30",
                           "trainer.valid_bleu_sentences=0", "trainer.diverge_uniform_ratio=1000")  # fmt: skip
    with pytest.raises(Diverged, match=r"validation loss is .* far above its best .* trainer.warmup_steps=40"):
        trainer.fit()
    state = trainer.state
    losses = [e["valid_loss"] for e in state.history]
    best = min(losses)
    assert state.stopped_reason == "diverged" and state.step < 80
    assert all(loss > 1.2 * best for loss in losses[-3:]) and not losses[-4] > 1.2 * best


def test_validation_losses_of_a_healthy_run_do_not_trip_the_guard(tmp_path, micro_overrides):
    trainer = make_trainer(tmp_path, micro_overrides, "trainer.validate_every_steps=5", "trainer.diverge_validations=1",
                           "trainer.valid_bleu_sentences=0")  # fmt: skip
    assert trainer.fit().stopped_reason == "max_epochs"


@pytest.mark.parametrize("model", [p.stem for p in sorted((CONF / "model").glob("*.yaml"))])
def test_every_model_preset_gets_settings_that_learn(model):
    """Measured on an H100 (model=base): lr 7e-4 / warmup 1000 learns, lr 2e-3 / warmup 200 diverges. Models of
    d_model >= 256 pick a trainer preset at or below that; the default job keeps the default trainer."""
    task = ["task=lm_bible_en"] if model.startswith("lm_") else []
    cfg = compose_config(*task, f"model={model}")
    if cfg.model.d_model >= 256:
        assert cfg.trainer.name != "default" and cfg.trainer.lr <= 7e-4 and cfg.trainer.warmup_steps >= 1000
    else:
        assert cfg.trainer.name == "default"
    assert compose_config(*task, f"model={model}", "trainer=quick").trainer.name == "quick"  # the command line wins


def test_bad_compile_mode_and_divergence_thresholds_are_config_errors(micro_overrides):
    from frozen_sweep.config import ConfigError
    from frozen_sweep.config.checks import validate

    for override, words in [("trainer.compile_mode=fast", ["trainer.compile_mode=fast", "max-autotune-no-cudagraphs"]),
                            ("trainer.compile_mode=reduce-overhead", ["CUDA graphs, which segfaulted", "torch 2.11"]),
                            ("trainer.diverge_ratio=0.9", ["trainer.diverge_ratio=0.9", "> 1"]),
                            ("trainer.length_multiple=0", ["trainer.length_multiple=0", "> 0"])]:  # fmt: skip
        with pytest.raises(ConfigError) as error:
            validate(compose_config(*micro_overrides, override))
        assert all(word in str(error.value) for word in words)
