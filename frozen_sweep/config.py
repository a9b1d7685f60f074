"""Typed schemas for every config group, registered in Hydra's ConfigStore.

OmegaConf checks types and enum values when the config is composed (so a typo in a key or a value stops the
command before anything runs); `validate` adds the cross-field checks a type system cannot express.
"""

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from frozen_sweep.base_run import BaseRunError, load_base_run


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and what is allowed."""


# ---- task ----------------------------------------------------------------------------------------------------------


class TaskKind(Enum):
    translation = "translation"
    lm = "lm"


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
    max_len: int = 200  # training examples longer than this (in subwords) are dropped
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
    decoder_layers: int = 6
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


def reservoir_pattern(layers: int, r: ReservoirConfig) -> str:
    """The stack's layers as a string, L trainable and R reservoir; ConfigError when the placement cannot work."""
    placement, count = Placement(r.placement), r.count
    if placement == Placement.pattern:
        pattern = r.pattern or ""
        if len(pattern) != layers or set(pattern) - {"L", "R"}:
            raise ConfigError(
                f"reservoir.pattern={r.pattern}: must be {layers} letters (the {r.stack.value} has {layers} layers), "
                "each L (trainable) or R (reservoir)"
            )
        return pattern
    if not 0 <= count <= layers:
        raise ConfigError(f"reservoir.count={count}: must be in [0, {layers}] (the {r.stack.value}'s layers)")
    if placement == Placement.bottom:
        return "R" * count + "L" * (layers - count)
    if placement == Placement.top:
        return "L" * (layers - count) + "R" * count
    alternating = "LR" * count
    block = alternating[1:]  # R L R ... R: count reservoirs, one trainable layer between neighbours
    if len(block) > layers:
        raise ConfigError(
            f"reservoir.count={count} reservoirs cannot alternate with trainable layers in {layers} layers "
            f"(interleave needs at most {(layers + 1) // 2}); use reservoir.placement=bottom|top|pattern"
        )
    left = (layers - len(block)) // 2
    return "L" * left + block + "L" * (layers - left - len(block))


# ---- training and evaluation ---------------------------------------------------------------------------------------


class StopMetric(Enum):
    loss = "loss"  # validation loss: smooth and cheap
    bleu = "bleu"  # validation BLEU: needs decoding (translation only)


