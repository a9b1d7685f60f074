"""Jobs that differ only in the values of plain keys (e.g. `trainer.lr=…`, `trainer.warmup_steps=…`) share one
checked config: a grid over such keys is otherwise composed and checked in full once per combination (the seeds of a
combination share theirs already, _seeds.py).

A plain key is set by a `key=value` override of a scalar under PLAIN_SECTIONS: no config group, nothing the job reads
from disk (its task, a base run), no interpolation. The class's first job is composed and checked in full, and its
checked config kept. A later combination of values gets its config by setting its values there as Hydra sets an
override (OmegaConf.update), then the value checks and the fingerprint run on it (job_config's other steps do not read
these keys). Each key is trusted only once a job that changes it has been composed and checked in full with the same
fingerprint, directory and device count as this derivation gives it; one that differs has every later job of the
class composed and checked in full. A class whose task interpolates another key (its data could move with a plain
key) and a job adopting a base run's config have no value class.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import SCRATCH, ConfigError
from frozen_sweep.config.checks import validate
from frozen_sweep.job.fingerprint import fingerprint_recipe, sealed

from ._compose import parse
from ._place import JobPlace

PLAIN_SECTIONS = ("seed", "trainer", "model", "freeze", "reservoir", "eval")
NOT_PLAIN = frozenset({"trainer.loggers"})  # checked against what is installed (job_config.check_installed)
NODE_REFERENCE = re.compile(r"\$\{(?!\w[\w.]*:)")  # ${ not opening a resolver's call


@dataclass
class Derived:
    """A combination's checks as the plan derives them: its task, force and fingerprint (with the recipe it seals),
    or the refusal its value checks give."""

    devices: int
    force: bool
    task: Optional[DictConfig] = None
    recipe: Optional[tuple[dict, dict]] = None
    refusal: Optional[ConfigError] = None

    def fingerprint(self) -> Optional[dict]:
        return sealed(*self.recipe) if self.recipe is not None else None


@dataclass
class ValueClass:
    config: DictConfig  # the first job's checked config; the plain keys hold the values of the last derivation
    values: dict[str, Any]  # the first job's plain values
    place: JobPlace
    trusted: set[str] = field(default_factory=lambda: {"seed"})  # keys whose change a full check has confirmed (a
    # seed enters no check but its range, and the fingerprint as set: _seeds.py confirms its own derivation)
    derivable: bool = True

    def untrusted(self, values: dict[str, Any]) -> set[str]:
        return {key for key, value in values.items() if value != self.values[key] and key not in self.trusted}

    def derive(self, values: dict[str, Any]) -> Optional[Derived]:
        """The combination's checks on the class's config with `values` set; None where Hydra's setting of them
        would fail (the full composition then names the error)."""
        try:
            for key, value in values.items():
                OmegaConf.update(self.config, key, value, merge=True)
            derived = Derived(self.config.trainer.devices, bool(self.config.force))
        except OmegaConfBaseException:
            return None
        try:
            validate(self.config)
            derived.task, derived.recipe = self.config.task, fingerprint_recipe(self.config)
        except (ConfigError, OmegaConfBaseException) as e:
            derived.refusal = e if isinstance(e, ConfigError) else ConfigError(str(e))
        return derived

    def confirm(self, values: dict[str, Any], fingerprint: dict, devices: int, job_dir: Path,
                overrides: Sequence[str]) -> None:  # fmt: skip
        """Trust the keys a fully checked job changes when the derivation gives what its full check gave."""
        changed = self.untrusted(values)
        if not changed or not self.derivable:
            return
        derived = self.derive(values)
        self.derivable = (
            derived is not None and derived.fingerprint() == fingerprint and derived.devices == devices
            and self.place.job_dir(overrides) == job_dir
        )  # fmt: skip
        if self.derivable:
            self.trusted |= changed


def refers_to_keys(node: DictConfig) -> bool:
    """Whether the node interpolates another key (`${model.max_positions}`), not only resolvers (`${oc.env:…}`): the
    class's jobs then share its task (the data they prepare) only if no plain key moves it."""
    return NODE_REFERENCE.search(str(OmegaConf.to_container(node, resolve=False))) is not None


class Variants:
    """The plan's value classes, keyed by a job's overrides with its plain ones reduced to their keys."""

    def __init__(self, is_group: Callable[[str], bool]):
        self.is_group = is_group
        self.classes: dict[tuple, ValueClass] = {}

    def split(self, overrides: Sequence[str]) -> tuple[tuple, dict[str, Any]]:
        """(the job's value class key, its plain values)."""
        key, values = [], {}
        for line, parsed in zip(overrides, parse(overrides)):
            plain = self._plain(parsed)
            key.append(parsed.key_or_group if plain else line)
            if plain:
                values[parsed.key_or_group] = parsed.value()
        return tuple(key), values

    def _plain(self, parsed) -> bool:
        name, value = parsed.key_or_group, parsed.value()
        return (
            parsed.type.name == "CHANGE" and parsed.package is None and not parsed.is_sweep_override()
            and name.split(".")[0] in PLAIN_SECTIONS and name not in NOT_PLAIN and not self.is_group(name)
            and type(value) in (int, float, bool, str) and "${" not in str(value)
        )  # fmt: skip

    def derivation(self, overrides: Sequence[str]) -> Optional[tuple[ValueClass, Derived]]:
        """The job's class and its derived checks, where every key it changes is trusted; else None."""
        key, values = self.split(overrides)
        shared = self.classes.get(key)
        if shared is None or not shared.derivable or shared.untrusted(values):
            return None
        derived = shared.derive(values)
        return None if derived is None else (shared, derived)

    def add(self, overrides: Sequence[str], checked: DictConfig, place: Optional[JobPlace]) -> Optional[ValueClass]:
        """The first fully checked job of its class: its checked config is the class's (none for a job with a base
        run, whose config is adopted from it, or whose directory the plan cannot derive)."""
        key, values = self.split(overrides)
        if key in self.classes or place is None or checked.relearn.name != "none":
            return None
        if checked.finetune.base_checkpoint not in (None, SCRATCH) or refers_to_keys(checked.task):
            return None
        self.classes[key] = ValueClass(checked, values, place)
        return self.classes[key]

    def of(self, overrides: Sequence[str]) -> Optional[ValueClass]:
        return self.classes.get(self.split(overrides)[0])

    def confirm(self, overrides: Sequence[str], fingerprint: dict, devices: int, job_dir: Path) -> None:
        key, values = self.split(overrides)
        if key in self.classes:
            self.classes[key].confirm(values, fingerprint, devices, job_dir, overrides)
