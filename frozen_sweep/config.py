"""Typed schemas for every config group, registered in Hydra's ConfigStore.

OmegaConf checks types and enum values when the config is composed (so a typo in a key or a value stops the
command before anything runs); frozen_sweep.validate adds the range and cross-field checks a type system cannot
express. Only the schema here: no torch, no file access, so that the model, the data and the launchers can all
import it.
"""

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from frozen_sweep.logger_config import LoggerName, MlflowConfig, WandbConfig


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and what is allowed."""


# ---- task ----------------------------------------------------------------------------------------------------------


class TaskKind(Enum):
    translation = "translation"
    lm = "lm"  # causal language modelling: a decoder-only model predicts the next token
    mlm = "mlm"  # masked language modelling (BERT/RoBERTa): an encoder-only model predicts masked tokens

    @property
    def monolingual(self) -> bool:
        return self != TaskKind.translation


class CorpusKind(Enum):
    bible = "bible"  # the embedded corpus, read from SWORD zText modules
    text_files = "text_files"  # the user's own files: {path}/{train,valid,test}.{lang}


@dataclass
class TaskConfig:
    name: str = MISSING
    kind: TaskKind = TaskKind.translation
    corpus: CorpusKind = CorpusKind.bible
    src_lang: Optional[str] = "es"  # null for language modelling
    tgt_lang: str = "en"
    # bible: SWORD module directory and the module used for each language
    sword_dir: str = "/usr/share/sword/modules/texts/ztext"
    modules: Dict[str, str] = field(default_factory=lambda: {"es": "spaRV1909eb", "en": "engKJV2006eb"})
    max_length_ratio: float = 2.5  # verse pairs whose character lengths differ more are dropped as misaligned
    # text_files: a directory holding train.<lang>, valid.<lang>, test.<lang>
    path: Optional[str] = None
    # subwords and example filtering
    vocab_size: int = 8000
    # the vocabulary is trained on a seeded sample of this many training lines (pairs: both sides), 0: all of them
    vocab_sample_lines: int = 2_000_000
    max_len: int = 200  # training examples longer than this (in subwords) are dropped
    # kind=mlm (frozen_sweep.data.masking): mask_prob of the tokens are predicted; of those, mask_replace_prob are
    # shown as <mask>, random_replace_prob as a random piece, the rest unchanged (BERT: 0.15, then 0.8/0.1/0.1)
    mask_prob: float = 0.15
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    cache_dir: str = "${oc.env:FROZEN_SWEEP_CACHE,'~/.cache/frozen_sweep'}"


# ---- model ---------------------------------------------------------------------------------------------------------


class NormPosition(Enum):
    post = "post"  # the original transformer and the paper: x = LN(x + f(x))
    pre = "pre"  # x = x + f(LN(x)), plus a final LN per stack


class Activation(Enum):
    relu = "relu"
    gelu = "gelu"


class TieEmbeddings(Enum):
    all = "all"  # source embedding = target embedding = output projection (the paper)
    decoder = "decoder"  # target embedding = output projection
    none = "none"


@dataclass
class ModelConfig:
    name: str = MISSING
    encoder_layers: int = 6  # 0 for a decoder-only language model
    decoder_layers: int = 6  # 0 for an encoder-only masked language model
    d_model: int = 512
    ffn_dim: int = 2048
    heads: int = 8
    norm: NormPosition = NormPosition.post
    activation: Activation = Activation.relu
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    tie_embeddings: TieEmbeddings = TieEmbeddings.all
    max_positions: int = 1024


# ---- freeze pattern ------------------------------------------------------------------------------------------------


class Init(Enum):
    random = "random"  # the init a trainable component gets (xavier / normal / ones-zeros)
    identity = "identity"  # zeros with ones on the leading diagonal, biases zero: "diagonal" in the paper
    orthogonal = "orthogonal"  # orthogonal weights (reservoir transformers)


COMPONENTS = ("emb", "att", "ffn", "other")  # the paper's components: a FreezeConfig field each (docs/concepts.md)


@dataclass
class ComponentSpec:
    frozen: bool = False
    init: Init = Init.random


@dataclass
class FreezeConfig:
    name: str = "none"
    emb: ComponentSpec = field(default_factory=ComponentSpec)
    att: ComponentSpec = field(default_factory=ComponentSpec)
    ffn: ComponentSpec = field(default_factory=ComponentSpec)
    other: ComponentSpec = field(default_factory=ComponentSpec)


# ---- reservoir layers ----------------------------------------------------------------------------------------------


class ReservoirType(Enum):
    transformer = "transformer"  # a full layer of the stack it sits in, all of it frozen
    ffn = "ffn"  # x + FFN(LN(x)): no attention
    bigru = "bigru"  # x + BiGRU(LN(x)), hidden d/2 per direction (encoder only: it reads the future)
    conv = "conv"  # x + ReLU(Conv1d(LN(x))) over time, same padding (encoder only: it reads the future)


class Placement(Enum):
    interleave = "interleave"  # alternating and centred: 7 layers, 3 reservoirs = LRLRLRL; 2 = LLRLRLL
    bottom = "bottom"  # the first `count` layers
    top = "top"  # the last `count` layers
    pattern = "pattern"  # `pattern`, one letter per layer


class StackName(Enum):
    encoder = "encoder"
    decoder = "decoder"  # a language model's only stack


@dataclass
class ReservoirConfig:
    """Frozen random layers among the trainable ones (Shen et al. 2021). `count` of the stack's layers (the model's
    encoder_layers or decoder_layers, reservoirs included) become reservoirs of `type`, placed by `placement`."""

    name: str = "none"
    type: ReservoirType = ReservoirType.transformer
    count: int = 0
    placement: Placement = Placement.interleave
    pattern: Optional[str] = None  # placement=pattern: L trainable, R reservoir, e.g. LRLRLRL
    stack: StackName = StackName.encoder
    init: Init = Init.orthogonal  # weight matrices; biases and norms get PyTorch's defaults
    backskip: bool = False  # skip the reservoirs' backward pass: their Jacobian is taken as the identity
    conv_kernel: int = 3  # type=conv: odd kernel width


# ---- training and evaluation ---------------------------------------------------------------------------------------


class StopMetric(Enum):
    loss = "loss"  # validation loss: smooth and cheap
    bleu = "bleu"  # validation BLEU: needs decoding (translation only)


class Device(Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


@dataclass
class TrainerConfig:
    name: str = MISSING
    max_tokens: int = 4096  # target tokens per batch (plus source tokens of the same sentences), per device and step
    # data-parallel processes of one job (torch.distributed: gloo on the CPU, NCCL on CUDA), started by the job itself,
    # or by torchrun / a multi-task SLURM job; an update sees devices × update_freq batches (frozen_sweep.updates)
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
    # command line replace the configured ones (frozen_sweep.job_config.resolve_budgets).
    max_epochs: Optional[int] = 100
    max_steps: Optional[int] = None
    max_time_s: Optional[float] = None  # training wall-clock budget; the run stops at the next validation after it
    aucc_cutoff_s: Optional[float] = None  # AUCC's T̂ (frozen_sweep.efficiency); null: the run's own training time
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
    threads: Optional[int] = None  # most CPU threads (fewer while other work holds cores); null: frozen_sweep.cpu
    amp: bool = True  # bf16 autocast on CUDA
    # bf16 autocast on the CPU too; null: where the CPU computes bf16 natively (cpu.has_bf16): a demo job 1.14-1.31x
    # fp32's tokens/s at the same BLEU there (benchmarks/cpu_bf16.py); emulated bf16 elsewhere is slower
    amp_cpu: Optional[bool] = None
    # cuDNN attention builds a plan per batch shape: with it off an H100 job ran 4x faster
    # (docs/performance.md, "On a GPU"); true: torch picks
    cudnn_attention: bool = False
    compile: bool = False  # torch.compile forward + loss (dynamic shapes): a base step 1.33x eager on an H100
    # with compile: validate.COMPILE_MODES; reduce-overhead (CUDA graphs, one per shape) segfaulted with torch 2.11 on
    # an H100 (docs/performance.md, "On a GPU")
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


# ---- layer reset and relearn ---------------------------------------------------------------------------------------


class ResetParts(Enum):
    all = "all"  # the whole layer: self-attention, cross-attention, FFN and their layer norms
    att = "att"  # self-attention
    ffn = "ffn"
    cross_att = "cross_att"  # cross-attention (decoder layers of an encoder–decoder model)
    norms = "norms"  # the layer norms


@dataclass
class RelearnConfig:
    name: str = "none"  # none: an ordinary job; layer: reset one layer of a finished run and train it alone
    base_checkpoint: Optional[str] = None  # the finished run's directory (result.json, config.yaml, checkpoint_best.pt)
    reset_layer: Optional[str] = None  # "encoder.<i>" or "decoder.<i>", 0-based
    reset_parts: ResetParts = ResetParts.all
    reset_init: Init = Init.random
    train_neighbours: bool = False  # also train (without resetting) the layers just below and above, same stack
    thresholds: List[float] = field(default_factory=lambda: [0.01, 0.05])  # "recovered within x" of pre-reset


class StudyName(Enum):
    """Which study a job belongs to: its hooks (frozen_sweep/study/<name>.py) and the collector's table for it."""

    freeze = "freeze"
    reservoir = "reservoir"
    relearn = "relearn"


