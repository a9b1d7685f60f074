"""The Python API of a finished run: `frozen_sweep.load_run(RUN)`, then `run.translate(lines)`, `run.score(lines)`,
`run.generate(prompts)` or `run.classify(lines)`, with the checks and outputs of the commands (which call them).

    from frozen_sweep import load_run
    run = load_run("outputs/demo/(3)")            # a run directory, or a model file
    run.translate(["el perro come pan"], beam=4)  # → ["the dog eats bread"]

Work runs at the run's own thread count (the job's policy, docs/training.md: the threads its record says it ran
with, so outputs reproduce the record's; else trainer.threads, OMP_NUM_THREADS or the cores) unless `threads` says
otherwise. `speed` holds the last call's sentences, tokens and seconds. A line longer than the model takes is an
error naming it, or with `too_long="truncate"` cut to fit (`truncated` holds the last call's cut line numbers).
"""

import os
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Optional, Union

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.evaluate.ensemble import Ensemble
from frozen_sweep.system import cpu
from frozen_sweep.use import generating, labelling, scoring, translating
from frozen_sweep.use.errors import TOO_LONG, UsageError
from frozen_sweep.weights.finished_run import FinishedRun
from frozen_sweep.weights.finished_run import load_run as load_finished_run

COMMAND_OF_KIND = {TaskKind.translation: "translate", TaskKind.lm: "score", TaskKind.mlm: "score",
                   TaskKind.classify: "classify", TaskKind.regression: "classify"}  # fmt: skip
INPUT = "input"  # how errors name the lines when the caller does not


@dataclass
class Speed:
    sentences: int
    tokens: int  # source subwords translated, tokens scored or generated, subwords classified
    seconds: float

    def summary(self, threads: str, weights: str) -> str:
        per_s = lambda n: n / self.seconds if self.seconds > 0 else float("inf")  # noqa: E731
        return (f"{self.sentences} sentences, {self.tokens} tokens in {self.seconds:.2f} s: "
                f"{per_s(self.sentences):.2f} sentences/s, {per_s(self.tokens):.1f} tokens/s ({threads}); "
                f"weights: {weights}")  # fmt: skip


def load_run(path: Union[str, Path, list], frozen: str = "resident", device: str = "auto",
             threads: Optional[int] = None, checkpoint: str = "best", too_long: str = "error") -> "Run":  # fmt: skip
    """The run in directory or model file `path`, ready to use on `device` (auto: a GPU when there is one), with the
    weights of `checkpoint` (a run directory's: best, last, or a checkpoint file's path). A list of paths: their
    translation runs as one ensemble (same vocabulary; the first run's search settings)."""
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    runs = [load_finished_run(p, checkpoint=checkpoint, frozen=frozen) for p in paths]
    return Run(runs[0], device, threads, runs[1:], too_long)


