"""Jobs that differ only in their seed share their checks and their fingerprint's serialisation.

A large grid is mostly seeds: 900 jobs may be 18 configs × 50 seeds. The first job of such a class is checked and
fingerprinted in full (frozen_sweep.job.job_config); the second is too, and its fingerprint compared with the one
derived from the first by substituting the seed (job_config.reseeded): equal, the class's later jobs get theirs
derived and only their seed's own range check; different (the seed enters another key, e.g. by an interpolation),
every job of the class is checked in full. Either way each job's fingerprint is the one a full check gives it.
"""

from dataclasses import dataclass
from typing import Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config.checks import check_range
from frozen_sweep.job.job_config import fingerprint_recipe, job_config, reseeded, sealed

SEED = "seed"


@dataclass
class Checked:
    """What a job's checks give the plan: its task (the data it prepares), `force`, and its fingerprint."""

    task: DictConfig
    force: bool
    fingerprint: dict


@dataclass
class SeedClass:
    first: Checked
    recipe: dict  # job_config.fingerprint_recipe of the first job
    cpu: dict
    derivable: Optional[bool] = None  # whether reseeded gives a later job's fingerprint; None until a second job


class SeedShare:
    def __init__(self):
        self.classes: dict[tuple[str, ...], SeedClass] = {}

    def check(self, config: DictConfig, overrides: Sequence[str]) -> Checked:
        """The job's checks (ConfigError or OmegaConf's errors as job_config raises them), shared with the jobs
        before it that differ from it only in `seed=`."""
        key = tuple(o for o in overrides if not o.startswith(f"{SEED}="))
        shared = self.classes.get(key)
        if shared is None or shared.derivable is False:
            checked, recipe, cpu = full_check(config, overrides)
            self.classes.setdefault(key, SeedClass(checked, recipe, cpu))
            return checked
        seed = config[SEED]
        check_range(SEED, seed)  # the one check that reads the seed
        derived = Checked(shared.first.task, shared.first.force, reseeded(shared.recipe, shared.cpu, seed))
        if shared.derivable is None:
            checked = full_check(config, overrides)[0]
            shared.derivable = checked.fingerprint == derived.fingerprint
            return checked
        return derived


def full_check(config: DictConfig, overrides: Sequence[str]) -> tuple[Checked, dict, dict]:
    """The job's checks as the job runs them, on a copy of its config without the hydra node."""
    checked = job_config(task_config(config), list(overrides), copied=True)
    recipe, cpu = fingerprint_recipe(checked)
    return Checked(checked.task, checked.force, sealed(recipe, cpu)), recipe, cpu


def task_config(config: DictConfig) -> DictConfig:
    """The config the job's task function gets: without the hydra node, as Hydra's run_job passes it (resolving the
    hydra node, e.g. its help text, for every job would cost more than the rest of the job's checks)."""
    return OmegaConf.masked_copy(config, [key for key in config if key != "hydra"])
