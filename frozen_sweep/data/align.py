"""Pair two translations verse by verse and drop the pairs that are not translations of each other.

Both modules use the KJV versification, but a translation made from a text with other verse numbering (the Reina-
Valera follows the Hebrew numbering in places) was squeezed into it by the module converter: where the source has a
verse the KJV lacks, the KJV slot stays empty and the following verses of that chapter, often of the next chapter
too, sit one to three slots away from their translation (spaRV1909eb: Num 13, Num 30, 1Sam 24, 1Kgs 22, 1Chr 21,
2Chr 33, Job 39-40, Hos 12, Jonah 2 ...). Pairing by reference alone would teach and test on such shifted pairs, so:

1. a pair with an empty side is dropped;
2. a chapter that is *out of step* is dropped whole: it, or the previous chapter of its book, has a verse that is
   empty on one side only, or in some window of WINDOW verses the character lengths match far better when one side
   is shifted by 1-3 verses (mean |log length ratio - median| below SHIFT_GAIN times the unshifted one, which must be
   above MIN_COST);
3. a remaining pair whose character lengths differ by more than `max_length_ratio` (either way) is dropped.
"""

import math
import statistics
from itertools import groupby

from frozen_sweep.data.sword import VerseRef

WINDOW = 5
SHIFTS = (-3, -2, -1, 1, 2, 3)
SHIFT_GAIN = 0.4
MIN_COST = 0.25

Pair = tuple[VerseRef, str, str]


def _mean_cost(pairs: list[Pair], start: int, shift: int, log_ratio: float) -> float | None:
    """Mean |log(len tgt / len src) - log_ratio| over a window pairing src i with tgt i+shift; None if not defined."""
    costs = []
    for i in range(start, start + WINDOW):
        j = i + shift
        if not 0 <= j < len(pairs) or not pairs[i][1] or not pairs[j][2]:
            return None
        costs.append(abs(math.log(len(pairs[j][2]) / len(pairs[i][1])) - log_ratio))
    return sum(costs) / WINDOW


def shifted(chapter: list[Pair], log_ratio: float) -> bool:
    """True if some window of the chapter lines up far better with one side moved by a few verses."""
    for start in range(len(chapter) - WINDOW + 1):
        base = _mean_cost(chapter, start, 0, log_ratio)
        if base is None or base <= MIN_COST:
            continue
        for shift in SHIFTS:
            cost = _mean_cost(chapter, start, shift, log_ratio)
            if cost is not None and cost < SHIFT_GAIN * base:
                return True
    return False


def out_of_step_chapters(pairs: list[Pair]) -> list[tuple[str, int]]:
    """(book, chapter) of every chapter rule 2 drops, in canonical order."""
    log_ratio = statistics.median(math.log(len(t) / len(s)) for _, s, t in pairs if s and t)
    chapters = [(key, list(group)) for key, group in groupby(pairs, key=lambda p: (p[0].book, p[0].chapter))]
    bad = []
    previous_one_sided = False
    previous_book = None
    for (book, chapter), verses in chapters:
        one_sided = any(bool(s) != bool(t) for _, s, t in verses)
        inherited = previous_one_sided and previous_book == book
        if one_sided or inherited or shifted(verses, log_ratio):
            bad.append((book, chapter))
        previous_one_sided, previous_book = one_sided, book
    return bad


def align(src: list[tuple[VerseRef, str]], tgt: list[tuple[VerseRef, str]], max_length_ratio: float):
    """Pairs (ref, src text, tgt text) that survive the three rules above, and counts of what was dropped."""
    if [ref for ref, _ in src] != [ref for ref, _ in tgt]:
        raise ValueError("the two modules do not list the same verses; both must use the KJV versification")
    pairs = [(ref, s, t) for (ref, s), (_, t) in zip(src, tgt)]
    out_of_step = out_of_step_chapters(pairs)
    bad = set(out_of_step)
    kept, stats = [], {"verses": len(pairs), "dropped_empty": 0, "dropped_out_of_step": 0, "dropped_misaligned": 0}
    for ref, s, t in pairs:
        if not s or not t:
            stats["dropped_empty"] += 1
        elif (ref.book, ref.chapter) in bad:
            stats["dropped_out_of_step"] += 1
        elif max(len(s), len(t)) > max_length_ratio * min(len(s), len(t)):
            stats["dropped_misaligned"] += 1
        else:
            kept.append((ref, s, t))
    stats["out_of_step_chapters"] = [f"{book} {chapter}" for book, chapter in out_of_step]
    return kept, stats
