"""A job's estimated cost (frozen_sweep.job.estimate) from its checked config: its probe (frozen_sweep.job.probe) on the
device it would train on, the updates its checkpoint holds, and what completed runs of its shape needed. What a dry
run and a launch print; `estimate=false` skips it (no probe)."""

from pathlib import Path
from typing import Optional, Union

from omegaconf import DictConfig

from frozen_sweep.config import ConfigError
from frozen_sweep.job.estimate import Estimate, Probe, estimate, needed_updates, same_shape
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config


def done_updates(previous: Optional[dict]) -> int:
    """The updates a directory's checkpoint holds: its record's last validation (a checkpoint follows each)."""
    history = (previous or {}).get("history") or []
    return int(history[-1].get("step") or 0) if history else 0


def job_probe(checked: DictConfig, job_fingerprint: dict) -> Union[Probe, str]:
    """The probe of a checked job config with its fingerprint on the device it would train on, or why there is none."""
    from frozen_sweep.job.probe import cached_probe  # torch: only when an estimate is asked for
    from frozen_sweep.job.runner import pick_device

    try:
        return cached_probe(checked, job_fingerprint, pick_device(checked))
    except (ConfigError, RuntimeError, OSError, ValueError) as e:  # no GPU, a base not there yet, ...: said, not fatal
        return f"no estimate: {e}"


def job_estimate(tr, probe: Union[Probe, str], job_fingerprint: dict, previous: Optional[dict],
                 needed: dict[str, list[int]]) -> Union[Estimate, str]:  # fmt: skip
    """The estimate of a job with trainer config `tr`, or why there is none; `previous`: the record of the run it
    resumes; `needed`: estimate.needed_updates of the runs beside it."""
    if isinstance(probe, str):
        return probe
    shape = same_shape(job_fingerprint["config"], job_fingerprint["prepared"])
    return estimate(tr, probe, done_updates(previous), needed.get(shape))


def single_job_cost(cfg: DictConfig, overrides: list[str], job_dir: Path, previous: Optional[dict]) -> str:
    """A single job's dry-run estimate line, with the runs beside it (outputs/<name>/) telling its convergence."""
    checked = job_config(cfg, overrides)
    checked_fingerprint = fingerprint(checked)
    probe = job_probe(checked, checked_fingerprint)
    cost = job_estimate(checked.trainer, probe, checked_fingerprint, previous, needed_updates(Path(job_dir).parent))
    return cost if isinstance(cost, str) else f"{cost.describe()} (probed on {probe.device})"
