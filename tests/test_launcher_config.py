"""The launchers' typed settings (hydra_plugins/frozen_sweep_launchers/config.py): a typo or a wrong type in a
`hydra.launcher.*` key fails when the sweep is composed, like any other key, before any job starts."""

import dataclasses
import inspect

import pytest
from hydra.errors import ConfigCompositionException
from hydra_plugins.frozen_sweep_launchers.config import LocalGpusConf, SlurmConf
from hydra_plugins.frozen_sweep_launchers.local_gpus import LocalGpusLauncher
from hydra_plugins.frozen_sweep_launchers.slurm import SlurmLauncher

from tests.conftest import compose_config
from tests.helpers.sweeps import LOCAL, run_sweep


@pytest.mark.parametrize("schema, launcher", [(LocalGpusConf, LocalGpusLauncher), (SlurmConf, SlurmLauncher)])
def test_the_schema_holds_exactly_the_launchers_arguments(schema, launcher):
    keys = {f.name for f in dataclasses.fields(schema)} - {"_target_"}
    assert keys == set(inspect.signature(launcher.configure).parameters) - {"self"}  # the settings it checks
    assert schema._target_ == f"{launcher.__module__}.{launcher.__name__}"


@pytest.mark.parametrize("name, schema", [("local_gpus", LocalGpusConf), ("slurm", SlurmConf)])
def test_each_launcher_composes_to_its_typed_defaults(name, schema):
    cfg = compose_config(f"hydra/launcher={name}", with_hydra=True)
    assert cfg.hydra.launcher._target_ == schema._target_
    defaults = {f.name: f.default for f in dataclasses.fields(schema) if f.default is not dataclasses.MISSING}
    assert {key: cfg.hydra.launcher[key] for key in defaults if "${" not in str(defaults[key])} == {
        key: value for key, value in defaults.items() if "${" not in str(value)
    }


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["hydra.launcher.jobs_per_gpux=2"], "Key 'jobs_per_gpux' not in 'LocalGpusConf'"),
        (["hydra.launcher.jobs_per_gpu=two"], "hydra.launcher.jobs_per_gpu"),
        (["hydra.launcher.gpus=[0,first]"], "hydra.launcher.gpus"),
        (["hydra/launcher=slurm", "hydra.launcher.partitionx=gpu"], "Key 'partitionx' not in 'SlurmConf'"),
        (["hydra/launcher=slurm", "hydra.launcher.cpus_per_task=many"], "hydra.launcher.cpus_per_task"),
    ],
)
def test_a_bad_launcher_key_or_value_fails_when_composed(overrides, message):
    with pytest.raises(ConfigCompositionException) as error:
        compose_config(*overrides, with_hydra=True)
    assert message in str(error.value) + str(error.value.__cause__)


def test_a_launcher_typo_stops_the_command_before_any_job_starts(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    proc = run_sweep(sweep, *micro_overrides, LOCAL, "hydra.launcher.jobs_per_gpux=2")
    assert proc.returncode != 0 and "did you mean hydra.launcher.jobs_per_gpu?" in proc.stdout, proc.stdout
    assert "+hydra.launcher.jobs_per_gpux" not in proc.stdout  # not Hydra's advice to append it
    assert not sweep.exists()


def test_slurm_jobs_are_named_after_the_sweep():
    assert compose_config("hydra/launcher=slurm", "name=paper", with_hydra=True).hydra.launcher.job_name == (
        "frozen_sweep_paper"
    )


@pytest.mark.parametrize("name, launcher", [("local_gpus", LocalGpusLauncher), ("slurm", SlurmLauncher)])
def test_a_status_interval_that_is_not_positive_is_refused_as_the_launcher_is_built(name, launcher):
    settings = compose_config(f"hydra/launcher={name}", "hydra.launcher.status_every_s=0", with_hydra=True)
    arguments = {k: v for k, v in settings.hydra.launcher.items() if k != "_target_"}
    arguments.update(submitit_folder="unused", **({"job_name": "unused"} if name == "slurm" else {}))
    assert "hydra.launcher.status_every_s=0.0: must be > 0" in launcher(**arguments).refused
