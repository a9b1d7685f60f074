"""The checks a config's types cannot express: value ranges (a table), then the cross-field rules, on the config
alone: no disk, no torch (what needs the disk or the environment, a relearn job's base run or an installed logger,
is checked in frozen_sweep.job.job_config)."""

from typing import Any, Callable

from omegaconf import OmegaConf
from omegaconf.errors import InterpolationKeyError

from frozen_sweep.config import (
    SCRATCH,
    ConfigError,
    CorpusKind,
    Placement,
    ReservoirType,
    StackName,
    StopMetric,
    StudyName,
    TaskKind,
)  # fmt: skip
from frozen_sweep.config.keys import check_read
from frozen_sweep.config.model_checks import check_positions, validate_model
from frozen_sweep.config.report import check_report
from frozen_sweep.config.stack_layout import parse_reset_layer, reservoir_pattern

# torch.compile's modes without CUDA graphs: reduce-overhead and max-autotune capture them, and that segfaulted compiled
# training with torch 2.11 on an H100 (docs/performance.md, "On a GPU")
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def _positive(value) -> bool:
    return value > 0


def _fraction(value) -> bool:
    return 0.0 <= value < 1.0


def _at_least(low):
    return lambda value: value >= low


def _positive_or_null(value) -> bool:
    return value is None or value > 0


# (key, predicate on its value, what is allowed): the message is "<key>=<value>: <allowed>"
RANGES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    *((key, _positive, "must be > 0") for key in (
        "model.d_model", "model.ffn_dim", "model.heads", "model.max_positions",
        "task.vocab_size", "task.max_len", "trainer.max_tokens", "trainer.lr", "trainer.patience",
        "trainer.length_multiple", "trainer.diverge_validations", "trainer.log_every_steps", "eval.beam",
        "eval.batch_sentences", "trainer.dist_timeout_s",
    )),
    *((f"trainer.{budget}", _positive_or_null, "must be > 0") for budget in ("max_epochs", "max_steps", "max_time_s")),
    *((f"trainer.{key}", lambda v: v >= 1, "must be an integer >= 1") for key in ("devices", "update_freq")),
    *((f"model.{key}", lambda v: v >= 0, "must be >= 0") for key in ("encoder_layers", "decoder_layers")),
    ("task.vocab_sample_lines", lambda v: v >= 0, "must be >= 0 (0: train the vocabulary on every training line)"),
    ("trainer.keep_checkpoints", lambda v: v >= 0, "must be >= 0 (0: keep no validation's checkpoint)"),
    ("task.mask_prob", lambda v: 0.0 < v < 1.0, "must be in (0, 1), e.g. 0.15"),
    *((f"task.{key}", lambda v: 0.0 <= v <= 1.0, "must be in [0, 1]")
      for key in ("mask_replace_prob", "random_replace_prob")),
    *((f"model.{key}", _fraction, "must be in [0, 1)")
      for key in ("dropout", "attention_dropout", "activation_dropout")),
    ("model.rope_base", lambda v: v > 1, "must be > 1, e.g. 10000 (LLaMA 1, 2) or 500000 (LLaMA 3)"),
    ("model.norm_eps", _positive, "must be > 0, e.g. 1e-5 or 1e-6"),
    ("model.rope_fraction", lambda v: 0 < v <= 1, "must be in (0, 1], e.g. 1 (LLaMA) or 0.25 (GPT-NeoX)"),
    *((f"model.{key}", lambda v: v >= 0, "must be >= 0") for key in ("position_offset", "token_types")),
    ("trainer.label_smoothing", _fraction, "must be in [0, 1)"),
    ("trainer.compile_mode", COMPILE_MODES.__contains__,
     f"allowed: {', '.join(COMPILE_MODES)} ({' and '.join(CUDA_GRAPH_MODES)} capture CUDA graphs, which segfaulted "
     "compiled training with torch 2.11 on an H100: docs/performance.md)"),
    *((f"trainer.{key}", lambda v: v > 1.0, "must be > 1 (a multiple of a validation loss)")
      for key in ("diverge_ratio", "diverge_uniform_ratio")),
    ("trainer.betas", lambda v: len(v) == 2 and all(map(_fraction, v)), "must be two numbers in [0, 1)"),
    ("trainer.aucc_cutoff_s", _positive_or_null, "must be > 0 (or null)"),
    ("trainer.step_time_s", _positive_or_null, "must be > 0 s per update (or null: the wall clock)"),
    ("trainer.step_times", lambda v: all(x > 0 for x in v.values()), "must map names to > 0 s per update"),
    ("reservoir.conv_kernel", lambda v: v >= 1 and v % 2 == 1, "must be odd and >= 1"),
    ("finetune.max_unk_rate", lambda v: 0.0 <= v <= 1.0, "must be in [0, 1], e.g. 0.01"),
    ("relearn.thresholds", lambda v: all(0 < x < 1 for x in v), "must be fractions in (0, 1), e.g. [0.01, 0.05]"),
    *((key, _at_least(0), "must be >= 0") for key in (
        "task.valid_from_train", "trainer.weight_decay", "trainer.warmup_steps", "trainer.warmup_init_lr",
        "trainer.clip_norm", "reservoir.count", "eval.max_len_a", "eval.max_len_b", "seed", "finetune.reinit_top",
    )),
    *((key, _positive, "must be > 0") for key in ("task.max_length_ratio", "trainer.adam_eps")),
    ("trainer.validate_every_steps", _positive_or_null, "must be > 0 (or null: at the end of every epoch)"),
    ("trainer.valid_bleu_sentences", lambda v: v is None or v >= 0, "must be >= 0 (0: no validation BLEU; null: all)"),
    ("trainer.threads", lambda v: v is None or v >= 1, "must be >= 1 (or null: the launcher's share of the cores)"),
)  # fmt: skip
UNBOUNDED = {"eval.len_penalty": "fairseq's --lenpen: any number (< 1 favours shorter hypotheses, > 1 longer)"}


