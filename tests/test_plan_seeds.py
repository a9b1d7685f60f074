"""Jobs that differ only in their seed share their checks and their fingerprint's serialisation in a sweep's plan
(hydra_plugins.frozen_sweep_launchers._seeds): every job's fingerprint, directory and overrides must be what the
job's own full check gives it, whether or not the seed enters another key."""

from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import HydraContext, RunMode
from omegaconf import OmegaConf

from frozen_sweep.job.job_config import fingerprint, job_config
from frozen_sweep.run.directory import dirname
from hydra_plugins.frozen_sweep_launchers._plan import plan_jobs
from hydra_plugins.frozen_sweep_launchers._seeds import task_config
from tests.conftest import CONF

OmegaConf.register_new_resolver("job_dirname", dirname, replace=True)  # as python -m frozen_sweep: directory names
# 8 jobs: 2 classes of 4 seeds (the second is checked in full, the third on), the fourth out of range
GRID = ["freeze=none,emb", "seed=1,2,3,-1"]


def plan(tmp_path, fixed: list[str], grid: list[str]):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        overrides = [*fixed, *grid, f"hydra.sweep.dir={tmp_path}"]
        sweep_config = loader.load_configuration("config", overrides, run_mode=RunMode.MULTIRUN)
        parsed = OverridesParser.create(config_loader=loader).parse_overrides([*fixed, *grid])
        (batch,) = BasicSweeper.split_arguments(parsed, None)
        jobs = plan_jobs(HydraContext(config_loader=loader, callbacks=None), sweep_config, batch, 0, refuse_each=True)
    return batch, jobs


def test_seed_variants_get_the_fingerprints_a_full_check_gives(tmp_path, micro_overrides):
    for seeded in ([], ["trainer.patience=${seed}"]):  # the second: the seed enters another key, no sharing
        batch, jobs = plan(tmp_path / str(len(seeded)), [*micro_overrides, *seeded], GRID)
        assert [job.overrides for job in jobs] == [list(b) for b in batch] and len(jobs) == 8
        refused = [job for job in jobs if "seed=-1" in job.overrides]
        expected = "trainer.patience=-1: must be > 0" if seeded else "seed=-1: must be >= 0"  # the seed's own check
        assert [job.refused for job in refused] == [expected] * 2
        ran = [job for job in jobs if job not in refused]
        for job in ran:
            full = fingerprint(job_config(task_config(job.config), job.overrides))
            assert job.refused is None and job.checked_fingerprint == full, job.overrides
        assert len({job.checked_fingerprint["sha256"] for job in ran}) == len({job.job_dir for job in jobs}) - 2 == 6
