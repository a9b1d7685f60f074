"""Hydra's own launcher contract suites (hydra.test_utils.launcher_common_tests) against local_gpus and slurm.

Their jobs belong to Hydra's toy app (`foo`, `bar`, `db` configs), while frozen_sweep's launchers plan every job as a
frozen_sweep job before any starts (validated, its directory's record read: docs/architecture.md#launchers). So each
suite test that launches a job (BatchedSweeperTestSuite's too: its first batch plans the whole sweep) is pinned to stop at the plan with a clear error and nothing started; the two that
launch nothing (a sweep over Hydra's own config, a bad key) pass as they are. What the suites check on a job that
runs (get_original_cwd, to_absolute_path, hydra.sweep.subdir, a custom hydra.job.name, a custom resolver) is checked on
frozen_sweep jobs in tests/test_sweep_promises.py and tests/test_launch_local.py (local_gpus) and tests/test_slurm.py.
The slurm runs here need no cluster: the plan stops before anything is submitted.
"""

import functools
import inspect
import subprocess

import pytest
from hydra.test_utils.launcher_common_tests import BatchedSweeperTestSuite, IntegrationTestSuite, LauncherTestSuite
from hydra_plugins.frozen_sweep_launchers._plan import NOT_A_FROZEN_SWEEP_APP, SweepConfigError

LAUNCHERS = ["local_gpus", "slurm"]
LAUNCHING = [
    "test_sweep_1_job", "test_sweep_2_jobs", "test_sweep_1_job_strict", "test_sweep_2_optimizers",
    "test_sweep_over_unspecified_mandatory_default", "test_sweep_and_override", "test_sweep_with_custom_resolver",
]  # fmt: skip
INTEGRATION = ["test_custom_task_name", "test_custom_sweeper_run_workdir", "test_get_orig_dir_multirun",
               "test_to_absolute_path_multirun"]  # fmt: skip


def stops_at_the_plan(test):
    """Hydra's test, expected to stop where frozen_sweep's plan refuses a job that is not a frozen_sweep job."""

    @functools.wraps(test)
    def pinned(self, *args, capfd, **kwargs):
        with pytest.raises((SweepConfigError, subprocess.CalledProcessError)) as error:
            test(self, *args, **kwargs)
        message = str(error.value) + capfd.readouterr().err  # raised in this process, or printed by the app's
        assert NOT_A_FROZEN_SWEEP_APP in message and "No job was started" in message

    signature = inspect.signature(test)
    capfd = inspect.Parameter("capfd", inspect.Parameter.KEYWORD_ONLY)
    pinned.__signature__ = signature.replace(parameters=[*signature.parameters.values(), capfd])
    return pinned


def pin(suite: type, names: list[str]) -> dict:
    return {name: stops_at_the_plan(getattr(suite, name)) for name in names}


@pytest.mark.parametrize("launcher_name, overrides", [(name, []) for name in LAUNCHERS])
class TestLauncherSuite(LauncherTestSuite):
    locals().update(pin(LauncherTestSuite, LAUNCHING))


@pytest.mark.parametrize("launcher_name, overrides", [(name, ["hydra.sweeper.max_batch_size=2"]) for name in LAUNCHERS])
class TestBatchedSweeperSuite(BatchedSweeperTestSuite):
    """Batches of Hydra's basic sweeper: the first batch's launch plans the whole sweep, and stops there."""

    locals().update(pin(BatchedSweeperTestSuite, ["test_sweep_2_jobs_2_batches"]))


@pytest.mark.slow  # one app per test, in a subprocess
@pytest.mark.parametrize(
    "task_launcher_cfg, extra_flags",
    [({"defaults": [{"override hydra/launcher": name}]}, ["-m"]) for name in LAUNCHERS],
    ids=LAUNCHERS,
)
class TestIntegrationSuite(IntegrationTestSuite):
    locals().update(pin(IntegrationTestSuite, INTEGRATION))
