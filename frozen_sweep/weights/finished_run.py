"""Load a finished run for analysis, to build on or to use: from its directory, or from the model file that
`python -m frozen_sweep.export` wrote (frozen_sweep.weights.model_file). Every command that uses a run goes through
`load_run`, so each accepts both.

A run's config.yaml is plain YAML: loaded with OmegaConf.load, enums come back as strings and the model builder
reads `tie_embeddings == TieEmbeddings.all` as false. `typed_config` merges it into the schema instead, so every
value comes back as the type the job had.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from frozen_sweep.config import SCRATCH, Config, Init, StudyName, TaskKind
from frozen_sweep.data.specials import PAD
from frozen_sweep.data.vocab import read_vocab
from frozen_sweep.model import Transformer, component_of_parameters
from frozen_sweep.run.base_run import BaseRunError, load_base_run
from frozen_sweep.run.directory import (BEST_CHECKPOINT, CONFIG_FILE, LAST_CHECKPOINT, RESULT_FILE, is_completed,
                                       load_result)  # fmt: skip
from frozen_sweep.run.record import best_entry
from frozen_sweep.weights.build import FROZEN_MODES, build_model, build_model_on_the_fly
from frozen_sweep.weights.checkpoint import load_checkpoint, restore
from frozen_sweep.weights.fine_tuned import base_draws, drawn_by_job, embedding_rows, fine_tuned_model
from frozen_sweep.weights.freeze import draw, draw_plan, frozen_fingerprint, with_draws
from frozen_sweep.weights.model_file import ModelFileError, read_model_file
from frozen_sweep.weights.on_the_fly import OnTheFly
from frozen_sweep.weights.reset import reset


CHECKPOINTS = {"best": BEST_CHECKPOINT, "last": LAST_CHECKPOINT}  # --checkpoint's names; else a checkpoint file


def typed_config(path) -> DictConfig:
    """A saved config.yaml with the schema's types: enums restored, keys and values checked."""
    return _typed(OmegaConf.load(path))


def _typed(cfg) -> DictConfig:
    return OmegaConf.merge(OmegaConf.structured(Config), cfg)


@dataclass
class FinishedRun:
    path: Path  # the run's directory, or its model file
    config: DictConfig  # typed: the config the job ran with
    record: Optional[dict]  # its result.json; None for a model file, which holds no record
    model: Transformer  # on the CPU, with the checkpoint's weights (its frozen parameters regenerated and verified)
    checkpoint: dict  # the checkpoint's other entries (optimiser state etc., for checkpoint_last.pt)
    load_vocab: Callable[[], object] = field(repr=False)
    on_the_fly: Optional[OnTheFly] = None  # with frozen="on-the-fly": the hooks that draw the frozen weights
    labels: Optional[list[str]] = None  # a classifier's label names, by class id
    pairs: bool = False  # a classifier's or a regression's: whether it was trained on pairs of texts
    # a fine-tuned run's frozen parameters that its base run drew and kept frozen: name → (the base's seed, init)
    base_draws: dict[str, tuple[int, str]] = field(default_factory=dict)
    weights: Optional[Path] = None  # the checkpoint (or model file) its weights came from
    step: Optional[int] = None  # the training step of those weights, where known
    threads: Optional[int] = None  # the CPU threads its job ran with (its record's, or its model file's), where known

    def weights_summary(self) -> str:
        """Which weights these are, e.g. "checkpoint_last.pt, step 336 (the run is running)"."""
        text = f"{(self.weights or self.path).name}" + (f", step {self.step}" if self.step is not None else "")
        status = (self.record or {}).get("status", "completed")
        return text + (f" (the run is {status})" if status != "completed" else "")

    @property
    def vocab(self):
        """The run's subword vocabulary (a run directory's from its prepared data, a model file's from itself)."""
        return self.load_vocab()


