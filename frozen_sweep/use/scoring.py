"""Scores of lines of text: each line's log-probability, the tokens scored and their perplexity, and the corpus
perplexity batched as the job batched its test set. A language model scores a line (so on the run's test file the
corpus perplexity is the record's test perplexity exactly); a translation run force-decodes `source<TAB>target`
lines, log p(target | source) (so on its test set the mean log-prob per token is minus the record's test_loss). An
empty line is not scored: its score is None (an empty output line)."""

from dataclasses import dataclass
from typing import NamedTuple, Optional

from frozen_sweep.config import TaskKind
from frozen_sweep.data import Split
from frozen_sweep.data.masking import framing_length, held_out_batches
from frozen_sweep.evaluate.scores import perplexity, token_scores
from frozen_sweep.use.errors import check_lengths, line_error


class LineScore(NamedTuple):
    logprob: float  # natural log
    tokens: int
    perplexity: float  # exp(−logprob / tokens); nan for no tokens


@dataclass
class Scores:
    lines: list[Optional[LineScore]]  # None: an empty line, not scored
    tokens: int
    perplexity: float  # over all tokens scored
    mean_logprob: float  # per token
    accuracy: Optional[float]  # the most likely token is the right one, per token scored
    masked: bool  # a masked LM's: scored on masked positions only

    def summary(self) -> str:
        kind = "masked-position " if self.masked else ""
        return (f"{len(self.lines)} lines, {self.tokens} {kind}tokens: perplexity {self.perplexity}, mean log-prob "
                f"per token {self.mean_logprob:.6f}, accuracy {self.accuracy:.4f}")  # fmt: skip


def score_lm_lines(run, lines: list[str], source: str, first_line: int = 1) -> Scores:
    """Every line scored by a causal or masked LM run (frozen_sweep.score's doc says how)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    ids = run.vocab.encode_batch(lines)
    masked = TaskKind(run.config.task.kind) == TaskKind.mlm
    _check(run, [ids], source, first_line, added=framing_length(run.vocab.specials) if masked else 1)
    return _score(run, None, [ids[i] for i in filled], filled, len(lines))


def score_pairs(run, lines: list[str], source: str, first_line: int = 1) -> Scores:
    """log p(target | source) of each `source<TAB>target` line, by a translation run: every target subword and the
    end-of-sentence, each predicted from the source and the target before it (teacher forcing, as its loss)."""
    pairs, filled = [["", ""] for _ in lines], []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != 2:
            raise line_error(source, first_line + i, f"has {len(columns)} TAB-separated columns; a translation run "
                             "scores source<TAB>target")  # fmt: skip
        pairs[i] = [column.strip() for column in columns]
        filled.append(i)
    src, tgt = (run.vocab.encode_batch([pair[k] for pair in pairs]) for k in (0, 1))
    _check(run, [src, tgt], source, first_line, [" (source)", " (target)"])
    return _score(run, [src[i] for i in filled], [tgt[i] for i in filled], filled, len(lines))


def _check(run, sides: list[list[list[int]]], source: str, first_line: int, names=("",), added: int = 1) -> None:
    """Each side's lines no longer than the model's positions, less the `added` tokens a line is read with (the
    end-of-sentence; a checkpoint's masked LM's prefix too) (run.too_long)."""
    positions = run.config.model.max_positions
    framing = "one for the end-of-sentence" if added == 1 else f"{added} for the special tokens that frame a line"
    what = f"model.max_positions={positions}, less {framing}"
    for ids, name in zip(sides, names):
        run.truncated += check_lengths(ids, positions - added, source + name, what, first_line, run.too_long)


def _score(run, src, tgt, filled: list[int], count: int) -> Scores:
    """The scores of the `filled` lines of `count` (the others None), batched as the job batched its test set."""
    cfg = run.config
    split = Split.from_ids(src, tgt, specials=run.vocab.specials)
    batches = held_out_batches(split, "test", cfg.task, len(run.vocab), cfg.trainer.max_tokens)
    sentence_nll: dict[int, tuple[float, int]] = {}
    nll, accuracy = token_scores(run.model, batches, run.device, sentence_nll) if filled else (float("nan"),) * 2
    masked = TaskKind(cfg.task.kind) == TaskKind.mlm
    return _scores(sentence_nll, filled, count, nll, accuracy, masked)


def _scores(sentence_nll: dict[int, tuple[float, int]], filled: list[int], count: int, nll: float, accuracy,
            masked: bool) -> Scores:  # fmt: skip
    lines: list[Optional[LineScore]] = [None] * count
    for k, i in enumerate(filled):
        summed, tokens = sentence_nll[k]
        lines[i] = LineScore(-summed, tokens, perplexity(summed / tokens) if tokens else float("nan"))
    tokens = sum(line.tokens for line in lines if line)
    return Scores(lines, tokens, perplexity(nll), -nll, accuracy, masked)
