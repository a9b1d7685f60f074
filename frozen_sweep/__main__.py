"""`python -m frozen_sweep [overrides]` runs one job; `-m` sweeps. See README.md."""

import logging
import shutil
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from frozen_sweep.config import register_configs
from frozen_sweep.job import run_job
from frozen_sweep.run_dir import LOCK_FILE, dirname

log = logging.getLogger("frozen_sweep")

register_configs()
OmegaConf.register_new_resolver("job_dirname", dirname, replace=True)


def remove_if_unused(run_dir: Path, log_name: str) -> None:
    """Remove a job directory that holds only what Hydra (and the job's lock) put there before the job stopped, and
    the empty folders above it up to the working directory: a config error leaves nothing on disk."""
    if not run_dir.is_dir() or {p.name for p in run_dir.iterdir()} - {".hydra", f"{log_name}.log", LOCK_FILE}:
        return
    shutil.rmtree(run_dir)
    cwd = Path.cwd().absolute()
    for parent in run_dir.absolute().parents:
        if cwd not in parent.parents or any(parent.iterdir()):
            break
        parent.rmdir()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg) -> float:
    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    try:
        result = run_job(cfg, run_dir, hc.overrides.task)
    except Exception:
        remove_if_unused(run_dir, hc.job.name)
        raise
    log.info("%s: test %s %.2f (%s)", run_dir, result.metric_name, result.test_metric, result.status)
    return result.test_metric


if __name__ == "__main__":
    main()
