"""Data-parallel processes of one job through torch.distributed: who this process is (its World), starting and
watching the ranks of a job on this machine, the process group, and the model wrapped for it.

Three ways to get N ranks, one code path after them:
- the job starts them itself (`trainer.devices=N` on one machine): the job's process spawns N ranks and watches them;
  when one dies (kill -9, out of memory) or raises, the others are stopped within a grace period and the job fails
  with a reason naming that rank;
- `torchrun --nproc-per-node N -m frozen_sweep trainer.devices=N`: RANK, WORLD_SIZE, LOCAL_RANK are set;
- a multi-task SLURM job step (submitit's tasks, or `srun`): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, exported as
  torch's variables by submitit's TorchDistributedEnvironment (MASTER_ADDR: the job's first node).

gloo on the CPU, NCCL on CUDA. Frozen parameters (requires_grad=False) are in no DDP bucket, so they are never
all-reduced, and DDP's initial broadcast of the weights is skipped (init_sync=False): every rank builds the same model
from the seed and loads the same checkpoint.
"""

import contextlib
import logging
import os
import signal
import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from frozen_sweep.parallel.world import RankFailed, World

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0  # after a rank fails, the others get this long to stop on SIGTERM before SIGKILL
KILL_HINTS = {"SIGKILL": " (kill -9, or the out-of-memory killer)", "SIGSEGV": " (a crash)"}


def rank_device(device: torch.device, world: World) -> torch.device:
    """The rank's device: its own GPU (local rank, among those visible to it), or the CPU."""
    if device.type != "cuda" or world.size == 1:
        return device
    visible = torch.cuda.device_count()
    if visible == 0:
        raise RankFailed(f"rank {world.rank}: trainer.device asks for CUDA but no GPU is visible to this rank")
    return torch.device("cuda", world.local_rank % visible)


@contextlib.contextmanager
def process_group(world: World, device: torch.device, timeout_s: float) -> Iterator[None]:
    """Inside the block, this rank is in the job's process group (MASTER_ADDR/MASTER_PORT from the environment); a
    collective that waits longer than `timeout_s` raises instead of hanging. Nothing for one device."""
    if world.size == 1:
        yield
        return
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo",
        rank=world.rank,
        world_size=world.size,
        timeout=timedelta(seconds=timeout_s),
        device_id=device if device.type == "cuda" else None,
    )
    try:
        yield
        dist.barrier()  # every rank is done with collectives: none tears the group down under another
    finally:
        dist.destroy_process_group()


@contextlib.contextmanager
def main_first(world: World) -> Iterator[None]:
    """Rank 0 runs the block first (it writes caches: the tokenizer, prepared data), the others once it is done."""
    if world.size > 1 and not world.is_main:
        dist.barrier()
    yield
    if world.size > 1 and world.is_main:
        dist.barrier()


def wrap(model: nn.Module, world: World, device: torch.device) -> nn.Module:
    """The model as DDP sees it: trainable parameters in buckets, no initial broadcast (every rank built the same
    weights from the seed), no buffer broadcasts (the model has no running statistics)."""
    if world.size == 1:
        return model
    return DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        init_sync=False,  # no broadcast of parameters or buffers at construction
        forward_sync_buffers=False,
    )


def broadcast_from_main(value: Any, world: World) -> Any:
    """Rank 0's `value` on every rank (a decision only rank 0 can make: early stopping, divergence, a time budget)."""
    if world.size == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def on_main(fn: Callable[[], Any], world: World, error: type[Exception]) -> Any:
    """fn() run on rank 0 alone, its value on every rank; an `error` it raises is raised on every rank (a decision
    only rank 0 can make: validation, early stopping, divergence)."""
    if world.size == 1:
        return fn()
    value, failure = None, None
    if world.is_main:
        try:
            value = fn()
        except error as e:
            failure = e
    value, why = broadcast_from_main((value, failure and str(failure)), world)
    if why:
        raise failure or error(why)
    return value


def all_gather(value: Any, world: World) -> list:
    """Every rank's `value`, in rank order."""
    if world.size == 1:
        return [value]
    out = [None] * world.size
    dist.all_gather_object(out, value)
    return out


def sum_over_ranks(values: list[float], world: World, device: torch.device) -> list[float]:
    if world.size == 1:
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor)
    return tensor.tolist()


def stop_on_sigterm(world: Optional[World], environ=os.environ) -> None:
    """Under torchrun, a rank that gets SIGTERM (torchrun stops the others when one fails) exits through Python, so
    that rank 0 records the job as failed instead of leaving it `running`. SLURM jobs keep submitit's handlers."""
    if world is None or "TORCHELASTIC_RUN_ID" not in environ or "SLURM_JOB_ID" in environ:
        return

    def stop(signum, _frame):
        raise SystemExit(f"rank {world.rank} of {world.size} stopped by torchrun ({signal.Signals(signum).name}): "
                         "another rank failed; torchrun's output names it")  # fmt: skip

    signal.signal(signal.SIGTERM, stop)


# ---- ranks started by the job itself -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_entry(local_rank: int, fn: Callable, size: int, port: int, args: tuple) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank), WORLD_SIZE=str(size),
                      LOCAL_RANK=str(local_rank))  # fmt: skip
    fn(World(local_rank, size, local_rank), *args)


def log_files() -> list[str]:
    """The files this process logs to (Hydra's job log): its spawned ranks log there too."""
    return [h.baseFilename for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]


def log_as_rank(world: World, files: list[str]) -> None:
    """A spawned rank logs where the job does (stderr, the job's log files), each line tagged with its rank."""
    form = logging.Formatter(f"[%(asctime)s][rank {world.rank}][%(name)s][%(levelname)s] - %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in [logging.StreamHandler(), *map(logging.FileHandler, files)]:
        handler.setFormatter(form)
        root.addHandler(handler)
    log.info("rank %d of %d: pid %d", world.rank, world.size, os.getpid())


def run_ranks(fn: Callable[..., None], size: int, args: tuple = (), poll_s: float = 0.2) -> None:
    """Run `fn(world, *args)` in `size` spawned processes (rank = local rank) and wait for all of them. When one
    fails, the others are stopped (SIGTERM, SIGKILL after STOP_GRACE_S) and RankFailed names the rank that failed
    first: one killed by a signal before one that raised (a rank whose peer died raises too)."""
    context = mp.start_processes(
        _rank_entry, args=(fn, size, free_port(), args), nprocs=size, join=False, start_method="spawn"
    )
    try:
        while not context.join(timeout=poll_s, grace_period=STOP_GRACE_S):
            pass
    except mp.ProcessExitedException as e:
        raise RankFailed(_failure(context, e.error_index, size, str(e))) from None
    except mp.ProcessRaisedException as e:
        raise RankFailed(_failure(context, e.error_index, size, _last_line(str(e)))) from None
    except BaseException:  # the job itself interrupted: its ranks stop with it
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(STOP_GRACE_S)
        raise


def _failure(context, first: int, size: int, what: str) -> str:
    killed = [(rank, p.exitcode) for rank, p in enumerate(context.processes) if p.exitcode is not None and p.exitcode < 0]
    killed = [(rank, code) for rank, code in killed if -code != signal.SIGTERM]  # SIGTERM: stopped by us
    if killed:
        rank, code = killed[0]
        name = signal.Signals(-code).name
        return f"rank {rank} of {size} died: killed by {name}{KILL_HINTS.get(name, '')}; the other ranks were stopped"
    return f"rank {first} of {size} failed: {what}; the other ranks were stopped"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text

