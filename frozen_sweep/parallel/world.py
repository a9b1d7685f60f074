"""Who this process is in a data-parallel job (its World: rank, world size, local rank), as an outside launcher
started it: torchrun's RANK/WORLD_SIZE/LOCAL_RANK, or a multi-task SLURM step's SLURM_PROCID/SLURM_NTASKS/
SLURM_LOCALID (exported as torch's variables by submitit's TorchDistributedEnvironment; MASTER_ADDR: the job's first
node). No torch here: the launchers' job wrapper asks it too (frozen_sweep.parallel.distributed runs the ranks)."""

import os
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the one rank that writes the record, checkpoints, metrics and test translations."""
        return self.rank == 0


SINGLE = World()


class RankFailed(RuntimeError):
    """A rank of a data-parallel job died, raised, or was started in a world of another size; the message says which."""


def launched_world(environ=os.environ) -> Optional[World]:
    """The world an outside launcher started this process in (torchrun; a multi-task SLURM step, whose variables are
    exported for torch here), or None when this process was started alone."""
    if "WORLD_SIZE" not in environ and int(environ.get("SLURM_NTASKS", "1")) > 1 and "SLURM_STEP_ID" in environ:
        from submitit.helpers import TorchDistributedEnvironment

        TorchDistributedEnvironment().export(set_cuda_visible_devices=False)  # SLURM binds GPUs per task itself
    if int(environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    return World(int(environ["RANK"]), int(environ["WORLD_SIZE"]), int(environ.get("LOCAL_RANK", environ["RANK"])))


def check_world(world: Optional[World], devices: int) -> None:
    """A launched world must have trainer.devices ranks: a mismatch would train with another global batch."""
    if world is not None and world.size != devices:
        raise RankFailed(
            f"trainer.devices={devices}, but this process was started as rank {world.rank} of {world.size} (torchrun "
            f"--nproc-per-node, or SLURM tasks): pass trainer.devices={world.size}, or start {devices} processes"
        )
