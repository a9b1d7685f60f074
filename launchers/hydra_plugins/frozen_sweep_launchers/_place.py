"""A job's directory from its overrides alone, by the rule Hydra's run_job follows: hydra.sweep.dir/hydra.sweep.subdir,
where the subdir interpolates hydra.job.override_dirname (the overrides, less the excluded keys, sorted and joined).

The plan uses it for the jobs it does not compose (_seeds.py): the rule is taken from a composed job of their class
and checked on a second one against the directory Hydra's own evaluation gives.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from ._compose import override_dirname, parse

HYDRA_RESOLVER = "${hydra:"  # reads the global HydraConfig: not evaluable from the overrides alone


@dataclass
class JobPlace:
    sweep_dir: str  # hydra.sweep.dir, evaluated
    subdir: str  # hydra.sweep.subdir as written, e.g. ${job_dirname:${hydra.job.override_dirname}}
    dirname: dict  # hydra.job.config.override_dirname (kv_sep, item_sep, exclude_keys), evaluated

    @classmethod
    def of(cls, config: DictConfig) -> Optional["JobPlace"]:
        """The rule of a composed job's config; None where its subdir reads the `hydra:` resolver."""
        subdir = OmegaConf.to_container(config.hydra.sweep, resolve=False)["subdir"]
        if not isinstance(subdir, str) or HYDRA_RESOLVER in subdir:
            return None
        settings = OmegaConf.to_container(config.hydra.job.config.override_dirname, resolve=True)
        return cls(str(config.hydra.sweep.dir), subdir, settings)

    def job_dir(self, overrides: Sequence[str]) -> Path:
        """The job's directory (OmegaConf's errors where the subdir interpolates anything but override_dirname)."""
        own = {"hydra": {"job": {"override_dirname": override_dirname(parse(overrides), self.dirname)}}}
        subdir = OmegaConf.create({**own, "subdir": self.subdir}).subdir
        return Path(self.sweep_dir, str(subdir)).absolute()
