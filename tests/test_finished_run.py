"""A saved run's config.yaml rebuilds its model exactly, for every model preset and freeze pattern (micro size)."""

import pytest
import torch
from omegaconf import OmegaConf

from frozen_sweep.config import TieEmbeddings
from frozen_sweep.run.directory import BEST_CHECKPOINT, write_result
from frozen_sweep.run.record import RunResult
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.checkpoint import save_checkpoint
from frozen_sweep.weights.finished_run import load_run, typed_config
from tests.conftest import CONF, compose_config

MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))
FREEZES = sorted(p.stem for p in (CONF / "freeze").glob("*.yaml"))
VOCAB = 40


def micro(model: str, *extra: str):
    """The preset's structure (norm, activation, ties, decoder-only or not) at micro size."""
    lm = model.startswith(("lm", "llama"))
    return compose_config(
        f"model={model}", *(["task=lm_bible_en"] if lm else []), "model.d_model=16", "model.ffn_dim=24",
        "model.heads=2", f"model.encoder_layers={0 if lm else 2}", "model.decoder_layers=2", "seed=7", *extra,
    )  # fmt: skip


def save_run(run_dir, cfg) -> torch.nn.Module:
    """What a finished job leaves: config.yaml, result.json, checkpoint_best.pt (with trained-looking weights)."""
    run_dir.mkdir(parents=True)
    model = build_model(cfg, VOCAB)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01)  # differ from the seeded init: loading must bring the checkpoint's values
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    write_result(run_dir, RunResult(status="completed", data={"vocab_size": VOCAB}))
    save_checkpoint(run_dir / BEST_CHECKPOINT, model, cfg.seed)
    return model


@pytest.fixture(scope="module")
def freeze_patterns() -> dict:
    """Each freeze option, composed once (the model presets take them in turn)."""
    return {pattern: compose_config(f"freeze={pattern}").freeze for pattern in FREEZES}


@pytest.mark.parametrize("model", MODELS)
def test_a_saved_config_rebuilds_the_identical_model_and_loads_its_checkpoint(model, freeze_patterns, tmp_path):
    preset = micro(model)
    for pattern in FREEZES:
        cfg = OmegaConf.merge(preset, {"freeze": freeze_patterns[pattern]})
        saved = save_run(tmp_path / pattern, cfg)
        run = load_run(tmp_path / pattern)
        assert run.config.model.tie_embeddings == TieEmbeddings(cfg.model.tie_embeddings.value)
        assert OmegaConf.to_yaml(run.config) == OmegaConf.to_yaml(cfg)
        expected, loaded = saved.state_dict(), run.model.state_dict()
        assert expected.keys() == loaded.keys(), (model, pattern)
        assert all(torch.equal(expected[k], loaded[k]) for k in expected), (model, pattern)
        assert [p.requires_grad for p in saved.parameters()] == [p.requires_grad for p in run.model.parameters()]


@pytest.mark.parametrize("reservoir", ["transformer", "ffn", "bigru", "conv"])
def test_reservoir_runs_rebuild_too(reservoir, tmp_path):
    cfg = micro("demo", f"reservoir={reservoir}", "model.encoder_layers=3", "reservoir.count=1")
    saved = save_run(tmp_path / "run", cfg)
    loaded = load_run(tmp_path / "run").model.state_dict()
    assert all(torch.equal(v, loaded[k]) for k, v in saved.state_dict().items())


def test_plain_yaml_loses_the_enums_and_typed_config_restores_them(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(OmegaConf.to_yaml(compose_config()))
    assert OmegaConf.load(path).model.tie_embeddings != TieEmbeddings.all  # the bug typed_config exists for
    assert typed_config(path).model.tie_embeddings == TieEmbeddings.all