@dataclass
class Config:
    study: StudyName = StudyName.freeze  # the reservoir and relearn groups set their study, experiments too
    task: TaskConfig = MISSING
    model: ModelConfig = MISSING
    freeze: FreezeConfig = MISSING
    trainer: TrainerConfig = MISSING
    reservoir: ReservoirConfig = MISSING
    relearn: RelearnConfig = MISSING
    eval: EvalConfig = field(default_factory=EvalConfig)
    name: str = "default"  # the sweep's folder under outputs/
    seed: int = 1
    force: bool = False  # rerun a job even if its directory holds a completed result
    dry_run: bool = False  # print what each job of the command would do (run, resume, skip, adopt, refuse); run none


# Keys that change where or how a job runs, not what it computes: job directory names leave them out (conf/config.yaml
# reads them through the `neutral_keys` resolver), fingerprints too (frozen_sweep.job_config) and so do the
# collector's settings (frozen_sweep.collect.runs).
NEUTRAL_KEYS = frozenset(
    {"name", "force", "dry_run", "task.cache_dir", "trainer.progress", "trainer.threads", "trainer.device",
     "trainer.loggers", "trainer.log_every_steps", "trainer.dist_timeout_s"}
    | {f"trainer.wandb.{f.name}" for f in fields(WandbConfig)}
    | {f"trainer.mlflow.{f.name}" for f in fields(MlflowConfig)}
)  # fmt: skip


def register_configs() -> None:
    """The schemas live in their own group, so that `freeze=glob(*)` sweeps exactly the YAML options; the
    `neutral_keys` resolver gives conf/config.yaml the NEUTRAL_KEYS (and the extra keys it names)."""
    OmegaConf.register_new_resolver("neutral_keys", lambda *extra: sorted(NEUTRAL_KEYS | set(extra)), replace=True)
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    cs.store(group="schema", name="task", node=TaskConfig)
    cs.store(group="schema", name="model", node=ModelConfig)
    cs.store(group="schema", name="freeze", node=FreezeConfig)
    cs.store(group="schema", name="trainer", node=TrainerConfig)
    cs.store(group="schema", name="relearn", node=RelearnConfig)
    cs.store(group="schema", name="reservoir", node=ReservoirConfig)
