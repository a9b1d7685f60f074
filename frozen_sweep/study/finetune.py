"""Fine-tuning (the reservoir paper's second half; the "random embeddings first" test): a finished masked-LM run's
encoder, with a classification head, trained on a classification task.

- The job adopts the base's model and reservoirs and encodes its task with the base's vocabulary (job_config, before
  any job starts); its own seed draws the head, its dropout and batches, and with finetune.freeze_from=seed the
  components its freeze pattern freezes (the "pre-trained, embeddings re-drawn at random and frozen" row).
- make_model: load_run(base) regenerates the base's frozen parameters from the base's seed and verifies them against
  its checkpoint; weights/finished_run.fine_tuned_model copies them. finetune.frozen=keep leaves frozen what the base
  had frozen (components, reservoir layers); train trains them; the job's freeze pattern may freeze more.
- A pretrained encoder as the base (finetune.base_checkpoint= a save_pretrained directory or hub name,
  frozen_sweep.job.pretrained_finetune): its weights as imported, its tokenizer reading the task; nothing of it is
  frozen before the job's own choices. The job's freeze pattern keeps the frozen components pretrained
  (finetune.freeze_from=base, the reservoir paper's fine-tuning case) or re-draws them at random (seed, the paper's
  question); finetune.frozen_layers freezes whole layers, finetune.reinit_top re-draws the top layers.
- finetune.base_checkpoint=scratch: no base, the model of the config (the baseline a fine-tuning table compares with).
"""

import logging
from functools import cached_property
from typing import Optional

from frozen_sweep.config import SCRATCH, FreezeFrom, FrozenMode
from frozen_sweep.data import TaskData
from frozen_sweep.data.checkpoint_files import is_checkpoint_source
from frozen_sweep.model import Transformer
from frozen_sweep.run.record import RunResult
from frozen_sweep.study.freeze import FreezeStudy
from frozen_sweep.study.relearn_bases import PretrainedBase
from frozen_sweep.study.reservoir import describe_reservoirs
from frozen_sweep.weights.fine_tuned import embedding_rows, fine_tuned_model
from frozen_sweep.weights.finished_run import FinishedRun, load_run
from frozen_sweep.weights.freeze import parameter_counts

log = logging.getLogger(__name__)


class FinetuneStudy(FreezeStudy):
    @cached_property
    def base(self) -> Optional[FinishedRun | PretrainedBase]:
        """The base run or pretrained checkpoint, loaded once per job (None from scratch)."""
        path = self.cfg.finetune.base_checkpoint
        if is_checkpoint_source(path):
            return PretrainedBase.load(path, self.cfg.model.max_positions)
        return None if path == SCRATCH else load_run(path)

    def make_model(self, data: TaskData) -> Transformer:
        if self.base is None:
            return super().make_model(data)
        base_model = self.base.model
        return fine_tuned_model(self.cfg, base_model, embedding_rows(base_model), data.head_outputs,
                                data.vocab.specials.pad)  # fmt: skip

    def describe(self, model: Transformer, result: RunResult) -> None:
        f, base = self.cfg.finetune, self.base
        if self.cfg.reservoir.name != "none":  # adopted from a reservoir base run
            result.reservoir = describe_reservoirs(self.cfg, model)
        result.finetune = {"base_run": SCRATCH, "frozen": FrozenMode(f.frozen).value,
                           "freeze_from": FreezeFrom(f.freeze_from).value}  # fmt: skip
        if base is None:
            return
        result.finetune |= {"frozen_layers": f.frozen_layers, "reinit_top": f.reinit_top}
        if isinstance(base, PretrainedBase):
            result.finetune |= pretrained_summary(base, model, FreezeFrom(f.freeze_from))
            return
        kept = sum(p.numel() for p in model.parameters() if not p.requires_grad)
        result.finetune |= {
            "base_run": str(base.path),
            "base_seed": base.config.seed,
            "base_study": base.record.get("study"),
            "base_freeze": base.record.get("freeze"),
            "base_reservoir": base.record.get("reservoir") or {},
            "base_metric_name": base.record["metric_name"],
            "base_best_metric": base.record["best_metric"],
            "base_test_metric": base.record["test_metric"],
            "base_trainable_ratio": parameter_counts(base.model)["trainable_ratio"],
            "frozen_params": kept,
        }
        log.info(
            "fine-tuning %s (seed %d, test %s %.2f): %d parameters frozen (finetune.frozen=%s)", base.path,
            base.config.seed, base.record["metric_name"], base.record["test_metric"], kept, FrozenMode(f.frozen).value,
        )  # fmt: skip


def pretrained_summary(base: PretrainedBase, model: Transformer, freeze_from: FreezeFrom) -> dict:
    """The record's view of a pretrained base: the checkpoint (name, commit, architecture, size), and whether the
    components the job's freeze pattern freezes are its pretrained values or re-drawn at random."""
    info = base.info
    return {"base_run": info["source"], "base_checkpoint": {key: info[key] for key in
                                                            ("source", "commit", "architecture", "params_total")},
            "frozen_values": "re-drawn" if freeze_from == FreezeFrom.seed else "pretrained",
            "frozen_params": sum(p.numel() for p in model.parameters() if not p.requires_grad)}  # fmt: skip


STUDY = FinetuneStudy
