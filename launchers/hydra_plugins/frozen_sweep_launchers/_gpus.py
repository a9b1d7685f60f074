"""Which GPUs a local sweep may use: the configured ids, else those this process sees; settings that could not be
used are refused."""

import os
from pathlib import Path
from typing import Optional, Sequence


def check_usable(gpus: list[int], visible: list[int], max_parallel: int, jobs_per_gpu: int) -> None:
    """Settings the launcher could not use are refused, not ignored: GPUs this process does not see, GPU packing
    without a GPU, CPU parallelism with GPUs."""
    if set(gpus) - set(visible):
        raise ValueError(
            f"hydra.launcher.gpus={gpus}: this process sees GPUs {visible or 'none'} (CUDA_VISIBLE_DEVICES ids); "
            "allowed: a list of those, or null for all"
        )
    if not gpus and jobs_per_gpu > 1:
        raise ValueError(
            f"hydra.launcher.jobs_per_gpu={jobs_per_gpu}: there is no GPU here; without one, "
            "hydra.launcher.max_parallel sets the jobs at a time"
        )
    if gpus and max_parallel > 1:
        raise ValueError(
            f"hydra.launcher.max_parallel={max_parallel} applies without a GPU; with GPUs {gpus}, "
            "hydra.launcher.jobs_per_gpu sets the jobs at a time on each"
        )


def visible_gpus(configured: Optional[Sequence[int]]) -> list[int]:
    """The GPU ids jobs are pinned to: the configured ones, else every GPU this process sees (by the ids that
    CUDA_VISIBLE_DEVICES gives, when it is set)."""
    if configured is not None:
        return list(configured)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        if not gpu_driver_present():
            return []  # torch's import alone costs seconds of a sweep's plan
        import torch

        return list(range(torch.cuda.device_count()))
    ids = []
    for entry in filter(None, (e.strip() for e in visible.split(","))):
        if entry.startswith(("GPU-", "MIG-")):
            raise ValueError(f"CUDA_VISIBLE_DEVICES={visible} names GPUs by UUID: set hydra.launcher.gpus=[0,1,…]")
        if not entry.isdigit():
            break  # CUDA ignores an invalid id and every id after it
        ids.append(int(entry))
    return ids



def gpu_driver_present() -> bool:
    """Whether a GPU driver shows a device here (NVIDIA's /proc entry or device files, ROCm's /dev/kfd): without
    one torch would count none."""
    nvidia = Path("/proc/driver/nvidia/gpus")
    listed = nvidia.is_dir() and any(nvidia.iterdir())
    return listed or any(Path("/dev").glob("nvidia[0-9]*")) or Path("/dev/kfd").exists()
