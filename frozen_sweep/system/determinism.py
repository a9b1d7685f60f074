"""trainer.deterministic: PyTorch's deterministic algorithms, so that a CUDA job repeats bit for bit (its reproducibility
notes: torch.use_deterministic_algorithms, cuDNN's benchmark off, and cuBLAS's workspace setting, which must be in the
environment before cuBLAS starts). On the CPU, a job with fixed threads repeats without it (frozen_sweep.system.cpu)."""

import os

import torch

CUBLAS_WORKSPACE = ":4096:8"  # the setting PyTorch's notes give for deterministic cuBLAS (CUDA ≥ 10.2)


def deterministic_algorithms() -> None:
    """From now on, in this process: deterministic kernels only (an op without one raises, naming itself)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
