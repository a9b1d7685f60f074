"""Translations of lines of text by a translation run: its own search settings unless overridden, lengths checked
before anything is decoded, an empty line translated as an empty line."""

from omegaconf import OmegaConf

from frozen_sweep.evaluate.decode import translate_nbest
from frozen_sweep.use.errors import UsageError, check_lengths

MAX_TOKENS = 6000  # padded source tokens per batch: with beam 4 a batch holds 4× this many decoder states
# With frozen weights drawn on the fly the point is a small peak, and at the default batch and beam decoding's own
# tensors (cross-attention keys and values, caches, log-probabilities) dominate it (docs/performance.md): a smaller cap.
ON_THE_FLY_MAX_TOKENS = 1000


def default_max_tokens(on_the_fly: bool) -> int:
    """The padded source tokens per batch when the caller names none: smaller with frozen weights drawn on the fly."""
    return ON_THE_FLY_MAX_TOKENS if on_the_fly else MAX_TOKENS
SEARCH_KEYS = ("beam", "len_penalty", "max_len_a", "max_len_b", "batch_sentences")


def search_settings(eval_cfg, overrides: dict) -> dict:
    """The run's search settings (its config's eval section) with the non-None `overrides` in their place, checked."""
    search = OmegaConf.to_container(eval_cfg)
    search.update({key: value for key, value in overrides.items() if value is not None})
    if search["beam"] < 1:
        raise UsageError(f"beam {search['beam']}: allowed: beam ≥ 1")
    if search["batch_sentences"] < 1:
        raise UsageError("batch_sentences must be at least 1")
    return search


def translate_lines(run, lines: list[str], search: dict, nbest: int, max_tokens: int, source: str,
                    first_line: int = 1, on_batch=None) -> tuple[list[list[tuple[float, str]]], int]:  # fmt: skip
    """The `nbest` best (score, translation) of each line, best first, and the source subwords translated. An empty
    line gives [(0.0, "")]. A line longer than the model's positions: as `run.too_long` says (check_lengths)."""
    if not 1 <= nbest <= search["beam"]:
        raise UsageError(f"beam {search['beam']}, nbest {nbest}: allowed: 1 ≤ nbest ≤ beam")
    if max_tokens < 1:
        raise UsageError("max_tokens must be at least 1")
    vocab, positions = run.vocab, run.config.model.max_positions
    sources = vocab.encode_batch(lines)
    run.truncated += check_lengths(sources, positions - 1, source, f"model.max_positions={positions}, less one for "
                                   "the end-of-sentence", first_line, run.too_long)  # fmt: skip
    filled = [i for i, line in enumerate(lines) if line.strip()]
    search_cfg = OmegaConf.create(search)
    ranked = translate_nbest(run.search_model, [sources[i] for i in filled], vocab, run.device, search_cfg,
                             nbest=nbest, max_tokens=max_tokens, on_batch=on_batch)  # fmt: skip
    out: list[list[tuple[float, str]]] = [[(0.0, "")] for _ in lines]
    for i, hyps in zip(filled, ranked):
        out[i] = hyps
    return out, sum(len(sources[i]) for i in filled)
