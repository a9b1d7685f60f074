"""No silent traps in a command's keys: a mistyped key gets the closest allowed ones before Hydra's `+key` advice, a
key the chosen task would ignore is refused with what to write instead, and CPU oversubscription is said."""

import logging
import os
import subprocess
import sys

import pytest
from hydra_plugins.frozen_sweep_launchers._plan import PlannedJob
from hydra_plugins.frozen_sweep_launchers.local_gpus import warn_oversubscribed

from frozen_sweep.config import ConfigError
from frozen_sweep.config.keys import DEFAULT_LAUNCHER, check_command_line
from frozen_sweep.job.job_config import job_config
from tests.conftest import ROOT, compose_config


@pytest.mark.parametrize("override, suggestion", [
    ("trainer.max_step=10", "did you mean trainer.max_steps"),
    ("trainr.max_steps=10", "did you mean trainer.max_steps"),  # the group's name, the rest kept
    ("model.dmodel=64", "did you mean model.d_model"),
    ("+freez=emb", "did you mean freeze"),  # an append: no key a job reads is missing from the schema
    ("++trainer.max_step=3", "did you mean trainer.max_steps"),
])  # fmt: skip
def test_a_mistyped_key_gets_the_closest_allowed_keys(override, suggestion):
    assert suggestion in check_command_line([override])


@pytest.mark.parametrize("overrides, words", [
    (["hydra.launcher.max_paralel=2"], "did you mean hydra.launcher.max_parallel? allowed under hydra.launcher:"),
    (["hydra/launcher=slurm", "hydra.launcher.cpus_per_tsk=2"], "did you mean hydra.launcher.cpus_per_task"),
    (["hydra.launcher.partition=gpu"], "(the settings of hydra/launcher=local_gpus; hydra/launcher=slurm has it)"),
])  # fmt: skip
def test_a_mistyped_launcher_key_gets_the_closest_keys_of_the_chosen_launcher(overrides, words):
    assert words in check_command_line(overrides)


def test_launcher_keys_pass_when_known_or_when_the_launcher_may_be_another():
    assert DEFAULT_LAUNCHER == compose_config(with_hydra=True).hydra.runtime.choices["hydra/launcher"]
    assert check_command_line(["hydra/launcher=slurm", "hydra.launcher.partition=gpu",
                               "hydra.launcher.additional_parameters.qos=high", "hydra.launcher.setup=[a]"]) is None
    # another config directory may choose another launcher: Hydra checks the key when it composes
    assert check_command_line(["hydra.launcher.partition=gpu"], launcher=None) is None
    assert check_command_line(["hydra.searchpath=[file:///x]", "hydra.launcher.partition=gpu"]) is None


def test_known_keys_group_choices_appends_and_hydra_keys_pass():
    assert check_command_line(["model=tiny", "experiment=demo_table", "seed=2", "task.modules.es=x",
                               "+bases.mine=[seed=2]", "hydra.job.name=x", "trainer.max_steps=1,2"]) is None  # fmt: skip


def test_the_command_says_did_you_mean_instead_of_hydras_append_advice(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "frozen_sweep", "trainer.max_step=10"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 1
    assert "did you mean trainer.max_steps" in proc.stderr and "+trainer.max_step" not in proc.stderr, proc.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("overrides, words", [
    (["task.path=/my/corpus"], "task.path=/my/corpus: read only when task.corpus=text_files"),
    (["task.mask_prob=0.2"], "task.mask_prob=0.2: read only when task.kind=mlm"),
    (["task=text_files", "task.path=/x", "task.src_lang=de", "task.tgt_lang=en", "task.max_length_ratio=3"],
     "task.max_length_ratio=3.0: read only when task.corpus=bible"),
    (["relearn.reset_parts=att"], "relearn.reset_parts=att: read only when relearn.name=layer"),
    (["relearn.thresholds=[0.1]"], "relearn.thresholds=[0.1]: read only when relearn.name=layer"),
    (["reservoir=transformer", "reservoir.pattern=LRLR"], "reservoir.pattern=LRLR: read only when "
     "reservoir.placement=pattern, and this job has reservoir.placement=interleave"),
    (["reservoir.count=1"], "reservoir.count=1 with reservoir=none: none is the all-trainable baseline"),
    (["reservoir.placement=pattern", "reservoir.pattern=RL"], "reservoir.pattern=RL with reservoir=none"),
])  # fmt: skip
def test_a_key_the_chosen_task_or_study_would_ignore_is_refused_with_what_to_write(overrides, words):
    with pytest.raises(ConfigError, match="write instead") as error:
        job_config(compose_config(*overrides), overrides)
    assert words in str(error.value)


def test_ranks_beyond_the_cores_are_said(caplog):
    config = compose_config("trainer.devices=2", with_hydra=True)
    job = PlannedJob(0, [], config, ROOT, None)
    cores = len(os.sched_getaffinity(0))
    with caplog.at_level(logging.WARNING):
        warn_oversubscribed([job], at_a_time=cores)
    assert f"{cores} jobs at a time (hydra.launcher.max_parallel) × 2 ranks each" in caplog.text
    caplog.clear()
    warn_oversubscribed([job], at_a_time=1)
    assert caplog.text == "" or cores < 2


def test_a_run_directory_as_a_value_works_quoted_and_unquoted_says_how_to_quote_it():
    run = "outputs/x/freeze=none,seed=1"  # Hydra's grammar reads its '=' and ',' as syntax
    problem = check_command_line([f"finetune.base_checkpoint={run}", "seed=2"])
    assert problem.startswith(f"finetune.base_checkpoint={run}: ") and f"finetune.base_checkpoint='{run}'" in problem
    assert check_command_line([f"finetune.base_checkpoint='{run}'", "seed=2"]) is None
    assert check_command_line(["seed=1=2"]) is None  # any other syntax error: Hydra's own message
