"""What runs inside each submitit job: one Hydra job in its own directory, resumable when requeued."""

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable, Optional

import submitit
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobRuntime, JobStatus, run_job, setup_globals
from hydra.types import HydraContext
from omegaconf import DictConfig, open_dict, read_write

from frozen_sweep.parallel.world import launched_world
from frozen_sweep.run.directory import ATTEMPTS_FILE, mark_failed
from frozen_sweep.run.lock import JobAlreadyRunning, exclusive_run
from frozen_sweep.system.files import write_json_atomic
from frozen_sweep.system.signals import PREEMPTION_GRACE_S, ignore_stops, restore_sigint, stop_on_sigterm

from ._held import HandedOver, completed_since_plan


class JobTask(submitit.helpers.Checkpointable):
    """A Checkpointable, so that on preemption or time-out submitit calls `checkpoint()`, which resubmits this same
    task: the requeued job then resumes from checkpoint_last.pt in its directory (frozen_sweep.job.runner.run_job).

    Hydra's singleton state (its config store, the OmegaConf resolvers registered so far, ...) travels with the task
    and is restored in the job, as in Hydra's own submitit launcher; the job holds its directory's lock from start to
    end (frozen_sweep.run.directory): a directory that another runner holds, or completed since the sweep's plan
    (`planned`: the record it held then), is handed back untouched (_held.py), so that it is waited for, not run."""

    def __init__(
        self,
        task_function: Callable[[DictConfig], Any],
        hydra_context: HydraContext,
        config: DictConfig,
        singleton_state: Any,  # Singleton.get_state() in the launcher
        planned: Optional[dict] = None,
    ):
        self.task_function = task_function
        self.hydra_context = hydra_context
        self.config = config
        self.singleton_state = singleton_state
        self.planned = planned

    def __call__(self) -> JobReturn | HandedOver:
        # the sweep's plan resolved every hub revision and prepared every dataset: a job reads what it kept under the
        # cache and never reaches the hub (frozen_sweep.data.hub), on this machine or on a cluster's nodes
        os.environ["HF_HUB_OFFLINE"] = "1"
        Singleton.set_state(self.singleton_state)
        setup_globals()
        job_dir = Path(self.config.hydra.runtime.output_dir)
        job_dir.mkdir(parents=True, exist_ok=True)
        world = launched_world()  # a multi-task job runs this in every task: rank 0 holds the directory
        if world is not None and not world.is_main:
            return self._run(job_dir, main=False)
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(exclusive_run(job_dir))
            except JobAlreadyRunning as e:
                return HandedOver(e.runner)
            if completed_since_plan(job_dir, self.planned):
                return HandedOver(None)
            return self._run(job_dir, main=True)

    def _run(self, job_dir: Path, main: bool) -> JobReturn:
        environment = submitit.JobEnvironment()
        job_id = environment.job_id
        restore_sigint()
        if environment.name() == "slurm":  # a preemption's SIGTERM is followed by submitit's signal (USR2)
            stop_on_sigterm(PREEMPTION_GRACE_S, environment._usr_sig())
        else:
            stop_on_sigterm()
        with read_write(self.config.hydra.job), open_dict(self.config.hydra.job):
            self.config.hydra.job.id = job_id
        JobRuntime.instance().set("name", self.config.hydra.job.name)
        if main:
            _start_attempt(job_dir, job_id)
        try:
            ret = run_job(
                task_function=self.task_function,
                config=self.config,
                job_dir_key="hydra.runtime.output_dir",  # set by the launcher: the job's directory, resolved
                job_subdir_key=None,
                hydra_context=self.hydra_context,
            )
        except BaseException as e:  # interrupted (Ctrl-C, kill, scancel), or stopped to be requeued
            if isinstance(e, KeyboardInterrupt):
                ignore_stops()
            if main:
                _end_attempt(job_dir, "interrupted")
                mark_failed(job_dir, f"{type(e).__name__}: {e}", list(self.config.hydra.overrides.task), stale=True)
            raise
        if main:
            _end_attempt(job_dir, ret.status.name.lower())
        if ret.status == JobStatus.FAILED:
            raise ret._return_value  # so that submitit and SLURM see the failure too, not a job that completed
        return ret


def _read_attempts(job_dir: Path) -> list[dict]:
    path = Path(job_dir) / ATTEMPTS_FILE
    return json.loads(path.read_text()) if path.exists() else []


def _start_attempt(job_dir: Path, job_id: str) -> None:
    attempt = {
        "job_id": job_id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "started": time.time(),
    }
    write_json_atomic(job_dir / ATTEMPTS_FILE, _read_attempts(job_dir) + [attempt])


def _end_attempt(job_dir: Path, status: str) -> None:
    attempts = _read_attempts(job_dir)
    attempts[-1].update(ended=time.time(), status=status)
    write_json_atomic(job_dir / ATTEMPTS_FILE, attempts)
