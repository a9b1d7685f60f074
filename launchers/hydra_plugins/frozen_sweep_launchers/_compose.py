"""Each job's config as Hydra's load_sweep_config composes it, at a fraction of the cost for a large sweep.

Hydra builds a job's defaults list from its config-group overrides only (`model=tiny`; hydra/_internal/
defaults_list.py, class Overrides), then merges the configs it names and applies the key overrides (`seed=2`) on top
(ConfigLoaderImpl._apply_overrides_to_config). Jobs that pick the same groups share everything up to that last step,
so the defaults list is composed once per distinct group choice (kept pickled: unpickling a copy costs a fifth of a
deepcopy, the largest per-job cost of a plan), and each job copies it and applies its own key
overrides with Hydra's own function, then gets the fields load_configuration derives from the overrides
(hydra.overrides.task, hydra.job.override_dirname). A job with an override Hydra reads specially (a `hydra.` key,
a package `@`) is composed in full. tests/test_plan_compose.py checks the result equals load_sweep_config's.

Hydra gives each composition a fresh config repository (a deep copy of its sources, then every file read, parsed and
validated again: two fifths of a composition); the plan's compositions share one, as the two passes of one
composition share theirs (the configs it caches are only read: merging copies them).
"""

import functools
import pickle
from typing import Mapping, Sequence

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.types import HydraContext
from omegaconf import DictConfig, open_dict, read_write


class JobComposer:
    def __init__(self, hydra_context: HydraContext, sweep_config: DictConfig):
        self.loader = hydra_context.config_loader
        self.sweep_config = sweep_config
        self.composed: dict[tuple[str, ...], bytes] = {}  # group overrides → the config they compose to, pickled
        self.is_group: dict[str, bool] = {}
        hydra_overrides = list(sweep_config.hydra.overrides.hydra)
        self.repo = self.loader._parse_overrides_and_create_caching_repo(
            sweep_config.hydra.job.config_name, hydra_overrides
        )[1]

    def compose(self, overrides: Sequence[str]) -> DictConfig:
        """The job's config, as `load_sweep_config(sweep_config, overrides)` gives it."""
        parsed = parse(overrides)
        if any(self._special(o) for o in parsed):
            return self.loader.load_sweep_config(self.sweep_config, list(overrides))
        groups = tuple(o.input_line for o in parsed if self._group(o))
        if groups not in self.composed:
            self.composed[groups] = pickle.dumps(self._compose_groups(list(groups)))
        config = pickle.loads(self.composed[groups])
        ConfigLoaderImpl._apply_overrides_to_config([o for o in parsed if not self._group(o)], config)
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.overrides.task = [o.input_line for o in parsed]
            config.hydra.job.override_dirname = override_dirname(parsed, config.hydra.job.config.override_dirname)
        return config

    def _compose_groups(self, groups: list[str]) -> DictConfig:
        """load_sweep_config of the group overrides, its config files read through the plan's one repository."""
        loader, repo = self.loader, self.repo

        def shared_repo(config_name, overrides):  # what Hydra's method does, with `repo` for a fresh repository
            parsed = OverridesParser.create().parse_overrides(overrides=overrides)
            loader._process_config_searchpath(config_name, parsed, repo)
            return parsed, repo

        loader._parse_overrides_and_create_caching_repo = shared_repo
        try:
            return loader.load_sweep_config(self.sweep_config, groups)
        finally:
            del loader._parse_overrides_and_create_caching_repo  # Hydra's own method again

    def _group(self, override: Override) -> bool:
        """Whether Hydra reads the override as a config-group choice (defaults_list.Overrides)."""
        return self.group_exists(override.key_or_group) and not isinstance(override.value(), dict)

    def group_exists(self, key: str) -> bool:
        if key not in self.is_group:
            self.is_group[key] = self.repo.group_exists(key)
        return self.is_group[key]

    @staticmethod
    def _special(override: Override) -> bool:
        return override.is_hydra_override() or override.package is not None or override.is_sweep_override()


def parse(overrides: Sequence[str]) -> list[Override]:
    """The overrides as Hydra's grammar reads them, each distinct line parsed once (a grid of 9,000 jobs has ~600)."""
    return [_parsed(line) for line in overrides]


@functools.lru_cache(maxsize=None)
def _parsed(line: str) -> Override:
    (override,) = OverridesParser.create().parse_overrides([line])
    return override


def override_dirname(parsed: Sequence[Override], settings: Mapping) -> str:
    """hydra.job.override_dirname as load_configuration derives it (`settings`: hydra.job.config.override_dirname)."""
    return get_overrides_dirname(
        overrides=list(parsed), kv_sep=settings["kv_sep"], item_sep=settings["item_sep"],
        exclude_keys=list(settings["exclude_keys"]),
    )
