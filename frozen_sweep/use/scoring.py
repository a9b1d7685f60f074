"""Scores of lines of text: each line's log-probability, the tokens scored and their perplexity, and the corpus
perplexity batched as the job batched its test set. A language model scores a line (so on the run's test file the
corpus perplexity is the record's test perplexity exactly); a translation run force-decodes `source<TAB>target`
lines, log p(target | source) (so on its test set the mean log-prob per token is minus the record's test_loss)."""

from dataclasses import dataclass
from typing import NamedTuple, Optional

from frozen_sweep.config import TaskKind
from frozen_sweep.data import Split
from frozen_sweep.data.masking import held_out_batches
from frozen_sweep.evaluate.scores import perplexity, token_scores
from frozen_sweep.use.errors import UsageError, check_lengths


class LineScore(NamedTuple):
    logprob: float  # natural log
    tokens: int
    perplexity: float  # exp(−logprob / tokens); nan for no tokens


@dataclass
class Scores:
    lines: list[LineScore]
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
    vocab, cfg = run.vocab, run.config
    ids = vocab.encode_batch(lines)
    positions = cfg.model.max_positions
    check_lengths(ids, positions - 1, source, f"model.max_positions={positions}, less one for the end-of-sentence",
                  first_line)  # fmt: skip
    batches = held_out_batches(Split.from_ids(None, ids, specials=vocab.specials), "test", cfg.task, len(vocab), cfg.trainer.max_tokens)
    sentence_nll: dict[int, tuple[float, int]] = {}
    nll, accuracy = token_scores(run.model, batches, run.device, sentence_nll)
    return _scores(sentence_nll, len(ids), nll, accuracy, TaskKind(cfg.task.kind) == TaskKind.mlm)


def score_pairs(run, lines: list[str], source: str, first_line: int = 1) -> Scores:
    """log p(target | source) of each `source<TAB>target` line, by a translation run: every target subword and the
    end-of-sentence, each predicted from the source and the target before it (teacher forcing, as its loss)."""
    pairs = []
    for number, line in enumerate(lines, start=first_line):
        columns = line.split("\t")
        if len(columns) != 2:
            raise UsageError(f"{source} line {number} has {len(columns)} TAB-separated columns; a translation run "
                             "scores source<TAB>target")  # fmt: skip
        pairs.append([column.strip() for column in columns])
    vocab, cfg = run.vocab, run.config
    src, tgt = (vocab.encode_batch([pair[k] for pair in pairs]) for k in (0, 1))
    positions = cfg.model.max_positions
    what = f"model.max_positions={positions}, less one for the end-of-sentence"
    check_lengths(src, positions - 1, f"{source} (source)", what, first_line)
    check_lengths(tgt, positions - 1, f"{source} (target)", what, first_line)
    batches = held_out_batches(Split.from_ids(src, tgt, specials=vocab.specials), "test", cfg.task, len(vocab), cfg.trainer.max_tokens)
    sentence_nll: dict[int, tuple[float, int]] = {}
    nll, accuracy = token_scores(run.model, batches, run.device, sentence_nll)
    return _scores(sentence_nll, len(pairs), nll, accuracy, False)


def _scores(sentence_nll: dict[int, tuple[float, int]], count: int, nll: float, accuracy, masked: bool) -> Scores:
    lines = []
    for i in range(count):
        summed, tokens = sentence_nll[i]
        lines.append(LineScore(-summed, tokens, perplexity(summed / tokens) if tokens else float("nan")))
    tokens = sum(line.tokens for line in lines)
    return Scores(lines, tokens, perplexity(nll), -nll, accuracy, masked)
