"""Jobs that differ only in their seed share their checks and their fingerprint's serialisation in a sweep's plan
(hydra_plugins.frozen_sweep_launchers._seeds): every job's fingerprint, directory and overrides must be what the
job's own full check gives it, whether or not the seed enters another key or the directory, and a job planned without
its config (a later seed of a class) gets the config Hydra composes for it when the launcher asks."""

from frozen_sweep.config import ConfigError
from frozen_sweep.job.fingerprint import fingerprint
from frozen_sweep.job.job_config import job_config
from hydra_plugins.frozen_sweep_launchers._seeds import task_config
from tests.helpers.plans import plan

# 8 jobs: 2 classes of 4 seeds (the second is checked in full, the third on), the fourth out of range
GRID = ["freeze=none,emb", "seed=1,2,3,-1"]


def test_seed_variants_get_the_fingerprints_a_full_check_gives(tmp_path, micro_overrides):
    for seeded in ([], ["trainer.patience=${seed}"]):  # the second: the seed enters another key, no sharing
        batch, jobs, dirs, deferred = plan(str(tmp_path / str(len(seeded))), [*micro_overrides, *seeded], GRID)
        assert [job.overrides for job in jobs] == [list(b) for b in batch] and len(jobs) == 8
        assert [job.job_dir for job in jobs] == dirs
        assert sum(deferred) == (0 if seeded else 4)  # the third and fourth seeds of each class: not composed
        refused = [job for job in jobs if "seed=-1" in job.overrides]
        expected = "trainer.patience=-1: must be > 0" if seeded else "seed=-1: must be >= 0"  # the seed's own check
        assert [job.refused for job in refused] == [expected] * 2
        ran = [job for job in jobs if job not in refused]
        for job in ran:
            full = fingerprint(job_config(task_config(job.config), job.overrides))
            assert job.refused is None and job.checked_fingerprint == full, job.overrides
        assert len({job.checked_fingerprint["sha256"] for job in ran}) == len({job.job_dir for job in jobs}) - 2 == 6


def test_a_seed_in_the_sweep_directory_has_every_job_composed_where_hydra_puts_it(tmp_path, micro_overrides):
    """The class's directory rule is checked on its second job: here it does not hold, so no job is derived."""
    _, jobs, dirs, deferred = plan(f"{tmp_path}/s${{seed}}", micro_overrides, ["seed=1,2,3"])
    assert [job.job_dir for job in jobs] == dirs and len(set(dirs)) == 3 and not any(deferred)


# 18 jobs: one value class over two plain keys; lr=-1 refused by its range, max_tokens=16 by a cross-field check
VALUE_GRID = ["trainer.lr=0.001,0.002,-1", "trainer.max_tokens=4096,2048,16", "seed=1,2"]


def test_value_variants_are_derived_with_the_checks_and_fingerprints_a_full_check_gives(tmp_path, micro_overrides):
    """Combinations of plain keys' values share the first job's checked config: each job's directory, fingerprint
    and refusal are its own full check's, and only the jobs that first change a key are composed."""
    _, jobs, dirs, deferred = plan(str(tmp_path), micro_overrides, VALUE_GRID)
    assert [job.job_dir for job in jobs] == dirs and len(set(dirs)) == 18
    for job in jobs:
        try:
            full = fingerprint(job_config(task_config(job.config), job.overrides))
        except ConfigError as e:
            assert job.refused == str(e), job.overrides
            continue
        assert job.refused is None and job.checked_fingerprint == full, job.overrides
    refusals = {job.refused.split(":")[0] for job in jobs if job.refused}
    assert refusals == {"trainer.lr=-1.0", "trainer.max_tokens=16 must be >= task.max_len=200"}, refusals
    # composed: the first job, its second seed, and the first change of each key; the refused ones derived too
    assert sum(deferred) == 14, [job.overrides for job, d in zip(jobs, deferred) if not d]


def test_a_plain_key_in_the_sweep_directory_has_its_jobs_composed_where_hydra_puts_them(tmp_path, micro_overrides):
    """A key is trusted once a full check confirms its derivation, directory included: here the directory holds the
    learning rate, so the jobs that change it are composed."""
    _, jobs, dirs, deferred = plan(f"{tmp_path}/lr${{trainer.lr}}", micro_overrides,
                                   ["trainer.lr=0.001,0.002,0.003", "seed=1,2,3"])  # fmt: skip
    assert [job.job_dir for job in jobs] == dirs and len(set(dirs)) == 9
    assert sum(deferred) == 5  # each learning rate's first job composed (the first's second seed too), later seeds not


def test_a_task_that_a_plain_key_moves_has_each_combination_checked_with_its_own_task(tmp_path, micro_overrides):
    """The data a job prepares is its checked task's: a task interpolating a plain key is not shared."""
    fixed = [*micro_overrides, "task.max_len=${trainer.warmup_steps}"]
    _, jobs, dirs, deferred = plan(str(tmp_path), fixed, ["trainer.warmup_steps=100,200", "seed=1,2"])
    assert [job.checked_task.max_len for job in jobs] == [100, 100, 200, 200] and not any(deferred)
