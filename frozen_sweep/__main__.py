"""`python -m frozen_sweep [overrides]` runs one job; `-m` sweeps. See README.md."""

import logging
from pathlib import Path
from typing import Optional

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import ConfigError, register_configs
from frozen_sweep.config.help_text import config_groups
from frozen_sweep.job import command
from frozen_sweep.job.dry_run import REFUSE, RESUME, RUN, check_job, report, same_run_message, single_job_same_run
from frozen_sweep.job.job_config import absolute_paths
from frozen_sweep.run.directory import LOCK_FILE, dirname, read_record
from frozen_sweep.run.lock import JobAlreadyRunning, remove_if_unused

log = logging.getLogger("frozen_sweep")

# the configs ship inside the package, so an installed wheel finds them wherever it is run from; a user's own
# presets, tasks and experiments come in through `--config-dir DIR` (or `hydra.searchpath=[DIR]`)
CONFIG_PATH = "pkg://frozen_sweep.conf"


class JobConfigError(CompactHydraException):
    """A job that cannot run as configured (a bad key or value, missing or bad data, a directory holding another
    config's run, another runner): one line, as a sweep's plan prints it, not a traceback."""


register_configs()
OmegaConf.register_new_resolver("job_dirname", dirname, replace=True)
OmegaConf.register_new_resolver("frozen_sweep_help", config_groups, replace=True)  # for --help's template


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def main(cfg) -> Optional[float]:
    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    absolute_paths(cfg, Path(hc.runtime.cwd))  # a no-op in a sweep's job: the launcher's plan made them absolute
    # a single job in its outputs/<name>/ (not a sweep's job, nor one given its own hydra.run.dir) is the same run as
    # a completed one of its fingerprint there
    own_dir = hc.mode != RunMode.RUN or any(o.startswith("hydra.run.dir=") for o in hc.overrides.hydra)
    if cfg.dry_run:  # what the job would do; Hydra's .hydra/ and log go again unless the directory held a run
        decision = check_job(cfg, hc.overrides.task, run_dir, beside=not own_dir)
        remove_if_unused(run_dir, {".hydra", f"{hc.job.name}.log"})
        label = " ".join(o for o in hc.overrides.task if not o.startswith("dry_run=")) or "the default job"
        cost = None
        if cfg.estimate and decision.action in (RUN, RESUME):
            from frozen_sweep.job.cost import single_job_cost  # torch: the probe of its step

            resumed = read_record(run_dir) if decision.action == RESUME else None
            cost = single_job_cost(cfg, hc.overrides.task, run_dir, resumed)
        print(report([(label, run_dir, decision)], [cost]), flush=True)
        if decision.action == REFUSE:
            raise SystemExit(1)
        return None
    try:
        same = None if own_dir else single_job_same_run(cfg, hc.overrides.task, run_dir)
        if same is not None:
            remove_if_unused(run_dir, {".hydra", f"{hc.job.name}.log"})
            log.info("skipped: %s", same_run_message(same))
            return (read_record(same) or {}).get("test_metric")
        from frozen_sweep.job.runner import run_job  # torch: imported once the job's signal handlers are set

        result = run_job(cfg, run_dir, hc.overrides.task)
    except Exception as e:
        remove_if_unused(run_dir, {".hydra", f"{hc.job.name}.log", LOCK_FILE})  # a config error leaves nothing
        if isinstance(e, (ConfigError, JobAlreadyRunning, OmegaConfBaseException)):
            if hc.mode == RunMode.RUN:  # passes Hydra's run_job, which would print the job's overrides first
                raise SystemExit(f"{e}. The job did not start.") from None
            raise JobConfigError(f"{e}. The job did not start.") from None  # a sweep's job: its launcher reports it
        raise
    if result.test_metric is not None:  # a data-parallel job's ranks other than 0 only train
        log.info("%s: test %s %.2f (%s)", run_dir, result.metric_name, result.test_metric, result.status)
    return result.test_metric


if __name__ == "__main__":  # the command (a single job, or a sweep's launcher), stoppable from any shell
    command.run(main)
