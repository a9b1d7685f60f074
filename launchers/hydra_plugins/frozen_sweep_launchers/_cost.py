"""The sweep's cost before it runs: each job's estimate (frozen_sweep.job.cost) and the sweep's total and wall time at
the launcher's parallelism, for the dry run, the launch's plan line and SLURM's time limit. Jobs that differ only in
their seed share one check and one probe."""

import json
from pathlib import Path
from typing import Optional, Union

from frozen_sweep.job.estimate import Estimate, needed_updates, sweep_summary

from ._plan import PlannedJob

WAITS = "estimated once its base has completed"


class SweepCost:
    """`of[job]`: the job's estimate, or why it has none; `summary`: the sweep's one line."""

    def __init__(self, jobs: list[PlannedJob], at_a_time: int, sweep_dir: Path, unprobed: Optional[str] = None):
        """`unprobed`: why this machine cannot probe the jobs' steps (they train on hardware it lacks)."""
        from frozen_sweep.job.cost import job_estimate, job_probe  # torch: only when an estimate is asked for
        from frozen_sweep.job.job_config import job_config

        needed = needed_updates(sweep_dir)
        probed: dict[str, tuple] = {}  # the jobs' config but its seed → (its trainer config, its probe)
        self.of: dict[PlannedJob, Union[Estimate, str]] = {}
        where = set()
        for job in jobs:
            if job.refused or job.already_completed or job.runner:
                continue
            if job.waits_for is not None or job.checked_fingerprint is None or unprobed:
                self.of[job] = unprobed or WAITS
                continue
            fingerprint = job.checked_fingerprint
            group = json.dumps([{k: v for k, v in fingerprint["config"].items() if k != "seed"},
                                fingerprint["prepared"]], sort_keys=True, default=str)  # fmt: skip
            if group not in probed:
                checked = job_config(job.config, job.overrides)
                probed[group] = (checked.trainer, job_probe(checked, fingerprint))
            tr, probe = probed[group]
            self.of[job] = job_estimate(tr, probe, fingerprint, job.previous if job.resumes else None, needed)
            where.add(getattr(probe, "device", ""))
        estimates = [cost if isinstance(cost, Estimate) else None for cost in self.of.values()]
        probed_on = "probed on " + "; ".join(sorted(w for w in where if w)) if any(where) else "nothing probed"
        self.summary = sweep_summary(estimates, at_a_time, probed_on) if self.of else ""

    def line(self, job: PlannedJob) -> Optional[str]:
        """What the dry run prints under the job."""
        cost = self.of.get(job)
        return cost.describe() if isinstance(cost, Estimate) else cost

    def over(self, limit_s: float) -> list[tuple[PlannedJob, Estimate]]:
        """The jobs whose estimate exceeds `limit_s`."""
        return [(job, cost) for job, cost in self.of.items() if isinstance(cost, Estimate) and cost.total_s > limit_s]

    def seconds(self) -> dict[int, float]:
        """Job num → its estimated whole time, for the jobs that have one (the status's ETA for queued jobs)."""
        return {job.num: cost.total_s for job, cost in self.of.items() if isinstance(cost, Estimate)}

    def longest_s(self) -> Optional[float]:
        totals = [cost.total_s for cost in self.of.values() if isinstance(cost, Estimate)]
        return max(totals) if totals else None