def load_run(path, checkpoint: str = "best", frozen: str = "resident") -> FinishedRun:
    """The run in directory `path` with the weights of `checkpoint`: "best" (its best validation's, the default),
    "last" (its latest validation's: a running or interrupted run's too) or the path of a checkpoint file of it; or
    the run in model file `path`. Its frozen weights `resident` or drawn `on-the-fly`. BaseRunError saying why when
    `path` is neither; CheckpointError naming the tensor when a frozen one does not regenerate to its hash. A
    fine-tuned or relearn run's frozen parameters come from its base, loaded (and verified) first."""
    if frozen not in FROZEN_MODES:
        raise ValueError(f"frozen={frozen!r}: allowed: {', '.join(FROZEN_MODES)}")
    path = Path(path).expanduser().absolute()
    if not path.exists():
        raise BaseRunError(f"{path}: no such file or directory; expected a finished run's directory or a model file "
                           "(python -m frozen_sweep.export)")  # fmt: skip
    if path.is_file():
        if checkpoint != "best":
            raise BaseRunError(f"{path} is a model file: it holds one set of weights (checkpoint {checkpoint!r} is "
                               "for a run directory)")  # fmt: skip
        return _load_model_file(path, frozen)
    named = CHECKPOINTS.get(checkpoint)
    run = load_base_run(path, named, completed=checkpoint == "best" and not is_partial(path))
    weights = path / named if named else Path(checkpoint).expanduser().absolute()
    if not weights.is_file():
        raise BaseRunError(f"checkpoint {checkpoint}: no such file; allowed: best, last, or a checkpoint file's path")
    config = typed_config(run.path / CONFIG_FILE)
    data = run.record["data"]
    labels = data.get("labels")
    built_on = built_on_base(config)
    if built_on:
        if frozen != "resident":
            raise BaseRunError(
                f"{path}: a {built_on} run's frozen weights come from its base, not from a seed alone: "
                "only --frozen resident (or export it: its model file draws on the fly what a seed draws)"
            )
        on_base = _fine_tuned if built_on == "fine-tuned" else _relearned
        model, base_draws = on_base(config, head_outputs(config, labels), data.get("pad_id", PAD))
        hooks = None
    else:
        model, hooks = _build(config, data["vocab_size"], frozen, head_outputs(config, labels),
                              pad_id=data.get("pad_id", PAD))  # fmt: skip
        base_draws = {}
    fingerprint = hooks.fingerprint if hooks else frozen_fingerprint
    extra = load_checkpoint(weights, model, fingerprint=fingerprint)
    vocab = lambda: _prepared_vocab(run.path, run.record)  # noqa: E731
    return FinishedRun(run.path, config, run.record, model, extra, vocab, hooks, labels, data.get("pairs", False),
                       base_draws, weights, checkpoint_step(extra, run.record, weights),
                       run.record.get("threads"))  # fmt: skip


def _fine_tuned(config, outputs: int, pad_id: int) -> tuple[Transformer, dict[str, tuple[int, str]]]:
    """A fine-tuned run's model as its job built it, from its base (a run of ours, loaded and verified first, or the
    pretrained checkpoint, read again), and its parameters that the base run drew and kept frozen (`base_draws`)."""
    from frozen_sweep.data.checkpoint_files import is_checkpoint_source

    source = config.finetune.base_checkpoint
    if is_checkpoint_source(source):
        base_model = pretrained_model(source, config.model.max_positions)
        return fine_tuned_model(config, base_model, embedding_rows(base_model), outputs, pad_id), {}
    base = load_run(source)
    model = fine_tuned_model(config, base.model, base.record["data"]["vocab_size"], outputs)
    return model, base_draws(config, model, base)


def _relearned(config, outputs: None, pad_id: int) -> tuple[Transformer, dict[str, tuple[int, str]]]:
    """A relearn run's model as its job made it: its base's (a run of ours, loaded and verified first, or the
    pretrained checkpoint, read again) with the layer reset from the run's seed; and its frozen parameters that a
    seed draws again (the base's own draws, or its base's): name → (that seed, the init it drew with)."""
    from frozen_sweep.data.checkpoint_files import is_checkpoint_source

    source = config.relearn.base_checkpoint
    if is_checkpoint_source(source):
        model, draws = pretrained_model(source, config.model.max_positions), {}
    else:
        base = load_run(source)
        model, draws = base.model, seed_draws(base)
    model.pad_id = pad_id  # the job's data's, as it trained
    reset(model, config.relearn, config.seed)
    return model, {name: draws[name] for name, p in model.named_parameters() if not p.requires_grad and name in draws}


def pretrained_model(source: str, max_positions: int) -> Transformer:
    """A pretrained checkpoint's model as imported, the base of a fine-tuning or relearn job."""
    from frozen_sweep.weights.pretrained import load_pretrained

    return load_pretrained(source, max_positions=max_positions)[0]


def is_partial(path: Path) -> bool:
    """Whether the run in directory `path` has not completed (running, or stopped before its end) but left a
    checkpoint of its best validation so far."""
    try:
        return (path / BEST_CHECKPOINT).is_file() and not is_completed(load_result(path / RESULT_FILE))
    except (OSError, ValueError):
        return False


def checkpoint_step(extra: dict, record: dict, weights: Path) -> Optional[int]:
    """The training step whose weights a checkpoint holds: its own note, a last checkpoint's trainer state, or for a
    completed run's best checkpoint written before checkpoints noted it, the record's best validation."""
    step = extra.get("step", (extra.get("train_state") or {}).get("step"))
    if step is None and weights.name == BEST_CHECKPOINT and is_completed(record):
        step = (best_entry(record) or {}).get("step")
    return step


