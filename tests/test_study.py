"""The study key and the Study hooks: which study a config makes, contradictions caught before any job starts,
every study module present, and a reservoir baseline recorded in the reservoir study."""

import pytest
from hydra.errors import ConfigCompositionException

from frozen_sweep.config import ConfigError, StudyName
from frozen_sweep.config.checks import validate
from frozen_sweep.job.runner import run_job
from frozen_sweep.study import for_config
from frozen_sweep.study.freeze import FreezeStudy
from tests.conftest import compose_config


@pytest.mark.parametrize(
    "overrides, study",
    [
        ([], "freeze"),
        (["freeze=emb_ffn"], "freeze"),
        (["reservoir=ffn"], "reservoir"),
        (["experiment=reservoir_mt", "reservoir=none"], "reservoir"),
        (["experiment=reservoir_lm"], "reservoir"),
        (["relearn=layer"], "relearn"),
        (["experiment=relearn_layers"], "relearn"),
    ],
)
def test_the_options_that_make_a_study_set_it(overrides, study):
    cfg = compose_config(*overrides)
    assert cfg.study == StudyName(study)
    assert type(for_config(cfg)).__module__ == f"frozen_sweep.study.{study}"


def test_every_study_has_its_module():
    for name in StudyName:
        study = for_config(compose_config(f"study={name.value}"))
        assert isinstance(study, FreezeStudy)  # every hook has a default


def test_an_unknown_study_fails_at_composition():
    with pytest.raises(ConfigCompositionException) as info:
        compose_config("study=pruning")
    message = f"{info.value} {info.value.__cause__}"
    assert "study" in message and "freeze, reservoir, relearn" in message


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["study=freeze", "reservoir=ffn", "reservoir.count=1"], "study=freeze with reservoir=ffn: a model with reservoir layers is"),
        (["study=relearn"], "study=relearn with relearn=none: study=relearn goes with relearn=layer"),
        (["relearn=layer", "study=reservoir"], "study=reservoir with relearn=layer"),
    ],
)
def test_a_study_that_contradicts_its_options_names_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        validate(compose_config(*overrides))


def test_a_baseline_swept_beside_reservoirs_is_in_the_reservoir_study(tmp_path, micro_overrides):
    overrides = [*micro_overrides, "reservoir=none", "study=reservoir", "trainer.max_steps=2", "eval.beam=1"]
    result = run_job(compose_config(*overrides), tmp_path, overrides)
    assert result.study == "reservoir" and result.status == "completed"
    assert (result.reservoir["pattern"], result.reservoir["reservoir_layers"], result.reservoir["params"]) == ("L", 0, 0)
