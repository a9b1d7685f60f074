"""Fine-tuning (the reservoir paper's second half; the "random embeddings first" test): a finished masked-LM run's
encoder, with a classification head, trained on a classification task.

- The job adopts the base's model and reservoirs and encodes its task with the base's vocabulary (job_config, before
  any job starts); its own seed draws the head, its dropout and batches, and with finetune.freeze_from=seed the
  components its freeze pattern freezes (the "pre-trained, embeddings re-drawn at random and frozen" row).
- make_model: load_run(base) regenerates the base's frozen parameters from the base's seed and verifies them against
  its checkpoint; weights/finished_run.fine_tuned_model copies them. finetune.frozen=keep leaves frozen what the base
  had frozen (components, reservoir layers); train trains them; the job's freeze pattern may freeze more.
- finetune.base_checkpoint=scratch: no base, the model of the config (the baseline a fine-tuning table compares with).
"""

import logging
from functools import cached_property
from typing import Optional

from frozen_sweep.config import SCRATCH, FreezeFrom, FrozenMode
from frozen_sweep.data import TaskData
from frozen_sweep.model import Transformer
from frozen_sweep.run.record import RunResult
from frozen_sweep.study.freeze import FreezeStudy
from frozen_sweep.study.reservoir import describe_reservoirs
from frozen_sweep.weights.finished_run import FinishedRun, fine_tuned_model, load_run
from frozen_sweep.weights.freeze import parameter_counts

log = logging.getLogger(__name__)


class FinetuneStudy(FreezeStudy):
    @cached_property
    def base(self) -> Optional[FinishedRun]:
        """The base run, loaded once per job (None from scratch)."""
        path = self.cfg.finetune.base_checkpoint
        return None if path == SCRATCH else load_run(path)

    def make_model(self, data: TaskData) -> Transformer:
        if self.base is None:
            return super().make_model(data)
        rate, most = data.stats["unk_rate"]["train"], self.cfg.finetune.max_unk_rate
        if rate > most:
            raise ValueError(
                f"the base run's vocabulary does not cover task={self.cfg.task.name}: {rate:.1%} of its training "
                f"pieces are <unk>, more than finetune.max_unk_rate={most} (finetune.base_checkpoint={self.base.path})"
            )
        return fine_tuned_model(self.cfg, self.base, data.head_outputs)

    def describe(self, model: Transformer, result: RunResult) -> None:
        f, base = self.cfg.finetune, self.base
        if self.cfg.reservoir.name != "none":  # adopted from a reservoir base run
            result.reservoir = describe_reservoirs(self.cfg, model)
        result.finetune = {"base_run": SCRATCH, "frozen": FrozenMode(f.frozen).value,
                           "freeze_from": FreezeFrom(f.freeze_from).value}  # fmt: skip
        if base is None:
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


STUDY = FinetuneStudy
