"""The model of a config: every parameter initialised from (seed, name), the freeze pattern applied.

One builder for a new job, a finished run's rebuild (frozen_sweep.weights.finished_run) and the benchmarks, so that a
checkpoint's frozen parameters are always regenerated the way the job drew them.
"""

from frozen_sweep.data.specials import PAD
from frozen_sweep.model import Transformer
from frozen_sweep.weights import freeze
from frozen_sweep.weights.on_the_fly import OnTheFly, build_on_the_fly


FROZEN_MODES = ("resident", "on-the-fly")  # where a model's frozen weights live (frozen_sweep.weights.on_the_fly)


def build_model(cfg, vocab_size: int, head_outputs: int | None = None, pad_id: int = PAD) -> Transformer:
    """The model of `cfg` (model, reservoir, freeze, seed) for a vocabulary of `vocab_size` pieces padded with
    `pad_id` (the vocabulary's: data/specials.py); with `head_outputs`, a classifier (the number of classes) or a
    regression (1)."""
    model = Transformer(cfg.model, vocab_size, pad_id, cfg.reservoir, head_outputs)
    freeze.init_and_freeze(model, cfg.freeze, cfg.seed)
    return model


def build_model_on_the_fly(cfg, vocab_size: int, head_outputs: int | None = None, adjust=None,
                           pad_id: int = PAD) -> tuple[Transformer, OnTheFly]:  # fmt: skip
    """`build_model`'s model with its frozen weights drawn on the fly (`adjust(plan)`: another draw plan, a model
    file's), and the hooks that draw them."""
    model = lambda: Transformer(cfg.model, vocab_size, pad_id, cfg.reservoir, head_outputs)  # noqa: E731
    return build_on_the_fly(model, cfg.freeze, cfg.seed, adjust)
