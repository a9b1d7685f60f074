"""Every option of every group composes; bad values fail at composition or validation, naming key and choices."""

import dataclasses
import os
import typing
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from frozen_sweep.config import NEUTRAL_KEYS, ConfigError
from frozen_sweep.config import Config
from frozen_sweep.config.checks import RANGES, UNBOUNDED, validate
from frozen_sweep.tables.runs import setting_of
from tests.conftest import CONF, ROOT, compose_config


@pytest.mark.parametrize("group", ["model", "freeze", "task", "trainer"])
def test_every_option_composes(group):
    for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
        extra = []
        for kind in ("lm", "mlm"):  # the monolingual tasks and their models go together
            if group == "model" and option.startswith(f"{kind}_"):
                extra = [f"task={kind}_bible_en"]
            if group == "task" and option.startswith(f"{kind}_"):
                extra = [f"model={kind}_micro"]
        if group == "model" and option.startswith("llama_"):  # LLaMA-style decoders: language models
            extra = ["task=lm_bible_en"]
        if group == "task" and option.startswith(("cls_", "glue_")):  # classification: an encoder with a head
            extra = ["model=mlm_micro"]
        if group == "task" and option == "wikitext103":  # paragraphs of up to 512 subwords: the paper LM's positions
            extra = ["model=lm_paper"]
        if group == "task" and option == "hf":
            extra = ["task.dataset=wmt/wmt16", "task.src_lang=ro"]
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
        ("model.norm=middle", ValidationError, ["post", "pre", "rms"]),
        ("model.ffn=geglu", ValidationError, ["mlp", "swiglu"]),
        ("model.positions=alibi", ValidationError, ["sinusoidal", "rope"]),
        ("trainer.stop_metric=perplexity", ValidationError, ["loss", "bleu", "accuracy"]),
        ("trainer.compile_scope=model", ValidationError, ["compile_scope", "layers", "step"]),
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
        (["model.positions=rope", "model.rope_fraction=0.1"], ["model.rope_fraction=0.1 rotates 3 of a head's 32"]),
        (["model.parallel=true"], ["model.parallel=true", "model.encoder_layers=0", "model.norm=pre or rms"]),
        (["model=lm_micro", "task=lm_bible_en", "model.parallel=true"], ["model.parallel=true", "model.norm=pre"]),
        (["model.position_offset=2"], ["model.position_offset=2", "model.positions=learned"]),
        (["model.mlm_head=true"], ["model.mlm_head=true", "model.decoder_layers=0"]),
        (["task=lm_bible_en"], ["encoder_layers=0", "model=lm_demo"]),
        (["model=lm_micro"], ["task.kind=translation", "encoder–decoder", "encoder_layers=0"]),
        (["model.dropout=1.5"], ["model.dropout"]),
        (["task=text_files", "task.src_lang=tr", "task.tgt_lang=en"], ["task.path"]),
        (["task=lm_bible_en", "model=lm_micro", "trainer.stop_metric=bleu"], ["stop_metric", "loss"]),
        (["trainer.max_tokens=16"], ["trainer.max_tokens", "task.max_len"]),
        (["model.kv_heads=3"], ["model.kv_heads=3 must divide model.heads=4"]),
        (["model.positions=rope", "model.d_model=120", "model.heads=8"], ["model.positions=rope", "d_model/heads=15"]),
        (["freeze.gate.frozen=true"], ["freeze.gate.frozen=true", "model.ffn=swiglu"]),
        (["task=glue_mrpc", "model=mlm_micro", "task.report=[f1,pearson]"],
         ["task.report=[f1,pearson]: pearson is not computed for task.kind=classify", "accuracy, f1, macro_f1, mcc"]),
        (["task=glue_stsb", "model=mlm_micro", "task.report=[]"],
         ["task.report=[]: names no metric of task.kind=regression", "pearson, spearman"]),
        (["task.report=[accuracy]"], ["task.report=['accuracy']: read only when task.kind=classify|regression"]),
    ],
)
def test_cross_field_errors_name_the_key(overrides, words):
    with pytest.raises(ConfigError) as info:
        validate(compose_config(*overrides))
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    "override, message",
    [
        ("model.encoder_layers=-1", "model.encoder_layers=-1: must be >= 0"),
        ("trainer.max_steps=0", "trainer.max_steps=0: must be > 0"),
        ("trainer.keep_checkpoints=-1", "trainer.keep_checkpoints=-1: must be >= 0"),
        ("trainer.betas=[0.9,1.5]", "trainer.betas=[0.9, 1.5]: must be two numbers in [0, 1)"),
        ("trainer.compile_mode=fast", "trainer.compile_mode=fast: allowed: default, max-autotune-no-cudagraphs ("),
        ("trainer.diverge_ratio=0.5", "trainer.diverge_ratio=0.5: must be > 1 (a multiple of a validation loss)"),
        ("trainer.aucc_cutoff_s=0", "trainer.aucc_cutoff_s=0.0: must be > 0 (or null)"),
        ("trainer.step_time_s=-1", "trainer.step_time_s=-1.0: must be > 0 s per update (or null: the wall clock)"),
        ("reservoir.conv_kernel=4", "reservoir.conv_kernel=4: must be odd and >= 1"),
        ("eval.beam=0", "eval.beam=0: must be > 0"),
        ("model.rope_base=1", "model.rope_base=1.0: must be > 1"),
        ("trainer.devices=0", "trainer.devices=0: must be an integer >= 1"),
        ("trainer.update_freq=0", "trainer.update_freq=0: must be an integer >= 1"),
    ],
)
def test_range_errors_name_the_key_the_value_and_what_is_allowed(override, message):
    with pytest.raises(ConfigError) as info:
        validate(compose_config(override))
    assert str(info.value).startswith(message)


