"""The trainer and eval groups' schemas: how a job trains, stops, logs and decodes."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional

from omegaconf import MISSING

from frozen_sweep.config.loggers import LoggerName, MlflowConfig, WandbConfig


class StopMetric(Enum):
    loss = "loss"  # validation loss: smooth and cheap
    bleu = "bleu"  # validation BLEU: needs decoding (translation only)
    accuracy = "accuracy"  # validation accuracy (classification only): fairseq's best checkpoint for this task
    f1 = "f1"  # F1 of the positive class (classification, two labels: GLUE's MRPC, QQP)
    mcc = "mcc"  # Matthews correlation (classification: GLUE's CoLA)
    pearson = "pearson"  # Pearson correlation (regression: GLUE's STS-B)
    spearman = "spearman"  # Spearman rank correlation (regression)


class CompileScope(Enum):
    # each encoder/decoder layer (one compile serves every layer of a stack) and the loss head (output projection,
    # fp32 cast, cross-entropy): base compiled in 19 s instead of 68 s on a 2-core CPU (docs/performance.md)
    layers = "layers"
    step = "step"  # the whole training forward and loss as one graph: compile time grows with depth


class Device(Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


@dataclass
class TrainerConfig:
    name: str = MISSING
    max_tokens: int = 4096  # target tokens per batch (plus source tokens of the same sentences), per device and step
    # data-parallel processes of one job (torch.distributed: gloo on the CPU, NCCL on CUDA), started by the job itself,
    # or by torchrun / a multi-task SLURM job; an update sees devices × update_freq batches (frozen_sweep.train.updates)
    devices: int = 1
    update_freq: int = 1  # batches accumulated per device before each update (gradient accumulation)
    dist_timeout_s: float = 1800  # a collective that waits longer (a rank gone silent) fails the job
    length_multiple: int = 4  # padded lengths are multiples of this: few batch shapes (≈9% padding, embedded corpus)
    lr: float = 7e-4  # peak learning rate, reached at the end of warmup
    betas: List[float] = field(default_factory=lambda: [0.9, 0.98])
    adam_eps: float = 1e-8
    weight_decay: float = 0.0
    warmup_steps: int = 4000
    warmup_init_lr: float = 1e-7
    clip_norm: float = 0.0  # 0 disables gradient clipping
    label_smoothing: float = 0.1
    # Budgets: null for none; training stops at the first one reached (or by early stopping). Budgets given on the
    # command line replace the configured ones (frozen_sweep.job.job_config.resolve_budgets).
    max_epochs: Optional[int] = 100
    max_steps: Optional[int] = None
    max_time_s: Optional[float] = None  # training time budget, on the run's clock (step_time_s); checked every update
    aucc_cutoff_s: Optional[float] = None  # AUCC's T̂ (frozen_sweep.metrics.efficiency); null: the run's own training time (on the run's clock)
    # the calibrated clock (frozen_sweep.metrics.clock): seconds per update, measured side by side for the sweep's
    # rows or stated; when set, max_time_s, aucc_cutoff_s and AUCC count steps × step_time_s, not the wall clock (null)
    step_time_s: Optional[float] = None
    # a stated calibration of several rows, for step_time_s to pick its own, e.g. by reservoir type:
    # `step_time_s: ${trainer.step_times.${reservoir.name}}` (conf/experiment/reservoir_lm.yaml); only the value
    # picked is part of a job's identity (the table is neutral)
    step_times: Dict[str, float] = field(default_factory=dict)
    validate_every_steps: Optional[int] = None  # null: validate at the end of every epoch
    patience: int = 5  # validations without improvement before early stopping
    # divergence guard: a non-finite loss fails the run (stopped_reason: diverged), and so do diverge_validations
    # validations in a row whose loss is above diverge_ratio × the best validation loss (without improving the stop
    # metric) or above diverge_uniform_ratio × the loss of a uniform guess, ln(vocabulary size)
    diverge_ratio: float = 1.2
    diverge_uniform_ratio: float = 2.0
    diverge_validations: int = 3
    stop_metric: StopMetric = StopMetric.loss
    valid_bleu_sentences: Optional[int] = 500  # validation sentences greedy-decoded for BLEU; null: all, 0: none
    device: Device = Device.auto
    # CPU threads, fixed for the job's life (the record's `threads`); null: OMP_NUM_THREADS, else every core it may use.
    # The launchers set it to their share of the cores (frozen_sweep.system.cpu)
    threads: Optional[int] = None
    # the weights of the last N validations kept as checkpoint_step<STEP>.pt, for python -m frozen_sweep.average; 0: none
    keep_checkpoints: int = 0
    # up to every core, fewer while other processes hold cores: faster beside other work, NOT reproducible (the thread
    # count changes the numbers); recorded
    follow_free_cores: bool = False
    # CUDA: torch.use_deterministic_algorithms and CUBLAS_WORKSPACE_CONFIG, so that a GPU job repeats bit for bit
    # (slower; docs/training.md); recorded
    deterministic: bool = False
    amp: bool = True  # bf16 autocast on CUDA
    # bf16 autocast on the CPU too (a demo job 1.14-1.31x fp32's tokens/s at the same BLEU where the CPU computes bf16
    # natively: benchmarks/cpu_bf16.py); null: where it does (system.kernels.native_bf16), so the precision depends on
    # the CPU. false by default: one command, one precision on every CPU (the record's `precision`, the fingerprint's
    # cpu.precision; docs/training.md)
    amp_cpu: Optional[bool] = False
    # cuDNN attention builds a plan per batch shape: with it off an H100 job ran 4x faster
    # (docs/performance.md, "On a GPU"); true: torch picks
    cudnn_attention: bool = False
    # torch.compile the training forward + loss (dynamic shapes; validation and decoding stay eager): a base step
    # 1.46x eager at the paper's batch on an H200 (scope step), after a compile of over a minute (docs/performance.md,
    # "On a GPU"); off by default until a real job's curve is measured
    compile: bool = False
    compile_scope: CompileScope = CompileScope.layers  # with compile: what one compiled graph covers
    # with compile: checks.COMPILE_MODES (none with CUDA graphs: reduce-overhead segfaulted with torch 2.11 on an H100,
    # docs/performance.md, "On a GPU")
    compile_mode: str = "default"
    progress: bool = True  # progress bar
    loggers: List[LoggerName] = field(default_factory=lambda: [LoggerName.jsonl])  # metrics as they happen
    # the training loss is read from the device (a sync) every N steps: a train record (loss, lr, tokens/s, grad norm)
    log_every_steps: int = 50
    wandb: WandbConfig = field(default_factory=WandbConfig)
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)


@dataclass
class EvalConfig:
    beam: int = 4  # 1 = greedy
    len_penalty: float = 1.0  # hypothesis score = log-prob / length ** len_penalty
    max_len_a: float = 1.2  # hypotheses stop at max_len_a * source length + max_len_b tokens
    max_len_b: int = 10
    batch_sentences: int = 128


# A trainer.max_steps budget under QUICK_STEPS updates validates a translation or language model on its first max_steps
# validation examples at most (train/validation.py): a smoke run's validation then costs a fraction of its training
# (labelled and masked splits are validated whole: cheap, no decoding). Every documented experiment trains at least 150
# updates, so none of their tables depends on this rule.
QUICK_STEPS = 100
QUICK_KINDS = ("translation", "lm")


def quick_validation_cap(cfg) -> Optional[int]:
    """The validation examples a quick job scores and decodes: trainer.max_steps when under QUICK_STEPS for a
    translation or language model, else None (all)."""
    steps, kind = cfg.trainer.max_steps, getattr(cfg.task.kind, "value", cfg.task.kind)
    return steps if kind in QUICK_KINDS and steps is not None and steps < QUICK_STEPS else None
