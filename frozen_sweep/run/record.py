"""The result record every job writes as `result.json` (docs/training.md, "The result record"); frozen_sweep.run.directory
writes and reads it. No torch here.

Definitions the collector relies on:
- `history`: one entry per validation: epoch (fractional when validating every N steps), step, wall_time_s (training
  wall-clock time so far, validation included, summed over resumes), calibrated_time_s (step × trainer.step_time_s,
  only on the calibrated clock: frozen_sweep.metrics.clock), train_sentences and train_tokens (training
  examples and target tokens consumed so far), train_loss (label-smoothed, mean since the
  previous validation), valid_loss (per-token NLL, no smoothing), valid_ppl, valid_bleu (greedy, on the validation
  set or its first `trainer.valid_bleu_sentences`; null for LM or when disabled) and valid_metric (valid_bleu for
  translation, valid_ppl for language modelling); a masked LM's loss and perplexity count its masked positions only
  (frozen_sweep.data.masking), and its entries add valid_accuracy (arg-max accuracy there).
- `best_epoch`: the epoch of the best validation under the stopping criterion `stop_metric` (lowest loss or highest
  BLEU); the test set is evaluated with the weights from that validation.
- `epochs_to_convergence`: `best_epoch` when early stopping ended the run (patience exhausted); null when a budget
  (max_epochs, max_steps, max_time_s) ended it first: the run had not converged.
- `best_metric`: valid_metric at the best validation; `test_metric`: BLEU (beam search, sacrebleu) or perplexity on
  the test set; a classifier's (metric_name "accuracy"): accuracy as a fraction in [0, 1], with `test_f1` (with two
  labels the F1 of the positive class, label id 1; with more, macro-F1), `test_macro_f1`, `test_mcc` (Matthews
  correlation) and `data.majority` the majority class's accuracy beside it; a regression's (metric_name "pearson"):
  Pearson's correlation (`test_pearson` too), with `test_spearman`, `test_mse` and `data.mean_predictor` the squared
  error of always predicting train's mean beside it; `report`: which of these its table shows (task.report). Its
  history's valid_loss is the mean squared error (valid_ppl null), and it adds valid_pearson (valid_metric) and
  valid_spearman; a classifier's adds valid_accuracy (valid_metric), valid_f1, valid_macro_f1 and valid_mcc
  (evaluate/scores.py defines them).
- `fingerprint`: sha256 of what determines the result (the resolved config less the keys that do not change it,
  plus the data files' content hashes), with those inputs: a directory's result is reused or resumed only by a job
  with the same fingerprint, and the collector flags two completed runs with the same one as duplicates.
- `relearn` (study=relearn): the base run, the reset layer and parts, validations before the reset, right after it
  and at the end, examples to recover at each threshold, `recovered` (definitions in frozen_sweep/study/relearn.py).
- `finetune` (study=finetune): the base run and what it was (seed, freeze pattern, reservoirs, scores), `frozen`,
  `freeze_from` and how many parameters stayed frozen (frozen_sweep/study/finetune.py).
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

# set by the local_gpus launcher for its jobs: how many of them it runs at a time (the record's jobs_at_a_time)
JOBS_AT_A_TIME_VARIABLE = "FROZEN_SWEEP_JOBS_AT_A_TIME"
STATUSES = ("completed", "failed", "running")


@dataclass
class RunResult:
    status: str = "running"
    error: Optional[str] = None
    updated_at: Optional[str] = None  # UTC time of the last write: a "running" record that stays old is likely dead
    study: str = "freeze"  # freeze | reservoir | relearn | finetune: which of the collector's tables the run belongs in
    task: Optional[str] = None
    model: Optional[str] = None
    freeze: dict = field(default_factory=dict)  # component → "trainable" | "frozen:<init>"
    row: Optional[str] = None  # the paper's row label, or null
    seed: Optional[int] = None
    params_total: Optional[int] = None
    params_trainable: Optional[int] = None
    params_by_component: dict = field(default_factory=dict)
    trainable_ratio: Optional[float] = None
    # "bleu" | "ppl" | "mlm_ppl" (perplexity on the masked positions) | "accuracy" | "pearson" (regression)
    metric_name: Optional[str] = None
    stop_metric: Optional[str] = None  # trainer.stop_metric: "loss" | "bleu" | "accuracy" | "f1" | "mcc" | ...
    # a classifier's or a regression's: the metrics its table reports, e.g. ["f1", "accuracy"] (config/report.py)
    report: list = field(default_factory=list)
    best_metric: Optional[float] = None
    test_metric: Optional[float] = None
    test_chrf: Optional[float] = None
    test_loss: Optional[float] = None  # translation: mean NLL per reference token on the test set (score's force-decoding)
    test_accuracy: Optional[float] = None  # masked LM: arg-max accuracy on the test set's masked positions; classifier
    test_f1: Optional[float] = None  # classifier: the positive class's F1 (two labels), else macro-F1, on the test set
    test_macro_f1: Optional[float] = None  # classifier
    test_mcc: Optional[float] = None  # classifier: Matthews correlation
    test_pearson: Optional[float] = None  # regression: its test_metric
    test_spearman: Optional[float] = None  # regression
    test_mse: Optional[float] = None  # regression: mean squared error
    best_epoch: Optional[float] = None
    epochs_to_convergence: Optional[float] = None
    stopped_reason: Optional[str] = None  # early_stop | max_epochs | max_steps | max_time
    budgets: dict = field(default_factory=dict)  # trainer.max_epochs, max_steps, max_time_s as the run had them
    steps: Optional[int] = None
    wall_time_s: Optional[float] = None  # training (with validation) wall-clock time, summed over resumes
    clock: str = "wall"  # what max_time_s and AUCC counted: wall (wall_time_s) or calibrated (calibrated_time_s)
    step_time_s: Optional[float] = None  # the calibrated clock's seconds per update (trainer.step_time_s)
    calibrated_time_s: Optional[float] = None  # steps × step_time_s: training time on the calibrated clock
    train_tokens_per_s: Optional[float] = None  # target tokens per second of training steps
    reservoir: dict = field(default_factory=dict)  # study=reservoir: type, stack, pattern, layer counts, backskip
    relearn: dict = field(default_factory=dict)  # study=relearn: base run, reset layer, pre/post/final, recovery
    finetune: dict = field(default_factory=dict)  # study=finetune: the base run, frozen mode, what stayed frozen
    aucc: Optional[float] = None  # area under the validation-metric curve over the run's clock / T̂ (efficiency.py)
    aucc_cutoff_s: Optional[float] = None  # T̂
    sacrebleu_signature: Optional[str] = None
    # test decoding (translation): beam, len_penalty, max_len_a, max_len_b (the length cap: max_len_a × source tokens
    # + max_len_b), sentences, and at_length_cap: how many hypotheses the cap ended rather than end-of-sentence
    decoding: dict = field(default_factory=dict)
    # what each validation used: examples, bleu_sentences (0: no validation BLEU), beam (frozen_sweep.train.validation)
    validation: dict = field(default_factory=dict)
    history: list = field(default_factory=list)
    data: dict = field(default_factory=dict)  # corpus sizes, dropped counts, vocabulary
    device: Optional[str] = None
    machine: Optional[str] = None  # the CPU and the cores the job may use (frozen_sweep.system.kernels.machine)
    kernels: Optional[str] = None  # torch's CPU kernel level (torch.backends.cpu.get_cpu_capability()): AVX2, AVX512, …
    precision: Optional[str] = None  # what training computed in: "fp32" or "bf16 autocast" (system.kernels)
    threads: Optional[int] = None  # CPU threads, fixed for the job's life (per rank); the most, when following
    follow_free_cores: bool = False  # threads followed the free cores: the numbers depend on the load (not reproducible)
    jobs_at_a_time: Optional[int] = None  # the jobs its launcher ran at a time on this machine (null: not launched)
    config_dir: Optional[str] = None  # the command's --config-dir (its own presets), which a rerun needs too
    deterministic: bool = False  # trainer.deterministic: CUDA's deterministic algorithms
    overrides: list = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)  # sha256, config and data that determine the result (job/fingerprint.py)
    versions: dict = field(default_factory=dict)  # torch, frozen_sweep, git_sha and git_dirty (uncommitted changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def best_entry(record: dict) -> Optional[dict]:
    """The history entry of the record's best validation (the one at `best_epoch`), or None when there is none."""
    return next((e for e in record.get("history") or [] if e["epoch"] == record.get("best_epoch")), None)
