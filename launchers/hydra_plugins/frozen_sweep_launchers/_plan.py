"""Every job of a sweep composed and validated before any starts, with its directory and what it already holds."""

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import Config, ConfigError
from frozen_sweep.job.dry_run import RUN, Decision, decide, report
from frozen_sweep.config.keys import override_key
from frozen_sweep.job.job_config import sized_by_bases
from frozen_sweep.system.gc_pause import no_cyclic_gc

from ._compose import JobComposer
from ._coverage import waiting_data
from ._planned import PlannedJob, SameRuns, SweepConfigError, job_dir_of, plan_job, plan_uncomposed, plan_waiting
from ._seeds import SeedShare

if TYPE_CHECKING:
    from ._cost import SweepCost

NOT_A_FROZEN_SWEEP_APP = "frozen_sweep's launchers run frozen_sweep jobs only"


def plan_jobs(
    hydra_context: HydraContext,
    sweep_config: DictConfig,
    job_overrides: Sequence[Sequence[str]],
    initial_job_idx: int,
    launcher_overrides: Sequence[str] = (),
    refuse_each: bool = False,
    base_of: Optional[Callable[[DictConfig], Optional["PlannedJob"]]] = None,
) -> list[PlannedJob]:
    """Compose and check each job as the job itself will (frozen_sweep.job.job_config: keys, values, budgets, data files,
    the record its directory holds); a bad config in any job stops the sweep here, naming the job and the key, or
    with `refuse_each` (a dry run) marks that job refused and goes on.

    `launcher_overrides` (e.g. the thread count a launcher gives each job) apply unless a job sets the same key.
    A job whose base (`bases.NAME`, _bases.py) has not completed is planned with `waits_for` its base, and checked
    once the base has completed; `base_of` (_bases.Bases.resolve) finds a job's base, and without it job_config
    refuses bases.NAME.
    """
    if OmegaConf.get_type(sweep_config) is not Config:  # e.g. Hydra's own launcher tests: docs/architecture.md
        launcher = sweep_config.hydra.runtime.choices.get("hydra/launcher")
        raise SweepConfigError(
            f"hydra/launcher={launcher}: {NOT_A_FROZEN_SWEEP_APP} (a config composed on frozen_sweep.config.Config, "
            "checked as a job before any starts); use hydra/launcher=basic for another app. No job was started."
        )
    jobs, datasets = [], {}
    composer = JobComposer(hydra_context, sweep_config)
    runs = SameRuns(Path(str(sweep_config.hydra.sweep.dir)).absolute())
    seeds = SeedShare(composer.group_exists)
    with no_cyclic_gc():  # each job's config is kept: thousands of objects a job (a sixth of a 900-job plan's CPU)
        for num, passed in enumerate(job_overrides, start=initial_job_idx):
            overrides = with_launcher_overrides(passed, launcher_overrides)  # messages name only the `passed` ones
            uncomposed = seeds.uncomposed(overrides)
            if uncomposed is not None:  # a later job of a seed or value class: its checks are the class's
                jobs.append(plan_uncomposed(num, overrides, uncomposed, composer, runs, refuse_each, passed))
                continue
            config = composer.compose(overrides)
            sized = sized_by_bases(config)  # a scratch job given its bases' model: each seed composed here
            try:
                base = base_of and base_of(config)  # bases.NAME: the base's planned job; its directory in the config
            except ConfigError as e:
                if not refuse_each:
                    raise SweepConfigError(f"job #{num} ({' '.join(passed)}): {e}. No job was started.") from e
                jobs.append(PlannedJob(num, overrides, config, job_dir_of(config), None, refused=str(e)))
                continue
            if base is not None and not base.already_completed:  # against its planned base; in full once it ran
                jobs.append(plan_waiting(num, overrides, config, base, refuse_each, passed))
                continue
            job = plan_job(num, overrides, config, runs, refuse_each, passed, seeds, has_base=base is not None or sized)
            jobs.append(job)
            if job.checked_task is not None and not job.already_completed:
                datasets.setdefault(job.checked_fingerprint["prepared"], (num, job.checked_task))
    check_distinct_dirs(jobs)
    shared = set.intersection(*(set(job.overrides) for job in jobs))
    for job, passed in zip(jobs, job_overrides):
        job.passed = list(passed)
        job.label = " ".join(o for o in job.overrides if o not in shared) or job.job_dir.name
    _check_coverage(jobs, _prepare_data(datasets), refuse_each)
    return jobs