def check_range(key: str, value) -> None:
    """The range checks of one key (a sweep's plan checks a seed alone when the rest of its job was checked)."""
    for ranged, allowed, text in RANGES:
        if ranged == key and not allowed(value):
            raise ConfigError(f"{key}={value}: {text}")


def check_calibrated_row(cfg) -> None:
    """A stated calibration (trainer.step_times) that lacks this job's row: one line naming the row and the fix."""
    try:
        cfg.trainer.step_time_s
    except InterpolationKeyError as e:
        missing = e.msg.splitlines()[0].removeprefix("Interpolation key ").removesuffix(" not found")
        raise ConfigError(
            f"trainer.step_time_s: no calibrated step time for this job's row ({missing}); trainer.step_times has "
            f"{', '.join(cfg.trainer.step_times) or 'no row'}: add it (benchmarks/reservoir_step.py prints the "
            "experiment's rows) or pass trainer.step_time_s=null for the wall clock"
        ) from None


def validate(cfg) -> None:
    """Range and cross-field checks; raise ConfigError naming the key and the allowed values."""
    check_calibrated_row(cfg)
    for key, allowed, text in RANGES:
        value = OmegaConf.select(cfg, key)
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        if not allowed(value):
            raise ConfigError(f"{key}={value}: {text}")
    check_read(cfg)
    t, tr = cfg.task, cfg.trainer
    validate_model(cfg)
    if tr.max_tokens < t.max_len:
        raise ConfigError(f"trainer.max_tokens={tr.max_tokens} must be >= task.max_len={t.max_len}")
    check_positions(cfg)

    validate_finetune(cfg)  # first: without its base, a fine-tuning job's model is not the one it will have
    validate_task_kind(cfg)
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


