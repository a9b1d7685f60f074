"""Training loop: Adam + inverse-square-root schedule, checkpoint/resume; validation scores come from validation.py, the
rules that end a run (early stopping, divergence) from stopping.py.

Only trainable parameters reach the optimiser: a frozen one has no gradient, no optimiser state and no weight decay.
A checkpoint is written after every validation; a job that finds `checkpoint_last.pt` in its directory resumes from
it — same batches (a pure function of seed and epoch), same RNG state — so on CPU the resumed run ends bit-identical
to an uninterrupted one.

The step loop never waits for the device: the loss is summed on the device and read every `log_every_steps` and at
validations, and batches are collated one at a time (pinned, copied without blocking on CUDA) while the device
works on the previous ones. A non-finite loss, or a validation loss that stays far above its best, ends the run
with `Diverged` (stopped_reason "diverged"), never a quiet "completed".
"""

import contextlib
import logging
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from tqdm import tqdm

from frozen_sweep import cpu
from frozen_sweep.checkpoint import load_checkpoint, save_checkpoint
from frozen_sweep.data import TaskData
from frozen_sweep.config import TaskKind
from frozen_sweep.data.batching import Batch, Group, collate, plan_batches
from frozen_sweep.data.masking import mask_train_batch
from frozen_sweep.data.vocab import PAD
from frozen_sweep.freeze import trainable_parameters
from frozen_sweep.metrics_log import MetricsLog
from frozen_sweep.run_dir import BEST_CHECKPOINT, LAST_CHECKPOINT
from frozen_sweep.stopping import Diverged, TrainState, add_validation, best_loss, diverging
from frozen_sweep.validation import Validation

log = logging.getLogger(__name__)


