"""Planning a sweep at scale: the time `python -m frozen_sweep -m … dry_run=true` takes for 9, 90 and 900 jobs, and
a relaunch of the 900-job sweep once every job has a completed record (all skipped), with how the cost grows.

    python benchmarks/plan_scale.py [--quick]

The grid is the nine freeze rows × seeds (× two model sizes for 900) on the embedded corpus, so each job is composed,
checked and fingerprinted as a real sweep's is (every check the plan does: keys, values, data files, its directory's
record). The relaunch's records are written here, one per job with the job's own fingerprint, as a finished sweep
leaves them. Each size is run as a fresh command (interpreter start and imports included); the per-job cost is the
slope between the smallest and the largest grid, the fixed cost its intercept. Target: 900 jobs in ≤ 30 s.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import HydraContext, RunMode

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {
    9: ["freeze=glob(*)"],
    90: ["freeze=glob(*)", "seed=range(1,11)"],
    900: ["freeze=glob(*)", "seed=range(1,51)", "model=demo,tiny"],
}
TARGET_S = 30.0


def timed_sweep(sweep_dir: Path, grid: list[str], *extra: str) -> tuple[float, str]:
    command = [sys.executable, "-m", "frozen_sweep", "-m", *grid, f"hydra.sweep.dir={sweep_dir}", *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, done.stdout + done.stderr


def write_completed_records(sweep_dir: Path, grid: list[str]) -> int:
    """A completed result.json in every job's directory, with the fingerprint the plan computes for the job."""
    sys.path.insert(0, str(ROOT / "launchers"))
    from hydra_plugins.frozen_sweep_launchers._plan import plan_jobs, task_config

    import frozen_sweep.__main__  # noqa: F401 - the schema and the resolvers the command registers
    from frozen_sweep.job.job_config import fingerprint, job_config
    from frozen_sweep.run.directory import write_result
    from frozen_sweep.run.record import RunResult

    overrides = [*grid, f"hydra.sweep.dir={sweep_dir}"]
    with initialize_config_dir(config_dir=str(ROOT / "frozen_sweep" / "conf"), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        sweep_config = loader.load_configuration("config", overrides, run_mode=RunMode.MULTIRUN)
        parsed = OverridesParser.create(config_loader=loader).parse_overrides(grid)
        (batch,) = BasicSweeper.split_arguments(parsed, None)
        jobs = plan_jobs(HydraContext(config_loader=loader, callbacks=None), sweep_config, batch, 0)
    for job in jobs:
        checked = job_config(task_config(job.config), job.overrides)
        job.job_dir.mkdir(parents=True, exist_ok=True)
        write_result(job.job_dir, RunResult(status="completed", test_metric=1.0, fingerprint=fingerprint(checked)))
    return len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="9 and 90 jobs only: a smoke test")
    args = parser.parse_args()
    sizes = [9, 90] if args.quick else [9, 90, 900]
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for n in sizes:
            elapsed, out = timed_sweep(Path(tmp) / f"dry{n}", GRIDS[n], "dry_run=true")
            assert f"dry run: {n} jobs" in out, out[-2000:]
            times[n] = elapsed
            print(f"dry run, {n:>4} jobs: {elapsed:6.1f} s ({elapsed / n * 1000:.0f} ms a job, start-up included)")
        small, large = sizes[0], sizes[-1]
        slope = (times[large] - times[small]) / (large - small)
        print(f"growth: linear, {slope * 1000:.1f} ms a job beyond a fixed {times[small] - slope * small:.1f} s")
        relaunch_dir = Path(tmp) / "relaunch"
        written = write_completed_records(relaunch_dir, GRIDS[large])
        elapsed, out = timed_sweep(relaunch_dir, GRIDS[large])
        assert f"{written} jobs: 0 to run" in out, out[-2000:]
        print(f"relaunch of {written} completed jobs (all skipped): {elapsed:.1f} s")
        if not args.quick:
            verdict = "met" if times[900] <= TARGET_S else "NOT met"
            print(f"target: 900 jobs planned in <= {TARGET_S:.0f} s: {verdict} ({times[900]:.1f} s)")


if __name__ == "__main__":
    main()
