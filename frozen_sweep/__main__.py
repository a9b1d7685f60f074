"""`python -m frozen_sweep [overrides]` runs one job; `-m` sweeps. See README.md."""

import hashlib
import logging

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from frozen_sweep.config import register_configs
from frozen_sweep.job import run_job

log = logging.getLogger("frozen_sweep")

# the configs ship inside the package, so an installed wheel finds them wherever it is run from; a user's own
# presets, tasks and experiments come in through `--config-dir DIR` (or `hydra.searchpath=[DIR]`)
CONFIG_PATH = "pkg://frozen_sweep.conf"


def job_dirname(override_dirname: str) -> str:
    """A job's directory name from its overrides: deterministic, one path component, not too long."""
    if not override_dirname:
        return "default"
    name = override_dirname.replace("/", "_")
    if len(name) > 200:
        name = f"{name[:180]}…{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


register_configs()
OmegaConf.register_new_resolver("job_dirname", job_dirname, replace=True)


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def main(cfg) -> float:
    hc = HydraConfig.get()
    result = run_job(cfg, hc.runtime.output_dir, hc.overrides.task)
    log.info("%s: test %s %.2f (%s)", hc.runtime.output_dir, result.metric_name, result.test_metric, result.status)
    return result.test_metric


if __name__ == "__main__":
    main()
