"""A job's estimated cost: its update budget (steps, epochs, time, or what completed early-stopped runs of its shape
needed), a resumed job's remaining updates, the sweep's wall time at its parallelism, and the probe of its step,
cached per shape, precision, device and threads and never used for another."""

import json

import pytest

from frozen_sweep.job.cost import job_probe
from frozen_sweep.job.estimate import Probe, estimate, needed_updates, same_shape, wall_s
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from frozen_sweep.job.probe import CACHE_FILE
from frozen_sweep.run.directory import write_result
from frozen_sweep.run.record import RunResult
from tests.conftest import compose_config
from tests.helpers.sweeps import run_sweep

PROBE = Probe(startup_s=3.0, batch_s=0.5, first_step_s=2.5, valid_example_s=0.01, greedy_sentence_s=0.1, beam_sentence_s=0.2,
              batches_per_epoch=40, valid_examples=100, bleu_sentences=50, test_examples=200, test_sentences=200)  # fmt: skip


def trainer(*overrides: str):
    return compose_config("task=text_files", "task.path=unused", "model=micro", "trainer=quick", *overrides).trainer


def test_the_first_budget_to_end_sets_the_updates_and_each_part_of_the_job_is_counted():
    by_steps = estimate(trainer("trainer.max_steps=30", "trainer.max_epochs=10"), PROBE)
    assert by_steps.updates == 30 and by_steps.budget.startswith("trainer.max_steps=30, or fewer: early stopping")
    assert by_steps.train_s == pytest.approx(30 * PROBE.batch_s) and by_steps.compile_s == pytest.approx(2.0)
    assert by_steps.validations == 1  # an epoch is 40 updates: one validation, at the end of the budget
    assert by_steps.validation_s == pytest.approx(100 * 0.01 + 50 * 0.1)
    assert by_steps.test_s == pytest.approx(200 * 0.01 + 200 * 0.2)
    by_epochs = estimate(trainer("trainer.max_epochs=2", "trainer.update_freq=2"), PROBE)
    assert by_epochs.updates == 40 and "trainer.max_epochs=2 × 20 updates an epoch" in by_epochs.budget
    assert by_epochs.train_s == pytest.approx(40 * 2 * PROBE.batch_s) and by_epochs.validations == 2
    by_time = estimate(trainer("trainer.max_time_s=60", "trainer.max_epochs=100", "trainer.validate_every_steps=10"),
                       PROBE)  # fmt: skip
    per_update = PROBE.batch_s + (100 * 0.01 + 50 * 0.1) / 10  # its validations count against the time budget
    assert by_time.updates == pytest.approx(60 / per_update, abs=1) and by_time.budget.startswith("trainer.max_time_s=60")


def test_early_stopping_takes_what_completed_runs_of_the_same_shape_needed_and_a_resumed_job_only_the_rest(tmp_path):
    tr = trainer("trainer.max_epochs=100", "trainer.patience=3")
    unknown = estimate(tr, PROBE)
    assert unknown.updates == 4000 and "early stopping, and no completed run of this shape" in unknown.budget
    config = {"model.d_model": 16, "seed": 1, "trainer.max_epochs": 100}
    for seed, steps, why in [(1, 300, "early_stop"), (2, 500, "early_stop"), (3, 100, "max_steps")]:
        (tmp_path / f"s{seed}").mkdir()
        write_result(tmp_path / f"s{seed}", RunResult(status="completed", stopped_reason=why, steps=steps,
                     fingerprint={"sha256": f"h{seed}", "config": {**config, "seed": seed}, "prepared": "p"}))  # fmt: skip
    (tmp_path / "other").mkdir()
    write_result(tmp_path / "other", RunResult(status="completed", stopped_reason="early_stop", steps=9, fingerprint={
        "sha256": "o", "config": {**config, "model.d_model": 32}, "prepared": "p"}))  # fmt: skip
    needed = needed_updates(tmp_path)
    shape = same_shape({**config, "seed": 7, "trainer.max_epochs": 3}, "p")  # seed and budgets: the same shape
    assert sorted(needed[shape]) == [300, 500]  # a run a budget ended says nothing of convergence
    known = estimate(tr, PROBE, needed=needed[shape])
    assert known.updates == 400 and known.budget == "what 2 completed runs of this shape needed until early stopping (median)"
    resumed = estimate(tr, PROBE, done_updates=150, needed=needed[shape])
    assert resumed.updates == 250 and resumed.train_s == pytest.approx(250 * PROBE.batch_s)


