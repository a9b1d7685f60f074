"""Every option of every group composes; bad values fail at composition or validation, naming key and choices."""

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigKeyError, ValidationError

from frozen_sweep.config import ConfigError
from frozen_sweep.validate import validate
from tests.conftest import CONF, compose_config


@pytest.mark.parametrize("group", ["model", "freeze", "task", "trainer"])
def test_every_option_composes(group):
    for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
        extra = []
        if group == "model" and option.startswith("lm"):
            extra = ["task=lm_bible_en"]
        if group == "task" and option.startswith("lm"):
            extra = ["model=lm_micro"]
        if group == "task" and option == "text_files":
            extra = ["task.path=/data", "task.src_lang=tr", "task.tgt_lang=en"]
        cfg = compose_config(f"{group}={option}", *extra)
        validate(cfg)
        assert cfg[group].name == option


def test_default_config_is_the_embedded_demo():
    cfg = compose_config()
    assert (cfg.task.name, cfg.model.name, cfg.freeze.name, cfg.trainer.warmup_steps) == ("bible_es_en", "demo", "none", 200)


@pytest.mark.parametrize(
    "override, error, words",
    [
        ("freeze.att.init=diagonal", ValidationError, ["random", "identity", "orthogonal"]),
        ("model.norm=middle", ValidationError, ["post", "pre"]),
        ("trainer.stop_metric=accuracy", ValidationError, ["loss", "bleu"]),
        ("model.layerz=3", ConfigKeyError, ["layerz"]),
        ("freeze=everything", ConfigCompositionException, ["freeze", "att_ffn", "emb"]),
        ("model.heads=two", ValidationError, ["heads", "two"]),
    ],
)
def test_bad_values_fail_at_composition(override, error, words):
    with pytest.raises((error, ConfigCompositionException)) as info:
        compose_config(override)
    message = f"{info.value} {info.value.__cause__}"
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["model.heads=3"], ["model.heads=3", "model.d_model=128"]),
        (["task=lm_bible_en"], ["encoder_layers=0", "model=lm_demo"]),
        (["model=lm_micro"], ["encoder_layers > 0"]),
        (["model.dropout=1.5"], ["model.dropout"]),
        (["task=text_files", "task.src_lang=tr", "task.tgt_lang=en"], ["task.path"]),
        (["task=lm_bible_en", "model=lm_micro", "trainer.stop_metric=bleu"], ["stop_metric", "loss"]),
        (["trainer.max_tokens=16"], ["trainer.max_tokens", "task.max_len"]),
    ],
)
def test_cross_field_errors_name_the_key(overrides, words):
    with pytest.raises(ConfigError) as info:
        validate(compose_config(*overrides))
    for word in words:
        assert word in str(info.value)