def _load_model_file(path: Path, frozen: str) -> FinishedRun:
    """The run in model file `path`: its stored tensors loaded, the frozen ones its seed draws drawn and verified."""
    saved = read_model_file(path)
    try:
        config = _typed(OmegaConf.create(saved.config_yaml))
    except (OmegaConfBaseException, ValueError) as e:  # hashed, so only a writer's mistake gets here
        raise ModelFileError(f"{path}: its config does not fit this version's schema: {str(e).splitlines()[0]}")
    if saved.seed != config.seed:
        raise BaseRunError(f"{path}: its seed {saved.seed} is not its config's seed {config.seed}")
    labels = saved.classifier["labels"] if saved.classifier else None
    base_draws = {name: (seed, init) for name, (seed, init) in saved.base_draws.items()}
    adjust = lambda plan: with_draws(plan, set(saved.frozen_sha256), base_draws)  # noqa: E731
    stored = saved.trainable | saved.frozen_stored
    model, hooks = _build(config, stored_embedding_rows(stored, len(saved.vocab)), frozen,
                          head_outputs(config, labels), adjust, saved.vocab.specials.pad)  # fmt: skip
    fingerprint = hooks.fingerprint if hooks else frozen_fingerprint
    restore(path, model, stored, saved.frozen_sha256, fingerprint(model))
    for name, param in model.named_parameters():
        if name in saved.frozen_stored:
            param.requires_grad_(False)
    pairs = bool(saved.classifier and saved.classifier["pairs"])
    return FinishedRun(path, config, None, model, {}, lambda: saved.vocab, hooks, labels, pairs, base_draws, path,
                       threads=saved.threads)  # fmt: skip


def stored_embedding_rows(stored: dict[str, torch.Tensor], vocab_size: int) -> int:
    """The token embedding's rows a model file stores (a pretrained base's may exceed its tokenizer's tokens:
    Pythia's 50,304 for 50,277); `vocab_size` where the embedding is drawn from the seed, not stored."""
    embedding = stored.get("tgt_embed.tokens.weight", stored.get("src_embed.tokens.weight"))
    return vocab_size if embedding is None else embedding.shape[0]


def head_outputs(config, labels: Optional[list[str]]) -> Optional[int]:
    """A run's head (TaskData.head_outputs): one number for a regression, a score per label for a classifier, none
    for the other kinds."""
    return 1 if TaskKind(config.task.kind) == TaskKind.regression else len(labels) if labels else None


def built_on_base(config) -> Optional[str]:
    """"fine-tuned" for a study=finetune run started from a base (not from scratch), "relearn" for a relearn run:
    their frozen weights are their base's, not a seed's; None for the others."""
    study = StudyName(config.study)
    if study == StudyName.finetune and config.finetune.base_checkpoint != SCRATCH:
        return "fine-tuned"
    return "relearn" if study == StudyName.relearn else None


def _build(config, vocab_size: int, frozen: str, outputs: Optional[int], adjust=None,
           pad_id: int = PAD) -> tuple[Transformer, Optional[OnTheFly]]:  # fmt: skip
    """The model of `config`, drawn from its seed by its freeze pattern's plan or by `adjust(plan)` (a model file's:
    which parameters are drawn frozen, and which from another run's seed), to be loaded."""
    if frozen == "on-the-fly":
        return build_model_on_the_fly(config, vocab_size, outputs, adjust, pad_id)
    model = build_model(config, vocab_size, outputs, pad_id)
    if adjust is not None:
        params = dict(model.named_parameters())
        for name, how in adjust(draw_plan(model, config.freeze)).items():
            if how.seed is not None:  # another run's draw
                draw(name, how, config.seed, params[name].data)
            params[name].requires_grad_(not how.frozen)
    return model, None


def _prepared_vocab(run_dir: Path, record: dict):
    path = Path(record["data"]["vocab_path"])
    if not path.is_file():
        raise BaseRunError(
            f"the vocabulary of the run in {run_dir} ({path}) is gone with its prepared data: prepare the task again "
            f"(python -m frozen_sweep.prepare with the run's task settings), or use a model file exported while it "
            f"was there"
        )
    return read_vocab(path)


def seed_drawn(run: FinishedRun) -> set[str]:
    """The run's frozen parameters that a seed draws again: all of them, but those of a fine-tuned or relearn run
    copied from its base that the base trained (or read from a pretrained checkpoint); the base's own frozen draws
    are in `run.base_draws`."""
    frozen = {name for name, p in run.model.named_parameters() if not p.requires_grad}
    built_on = built_on_base(run.config)
    if built_on is None:
        return frozen
    if built_on == "relearn":
        return frozen & run.base_draws.keys()
    components = component_of_parameters(run.model)
    return {name for name in frozen if drawn_by_job(run.config, components[name], name) or name in run.base_draws}


def seed_draws(run: FinishedRun) -> dict[str, tuple[int, str]]:
    """Each of the run's parameters that a seed draws again → (that seed, the init it drew with)."""
    plan = draw_plan(run.model, run.config.freeze)
    return {name: run.base_draws.get(name, (run.config.seed, Init(plan[name].init).value)) for name in seed_drawn(run)}
