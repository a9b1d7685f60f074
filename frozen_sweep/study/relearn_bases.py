"""What a relearn job starts from, and what its record says of it: a finished run of ours (its best weights, its
seed, scores and the examples it took to its best), or a pretrained checkpoint (its weights as imported, its name,
commit and architecture; it has no record of its training, so recovery is counted in training sentences, not as a
fraction of the base's)."""

from dataclasses import dataclass

from frozen_sweep.model import Transformer
from frozen_sweep.run.base_run import examples_to_best
from frozen_sweep.weights.finished_run import FinishedRun


@dataclass
class PretrainedBase:
    model: Transformer  # padded with the checkpoint tokenizer's pad (data/checkpoint_vocab.py), as the job's data is
    model_cfg: object  # its model config (the job's, adopted: frozen_sweep.job.pretrained_base)
    info: dict  # frozen_sweep.weights.pretrained.load_pretrained's

    @classmethod
    def load(cls, source: str, max_positions: int) -> "PretrainedBase":
        from frozen_sweep.data.checkpoint_vocab import checkpoint_vocab
        from frozen_sweep.weights.pretrained import load_pretrained

        model, model_cfg, info = load_pretrained(source, max_positions=max_positions)
        model.pad_id = checkpoint_vocab(source).specials.pad  # the targets the loss and the scores ignore
        return cls(model, model_cfg, info)

    @property
    def path(self) -> str:
        return self.info["source"]


def base_summary(base) -> dict:
    """The relearn record's view of its base (`base_run` names it either way)."""
    if isinstance(base, FinishedRun):
        return {"base_run": str(base.path), "base_seed": base.config.seed, "base_best_metric": base.record["best_metric"],
                "base_test_metric": base.record["test_metric"], "base_examples_to_best": examples_to_best(base.record),
                "base_size": size(base.config.model)}  # fmt: skip
    info = base.info
    return {"base_run": info["source"], "base_seed": None, "base_best_metric": None, "base_test_metric": None,
            "base_examples_to_best": None, "base_size": size(base.model_cfg),
            "base_checkpoint": {key: info[key] for key in ("source", "commit", "architecture", "params_total")}}


def size(model_cfg) -> list[int]:
    """[encoder layers, decoder layers, d_model]: the base's depth and width (the size table's N and D)."""
    return [model_cfg.encoder_layers, model_cfg.decoder_layers, model_cfg.d_model]
