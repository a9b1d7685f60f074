"""Typed settings of `hydra/launcher=local_gpus` and `hydra/launcher=slurm`, registered in Hydra's ConfigStore as
hydra_submitit_launcher's config.py registers its own: OmegaConf checks every `hydra.launcher.*` key and type when a
sweep is composed, so a typo (`hydra.launcher.jobs_per_gpux=2`) or a wrong type stops the command like any other key,
before any job starts. Hydra's plugin scan imports this module; it imports nothing but Hydra.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeperConf
from hydra.core.config_store import ConfigStore

SUBMITIT_FOLDER = "${hydra.sweep.dir}/.submitit/%j"


@dataclass
class LocalGpusConf:
    """A sweep on this machine: at most `jobs_per_gpu` jobs per GPU at a time, each pinned to its GPU
    (CUDA_VISIBLE_DEVICES), the rest queued; without a GPU, `max_parallel` jobs at a time. Each job's threads are
    the cores // jobs at a time (trainer.threads, OMP_NUM_THREADS), fixed for its life (frozen_sweep.system.cpu); a
    trainer.threads on the command line wins, and trainer.follow_free_cores=true lets jobs take the free cores.
    Completed jobs are skipped, interrupted ones resume from their checkpoint; force=true reruns.

        python -m frozen_sweep -m hydra/launcher=local_gpus freeze=none,emb,att,ffn seed=1,2,3
    """

    _target_: str = "hydra_plugins.frozen_sweep_launchers.local_gpus.LocalGpusLauncher"
    submitit_folder: str = SUBMITIT_FOLDER  # submitit's pickles and each job's stdout/stderr
    gpus: Optional[list[int]] = None  # GPU ids to use, e.g. [0,1]; None: every GPU this process sees
    max_parallel: int = 1  # jobs at a time when there is no GPU
    jobs_per_gpu: int = 1  # jobs sharing one GPU at a time: raise it for small models (demo: 4)
    gpus_per_job: int = 1  # GPUs each job gets, for trainer.devices ranks (the inverse of jobs_per_gpu; equal to it)
    poll_interval_s: float = 0.2  # how often running jobs are checked
    status_every_s: float = 60  # without a terminal: the status lines' interval (on one: a block redrawn each second)


@dataclass
class SlurmConf:
    """A sweep on a SLURM cluster: one job array through submitit, at most `array_parallelism` jobs at once. A job
    requeued on preemption or after a time-out resumes from its own checkpoint (checkpoint_last.pt in its directory).
    Jobs run with this Python (the same virtual environment) in the directory the sweep was started from. Completed
    jobs are skipped before submission (no slot spent), interrupted ones resume; force=true reruns them.

        python -m frozen_sweep -m hydra/launcher=slurm hydra.launcher.partition=gpu hydra.launcher.gpus_per_node=1 \\
          freeze=none,emb,att,ffn seed=1,2,3
    """

    _target_: str = "hydra_plugins.frozen_sweep_launchers.slurm.SlurmLauncher"
    submitit_folder: str = SUBMITIT_FOLDER  # sbatch scripts, pickles, each job's stdout/stderr
    partition: Optional[str] = None  # None: the cluster's default partition
    gpus_per_node: Optional[int] = None  # GPUs per job (--gpus-per-node); None: none
    # a data-parallel job (trainer.devices = nodes × tasks_per_node): one rank per task, each with gpus_per_task GPUs
    nodes: int = 1
    tasks_per_node: int = 1
    gpus_per_task: Optional[int] = None  # --gpus-per-task; None: none (or gpus_per_node, shared by the node's tasks)
    cpus_per_task: int = 1  # CPUs per task (rank); also its trainer.threads and OMP_NUM_THREADS unless set
    mem_gb: Optional[float] = None  # memory per job; None: the cluster's default
    # time limit per job; before it, the job checkpoints and is requeued (max_num_timeout). A job whose estimated cost
    # (estimate=true) exceeds it is named before submission; null: 1.5 × the longest estimate (+ signal_delay_s)
    timeout_min: Optional[int] = 1440
    max_num_timeout: int = 3  # requeues after a time-out (preemptions do not count)
    signal_delay_s: int = 120  # the job is warned (USR2) this long before its time limit, to requeue itself
    array_parallelism: int = 64  # jobs of the array running at once
    job_name: str = "frozen_sweep_${oc.select:name,${hydra.job.name}}"  # the sweep's name (another app: its job's)
    setup: list[str] = field(default_factory=list)  # shell lines run before each job, e.g. ["module load cuda/12.4"]
    additional_parameters: dict[str, Any] = field(default_factory=dict)  # other sbatch options: {qos: high}
    poll_interval_s: float = 5  # how often sacct is asked for the jobs' states
    status_every_s: float = 60  # without a terminal: the status lines' interval (on one: a block redrawn each second)
    cancel_on_exit: bool = False  # a launcher stopped by a signal cancels its array (default: it stays on the cluster)


@dataclass
class FrozenSweepSweeperConf(BasicSweeperConf):
    """Hydra's basic sweeper (every combination; hydra.sweeper.params, max_batch_size), without its own composition
    of every job before launching: a frozen_sweep launcher composes and checks each job before any starts."""

    _target_: str = "hydra_plugins.frozen_sweep_launchers.sweeper.FrozenSweepSweeper"


ConfigStore.instance().store(group="hydra/sweeper", name="frozen_sweep", node=FrozenSweepSweeperConf, provider="frozen_sweep")
ConfigStore.instance().store(group="hydra/launcher", name="local_gpus", node=LocalGpusConf, provider="frozen_sweep")
ConfigStore.instance().store(group="hydra/launcher", name="slurm", node=SlurmConf, provider="frozen_sweep")