class Run:
    """A finished run to use; its model, vocab, config and record are those of `finished` (weights.finished_run)."""

    def __init__(self, finished: FinishedRun, device: str = "auto", threads: Optional[int] = None,
                 members: tuple[FinishedRun, ...] = (), too_long: str = "error"):  # fmt: skip
        self.finished, self.members = finished, list(members)  # members: the other runs of an ensemble
        if too_long not in TOO_LONG[:2]:
            raise UsageError(f"too_long={too_long!r}: allowed: error, truncate (skip is the commands': an empty "
                             "output line)")  # fmt: skip
        self.too_long, self.truncated = too_long, []
        self.device = pick_device(device)
        if threads is not None and threads < 1:
            raise UsageError(f"threads={threads}: allowed: at least 1")
        self.threads, self.follow_free_cores = thread_policy(finished, threads)
        self.threads_used: set[int] = set()  # every count used so far (several when following the free cores)
        self.speed: Optional[Speed] = None
        for run in (finished, *members):
            run.model.to(self.device).eval()
        self._check_ensemble()

    def __getattr__(self, name):  # model, vocab, config, record, labels, pairs, path, on_the_fly
        return getattr(self.__dict__["finished"], name)

    def _check_ensemble(self) -> None:
        """UsageError unless an ensemble's runs all translate, with one vocabulary."""
        for other in self.members:
            if TaskKind(other.config.task.kind) != TaskKind.translation or self.kind != TaskKind.translation:
                raise UsageError(f"{other.path}: an ensemble is of translation runs only (task.kind=translation)")
            if other.vocab.model != self.vocab.model:
                raise UsageError(f"{other.path}: its vocabulary is not {self.path}'s; an ensemble's runs share one "
                                 "vocabulary (runs of the same prepared task)")  # fmt: skip

    @property
    def search_model(self):
        """What beam search runs: the model, or the ensemble of the runs' models."""
        return Ensemble([run.model for run in (self.finished, *self.members)]) if self.members else self.model

    def speed_summary(self, speed: Optional[Speed] = None) -> str:
        """The speed line of `speed` (default: the last call's), with the threads used and the weights."""
        used = sorted(self.threads_used or {self.threads})
        threads = f"{used[0]}–{used[-1]}" if len(used) > 1 else f"{used[0]}"
        threads += f" thread{'s' * (used[-1] != 1)}"
        if self.follow_free_cores:
            threads += f", following the free cores, at most {self.threads}"
        return (speed or self.speed).summary(threads, self.weights_summary())

    def weights_summary(self) -> str:
        """The weights used, and their precision: an ensemble's each named by its run."""
        runs = (self.finished, *self.members)
        names = [f"{run.path}: " if self.members and run.path.is_dir() else "" for run in runs]  # a file: named
        precision = ", ".join(sorted({str(p.dtype).removeprefix("torch.") for p in self.model.parameters()}))
        return " + ".join(name + run.weights_summary() for name, run in zip(names, runs)) + f"; {precision}"

    @property
    def kind(self) -> TaskKind:
        return TaskKind(self.config.task.kind)

    def require(self, command: str, *kinds: TaskKind) -> None:
        """UsageError unless this run's task kind is one of `kinds` (naming the command that takes it)."""
        if self.kind not in kinds:
            other = COMMAND_OF_KIND.get(self.kind)
            hint = f": use python -m frozen_sweep.{other}" if other else ""
            allowed = " or ".join(f"task.kind={k.value}" for k in kinds)
            raise UsageError(f"{self.path} is a task.kind={self.kind.value} run; {command} takes {allowed} runs{hint}")

    def _single(self, command: str) -> None:
        if self.members:
            raise UsageError(f"{command} takes one run; an ensemble translates only")

    def _timed(self, lines: list[str], work):
        """`work()` at this run's threads, its speed kept; returns what `work` returns, its tokens dropped. UsageError
        when `lines` is one string, not a list of them."""
        if isinstance(lines, (str, bytes)):
            raise UsageError("lines: a list of strings, one per sentence (not one string)")
        sentences = len(lines)
        start, self.truncated = time.perf_counter(), []
        with cpu.threads_for_job(self.threads, self.follow_free_cores) as used:
            result, tokens = work()
        self.threads_used |= used
        self.speed = Speed(sentences, tokens, time.perf_counter() - start)
        return result

    def translate(self, lines: list[str], beam: Optional[int] = None, nbest: Optional[int] = None,
                  len_penalty: Optional[float] = None, max_len_a: Optional[float] = None,
                  max_len_b: Optional[int] = None, batch_sentences: Optional[int] = None,
                  max_tokens: Optional[int] = None, source: str = INPUT, first_line: int = 1,
                  on_batch=None) -> Union[list[str], list[list[tuple[float, str]]]]:  # fmt: skip
        """One translation per line (an empty line: ""); with `nbest`, the nbest best (score, translation) per line,
        best first (score: log-probability / length ** len_penalty). Search settings default to the run's;
        `max_tokens` (padded source tokens per batch) to 6,000, or 1,000 when frozen weights are drawn on the fly."""
        self.require("translate", TaskKind.translation)
        if max_tokens is None:
            on_the_fly = any(run.on_the_fly is not None for run in (self.finished, *self.members))
            max_tokens = translating.default_max_tokens(on_the_fly)
        search = translating.search_settings(self.config.eval, {"beam": beam, "len_penalty": len_penalty,
                                             "max_len_a": max_len_a, "max_len_b": max_len_b,
                                             "batch_sentences": batch_sentences})  # fmt: skip
        ranked = self._timed(lines, lambda: translating.translate_lines(
            self, lines, search, nbest or 1, max_tokens, source, first_line, on_batch))  # fmt: skip
        return ranked if nbest else [hyps[0][1] for hyps in ranked]

    def score(self, lines: list[str], source: str = INPUT, first_line: int = 1) -> scoring.Scores:
        """Each line's log-probability, tokens and perplexity, and the corpus perplexity (frozen_sweep.score); a
        translation run's lines are `source<TAB>target`, scored log p(target | source)."""
        self._single("score")
        self.require("score", TaskKind.lm, TaskKind.mlm, TaskKind.translation)
        score_lines = scoring.score_pairs if self.kind == TaskKind.translation else scoring.score_lm_lines

        def work():
            scores = score_lines(self, lines, source, first_line)
            return scores, scores.tokens

        return self._timed(lines, work)

    def generate(self, prompts: list[str], max_new_tokens: int = generating.MAX_NEW_TOKENS, beam: int = 1,
                 sample: bool = False, temperature: Optional[float] = None, top_k: Optional[int] = None,
                 top_p: Optional[float] = None, seed: Optional[int] = None, source: str = INPUT,
                 first_line: int = 1) -> list[str]:  # fmt: skip
        """Each prompt followed by a language model's continuation of it, at most `max_new_tokens` subwords, ending
        at end-of-sentence: greedy search, beam search (`beam` > 1), or with `sample` drawn (`temperature`, `top_k`,
        `top_p`; `seed` makes it repeatable). An empty prompt: text from bos alone."""
        self._single("generate")
        self.require("generate", TaskKind.lm)
        sampling = generating.sampling_settings(sample, beam, temperature, top_k, top_p, seed)
        return self._timed(prompts, lambda: generating.generate_lines(
            self, prompts, max_new_tokens, beam, sampling, seed, source, first_line))  # fmt: skip

    def classify(self, lines: list[str], batch_size: int = 64, source: str = INPUT,
                 first_line: int = 1) -> list[Union[tuple[str, float], float, None]]:  # fmt: skip
        """A classifier's (label, probability), or a regression's number, per line (a text, or text_a<TAB>text_b
        for a run trained on pairs); None for an empty line."""
        self._single("classify")
        self.require("classify", TaskKind.classify, TaskKind.regression)

        def work():
            examples = labelling.split_examples(lines, source, self.pairs, first_line)
            filled = [i for i, texts in enumerate(examples) if texts]
            rows, self.truncated = labelling.encode([examples[i] for i in filled], self.vocab,
                                                    self.config.model.max_positions, source,
                                                    [first_line + i for i in filled], self.too_long)  # fmt: skip
            out: list = [None] * len(lines)
            if not rows:
                return out, 0
            if self.kind == TaskKind.regression:
                answers = labelling.outputs(self.model, rows, batch_size).tolist()
            else:
                answers = [(self.labels[label], p) for label, p in labelling.predict(self.model, rows, batch_size)]
            for i, answer in zip(filled, answers):
                out[i] = answer
            return out, sum(map(len, rows))

        return self._timed(lines, work)


def thread_policy(finished: FinishedRun, threads: Optional[int]) -> tuple[int, bool]:
    """(CPU threads, whether to follow the free cores): `threads`, else the count its job ran with (its record's, or
    its model file's), so outputs are the job's to the bit; else trainer.threads or OMP_NUM_THREADS, fixed; else,
    as with trainer.follow_free_cores, every core at most and fewer while other processes hold them."""
    if threads is not None or finished.threads:
        return threads or finished.threads, False
    trainer = finished.config.trainer
    follow = trainer.follow_free_cores or not (trainer.threads or os.environ.get("OMP_NUM_THREADS"))
    return cpu.job_threads(trainer.threads, follow), follow


def pick_device(name: str) -> torch.device:
    """auto: a GPU when there is one; UsageError for cuda where none is visible."""
    if name not in ("auto", "cpu", "cuda"):
        raise UsageError(f"device={name!r}: allowed: auto, cpu, cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible; allowed here: auto, cpu")
    return torch.device("cuda" if name != "cpu" and torch.cuda.is_available() else "cpu")
