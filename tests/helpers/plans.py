"""A sweep's plan as its launcher makes it (hydra_plugins.frozen_sweep_launchers._plan), in the test's process."""

from pathlib import Path

from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import HydraContext, RunMode
from omegaconf import OmegaConf

from frozen_sweep.run.directory import dirname
from hydra_plugins.frozen_sweep_launchers._bases import Bases
from hydra_plugins.frozen_sweep_launchers._compose import JobComposer
from hydra_plugins.frozen_sweep_launchers._plan import plan_jobs
from tests.conftest import CONF

OmegaConf.register_new_resolver("job_dirname", dirname, replace=True)  # as python -m frozen_sweep: directory names


def plan(sweep_dir: str, fixed: list[str], grid: list[str], with_bases: bool = False):
    """The batch, its planned jobs (`with_bases`: their bases.NAME resolved as the launcher does), and each job's
    directory as its own composition gives it (its config composed first, where the plan deferred it)."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        overrides = [*fixed, *grid, f"hydra.sweep.dir={sweep_dir}"]
        sweep_config = loader.load_configuration("config", overrides, run_mode=RunMode.MULTIRUN)
        parsed = OverridesParser.create(config_loader=loader).parse_overrides([*fixed, *grid])
        (batch,) = BasicSweeper.split_arguments(parsed, None)
        context = HydraContext(config_loader=loader, callbacks=None)
        base_of = Bases(context, sweep_config, []).resolve if with_bases else None
        jobs = plan_jobs(context, sweep_config, batch, 0, refuse_each=True, base_of=base_of)
        composer = JobComposer(context, sweep_config)  # equal to Hydra's: tests/test_plan_compose.py
        sweep = [composer.compose(job.overrides).hydra.sweep for job in jobs]
        dirs = [Path(str(s.dir), str(s.subdir)).absolute() for s in sweep]
        deferred = [job.deferred is not None and job.composed is None for job in jobs]
        for job, job_dir in zip(jobs, dirs):  # composed now; a job refused as its base was resolved is not placed
            unplaced = OmegaConf.is_missing(job.config.hydra.runtime, "output_dir")
            assert job.refused if unplaced else job.config.hydra.runtime.output_dir == str(job_dir)
    return batch, jobs, dirs, deferred