def test_a_sweeps_wall_time_starts_each_job_in_order_on_the_first_free_slot():
    assert wall_s([10, 10, 10, 10], 2) == 20 and wall_s([30, 10, 10, 10], 2) == 30
    assert wall_s([5, 5, 5], 8) == 5 and wall_s([5, 5, 5], 1) == 15 and wall_s([], 4) == 0


def test_a_probe_is_cached_per_shape_precision_and_threads_and_never_used_for_another(micro_overrides, cache_dir):
    def probed(*extra: str) -> Probe:
        given = [*micro_overrides, "trainer.threads=1", *extra]
        checked = job_config(compose_config(*given), given)
        probe = job_probe(checked, fingerprint(checked))
        assert isinstance(probe, Probe), probe
        return probe

    cache = cache_dir / CACHE_FILE
    first = probed("model.ffn_dim=24")  # a shape no other test probes
    entries = json.loads(cache.read_text())
    again = probed("model.ffn_dim=24", "seed=5", "trainer.lr=0.01", "trainer.max_steps=700")  # the same step's cost
    assert again == first and json.loads(cache.read_text()) == entries  # read back, not measured again
    assert first.batch_s > 0 and first.batches_per_epoch > 0 and first.test_sentences == 60
    for other in ("model.ffn_dim=40", "trainer.threads=2", "trainer.amp_cpu=true", "freeze=emb"):
        probed(*{"model.ffn_dim=24": None, other: None})  # the later override of a key wins
        grown = json.loads(cache.read_text())
        assert len(grown) == len(entries) + 1, other  # measured anew under its own key
        entries = grown


def test_a_dry_run_gives_each_jobs_cost_and_the_sweeps_and_estimate_false_skips_the_probe(tmp_path, micro_overrides):
    sweep = tmp_path / "sweep"
    common = [*micro_overrides, "hydra/launcher=local_gpus", "hydra.launcher.max_parallel=2", "seed=1,2,3",
              "trainer.max_steps=40", "trainer.threads=1", "dry_run=true", "estimate=true"]  # fmt: skip
    proc = run_sweep(sweep, *common)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count("estimate: ") == 3 and "(40 updates: trainer.max_steps=40, or fewer" in proc.stdout, proc.stdout
    assert "estimated cost: 3 jobs to run, " in proc.stdout and " wall at 2 at a time (probed on cpu, 1 thread" in proc.stdout
    off = run_sweep(sweep, *common, "estimate=false")
    assert off.returncode == 0 and "estimate" not in off.stdout.replace("estimate=false", ""), off.stdout


@pytest.mark.slurm
def test_slurm_names_the_jobs_whose_estimate_exceeds_its_time_limit_before_submission(slurm_cluster, tmp_path,
                                                                                     micro_overrides):  # fmt: skip
    common = [*micro_overrides, "hydra/launcher=slurm", "trainer.threads=1", "dry_run=true"]
    proc = run_sweep(tmp_path / "sweep", *common, "hydra.launcher.timeout_min=1", "trainer.max_steps=5,100000",
                     "estimate=true")  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    over = [line for line in proc.stdout.splitlines() if "estimated longer than hydra.launcher.timeout_min=1" in line]
    assert len(over) == 1 and "slurm: 1 job estimated" in over[0], proc.stdout
    assert "trainer.max_steps=100000 (" in over[0] and "trainer.max_steps=5 " not in over[0]
    unset = run_sweep(tmp_path / "sweep", *common, "hydra.launcher.timeout_min=null", "estimate=false")
    refusal = "hydra.launcher.timeout_min=null takes each job's time limit from the estimates, but estimate=false"
    assert unset.returncode != 0 and refusal in unset.stdout, unset.stdout