def inverse_sqrt_schedule(warmup_steps: int, warmup_init_lr: float, lr: float):
    """Multiplier on `lr`: linear warmup from warmup_init_lr, then decay ∝ 1/sqrt(step)."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (warmup_init_lr + (lr - warmup_init_lr) * step / warmup_steps) / lr
        return math.sqrt(warmup_steps / max(step, 1))

    return factor


class Trainer:
    def __init__(self, cfg, data: TaskData, model, device: torch.device, run_dir: Path, on_validation=None):
        self.cfg, self.tr, self.data, self.model, self.device = cfg, cfg.trainer, data, model, device
        self.run_dir = Path(run_dir)
        self.optimizer = torch.optim.Adam(
            trainable_parameters(model),
            lr=self.tr.lr,
            betas=tuple(self.tr.betas),
            eps=self.tr.adam_eps,
            weight_decay=self.tr.weight_decay,
            fused=True,  # one kernel over all parameters instead of a loop of small ops (1.1-1.3x on a tiny step)
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, inverse_sqrt_schedule(self.tr.warmup_steps, self.tr.warmup_init_lr, self.tr.lr)
        )
        amp_cpu = cpu.has_bf16() if self.tr.amp_cpu is None else self.tr.amp_cpu
        self.autocast = self.tr.amp and (device.type == "cuda" or amp_cpu)
        if device.type == "cpu":
            log.info("bf16 autocast on the CPU: %s (trainer.amp_cpu=%s)", self.autocast, self.tr.amp_cpu)
        # bf16 on the CPU: torch's flash-attention kernel (its backward) made whole steps 1.1-1.7x slower than fp32,
        # while the math backend's plain bf16 matrix products make them 1.2-1.9x faster (docs/performance.md)
        cpu_bf16 = self.autocast and device.type == "cpu"
        self.attention_backend = (lambda: sdpa_kernel(SDPBackend.MATH)) if cpu_bf16 else contextlib.nullcontext
        if device.type == "cuda":
            torch.backends.cuda.enable_cudnn_sdp(self.tr.cudnn_attention)
        self.loss = self._loss
        if self.tr.compile:  # the training forward and loss as one graph for all batch shapes (validation and
            # decoding stay eager), so the fp32 cast of the (B, T, V) logits and the loss can fuse
            self.loss = torch.compile(self._loss, dynamic=True, mode=self.tr.compile_mode)
        self.state = TrainState()
        self.on_validation = on_validation  # called with the state after every validation (progress reporting)
        self.validation = Validation(cfg, data, device)
        self.metrics = MetricsLog(self.run_dir, self.tr, self.optimizer)  # metrics.jsonl, TensorBoard
        self._loss_sum = torch.zeros((), device=device)  # training loss since the last read, summed on the device
        self._loss_tokens = 0
        self._since_validation = [0.0, 0]  # summed loss and tokens of the reads since the last validation
        self._clock = 0.0  # perf_counter at the last point where time was accounted

    # ---- data -------------------------------------------------------------------------------------------------------

    def _plan(self, epoch: int) -> list[Group]:
        train, tr = self.data.train, self.tr
        return plan_batches(train.src, train.tgt, tr.max_tokens, True, self.cfg.seed, epoch, tr.length_multiple)

    def _collate(self, group: Group) -> Batch:
        batch = collate(self.data.train.src, self.data.train.tgt, group.indices, group.length)
        if self.cfg.task.kind == TaskKind.mlm:  # masks seeded by (seed, epoch, the batch): the same after a resume
            batch = mask_train_batch(batch, self.cfg.task, len(self.data.vocab), self.cfg.seed, self.state.epoch)
        return batch.pin_memory() if self.device.type == "cuda" else batch

    # ---- resume -----------------------------------------------------------------------------------------------------

    def resume_if_possible(self) -> bool:
        path = self.run_dir / LAST_CHECKPOINT
        if not path.exists():
            return False
        extra = load_checkpoint(path, self.model)  # a model built for this job: its frozen parameters are in place
        self.optimizer.load_state_dict(extra["optimizer"])
        self.scheduler.load_state_dict(extra["scheduler"])
        self.state = TrainState(**extra["train_state"])
        torch.set_rng_state(extra["rng"])
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
            cuda_rng=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        )
        if best:
            save_checkpoint(self.run_dir / BEST_CHECKPOINT, self.model, self.cfg.seed)

    # ---- training ---------------------------------------------------------------------------------------------------

    def _loss(self, src, tgt_in, tgt_out) -> torch.Tensor:
        """The summed label-smoothed cross-entropy of a batch (the training forward)."""
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast), self.attention_backend():
            logits = self.model(src, tgt_in)  # (B, T, V)
        return F.cross_entropy(
            logits.float().flatten(0, 1),
            tgt_out.flatten(),
            ignore_index=PAD,
            label_smoothing=self.tr.label_smoothing,
            reduction="sum",
        )

    def _train_step(self, batch: Batch) -> None:
        """One update; its summed (label-smoothed) loss is added to the device-side sum, not read (no sync)."""
        self.model.train()
        batch = batch.to(self.device)
        loss = self.loss(batch.src, batch.tgt_in, batch.tgt_out)
        self.optimizer.zero_grad(set_to_none=True)
        (loss / batch.n_tokens).backward()
        if self.tr.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(trainable_parameters(self.model), self.tr.clip_norm)
        self.optimizer.step()
        self.scheduler.step()
        self._loss_sum += loss.detach()
        self._loss_tokens += batch.n_tokens

    def _read_loss(self, epoch: float) -> float:
        """Mean training loss since the last validation. Reading it waits for the device, so the time of the steps
        since the last read is accounted here and the metrics loggers get their record; a non-finite loss raises
        Diverged."""
        s, summed, tokens = self.state, self._loss_sum.item(), self._loss_tokens
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
        if tr.max_time_s is not None and s.train_time_s + time.perf_counter() - self._clock >= tr.max_time_s:
            return "max_time"
        return None

    def fit(self) -> TrainState:
        """Train until early stopping or a budget ends the run; returns the final state."""
        # disable=None: tqdm draws only on a terminal, so logs (SLURM, `make demo > log`) stay readable
        bar = tqdm(desc="train", unit="step", initial=self.state.step, disable=None if self.tr.progress else True)
        self.metrics.open(self.state.step + 1)  # a resumed run drops what it logged after its checkpoint
        try:
            self._train(bar)
        finally:  # also when the run diverges: the loggers keep what they got
            bar.close()
            self.metrics.close()
        return self.state

    def _train(self, bar: tqdm) -> None:
        s, every = self.state, self.tr.validate_every_steps
        self._clock = time.perf_counter()
        while not s.stopped_reason:
            groups = self._plan(s.epoch)
            for group in groups[s.batch_in_epoch :]:
                batch = self._collate(group)
                self._train_step(batch)
                s.step += 1
                s.batch_in_epoch += 1
                if s.batch_in_epoch == len(groups):
                    s.epoch, s.batch_in_epoch = s.epoch + 1, 0
                s.train_tokens += batch.n_tokens
                s.train_sentences += len(batch.indices)
                bar.update()

                budget = self._budget_exhausted()
                due = s.step % every == 0 if every else s.batch_in_epoch == 0
                epoch = s.epoch + s.batch_in_epoch / len(groups)
                if budget or due or s.step % self.tr.log_every_steps == 0:
                    train_loss = self._read_loss(epoch)
                    bar.set_postfix(loss=f"{train_loss:.3f}", tok_s=f"{s.train_tokens / s.step_time_s:,.0f}")
                if budget or due:
                    self._validate(epoch, train_loss, budget)
                    self._since_validation = [0.0, 0]
                    self._clock = time.perf_counter()
                    if s.stopped_reason:
                        break

    def _validate(self, epoch: float, train_loss: float, budget: Optional[str]) -> None:
        """Validate, update early stopping (sets `stopped_reason`), checkpoint, report."""
        started = time.perf_counter()
        s, tr = self.state, self.tr
        entry = {
            "epoch": round(epoch, 4),
            "step": s.step,
            "wall_time_s": None,  # filled below, once validation time is counted
            "train_sentences": s.train_sentences,
            "train_tokens": s.train_tokens,
            "train_loss": train_loss,
            **self.validation_scores(),
        }
        best = add_validation(s, entry, tr)
        if diverging(s, entry, best, tr, len(self.data.vocab)):
            if self.on_validation:
                self.on_validation(s)  # the record shows the curve that diverged
            self._diverged(
                f"the validation loss is {entry['valid_loss']:.4g} at step {s.step}, far above its best "
                f"({best_loss(s):.4g}) or a uniform guess's ({math.log(len(self.data.vocab)):.4g})"
            )
        if s.bad_validations >= tr.patience:
            s.stopped_reason = "early_stop"
        elif budget:
            s.stopped_reason = budget
        s.train_time_s += time.perf_counter() - started
        entry["wall_time_s"] = round(s.train_time_s, 3)
        log.info(
            "epoch %.2f step %d | train loss %.3f | valid loss %.3f ppl %.1f%s%s",
            epoch,
            s.step,
            train_loss,
            entry["valid_loss"],
            entry["valid_ppl"],
            "" if entry["valid_bleu"] is None else f" bleu {entry['valid_bleu']:.2f}",
            " *" if best else "",
        )
        self.metrics.validation(entry)
        self._save(best)
        if self.on_validation:
            self.on_validation(s)

    def validation_scores(self, model: Optional[nn.Module] = None) -> dict:
        """The validation scores of `model` (default: the model being trained)."""
        return self.validation.scores(self.model if model is None else model)
