"""Training loop: Adam + inverse-square-root schedule, checkpoint/resume; validation scores come from validation.py, the
rules that end a run (early stopping, divergence) from stopping.py.

Only trainable parameters reach the optimiser (frozen_sweep.train.optim). An update is `trainer.devices × update_freq`
batches of the epoch's plan, each rank accumulating its share (frozen_sweep.train.updates); rank 0 alone validates,
writes checkpoints and metrics, and tells the other ranks whether training stops. A checkpoint is written after every
validation; a job that finds `checkpoint_last.pt` in its directory resumes from it — same batches (a pure function of
seed and epoch), same RNG state (each rank's) — so on CPU the resumed run ends bit-identical to an uninterrupted one.

The step loop never waits for the device: the loss is summed on the device and read every `log_every_steps` and at
validations, and batches are collated one at a time (pinned, copied without blocking on CUDA) while the device
works on the previous ones. A non-finite loss, or a validation loss that stays far above its best, ends the run
with `Diverged` (stopped_reason "diverged"), never a quiet "completed".
"""

import contextlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import torch
from torch import nn

from frozen_sweep.config import TaskKind
from frozen_sweep.data import Batch, Group, TaskData, plan
from frozen_sweep.data.masking import mask_train_batch
from frozen_sweep.metrics.log import MetricsLog
from frozen_sweep.parallel.distributed import all_gather, broadcast_from_main, on_main, sum_over_ranks, wrap
from frozen_sweep.parallel.world import SINGLE, World
from frozen_sweep.run.directory import BEST_CHECKPOINT, LAST_CHECKPOINT
from frozen_sweep.metrics.clock import calibrated_time
from frozen_sweep.train.loss import TrainingLoss
from frozen_sweep.train.optim import optimizer_and_schedule
from frozen_sweep.train.stopping import Diverged, TrainState, add_validation, best_loss, diverging
from frozen_sweep.train.updates import rank_share, update_batches, updates_in_epoch
from frozen_sweep.train.progress_report import ProgressReport
from frozen_sweep.train.validation import Validation
from frozen_sweep.weights.checkpoint import keep_step_checkpoint, load_checkpoint, save_checkpoint
from frozen_sweep.weights.freeze import trainable_parameters

log = logging.getLogger(__name__)