def with_launcher_overrides(overrides: Sequence[str], launcher_overrides: Sequence[str]) -> list[str]:
    """The job's overrides, then the launcher's (e.g. its thread count) for the keys the job does not set."""
    own = {override_key(o) for o in overrides}
    return list(overrides) + [o for o in launcher_overrides if override_key(o) not in own]


def _prepare_data(datasets: dict[str, tuple[int, DictConfig]]) -> dict[str, Path]:
    """Each distinct dataset of the jobs to run prepared once, here, before any job starts: its jobs only open it,
    and bad content (a file and line) stops the sweep now rather than in every job. Its directory by its key."""
    from frozen_sweep.data.preparation import prepare  # numpy and SentencePiece: only when a sweep launches

    directories = {}
    for key, (num, task) in datasets.items():
        try:
            directories[key] = prepare(task)
        except (OSError, ValueError) as e:
            raise SweepConfigError(f"job #{num}: preparing its data: {e}. No job was started.") from e
    return directories


def _check_coverage(jobs: list[PlannedJob], directories: dict[str, Path], refuse_each: bool) -> None:
    """Each job to run against its prepared dataset as the job checks itself (a fine-tuning base's vocabulary must
    cover the task: frozen_sweep.job.job_data), a job waiting for its base against its task under the base's
    vocabulary (_coverage.py); a job's config is composed for it only where its data has <unk>s."""
    from frozen_sweep.data.labelled import unk_rates
    from frozen_sweep.data.prepared import read_manifest
    from frozen_sweep.job.job_data import check_vocabulary_coverage

    for job in jobs:
        directory = job.checked_fingerprint and directories.get(job.checked_fingerprint["prepared"])
        try:
            if job.waits_for is not None and job.checked_task is not None and not job.refused:
                directory = waiting_data(job)
            if job.refused or not directory or not any(unk_rates(read_manifest(directory)).values()):
                continue
            check_vocabulary_coverage(job.config, directory)
        except (ConfigError, OSError, ValueError) as e:
            why = str(e) if isinstance(e, ConfigError) else f"preparing its data under its base's vocabulary: {e}"
            if not refuse_each:
                raise SweepConfigError(f"job #{job.num} ({' '.join(job.passed)}): {why}. No job was started.") from e
            job.refused = why


def check_distinct_dirs(jobs: list[PlannedJob], not_started: str = "No job was started.") -> None:
    """Two jobs in one directory would overwrite each other's checkpoints and results."""
    seen: dict[Path, PlannedJob] = {}
    for job in jobs:
        other = seen.setdefault(job.job_dir, job)
        if other is not job:
            a, b = (dict(o.split("=", 1) for o in j.overrides if "=" in o) for j in (other, job))
            differing = [f"{k} ({a.get(k, '(unset)')} vs {b.get(k, '(unset)')})" for k in sorted(set(a) | set(b))
                         if a.get(k) != b.get(k)]  # fmt: skip
            raise SweepConfigError(
                f"jobs #{other.num} and #{job.num} would share the directory {job.job_dir}: they differ only in "
                f"{', '.join(differing)}, which directory names leave out (hydra.job.config.override_dirname."
                f"exclude_keys; these keys do not change a result). {not_started}"
            )


def dry_run(jobs: list[PlannedJob], cost: Optional["SweepCost"] = None) -> None:
    """Print what each job would do (frozen_sweep.job.dry_run), with its estimated `cost` (_cost.py; None: none);
    SweepConfigError after it if any job would be refused."""
    rows = []
    for job in jobs:
        runner = None if job.refused or job.already_completed else job.runner
        decision = decide(job.job_dir, job.previous, job.force, runner, job.refused, job.same_run)
        if job.waits_for is not None and job.refused is None:
            decision = Decision(RUN, f"once its base {job.waits_for.label} has completed (checked in full then)")
        rows.append((job.label, job.job_dir, decision))
    costs = [cost.line(job) for job in jobs] if cost else []
    print(report(rows, costs, cost.summary if cost else ""), flush=True)
    refused = sum(job.refused is not None for job in jobs)
    if refused:
        raise SweepConfigError(f"{refused} of {len(jobs)} jobs would be refused (above). No job was started.")


def check_devices(jobs: list[PlannedJob], ranks: int, what: str) -> None:
    """Every job's trainer.devices is the number of ranks the launcher gives it; else the sweep stops unstarted."""
    for job in jobs:
        if job.devices != ranks:
            raise SweepConfigError(
                f"job #{job.num} ({job.label}): trainer.devices={job.devices}, but {what} gives it "
                f"{ranks}: make them equal. No job was started."
            )
