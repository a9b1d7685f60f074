"""`dry_run=true`: what each job of a command would do, checked as the job would check itself, with nothing started.

A job would be refused (a config error, a directory holding another config's run: the reason), skipped (its directory
holds a completed result of the same fingerprint), adopted (an earlier launcher's job still runs it), resumed (from
its last checkpoint) or run. The launchers' plan (hydra_plugins.frozen_sweep_launchers._plan) gives the sweep's jobs;
frozen_sweep.__main__ gives a single job. No torch here.
"""

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.run.directory import LAST_CHECKPOINT, completed_runs, is_completed, previous_record, read_record
from frozen_sweep.run.lock import describe_runner, live_runner

RUN, RESUME, SKIP, ADOPT, REFUSE = "run", "resume", "skip", "adopt", "refuse"


@dataclass
class Decision:
    action: str  # RUN | RESUME | SKIP | ADOPT | REFUSE
    why: str


def decide(
    job_dir: Path, previous: Optional[dict], force: bool, runner: Optional[dict], refused: Optional[str],
    same_run: Optional[Path] = None,
) -> Decision:
    """What a job would do, in the order the launchers and the job itself decide it; `same_run`: another directory
    holding (or about to hold) the result of the same fingerprint."""
    if refused:
        return Decision(REFUSE, refused)
    if is_completed(previous) and not force:
        return Decision(SKIP, "holds a completed result of this config (force=true reruns it)")
    if same_run is not None and not force:
        return Decision(SKIP, same_run_message(same_run))
    if runner:
        return Decision(ADOPT, f"still running from an earlier launch ({describe_runner(runner)}): waited for")
    if force and previous:
        return Decision(RUN, f"force=true: replaces the {previous['status']} run it holds")
    if (job_dir / LAST_CHECKPOINT).exists():
        return Decision(RESUME, f"from its {LAST_CHECKPOINT} (its record says {previous['status'] if previous else 'nothing'})")
    if previous:
        return Decision(RUN, f"afresh: its {previous['status']} run left no checkpoint")
    return Decision(RUN, "no run there yet")


def same_run_message(same_run: Path) -> str:
    """Where the result of a job that is not run is: the same config, data and seed under another directory name."""
    where = same_run.relative_to(Path.cwd()) if same_run.is_relative_to(Path.cwd()) else same_run
    state = "holds its result" if is_completed(read_record(same_run)) else "runs it in this sweep"
    return f"the same run (config, data and seed) as {where}, which {state} (force=true runs it here too)"


def check_job(cfg, overrides: list[str], job_dir: Path, beside: bool = True) -> Decision:
    """A single job's decision, after every check the job runs before it writes anything (frozen_sweep.job.runner);
    `beside`: whether a completed run of its fingerprint elsewhere in its folder counts (outputs/<name>/)."""
    try:
        checked = job_config(cfg, overrides)
        job_fingerprint = fingerprint(checked)
        previous = previous_record(job_dir, job_fingerprint, checked.force)
    except ConfigError as e:
        return Decision(REFUSE, str(e))
    looks = beside and not checked.force and not is_completed(previous)
    same = same_run_beside(job_dir, job_fingerprint) if looks else None
    decision = decide(job_dir, previous, checked.force, live_runner(job_dir), None, same)
    if decision.action in (RUN, RESUME):  # its data is read as the sweep's plan reads it: bad data is a refusal
        from frozen_sweep.job.job_data import prepare_checked  # numpy and SentencePiece: only for a job that runs

        try:
            prepare_checked(checked)
        except ConfigError as e:
            return Decision(REFUSE, str(e))
    return decision


def same_run_beside(job_dir: Path, job_fingerprint: dict) -> Optional[Path]:
    """A completed run of the same fingerprint in another directory of the job's folder (outputs/<name>/): a single
    job's `seed=1` is the run the default seed made."""
    found = completed_runs(Path(job_dir).parent).get(job_fingerprint["sha256"])
    return found if found is not None and found != Path(job_dir) else None


def single_job_same_run(cfg, overrides: list[str], job_dir: Path) -> Optional[Path]:
    """For a single job (not a sweep's, whose plan looked already): same_run_beside, unless force=true or the job's
    own directory holds a run of its own (a record, a checkpoint to resume, a live runner)."""
    checked = job_config(cfg, overrides)
    job_fingerprint = fingerprint(checked)
    if checked.force or previous_record(job_dir, job_fingerprint, checked.force) or live_runner(job_dir):
        return None
    return None if (Path(job_dir) / LAST_CHECKPOINT).exists() else same_run_beside(job_dir, job_fingerprint)


def report(rows: list[tuple[str, Path, Decision]], costs: Sequence[Optional[str]] = (), total: str = "") -> str:
    """One line per job (label, then directory relative to the working directory where it can be), with its
    estimated cost where `costs` gives one (frozen_sweep.job.cost), a count, and the sweep's `total` cost."""
    lines = []
    for (label, job_dir, decision), cost in itertools.zip_longest(rows, costs[: len(rows)]):
        where = job_dir.relative_to(Path.cwd()) if job_dir.is_relative_to(Path.cwd()) else job_dir
        lines.append(f"  {decision.action:<7} {label}\n          {where}: {decision.why}")
        if cost:
            lines.append(f"          estimate: {cost}")
    counts = {action: sum(d.action == action for _, _, d in rows) for action in (RUN, RESUME, SKIP, ADOPT, REFUSE)}
    summary = ", ".join(f"{n} {action}" for action, n in counts.items() if n)
    head = f"dry run: {len(rows)} job{'s' * (len(rows) != 1)} ({summary}); nothing was started\n"
    return head + "\n".join(lines) + (f"\n{total}" if total else "")
