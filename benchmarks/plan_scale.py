"""Planning a sweep at scale: the time `python -m frozen_sweep -m … dry_run=true` takes for 9, 90 and 900 jobs, and
a relaunch of the 900-job sweep once every job has a completed record (all skipped), with how the cost grows; then
9,000 jobs over four axes that are not all seeds (the nine freeze rows × 10 learning rates × 10 warmups × 10 seeds).

    python benchmarks/plan_scale.py [--quick] [--large: 9,000 seeded jobs too]

The grid is the nine freeze rows × seeds (× two model sizes for 900) on the embedded corpus, so each job is planned
as a real sweep's is (every check the plan does: keys, values, data files, its directory's record; a seed class's
later jobs from its first two, their configs composed at launch). The relaunch's records are written here, one per
job with the fingerprint of the job's own full check, as a finished sweep leaves them. Each size is run as a fresh command (interpreter start and imports included), its wall time printed
with the CPU time the command used, its peak memory (resident) and the load average: on a busy machine the CPU time is
the figure to compare. The per-job cost is the slope between the smallest and the largest grid, the fixed cost its
intercept. Targets on a quiet machine: 900 jobs in ≤ 10 s, 9,000 in ≤ 60 s; the four-axis 9,000 in ≤ 15 s of CPU
and ≤ 300 MB.
"""

import argparse
import os
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
    9000: ["freeze=glob(*)", "seed=range(1,501)", "model=demo,tiny"],
}
TARGETS_S = {900: 10.0, 9000: 60.0}
LEARNING_RATES = ",".join(f"{lr / 10000:g}" for lr in range(10, 20))  # 0.001 … 0.0019
AXES = ["freeze=glob(*)", f"trainer.lr={LEARNING_RATES}", "trainer.warmup_steps=range(100,200,10)", "seed=range(1,11)"]
AXES_TARGETS = (15.0, 300)  # s of CPU, MB of peak memory


# `python -m frozen_sweep ARGS`, printing its peak resident memory (VmHWM) last: its rusage's maxrss would count the
# pages of this process it was forked from
PEAK = "peak resident kB:"
PEAK_REPORTING = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    hwm = next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
    f"    print('{PEAK}', hwm.split()[1], file=sys.stderr, flush=True)\n"
    "atexit.register(peak)\n"
    "runpy.run_module('frozen_sweep', run_name='__main__', alter_sys=True)\n"
)


def timed_sweep(sweep_dir: Path, grid: list[str], *extra: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the command, its output); the command's peak memory in `timed_sweep.peak_mb`."""
    command = [sys.executable, "-c", PEAK_REPORTING, "-m", *grid, f"hydra.sweep.dir={sweep_dir}", *extra]
    with tempfile.TemporaryFile("w+") as output:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # this command's own CPU time, not all children's
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        out = output.read()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{out[-4000:]}")
    timed_sweep.peak_mb = int(out.rsplit(PEAK, 1)[1].split()[0]) / 1024
    return elapsed, usage.ru_utime + usage.ru_stime, out


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def write_completed_records(sweep_dir: Path, grid: list[str]) -> int:
    """A completed result.json in every job's directory, with the fingerprint the plan computes for the job."""
    sys.path.insert(0, str(ROOT / "launchers"))
    from hydra_plugins.frozen_sweep_launchers._plan import plan_jobs
    from hydra_plugins.frozen_sweep_launchers._seeds import task_config

    import frozen_sweep.__main__  # noqa: F401 - the schema and the resolvers the command registers
    from frozen_sweep.job.fingerprint import fingerprint
    from frozen_sweep.job.job_config import job_config
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
    parser.add_argument("--large", action="store_true", help="9,000 jobs too")
    args = parser.parse_args()
    sizes = [9, 90] if args.quick else [9, 90, 900] + [9000] * args.large
    with tempfile.TemporaryDirectory() as tmp:
        times, cpus = {}, {}
        for n in sizes:
            at_start = load()
            elapsed, cpus[n], out = timed_sweep(Path(tmp) / f"dry{n}", GRIDS[n], "dry_run=true")
            assert f"dry run: {n} jobs" in out, out[-2000:]
            times[n] = elapsed
            print(f"dry run, {n:>4} jobs: {elapsed:6.1f} s wall, {cpus[n]:6.1f} s CPU ({cpus[n] / n * 1000:.0f} ms CPU a "
                  f"job, start-up included), peak {timed_sweep.peak_mb:.0f} MB, load {at_start} at start")  # fmt: skip
        small, large = sizes[0], sizes[-1]
        slope = (times[large] - times[small]) / (large - small)
        print(f"growth: linear, {slope * 1000:.1f} ms a job beyond a fixed {times[small] - slope * small:.1f} s")
        cpu_slope = (cpus[large] - cpus[small]) / (large - small)
        print(f"CPU: {cpu_slope * 1000:.1f} ms a job beyond a fixed {cpus[small] - cpu_slope * small:.1f} s")
        large = min(large, 900)  # the relaunch: of the 900-job grid
        relaunch_dir = Path(tmp) / "relaunch"
        written = write_completed_records(relaunch_dir, GRIDS[large])
        at_start = load()
        elapsed, cpu, out = timed_sweep(relaunch_dir, GRIDS[large])
        assert f"{written} jobs: 0 to run" in out, out[-2000:]
        print(f"relaunch of {written} completed jobs (all skipped): {elapsed:.1f} s wall, {cpu:.1f} s CPU, "
              f"load {at_start} at start")  # fmt: skip
        if not args.quick:
            four_axes(Path(tmp) / "axes")
        for n, target in TARGETS_S.items():
            if n in times:
                verdict = "met" if times[n] <= target else "NOT met"
                print(f"target: {n} jobs planned in <= {target:.0f} s: {verdict} ({times[n]:.1f} s wall, "
                      f"{cpus[n]:.1f} s CPU, load {load()} at the end)")  # fmt: skip



def four_axes(sweep_dir: Path) -> None:
    """The 9,000-job grid over freeze × lr × warmup × seed, against its CPU and memory targets."""
    at_start = load()
    elapsed, cpu, out = timed_sweep(sweep_dir, AXES, "dry_run=true")
    assert "dry run: 9000 jobs" in out, out[-2000:]
    cpu_target, mb_target = AXES_TARGETS
    met = "met" if cpu <= cpu_target and timed_sweep.peak_mb <= mb_target else "NOT met"
    print(f"dry run, 9000 jobs over freeze × lr × warmup × seed: {elapsed:.1f} s wall, {cpu:.1f} s CPU, peak "
          f"{timed_sweep.peak_mb:.0f} MB, load {at_start} at start; target <= {cpu_target:.0f} s CPU and <= "
          f"{mb_target} MB: {met}")  # fmt: skip


if __name__ == "__main__":
    main()