def test_every_range_row_names_a_key_of_the_schema():
    cfg = compose_config()
    missing = [key for key, _, _ in RANGES if OmegaConf.select(cfg, key, default=KeyError) is KeyError]
    assert not missing


def numeric_keys(schema=Config, path: str = ""):
    """Every key of the schema that holds a number or a list of numbers, dotted, with its type."""
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        kind, args = hints[field.name], typing.get_args(hints[field.name])
        kind = next(a for a in args if a is not type(None)) if type(None) in args else kind  # Optional[X] → X
        if dataclasses.is_dataclass(kind):
            yield from numeric_keys(kind, f"{path}{field.name}.")
        elif kind in (int, float) or typing.get_args(kind)[:1] in ((int,), (float,)):
            yield f"{path}{field.name}", kind


def test_every_numeric_key_of_the_schema_refuses_a_value_out_of_range():
    """A negative number (or a list holding one) for each numeric key, unless the key takes any number."""
    keys = dict(numeric_keys())
    assert len(keys) > 40 and set(UNBOUNDED) <= set(keys)
    accepted = []
    for key, kind in keys.items():
        if key in UNBOUNDED:
            continue
        cfg = compose_config()
        OmegaConf.update(cfg, key, -1 if kind in (int, float) else [-1, -1], merge=False)
        try:
            validate(cfg)
            accepted.append(key)
        except ConfigError as e:
            assert str(e).startswith(f"{key}="), e
    assert not accepted, f"accepted out of range: {accepted}"
    for zero in ("trainer.validate_every_steps=0", "trainer.threads=0", "trainer.adam_eps=0"):
        with pytest.raises(ConfigError, match=zero.replace(".", r"\.")):
            validate(compose_config(zero))


def test_the_longest_training_sequence_and_the_length_cap_fit_the_positions():
    with pytest.raises(ConfigError, match=r"model.max_positions=16 is below .* 204 positions .* >= 204"):
        validate(compose_config("model.max_positions=16"))
    with pytest.raises(ConfigError, match=r"eval.max_len_a=6.0.*cap .* is 1216 tokens.*>= 1217"):
        validate(compose_config("eval.max_len_a=6.0"))


def test_directory_names_fingerprints_and_the_collector_share_the_neutral_keys():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["trainer.threads=3", "name=x", "seed=2"], return_hydra_config=True)
    assert list(cfg.hydra.job.config.override_dirname.exclude_keys) == sorted(NEUTRAL_KEYS | {"experiment"})
    assert cfg.hydra.job.override_dirname == "seed=2"
    assert setting_of([f"{key}=1" for key in NEUTRAL_KEYS] + ["trainer.lr=0.1"]) == ("trainer.lr=0.1",)


NO_TORCH = """
import sys
import frozen_sweep.config
loaded = sorted(m for m in sys.modules if m.startswith("frozen_sweep"))
assert all(m == "frozen_sweep" or m.startswith("frozen_sweep.config.") or m == "frozen_sweep.config" for m in loaded), loaded
assert "frozen_sweep.config.checks" not in loaded, loaded
import frozen_sweep.tables.runs, frozen_sweep.job.job_config, frozen_sweep.run.directory, frozen_sweep.config.checks
import hydra_plugins.frozen_sweep_launchers.local_gpus, hydra_plugins.frozen_sweep_launchers.slurm
assert "torch" not in sys.modules, "torch imported"
"""


def test_the_schema_reads_no_files_and_the_launchers_import_no_torch():
    """The schema imports nothing of the project but its own group modules (the model and data import it); what the
    launchers import at Hydra's plugin scan, and the collector, stay free of torch."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'launchers'}"}
    subprocess.run([sys.executable, "-c", NO_TORCH], cwd=ROOT, env=env, check=True)