class Trainer:
    def __init__(
        self, cfg, data: TaskData, model, device: torch.device, run_dir: Path, on_validation=None, world: World = SINGLE
    ):
        self.cfg, self.tr, self.data, self.model, self.device = cfg, cfg.trainer, data, model, device
        self.run_dir, self.world = Path(run_dir), world
        self.batches_per_update = world.size * self.tr.update_freq
        self.ddp = wrap(model, world, device)  # the training forward; the model itself for one device
        self.rank_rngs: Optional[list] = None  # every rank's RNG state at the last validation, for the checkpoint
        self.optimizer, self.scheduler = optimizer_and_schedule(model, self.tr)
        # the training forward: bf16 where it pays, compiled
        self.loss = TrainingLoss(self.ddp, self.tr, device, model.pad_id, cfg.task.kind == TaskKind.regression)
        self.autocast = self.loss.autocast
        self.state = TrainState()
        self.on_validation = on_validation  # called with the state after every validation (progress reporting)
        self.validation = Validation(cfg, data, device)
        self.metrics = MetricsLog(self.run_dir, self.tr, self.optimizer, cfg)  # trainer.loggers
        if not world.is_main:
            self.metrics.names = []  # rank 0 alone writes metrics
        self._loss_sum = torch.zeros((), device=device)  # training loss since the last read, summed on the device
        self._loss_tokens = 0
        self._since_validation = [0.0, 0]  # summed loss and tokens of the reads since the last validation
        self._clock = 0.0  # perf_counter at the last point where time was accounted

    # ---- data -------------------------------------------------------------------------------------------------------

    def _plan(self, epoch: int) -> list[Group]:
        return plan(self.data.train, self.tr.max_tokens, True, self.cfg.seed, epoch, self.tr.length_multiple)

    def _collate(self, group: Group) -> Batch:
        batch = self.data.train.collate(group.indices, group.length)
        if self.cfg.task.kind == TaskKind.mlm:  # masks seeded by (seed, epoch, the batch): the same after a resume
            batch = mask_train_batch(batch, self.cfg.task, len(self.data.vocab), self.cfg.seed, self.state.epoch,
                                     self.data.vocab.specials)
        return batch.pin_memory() if self.device.type == "cuda" else batch

    def _target_tokens(self, group: Group) -> int:
        """A batch's target tokens (eos included: its collated n_tokens), from the lengths alone: every rank counts
        those of the whole update without collating the other ranks' batches."""
        if self.cfg.task.kind.labelled:  # one target per example: its label or number
            return len(group.indices)
        return int(self.data.train.tgt_lens[group.indices].sum()) + len(group.indices)

    # ---- resume -----------------------------------------------------------------------------------------------------

    def resume_if_possible(self) -> bool:
        path = self.run_dir / LAST_CHECKPOINT
        if not path.exists():
            return False
        extra = load_checkpoint(path, self.model)  # a model built for this job: its frozen parameters are in place
        self.optimizer.load_state_dict(extra["optimizer"])
        self.scheduler.load_state_dict(extra["scheduler"])
        self.state = TrainState(**extra["train_state"])
        rank_rngs = extra.get("rank_rngs")  # a data-parallel run's: each rank continues its own dropout stream
        same_world = rank_rngs is not None and len(rank_rngs) == self.world.size
        torch.set_rng_state(rank_rngs[self.world.rank] if same_world else extra["rng"])
        if torch.cuda.is_available() and extra.get("cuda_rng") is not None:
            torch.cuda.set_rng_state_all(extra["cuda_rng"])
        log.info("resumed from %s at step %d (epoch %d)", path, self.state.step, self.state.epoch)
        return True

    def _save(self, best: bool) -> None:
        save_checkpoint(
            self.run_dir / LAST_CHECKPOINT,
            self.model,
            self.cfg.seed,
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            train_state=asdict(self.state),
            rng=torch.get_rng_state(),
            rank_rngs=self.rank_rngs,
            cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        )
        if best:
            save_checkpoint(self.run_dir / BEST_CHECKPOINT, self.model, self.cfg.seed, step=self.state.step)
        keep_step_checkpoint(self.run_dir, self.model, self.cfg.seed, self.state.step, self.tr.keep_checkpoints)

    # ---- training ---------------------------------------------------------------------------------------------------

    def _update(self, batches: Sequence[Group]) -> tuple[int, int]:
        """One update on the update's batches: this rank's share, each batch's loss over the whole update's target
        tokens (every rank counts them from the plan; a masked LM's are summed over the ranks), gradients all-reduced
        with the last one. Returns the update's target tokens and sentences, all ranks'."""
        mine = [self._collate(group) for group in rank_share(batches, self.world.rank, self.tr.update_freq)]
        if self.cfg.task.kind == TaskKind.mlm:  # targets are the masked positions: counted where they are drawn
            tokens = int(sum_over_ranks([sum(batch.n_tokens for batch in mine)], self.world, self.device)[0])
        else:
            tokens = sum(map(self._target_tokens, batches))
        self.optimizer.zero_grad(set_to_none=True)
        for k, batch in enumerate(mine):
            self._backward(batch, tokens, sync=k == len(mine) - 1)
        self._step()
        return tokens, sum(len(group.indices) for group in batches)

    def _train_step(self, batch: Batch) -> None:
        """One update on one batch, on one device (what the benchmarks time)."""
        self.optimizer.zero_grad(set_to_none=True)
        self._backward(batch, batch.n_tokens, sync=True)
        self._step()

    def _backward(self, batch: Batch, tokens: int, sync: bool) -> None:
        """Gradients of the batch's summed (label-smoothed) loss over `tokens`, added to the parameters' (all-reduced
        across ranks when `sync`: DDP averages, hence × world size). The loss is added to the device-side sum, not
        read (no sync)."""
        self.model.train()
        batch = batch.to(self.device)
        with contextlib.nullcontext() if sync or self.ddp is self.model else self.ddp.no_sync():
            loss = self.loss(batch.src, batch.tgt_in, batch.tgt_out)
            (loss / (tokens / self.world.size)).backward()
        self._loss_sum += loss.detach()
        self._loss_tokens += batch.n_tokens

    def _step(self) -> None:
        if self.tr.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(trainable_parameters(self.model), self.tr.clip_norm)
        self.optimizer.step()
        self.scheduler.step()

    def _read_loss(self, epoch: float) -> float:
        """Mean training loss since the last validation. Reading it waits for the device, so the time of the steps
        since the last read is accounted here and the metrics loggers get their record; a non-finite loss raises
        Diverged."""
        s = self.state
        summed, tokens = sum_over_ranks([self._loss_sum.item(), self._loss_tokens], self.world, self.device)
        now = time.perf_counter()
        elapsed, self._clock = now - self._clock, now
        s.train_time_s += elapsed
        s.step_time_s += elapsed
        if tokens:
            self.metrics.train(s, epoch, summed / tokens, tokens / max(elapsed, 1e-9))
        self._loss_sum.zero_()
        self._loss_tokens = 0
        self._since_validation = [self._since_validation[0] + summed, self._since_validation[1] + tokens]
        if not math.isfinite(summed):
            self._diverged(f"the training loss is {summed / max(tokens, 1)} at step {s.step}")
        return self._since_validation[0] / max(self._since_validation[1], 1)

    def _diverged(self, why: str) -> None:
        self.state.stopped_reason = "diverged"
        raise Diverged(
            f"training diverged: {why} with trainer.lr={self.tr.lr} and trainer.warmup_steps={self.tr.warmup_steps}; "
            "lower the learning rate or lengthen the warmup (each model preset picks its trainer preset: conf/trainer/)"
        )

    def _budget_exhausted(self) -> Optional[str]:
        s, tr = self.state, self.tr
        if tr.max_epochs is not None and s.epoch >= tr.max_epochs:
            return "max_epochs"
        if tr.max_steps is not None and s.step >= tr.max_steps:
            return "max_steps"
        if tr.max_time_s is not None and tr.step_time_s is not None:  # the calibrated clock: the same on any load
            return "max_time" if s.step * tr.step_time_s >= tr.max_time_s else None
        if tr.max_time_s is not None:  # the clocks of the ranks differ: rank 0's says for all
            spent = s.train_time_s + time.perf_counter() - self._clock
            return broadcast_from_main("max_time" if spent >= tr.max_time_s else None, self.world)
        return None

    def fit(self) -> TrainState:
        """Train until early stopping or a budget ends the run; returns the final state."""
        self.report = ProgressReport(self.run_dir, self.tr, self.state, writes=self.world.is_main)
        self.metrics.open(self.state.step + 1)  # a resumed run drops what it logged after its checkpoint
        try:
            self._train()
        finally:  # also when the run diverges: the loggers keep what they got
            self.report.close()
            self.metrics.close()
        return self.state

    def _train(self) -> None:
        s, every = self.state, self.tr.validate_every_steps
        self._clock = time.perf_counter()
        per_update = self.batches_per_update
        while not s.stopped_reason:
            groups = self._plan(s.epoch)
            updates = updates_in_epoch(len(groups), per_update)  # the remainder is dropped: frozen_sweep.train.updates
            for update in range(s.batch_in_epoch // per_update, updates):
                tokens, sentences = self._update(update_batches(groups, update, per_update))
                s.step += 1
                s.batch_in_epoch += per_update
                if update == updates - 1:
                    s.epoch, s.batch_in_epoch = s.epoch + 1, 0
                s.train_tokens += tokens
                s.train_sentences += sentences

                budget = self._budget_exhausted()
                due = s.step % every == 0 if every else s.batch_in_epoch == 0
                epoch = s.epoch + s.batch_in_epoch / len(groups)
                read = budget or due or s.step % self.tr.log_every_steps == 0
                train_loss = self._read_loss(epoch) if read else None
                self.report.step(s, epoch, train_loss)
                if budget or due:
                    self._validate_on_main(epoch, train_loss, budget)
                    self._since_validation = [0.0, 0]
                    self._clock = time.perf_counter()
                    if s.stopped_reason:
                        break

    def _validate_on_main(self, epoch: float, train_loss: float, budget: Optional[str]) -> None:
        """Rank 0 validates, checkpoints (with every rank's RNG state) and reports; every rank learns from it whether
        training stops, or diverged."""
        if self.world.size > 1:
            self.rank_rngs = all_gather(torch.get_rng_state(), self.world)

        def validate() -> Optional[str]:
            self._validate(epoch, train_loss, budget)
            return self.state.stopped_reason

        self.state.stopped_reason = on_main(validate, self.world, Diverged)

    def _validate(self, epoch: float, train_loss: float, budget: Optional[str]) -> None:
        """Validate, update early stopping (sets `stopped_reason`), checkpoint, report."""
        started = time.perf_counter()
        s, tr = self.state, self.tr
        entry = {
            "epoch": round(epoch, 4),
            "step": s.step,
            "wall_time_s": None,  # filled below, once validation time is counted
            **calibrated_time(s.step, tr.step_time_s),
            "train_sentences": s.train_sentences,
            "train_tokens": s.train_tokens,
            "train_loss": train_loss,
            **self.validation_scores(),
        }
        best = add_validation(s, entry, tr)
        guess = self.data.guess_loss
        if diverging(s, entry, best, tr, guess, relative=not self.cfg.task.kind.labelled):
            if self.on_validation:
                self.on_validation(s)  # the record shows the curve that diverged
            self._diverged(
                f"the validation loss is {entry['valid_loss']:.4g} at step {s.step}, far above its best "
                f"({best_loss(s):.4g}) or an uninformed guess's ({guess:.4g})"
            )
        if s.bad_validations >= tr.patience:
            s.stopped_reason = "early_stop"
        elif budget:
            s.stopped_reason = budget
        s.train_time_s += time.perf_counter() - started
        entry["wall_time_s"] = round(s.train_time_s, 3)
        ppl = entry["valid_ppl"]
        score = f"pearson {entry['valid_pearson']:.3f}" if ppl is None else f"ppl {ppl:.1f}"
        bleu = "" if entry["valid_bleu"] is None else f" bleu {entry['valid_bleu']:.2f}"
        log.info("epoch %.2f step %d | train loss %.3f | valid loss %.3f %s%s%s", epoch, s.step, train_loss,
                 entry["valid_loss"], score, bleu, " *" if best else "")  # fmt: skip
        self.metrics.validation(entry)
        self._save(best)
        self.report.validated(s, entry)
        if self.on_validation:
            self.on_validation(s)

    def validation_scores(self, model: Optional[nn.Module] = None) -> dict:
        """The validation scores of `model` (default: the model being trained)."""
        return self.validation.scores(self.model if model is None else model)