# task.kind → (model.encoder_layers > 0, model.decoder_layers > 0) it needs, and a model preset of that shape
MODEL_SHAPES = {
    TaskKind.translation: ((True, True), "model=demo"),
    TaskKind.lm: ((False, True), "model=lm_demo or model=lm_paper"),
    TaskKind.mlm: ((True, False), "model=mlm_demo or model=mlm_base"),
    TaskKind.classify: ((True, False), "model=mlm_demo or model=mlm_base"),
    TaskKind.regression: ((True, False), "model=mlm_demo or model=mlm_base"),
}
# task.kind → the trainer.stop_metric values its validations have (a classifier's f1: the positive class's with two
# labels, macro-F1 with more)
STOP_METRICS = {
    TaskKind.translation: (StopMetric.loss, StopMetric.bleu),
    TaskKind.lm: (StopMetric.loss,),
    TaskKind.mlm: (StopMetric.loss,),
    TaskKind.classify: (StopMetric.loss, StopMetric.accuracy, StopMetric.f1, StopMetric.mcc),
    TaskKind.regression: (StopMetric.loss, StopMetric.pearson, StopMetric.spearman),
}


def validate_task_kind(cfg) -> None:
    """The model's stacks, the languages, the reported metrics and the stop metric fit task.kind."""
    m, t, tr = cfg.model, cfg.task, cfg.trainer
    kind = TaskKind(t.kind)
    (encoder, decoder), presets = MODEL_SHAPES[kind]
    if (m.encoder_layers > 0, m.decoder_layers > 0) != (encoder, decoder):
        shape = {
            (True, True): "an encoder–decoder model",
            (False, True): "a decoder-only model (model.encoder_layers=0)",
            (True, False): "an encoder-only model (model.decoder_layers=0)",
        }
        raise ConfigError(
            f"task.kind={kind.value} needs {shape[encoder, decoder]}, but model={m.name} has "
            f"encoder_layers={m.encoder_layers}, decoder_layers={m.decoder_layers}; use e.g. {presets}"
        )
    if kind.monolingual and t.src_lang is not None:
        raise ConfigError(
            f"task.src_lang={t.src_lang}: must be null for task.kind={kind.value} (a monolingual task reads "
            f"task.tgt_lang only); set task.src_lang=null, or for the embedded English text task=lm_bible_en or "
            f"task=mlm_bible_en (task={t.name} is a translation task)"
        )
    if not kind.monolingual and t.src_lang is None:
        raise ConfigError(
            f"task.src_lang is not set: a translation task needs task.src_lang and task.tgt_lang (task={t.name} reads "
            "{split}.{src_lang} and {split}.{tgt_lang}), e.g. task.src_lang=tr task.tgt_lang=en; or a monolingual "
            "task.kind=lm|mlm|classify|regression"
        )
    check_report(t)
    metric = StopMetric(tr.stop_metric)
    if metric not in STOP_METRICS[kind]:
        needs = " or ".join(f"task.kind={k.value}" for k, allowed in STOP_METRICS.items() if metric in allowed)
        raise ConfigError(
            f"trainer.stop_metric={metric.value} needs {needs}; allowed for task.kind={kind.value}: "
            f"{', '.join(m.value for m in STOP_METRICS[kind])}"
        )
    if kind == TaskKind.regression and t.corpus == CorpusKind.bible:
        raise ConfigError(
            "task.kind=regression reads a number per example from your files, and the embedded corpus has none: "
            "task=text_files task.kind=regression task.path=DIR ({train,valid,test}.tsv: text<TAB>number)"
        )
    if kind == TaskKind.mlm and t.mask_replace_prob + t.random_replace_prob > 1:
        raise ConfigError(
            f"task.mask_replace_prob={t.mask_replace_prob} + task.random_replace_prob={t.random_replace_prob} "
            "must be <= 1 (the rest of the masked tokens are kept unchanged)"
        )


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