class Device(Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class LoggerName(Enum):
    jsonl = "jsonl"  # <run dir>/metrics.jsonl, one JSON record a line
    tensorboard = "tensorboard"  # <run dir>/tensorboard/ event files (tensorboardX)


@dataclass
class TrainerConfig:
    name: str = MISSING
    max_tokens: int = 4096  # target tokens per batch (plus source tokens of the same sentences)
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
    amp_cpu: bool = False  # bf16 autocast on the CPU too
    # cuDNN attention builds a plan per batch shape: with it off an H100 job ran 4x faster (issue 11); true: torch picks
    cudnn_attention: bool = False
    compile: bool = False  # torch.compile the training forward (dynamic shapes): pays off on CUDA for long runs
    compile_mode: str = "default"  # with compile: one of COMPILE_MODES (reduce-overhead: CUDA graphs, one per shape)
    progress: bool = True  # progress bar
    loggers: List[LoggerName] = field(default_factory=lambda: [LoggerName.jsonl])  # metrics as they happen
    # the training loss is read from the device (a sync) every N steps: a train record (loss, lr, tokens/s, grad norm)
    log_every_steps: int = 50


COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # torch.compile's


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


def parse_reset_layer(spec) -> tuple[str, int]:
    """"decoder.1" → ("decoder", 1); ConfigError for anything else."""
    stack, _, index = str(spec).partition(".")
    if stack not in StackName.__members__ or not index.isdigit():
        raise ConfigError(f"relearn.reset_layer={spec}: must be encoder.<i> or decoder.<i> (0-based)")
    return stack, int(index)


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


def register_configs() -> None:
    """The schemas live in their own group, so that `freeze=glob(*)` sweeps exactly the YAML options."""
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    cs.store(group="schema", name="task", node=TaskConfig)
    cs.store(group="schema", name="model", node=ModelConfig)
    cs.store(group="schema", name="freeze", node=FreezeConfig)
    cs.store(group="schema", name="trainer", node=TrainerConfig)
    cs.store(group="schema", name="relearn", node=RelearnConfig)
    cs.store(group="schema", name="reservoir", node=ReservoirConfig)


def validate(cfg) -> None:
    """Cross-field checks; raise ConfigError naming the key and the allowed values."""
    m, t, tr = cfg.model, cfg.task, cfg.trainer
    positive = {
        "model.decoder_layers": m.decoder_layers,
        "model.d_model": m.d_model,
        "model.ffn_dim": m.ffn_dim,
        "model.heads": m.heads,
        "model.max_positions": m.max_positions,
        "task.vocab_size": t.vocab_size,
        "task.max_len": t.max_len,
        "trainer.max_tokens": tr.max_tokens,
        "trainer.lr": tr.lr,
        "trainer.patience": tr.patience,
        "trainer.length_multiple": tr.length_multiple,
        "trainer.diverge_validations": tr.diverge_validations,
        "trainer.log_every_steps": tr.log_every_steps,
        "eval.beam": cfg.eval.beam,
        "eval.batch_sentences": cfg.eval.batch_sentences,
    }
    positive.update({f"trainer.{b}": tr[b] for b in ("max_epochs", "max_steps", "max_time_s") if tr[b] is not None})
    for key, value in positive.items():
        if value <= 0:
            raise ConfigError(f"{key}={value}: must be > 0")
    if m.encoder_layers < 0:
        raise ConfigError(f"model.encoder_layers={m.encoder_layers}: must be >= 0")
    if m.d_model % m.heads:
        raise ConfigError(f"model.heads={m.heads} must divide model.d_model={m.d_model}")
    for key in ("dropout", "attention_dropout", "activation_dropout"):
        if not 0.0 <= m[key] < 1.0:
            raise ConfigError(f"model.{key}={m[key]}: must be in [0, 1)")
    if not 0.0 <= tr.label_smoothing < 1.0:
        raise ConfigError(f"trainer.label_smoothing={tr.label_smoothing}: must be in [0, 1)")
    if tr.compile_mode not in COMPILE_MODES:
        raise ConfigError(f"trainer.compile_mode={tr.compile_mode}: allowed: {', '.join(COMPILE_MODES)}")
    for key in ("diverge_ratio", "diverge_uniform_ratio"):
        if tr[key] <= 1.0:
            raise ConfigError(f"trainer.{key}={tr[key]}: must be > 1 (a multiple of a validation loss)")
    if len(tr.betas) != 2 or not all(0.0 <= b < 1.0 for b in tr.betas):
        raise ConfigError(f"trainer.betas={list(tr.betas)}: must be two numbers in [0, 1)")
    if tr.max_tokens < t.max_len:
        raise ConfigError(f"trainer.max_tokens={tr.max_tokens} must be >= task.max_len={t.max_len}")

    lm = t.kind == TaskKind.lm
    if lm and m.encoder_layers:
        raise ConfigError(
            f"task.kind=lm needs a decoder-only model (model.encoder_layers=0), "
            f"but model={m.name} has encoder_layers={m.encoder_layers}; use e.g. model=lm_demo or model=lm_paper"
        )
    if not lm and not m.encoder_layers:
        raise ConfigError(f"task.kind=translation needs model.encoder_layers > 0 (model={m.name} has 0)")
    if lm and t.src_lang is not None:
        raise ConfigError(f"task.src_lang={t.src_lang}: must be null for task.kind=lm")
    if not lm and t.src_lang is None:
        raise ConfigError("task.src_lang is null: a translation task needs a source language")
    if lm and tr.stop_metric == StopMetric.bleu:
        raise ConfigError("trainer.stop_metric=bleu needs a translation task; allowed for task.kind=lm: loss")
    if tr.stop_metric == StopMetric.bleu and tr.valid_bleu_sentences == 0:
        raise ConfigError("trainer.stop_metric=bleu needs validation BLEU: trainer.valid_bleu_sentences must not be 0")
    validate_reservoir(cfg)
    if t.corpus == CorpusKind.text_files and not t.path:
        raise ConfigError(
            "task.path is not set: task=text_files reads {path}/{train,valid,test}.{lang}; "
            "pass task.path=/dir/with/your/files"
        )
    if t.corpus == CorpusKind.bible:
        for lang in [t.src_lang, t.tgt_lang]:
            if lang is not None and lang not in t.modules:
                raise ConfigError(f"task.modules has no SWORD module for language '{lang}'; has: {sorted(t.modules)}")
    validate_study(cfg)
    validate_relearn(cfg.relearn)


def validate_study(cfg) -> None:
    """The study key agrees with the groups that make a study (and set it): relearn=layer, reservoir=<type>."""
    study, relearn, reservoir = StudyName(cfg.study), cfg.relearn.name, cfg.reservoir.name
    if (relearn != "none") != (study == StudyName.relearn):
        raise ConfigError(
            f"study={study.value} with relearn={relearn}: study=relearn goes with relearn=layer (which sets it, and "
            "takes task, model, freeze and reservoir from the base run); allowed otherwise: freeze, reservoir"
        )
    if reservoir != "none" and study == StudyName.freeze:
        raise ConfigError(f"study=freeze with reservoir={reservoir}: a model with reservoir layers is study=reservoir")


def validate_relearn(r) -> None:
    """A relearn job needs a completed base run, and a layer and parts that its model has."""
    if r.name == "none":
        if r.base_checkpoint is not None or r.reset_layer is not None:
            raise ConfigError("relearn.base_checkpoint/reset_layer are set but relearn=none: add relearn=layer")
        return
    if not r.base_checkpoint or r.reset_layer is None:
        raise ConfigError(
            f"relearn={r.name} needs relearn.base_checkpoint=<a completed run's directory> and "
            "relearn.reset_layer=encoder.<i>|decoder.<i>"
        )
    try:
        base = load_base_run(r.base_checkpoint)
    except BaseRunError as e:
        raise ConfigError(f"relearn.base_checkpoint={r.base_checkpoint}: {e}") from e
    stack, index = parse_reset_layer(r.reset_layer)
    model = base.config.model
    layers = {"encoder": model.encoder_layers, "decoder": model.decoder_layers}[stack]
    if not index < layers:
        allowed = f"{stack}.0 … {stack}.{layers - 1}" if layers else f"none: it has no {stack}"
        raise ConfigError(
            f"relearn.reset_layer={r.reset_layer}: the base model ({model.name}, {model.encoder_layers} encoder + "
            f"{model.decoder_layers} decoder layers) allows {allowed}"
        )
    if ResetParts(r.reset_parts) == ResetParts.cross_att and (stack != "decoder" or not model.encoder_layers):
        raise ConfigError(
            f"relearn.reset_parts=cross_att: only decoder layers of an encoder–decoder model have cross-attention "
            f"(reset_layer={r.reset_layer}); allowed: all, att, ffn, norms"
        )
    if not all(0 < x < 1 for x in r.thresholds):
        raise ConfigError(f"relearn.thresholds={list(r.thresholds)}: must be fractions in (0, 1), e.g. [0.01, 0.05]")


def validate_reservoir(cfg) -> None:
    r, m = cfg.reservoir, cfg.model
    stack = StackName(r.stack)
    if m.encoder_layers == 0 and stack == StackName.encoder and (r.count or r.placement == Placement.pattern):
        raise ConfigError(f"reservoir.stack=encoder: model={m.name} is a language model; allowed: decoder")
    pattern = reservoir_pattern(m.encoder_layers if stack == StackName.encoder else m.decoder_layers, r)
    if "R" in pattern and stack == StackName.decoder and r.type in (ReservoirType.bigru, ReservoirType.conv):
        raise ConfigError(
            f"reservoir.type={r.type.value} reads future positions, so it cannot sit in a decoder; "
            "allowed in the decoder: transformer, ffn"
        )
    if r.conv_kernel < 1 or r.conv_kernel % 2 == 0:
        raise ConfigError(f"reservoir.conv_kernel={r.conv_kernel}: must be odd and >= 1")
    if cfg.trainer.aucc_cutoff_s is not None and cfg.trainer.aucc_cutoff_s <= 0:
        raise ConfigError(f"trainer.aucc_cutoff_s={cfg.trainer.aucc_cutoff_s}: must be > 0 (or null)")
