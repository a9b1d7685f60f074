"""The plan composes a sweep's jobs once per distinct group choice and applies each job's key overrides on a copy
(hydra_plugins.frozen_sweep_launchers._compose): every job's config must equal what Hydra's load_sweep_config gives."""

from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import HydraContext, RunMode
from omegaconf import OmegaConf

from hydra_plugins.frozen_sweep_launchers._compose import JobComposer
from tests.conftest import CONF

JOBS = [
    ["model=tiny", "seed=2"],
    ["seed=3", "model=tiny", "trainer.max_steps=5"],  # the same groups, other keys, another order
    ["freeze=emb", "model=tiny", "seed=2"],
    ["experiment=demo_table", "freeze=att"],  # an experiment: a `# @package _global_` delta with its own defaults
    ["model=micro", "model.d_model=64", "+trainer.unknown_key=1"],  # an appended key: checked later, by the plan
    ["task=text_files", "task.path=/data/x", "task.src_lang=tr", "task.tgt_lang=en"],
    ["seed=1"],  # a default written out
    ["hydra.job.name=other", "seed=4"],  # a hydra key: composed in full
]


def test_each_job_composes_as_hydra_composes_it():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        sweep_config = loader.load_configuration("config", [], run_mode=RunMode.MULTIRUN)
        composer = JobComposer(HydraContext(config_loader=loader, callbacks=None), sweep_config)
        for overrides in JOBS:
            ours, hydras = composer.compose(overrides), loader.load_sweep_config(sweep_config, overrides)
            assert OmegaConf.to_container(ours) == OmegaConf.to_container(hydras), overrides
        assert len(composer.composed) < len(JOBS)  # shared: the first two jobs' groups are the same
