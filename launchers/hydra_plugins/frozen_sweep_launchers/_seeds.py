"""Jobs that differ only in their seed share their checks and their fingerprint's serialisation.

A large grid is mostly seeds: 900 jobs may be 18 configs × 50 seeds. The first job of such a class is checked and
fingerprinted in full (frozen_sweep.job.job_config); the second is too, and its fingerprint compared with the one
derived from the first by substituting the seed (fingerprint.reseeded): equal, the class's later jobs get theirs
derived and only their seed's own range check; different (the seed enters another key, e.g. by an interpolation),
every job of the class is checked in full. Either way each job's fingerprint is the one a full check gives it.

When the second job's directory also follows from its overrides by Hydra's rule (hydra.job.override_dirname in
hydra.sweep.subdir, _place.py) and the class has no base, the class's later jobs are not composed at all while the
sweep is planned: their directory, fingerprint, `force` and `trainer.devices` come from the class, and their config
is composed when the launcher first reads it (their launch).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config.checks import check_range
from frozen_sweep.job.fingerprint import fingerprint_recipe, reseeded, sealed
from frozen_sweep.job.job_config import job_config

from ._compose import parse
from ._place import JobPlace
from ._variants import Variants

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
    recipe: dict  # fingerprint.fingerprint_recipe of the first job
    cpu: dict
    place: Optional[JobPlace]  # how a job's directory follows from its overrides; None: the class has a base
    devices: int  # trainer.devices of the first job
    derivable: Optional[bool] = None  # whether reseeded gives a later job's fingerprint; None until a second job
    placeable: bool = False  # whether a later job's directory follows from its overrides (checked on the second job)

    def checked(self, seed: int) -> Checked:
        """A later job's checks: its seed's own range check (the one check that reads it), the class's others."""
        check_range(SEED, seed)
        return Checked(self.first.task, self.first.force, reseeded(self.recipe, self.cpu, seed))


@dataclass
class Uncomposed:
    """What the plan takes from a job's class for a job it does not compose: its directory's rule, `force`,
    `trainer.devices` and its checks (ConfigError when refused)."""

    place: JobPlace
    force: bool
    devices: int
    check: Callable[[], Checked]


class SeedShare:
    def __init__(self, is_group: Callable[[str], bool] = lambda key: True):  # groups unknown: no key is plain
        self.classes: dict[tuple[str, ...], SeedClass] = {}
        self.variants = Variants(is_group)
        self.first_seeds: dict[int, SeedClass] = {}  # id of a value class → the seed class of its first job

    def uncomposed(self, overrides: Sequence[str]) -> Optional[Uncomposed]:
        """The job's plan from its class when it can be planned without composing its config, else None."""
        shared = self.classes.get(class_key(overrides))
        if shared is None:
            return self._variant(overrides)
        if not (shared.derivable and shared.placeable):
            return None
        seed = _seed(overrides)
        if seed is None:
            return None
        return Uncomposed(shared.place, shared.first.force, shared.devices, lambda: shared.checked(seed))

    def _variant(self, overrides: Sequence[str]) -> Optional[Uncomposed]:
        """The first job of a class derived from its value class's checked config (_variants.py), else None."""
        found = self.variants.derivation(overrides)
        if found is None:
            return None
        values, derived = found
        if derived.refusal is not None:
            refusal = derived.refusal

            def refuse() -> Checked:
                raise refusal

            return Uncomposed(values.place, derived.force, derived.devices, refuse)
        recipe, cpu = derived.recipe
        first = Checked(derived.task, derived.force, derived.fingerprint())
        seeds = self.first_seeds[id(values)]  # the seed derivation the class's first jobs confirmed (or not yet)
        self.classes[class_key(overrides)] = SeedClass(first, recipe, cpu, values.place, derived.devices,
                                                       seeds.derivable, seeds.placeable)  # fmt: skip
        return Uncomposed(values.place, derived.force, derived.devices, lambda: first)

    def check(self, config: DictConfig, overrides: Sequence[str], job_dir: Path, has_base: bool) -> Checked:
        """The job's checks (ConfigError or OmegaConf's errors as job_config raises them), shared with the jobs
        before it that differ from it only in `seed=`; `job_dir` is the job's directory as Hydra gives it."""
        key = class_key(overrides)
        shared = self.classes.get(key)
        if shared is None or shared.derivable is False:
            checked, recipe, cpu, checked_config = full_check(config, overrides)
            place = None if has_base else JobPlace.of(config)
            if key not in self.classes:
                self._add(key, SeedClass(checked, recipe, cpu, place, config.trainer.devices), overrides,
                          checked_config)  # fmt: skip
            self.variants.confirm(overrides, checked.fingerprint, config.trainer.devices, job_dir)
            return checked
        derived = shared.checked(config[SEED])
        if shared.derivable is None:
            checked = full_check(config, overrides)[0]
            shared.derivable = checked.fingerprint == derived.fingerprint
            shared.placeable = shared.derivable and not has_base and shared.devices == config.trainer.devices and (
                shared.place is not None and shared.place.job_dir(overrides) == job_dir)
            return checked
        return derived


    def _add(self, key: tuple[str, ...], shared: SeedClass, overrides: Sequence[str], checked: DictConfig) -> None:
        """A fully checked job's seed class; the first of its value class starts that one, a later one takes the
        seed derivation the first's seeds confirmed."""
        self.classes[key] = shared
        values = self.variants.of(overrides)
        if values is None:
            values = self.variants.add(overrides, checked, shared.place)
            if values is not None:
                self.first_seeds[id(values)] = shared
        else:
            first = self.first_seeds[id(values)]
            shared.derivable, shared.placeable = first.derivable, first.placeable


def _seed(overrides: Sequence[str]) -> Optional[int]:
    """The job's seed as its override gives it, where the plan can take it without composing (e.g. not seed=2.0:
    the schema's conversion is composition's)."""
    seeds = [o.value() for o in parse(overrides) if o.key_or_group == SEED]
    return seeds[0] if len(seeds) == 1 and type(seeds[0]) is int else None


def class_key(overrides: Sequence[str]) -> tuple[str, ...]:
    return tuple(o for o in overrides if not o.startswith(f"{SEED}="))


def full_check(config: DictConfig, overrides: Sequence[str]) -> tuple[Checked, dict, dict, DictConfig]:
    """The job's checks as the job runs them, on a copy of its config without the hydra node (returned too)."""
    checked = job_config(task_config(config), list(overrides), copied=True)
    recipe, cpu = fingerprint_recipe(checked)
    return Checked(checked.task, checked.force, sealed(recipe, cpu)), recipe, cpu, checked


def task_config(config: DictConfig) -> DictConfig:
    """The config the job's task function gets: without the hydra node, as Hydra's run_job passes it (resolving the
    hydra node, e.g. its help text, for every job would cost more than the rest of the job's checks)."""
    return OmegaConf.masked_copy(config, [key for key in config if key != "hydra"])
