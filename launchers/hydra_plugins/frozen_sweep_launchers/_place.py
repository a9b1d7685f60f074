"""A job's directory from its overrides alone, by the rule Hydra's run_job follows: hydra.sweep.dir/hydra.sweep.subdir,
where the subdir is (a resolver of) hydra.job.override_dirname: the overrides, less the excluded keys, sorted and
joined.

The plan uses it for the jobs it does not compose (_seeds.py): the rule is taken from a composed job of their class
and checked on a second one against the directory Hydra's own evaluation gives. Evaluating the subdir's interpolation
with OmegaConf would parse it with its grammar for every job (a third of such a job's plan), so the subdirs this
project writes are evaluated directly; any other subdir leaves the jobs to be composed.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.run.directory import dirname

from ._compose import override_dirname, parse

SUBDIR = re.compile(r"\$\{(?:(\w+):)?\$\{hydra\.job\.override_dirname\}\}")  # ${hydra.job.override_dirname}, or a
RESOLVERS: dict[Optional[str], Callable[[str], str]] = {None: str, "job_dirname": dirname}  # resolver of it


@dataclass
class JobPlace:
    sweep_dir: str  # hydra.sweep.dir, evaluated
    name: Callable[[str], str]  # hydra.sweep.subdir as a function of hydra.job.override_dirname
    dirname: dict  # hydra.job.config.override_dirname (kv_sep, item_sep, exclude_keys), evaluated

    @classmethod
    def of(cls, config: DictConfig) -> Optional["JobPlace"]:
        """The rule of a composed job's config; None where its subdir is not one this module evaluates."""
        subdir = OmegaConf.to_container(config.hydra.sweep, resolve=False)["subdir"]
        match = SUBDIR.fullmatch(subdir) if isinstance(subdir, str) else None
        if match is None or match.group(1) not in RESOLVERS:
            return None
        settings = OmegaConf.to_container(config.hydra.job.config.override_dirname, resolve=True)
        return cls(str(config.hydra.sweep.dir), RESOLVERS[match.group(1)], settings)

    def job_dir(self, overrides: Sequence[str]) -> Path:
        return Path(self.sweep_dir, self.name(override_dirname(parse(overrides), self.dirname))).absolute()
