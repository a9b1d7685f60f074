"""A sweep's status after a resume: each job's line from its current attempt (a killed attempt's report left in the
directory is not shown as current), tokens/s from the first report, the test phase with its own progress, and a
sweep ETA while jobs are queued and none has finished. The files are the ones the job's own code writes (its
attempts record, its progress reports), read by the launcher's status board."""

import json
import re
import time

from omegaconf import OmegaConf

from frozen_sweep.train.progress_report import ProgressReport, EvaluationReport
from frozen_sweep.train.stopping import TrainState
from hydra_plugins.frozen_sweep_launchers._eta import sweep_eta
from hydra_plugins.frozen_sweep_launchers._planned import PlannedJob
from hydra_plugins.frozen_sweep_launchers._progress import Progress
from hydra_plugins.frozen_sweep_launchers._status import StatusBoard
from hydra_plugins.frozen_sweep_launchers._task import _start_attempt

TRAINER = OmegaConf.create({"max_steps": 300, "max_epochs": None, "max_time_s": None, "step_time_s": None,
                            "progress": False})  # fmt: skip


def trained(run_dir, state: TrainState, steps: int, report: ProgressReport) -> None:
    """`steps` updates of 100 tokens each, reported as the trainer reports them."""
    for _ in range(steps):
        state.step, state.train_tokens = state.step + 1, state.train_tokens + 100
        report.step(state, state.step / 1000)
    report.write(state)


def test_a_resumed_jobs_line_is_its_current_attempts_and_the_sweep_has_an_eta_before_any_job_ends(tmp_path):
    job_dir = tmp_path / "freeze=none"
    job_dir.mkdir()
    job = PlannedJob(0, ["freeze=none"], None, job_dir, None, label="freeze=none")
    queued = [PlannedJob(n, [f"seed={n}"], None, tmp_path / str(n), None) for n in (1, 2)]
    _start_attempt(job_dir, "killed")  # the killed attempt: no end in its record, its last report left behind
    killed = TrainState()
    trained(job_dir, killed, 66, ProgressReport(job_dir, TRAINER, killed, writes=True))
    assert json.loads((job_dir / "progress.json").read_text())["tokens_per_s"] > 0  # before any validation
    time.sleep(0.01)

    board = StatusBoard(Progress([job, *queued], tmp_path), every_s=60, slots=1)  # the resumed launcher's
    assert re.fullmatch(r"  freeze=none: starting \| ETA \?", board.lines([job], 2)[1]), board.lines([job], 2)

    _start_attempt(job_dir, "resumed")  # the new attempt, from the killed one's checkpoint at step 50
    resumed = TrainState(step=50, train_tokens=5000, step_time_s=9.0)
    report = ProgressReport(job_dir, TRAINER, resumed, writes=True)
    trained(job_dir, resumed, 1, report)
    head, line = board.lines([job], 2)
    assert re.fullmatch(r"  freeze=none: step 51/300 \| not validated yet \| [1-9][\d,]* tok/s \| ETA \?", line), line
    time.sleep(0.05)
    trained(job_dir, resumed, 10, report)
    head, line = board.lines([job], 2)
    assert re.fullmatch(r"status: 0 done, 1 running, 2 queued, 0 failed of 3 \| sweep ETA \d+ (s|min|h)", head), head
    assert re.fullmatch(r"  freeze=none: step 61/300 .* \| ETA \d+ (s|min|h)", line), line
    board.progress.estimates = {1: 3600.0, 2: 5400.0}  # the queued jobs' own estimates: one slot, one after the other
    assert board.lines([job], 2)[0].endswith("| sweep ETA 2.5 h"), board.lines([job], 2)[0]

    testing = EvaluationReport(job_dir)
    testing.testing(412, 1086)
    assert re.search(r": testing: decoded 412/1,086 \(trained 61 steps\) \| ETA", board.lines([job], 2)[1])
    testing.scoring()
    assert ": testing: scoring" in board.lines([job], 2)[1]


def test_the_sweep_eta_fills_the_slots_as_the_running_jobs_free_them():
    # slots free at 10 and 20 s; three queued jobs of 30 s start at 10, 20 and 40 s: the last ends at 70 s
    assert sweep_eta([10.0, 20.0], [30.0, 30.0, 30.0], slots=2) == 70.0
    assert sweep_eta([5.0], [30.0, 30.0], slots=3) == 30.0  # two idle slots take the queued jobs at once