def validate_finetune(cfg) -> None:
    """study=finetune goes with finetune.base_checkpoint (a run, or scratch) and a classification or regression task;
    the base run itself is read in frozen_sweep.job.job_config."""
    f, study = cfg.finetune, StudyName(cfg.study)
    if study != StudyName.finetune:
        if f.base_checkpoint is not None:
            raise ConfigError(f"finetune.base_checkpoint is set but study={study.value}: add study=finetune")
        return
    if not f.base_checkpoint:
        raise ConfigError(
            f"study=finetune needs finetune.base_checkpoint=<a completed masked-LM run's directory>, or "
            f"finetune.base_checkpoint={SCRATCH} for the baseline without pre-training"
        )
    pretrained = cfg.task.vocab == f.base_checkpoint  # a checkpoint's, adopted: its task was checked then (job_config)
    if not TaskKind(cfg.task.kind).labelled and not pretrained:
        raise ConfigError(
            f"study=finetune fine-tunes on a classification or regression task; task={cfg.task.name} is task.kind="
            f"{TaskKind(cfg.task.kind).value}: use e.g. task=cls_bible_en"
        )
    validate_finetune_layers(f, cfg.model)


def validate_finetune_layers(f, model) -> None:
    """finetune.frozen_layers (a letter per layer of the base, F or T) and finetune.reinit_top against the base's
    layers (the model, adopted from the base)."""
    layers = model.encoder_layers or model.decoder_layers
    pattern = f.frozen_layers
    if pattern is not None and (len(pattern) != layers or set(pattern) - set("FT")):
        example = "F" * (layers // 2) + "T" * (layers - layers // 2)
        raise ConfigError(f"finetune.frozen_layers={pattern}: one letter per layer of the base's {layers} layers, "
                          f"from the bottom, F frozen or T trained (e.g. {example})")
    if not 0 <= f.reinit_top <= layers:
        raise ConfigError(f"finetune.reinit_top={f.reinit_top}: the base has {layers} layers; allowed: 0 … {layers}")


def validate_reservoir(cfg) -> None:
    """The reservoirs fit the stack they sit in."""
    r, m = cfg.reservoir, cfg.model
    stack = StackName(r.stack)
    layers = m.encoder_layers if stack == StackName.encoder else m.decoder_layers
    if layers == 0 and (r.count or r.placement == Placement.pattern):
        other = StackName.decoder if stack == StackName.encoder else StackName.encoder
        raise ConfigError(f"reservoir.stack={stack.value}: model={m.name} has no {stack.value}; allowed: {other.value}")
    pattern = reservoir_pattern(layers, r)
    if "R" in pattern and r.name == "none":  # the all-trainable baseline would hold reservoirs of no chosen type
        setting = f"reservoir.pattern={r.pattern}" if r.placement == Placement.pattern else f"reservoir.count={r.count}"
        raise ConfigError(
            f"{setting} with reservoir=none: none is the all-trainable baseline, with no reservoir type; write "
            f"instead: reservoir=transformer (or ffn, bigru, conv) {setting}, and reservoir=none without it"
        )
    if "R" in pattern and stack == StackName.decoder and r.type in (ReservoirType.bigru, ReservoirType.conv):
        raise ConfigError(
            f"reservoir.type={r.type.value} reads future positions, so it cannot sit in a decoder; "
            "allowed in the decoder: transformer, ffn"
        )


def validate_relearn(r) -> None:
    """A relearn job needs a completed base run, and a layer and parts that its model has."""
    if r.name == "none":  # an ordinary job: its relearn keys, if set, were refused by check_read
        return
    if not r.base_checkpoint or r.reset_layer is None:
        raise ConfigError(
            f"relearn={r.name} needs relearn.base_checkpoint=<a completed run's directory, or a pretrained checkpoint: "
            "a save_pretrained directory or a hub name> and "
            "relearn.reset_layer=encoder.<i>|decoder.<i>"
        )
    parse_reset_layer(r.reset_layer)  # its syntax here; its layer against the base model in job_config
