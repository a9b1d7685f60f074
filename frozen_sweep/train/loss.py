"""The training forward and its loss: bf16 autocast where asked (on CUDA by default, on the CPU with trainer.amp_cpu),
the attention backend that goes with it, and torch.compile when asked: by region (each layer, and the loss head) or
the whole step as one graph (trainer.compile_scope). Validation and decoding stay eager and in the model's own
precision."""

import contextlib
import logging

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.parallel import DistributedDataParallel

from frozen_sweep.config import CompileScope, ConfigError
from frozen_sweep.system.kernels import BF16, FP32, KERNELS_VARIABLE, cpu_precision, kernel_level
from frozen_sweep.train.compiled import compile_layers

log = logging.getLogger(__name__)


class TrainingLoss:
    """`loss(src, tgt_in, tgt_out)`: the summed label-smoothed cross-entropy of a batch under `forward` (the model,
    or its data-parallel wrapper), `pad_id` targets ignored; a regression's summed squared error (no smoothing).
    Summed either way: the trainer divides by the update's targets (tokens, or examples for a head)."""

    def __init__(self, forward: nn.Module, trainer_cfg, device: torch.device, pad_id: int, regression: bool = False):
        tr = trainer_cfg
        self.pad_id = pad_id  # the vocabulary's: targets holding it are no targets
        self.forward, self.device, self.label_smoothing = forward, device, tr.label_smoothing
        self.regression = regression
        model = forward.module if isinstance(forward, DistributedDataParallel) else forward
        # the output projection, applied by the loss head (a classifier's or regression's head is the model's own)
        self.project = nn.Identity() if model.is_classifier else model.output
        on_cuda = device.type == "cuda"
        self.precision = (BF16 if tr.amp else FP32) if on_cuda else cpu_precision(tr.amp, tr.amp_cpu)
        self.autocast = self.precision == BF16
        if not on_cuda:
            log.info("training precision on the CPU: %s (trainer.amp_cpu=%s)", self.precision, tr.amp_cpu)
        # bf16 on the CPU: torch's flash-attention kernel (its backward) made whole steps 1.1-1.7x slower than fp32,
        # while the math backend's plain bf16 matrix products make them 1.2-1.9x faster (docs/performance.md)
        cpu_bf16 = self.autocast and device.type == "cpu"
        self.attention_backend = (lambda: sdpa_kernel(SDPBackend.MATH)) if cpu_bf16 else contextlib.nullcontext
        if device.type == "cuda":
            torch.backends.cuda.enable_cudnn_sdp(tr.cudnn_attention)
        self.compute, self.head_loss = self._summed, self._head_loss
        if tr.compile and not on_cuda and kernel_level() == "DEFAULT":  # the compiler's C++ fails to build there
            raise ConfigError(f"trainer.compile=true: torch {torch.__version__}'s compiler cannot build CPU code with "
                              f"{KERNELS_VARIABLE}=default ('at::vec' has not been declared); allowed here: "
                              f"trainer.compile=false, or {KERNELS_VARIABLE} unset, avx2 or avx512")  # fmt: skip
        if tr.compile and CompileScope(tr.compile_scope) == CompileScope.step:  # one graph for all batch shapes
            self.compute = torch.compile(self._summed, dynamic=True, mode=tr.compile_mode)
        elif tr.compile:  # each layer, and the loss head: the fp32 cast of the (B, T, V) logits fuses with the loss
            log.info("trainer.compile: %d layers compiled on their own, and the loss head",
                     compile_layers(model, tr.compile_mode))  # fmt: skip
            self.head_loss = torch.compile(self._head_loss, dynamic=True, mode=tr.compile_mode)

    def __call__(self, src, tgt_in, tgt_out) -> torch.Tensor:
        return self.compute(src, tgt_in, tgt_out)

    def _summed(self, src, tgt_in, tgt_out) -> torch.Tensor:
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast), self.attention_backend():
            states = self.forward(src, tgt_in, project=False)  # (B, T, D), or a head's outputs
        return self.head_loss(states, tgt_out)

    def _head_loss(self, states, tgt_out) -> torch.Tensor:
        """The output projection's logits and the loss."""
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.project(states)  # (B, T, V)
        if self.regression:  # logits: the predicted numbers (B,)
            return F.mse_loss(logits.float(), tgt_out, reduction="sum")
        return F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]),  # (B·T, V), or a classifier's (B, C)
            tgt_out.flatten(),
            ignore_index=self.pad_id if logits.dim() == 3 else -100,  # a class id is never padding
            label_smoothing=self.label_smoothing,
            reduction="sum",
        )
