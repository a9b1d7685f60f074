"""Runs a sweep trains before the jobs that start from them, so that a pre-train-then-fine-tune study is one command.

`finetune.base_checkpoint=bases.NAME` (or `relearn.base_checkpoint`) names the job that `python -m frozen_sweep -m
<bases.NAME>` would run, in the directory that command gives it (e.g. bases.regular=[experiment=finetune_bases,
reservoir=none] is outputs/finetune_bases/reservoir=none): a base that completed before, there or under another
directory name with the same fingerprint, is used as it is; one that has not is planned and checked with the sweep,
run first, and its dependent jobs are checked and run once it has completed. A sweep's jobs that name the same base
share one run of it, and so do sweeps of other experiments that name it.
"""

import functools
import json
from pathlib import Path
from typing import Optional

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from frozen_sweep.config import BASE_PREFIX, NEUTRAL_KEYS, SCRATCH, ConfigError, ScratchModel
from frozen_sweep.config.keys import override_key
from frozen_sweep.job.job_config import base_reference, sized_by_bases

from ._compose import JobComposer
from ._plan import with_launcher_overrides
from ._planned import PlannedJob, SameRuns, plan_job


# the sweep's own overrides that reach its bases too: where and how a job runs (the cache, the device, loggers), not
# what it computes nor where its result goes
PASSED_ON = NEUTRAL_KEYS - {"name", "force", "dry_run"}


class Bases:
    def __init__(self, hydra_context, sweep_config: DictConfig, launcher_overrides: list[str]):
        self.hydra_context, self.sweep_config = hydra_context, sweep_config
        passed = [o for o in sweep_config.hydra.overrides.task if override_key(o) in PASSED_ON]
        self.launcher_overrides = with_launcher_overrides(passed, launcher_overrides)
        self.planned: dict[tuple[str, ...], PlannedJob] = {}  # a base's overrides → its planned job
        self.runs: dict[Path, SameRuns] = {}  # completed runs by fingerprint, per folder of bases

    def resolve(self, config: DictConfig) -> Optional[PlannedJob]:
        """The planned base of a job whose config names one (None otherwise); once the base has completed, the
        job's base key holds the base run's directory. ConfigError for an unknown name or a base with a base."""
        key, name = base_reference(config)
        if key is None:
            if sized_by_bases(config):
                self.size_scratch(config)
            return None
        bases = config.get("bases") or {}
        if name not in bases:
            allowed = ", ".join(f"{BASE_PREFIX}{n}" for n in bases) or "none: the config defines no bases"
            raise ConfigError(f"{key}={BASE_PREFIX}{name}: no bases.{name} in the config; allowed: {allowed}")
        base = self.plan(name, list(bases[name]))
        if base.already_completed:
            with read_write(config), open_dict(config):
                OmegaConf.update(config, key, str(base.same_run or base.job_dir))
        return base

    def plan(self, name: str, overrides: list[str]) -> PlannedJob:
        """The base's job, composed and checked once per sweep (a config error in it stops the sweep unstarted)."""
        if tuple(overrides) not in self.planned:
            config = self.composer.compose(with_launcher_overrides(overrides, self.launcher_overrides))
            own = base_reference(config)[1]
            if own is not None:
                raise ConfigError(f"bases.{name}: a base starts from a base of its own ({BASE_PREFIX}{own}); "
                                  "train that one first, or give its directory")  # fmt: skip
            folder = Path(str(config.hydra.sweep.dir)).absolute()
            runs = self.runs.setdefault(folder, SameRuns(folder))
            base = plan_job(len(self.planned), overrides, config, runs, True, overrides)
            if base.refused:
                raise ConfigError(f"bases.{name} ({' '.join(overrides)}): {base.refused}")
            base.label = f"{BASE_PREFIX}{name}"
            self.planned[tuple(overrides)] = base
        return self.planned[tuple(overrides)]

    def size_scratch(self, config: DictConfig) -> None:
        """A scratch job sized by the bases (job_config.sized_by_bases) gets their model, which must be one, as its
        own (finetune.scratch_model=own: a rerun of its config runs that); ConfigError for its own model overrides."""
        own = [o for o in config.hydra.overrides.task if override_key(o).split(".")[0] == "model"]
        if own:
            raise ConfigError(
                f"{' '.join(own)}: finetune.base_checkpoint={SCRATCH} takes the model of the config's bases "
                "(finetune.scratch_model=bases); drop these overrides, or set finetune.scratch_model=own"
            )
        models = {name: OmegaConf.to_container(self.plan(name, list(overrides)).config.model, resolve=True,
                                               enum_to_str=True)
                  for name, overrides in config.bases.items()}  # fmt: skip
        if len({json.dumps(model, sort_keys=True) for model in models.values()}) > 1:
            which = ", ".join(f"{BASE_PREFIX}{name}: model={model['name']}" for name, model in models.items())
            raise ConfigError(
                f"finetune.scratch_model=bases: the bases' models differ ({which}); set finetune.scratch_model=own "
                "and size the baseline with model=…"
            )
        with read_write(config), open_dict(config):
            config.model.merge_with(next(iter(models.values())))
            config.finetune.scratch_model = ScratchModel.own

    @functools.cached_property
    def composer(self) -> JobComposer:
        """Made when a job first names a base (the plan has checked by then that the app is frozen_sweep's)."""
        return JobComposer(self.hydra_context, self.sweep_config)

    def pending(self, jobs: list[PlannedJob]) -> list[PlannedJob]:
        """The bases that `jobs` wait for, each once, in the order the jobs name them."""
        return list({id(job.waits_for): job.waits_for for job in jobs if job.waits_for is not None}.values())

    def forget(self) -> None:
        """Plan the bases afresh (after they ran, their directories hold what they did)."""
        self.planned.clear()
        self.runs.clear()

