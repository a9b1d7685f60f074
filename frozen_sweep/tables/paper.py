"""The paper's row labels, table sections and published numbers (docs/concepts.md), as data.

Kept free of torch so that the collector loads in a fraction of a second; tests check ROWS against
`frozen_sweep.weights.freeze.PAPER_ROWS`.
"""

import math
from dataclasses import dataclass
from typing import ClassVar

# Row labels in the paper's order, grouped under the paper's section headings ((0) has none).
SECTIONS = {
    "": ("(0)",),
    "One frozen component": ("(1)", "(2)", "(3)"),
    "Identity-initialised frozen component": ("(2.1)", "(3.1)"),
    "Multiple frozen components": ("(4)", "(5)", "(6)"),
}
ROWS = tuple(row for rows in SECTIONS.values() for row in rows)
SECTION_OF = {row: section for section, rows in SECTIONS.items() for row in rows}
BASELINE = "(0)"


@dataclass(frozen=True)
class Reference:
    """One published table: row label → (test metric, epochs, trainable/all), printed as in the paper."""

    title: str
    metric_name: str  # "bleu" | "ppl"
    rows: dict[str, tuple[float, int, float]]
    doubtful_ratios: tuple[str, ...] = ()  # rows whose trainable/all cell the footnote questions
    footnote: str = ""


REFERENCES = {
    "paper_big": Reference(
        title="transformer-big, WMT18 tr→en, 213M parameters",
        metric_name="bleu",
        rows={
            "(0)": (24.3, 19, 1.0),
            "(1)": (22.6, 26, 0.82),
            "(2)": (22.3, 23, 0.64),
            "(3)": (23.2, 26, 0.52),
            "(2.1)": (19.4, 24, 0.64),
            "(3.1)": (22.9, 20, 0.52),
            "(4)": (21.5, 36, 0.35),
            "(5)": (20.8, 37, 0.47),
            "(6)": (4.4, 25, 0.17),
        },
    ),
    "paper_big_ffn1024": Reference(
        title="transformer-big with FFN width 1024, WMT18 tr→en, 137M parameters",
        metric_name="bleu",
        rows={
            "(0)": (23.2, 22, 1.0),
            "(1)": (22.0, 38, 0.73),
            "(2)": (20.1, 36, 0.55),
            "(3)": (23.0, 18, 0.82),
            "(4)": (21.6, 34, 0.45),
            "(5)": (18.0, 98, 0.18),
        },
        doubtful_ratios=("(2)", "(4)"),
        footnote=(
            "the paper's trainable/all for (2) and (4) look swapped: our accounting gives (2) ≈ 0.45 and "
            "(4) ≈ 0.55 for this model; printed as published"
        ),
    ),
    "paper_lm": Reference(
        title="language model, 38M parameters, 78M sentences",
        metric_name="ppl",
        rows={
            "(0)": (37.4, 6, 1.0),
            "(1)": (118.4, 6, 0.53),
            "(2)": (47.5, 6, 0.81),
            "(3)": (50.3, 6, 0.64),
            "(4)": (209.3, 6, 0.18),
            "(5)": (157.3, 6, 0.36),
            "(6)": (131.7, 6, 0.46),
        },
    ),
}


# ---- The paper's findings, as checks on a table of row values -------------------------------------------------------
# A condition compares row values: the per-row means over seeds of the test metric (BLEU, or perplexity where lower
# is better) or of the epochs to convergence. `rows` are the rows it needs; `compare(v)` returns whether it holds and
# the numbers it compared, e.g. "(1)/(0) = 22.6/24.3 = 0.93 ≥ 0.85".

OPERATORS = {">=": (float.__ge__, "≥", "<"), ">": (float.__gt__, ">", "≤"), "<": (float.__lt__, "<", "≥"),
             "<=": (float.__le__, "≤", ">")}  # fmt: skip


def relation(left: float, op: str, right: float) -> tuple[bool, str]:
    """Whether `left op right` holds, and the symbol that is true of the two numbers."""
    test, holds_symbol, fails_symbol = OPERATORS[op]
    holds = test(float(left), float(right))
    return holds, holds_symbol if holds else fails_symbol


def shown(*values: float, least: int = 1) -> list[str]:
    """The values printed with one number of decimals (at least `least`) that lets a reader check every comparison
    between them: distinct values print distinct, and each nonzero value shows at least two significant digits
    ("0.0015/0.0047", not "0.0/0.0")."""
    finite = [float(v) for v in values if math.isfinite(v)]
    need = [1 - math.floor(math.log10(abs(v))) for v in finite if v != 0]
    decimals = min(max([least, *need]), 6)
    while decimals < 6 and len({round(v, decimals) for v in finite}) < len(set(finite)):
        decimals += 1
    return [f"{v:.{decimals}f}" for v in values]


class Condition:
    """What every condition shares: `rows`, the labels named by its fields listed in `row_fields`."""

    row_fields: ClassVar[tuple[str, ...]]

    @property
    def rows(self) -> tuple[str, ...]:
        named = (getattr(self, name) for name in self.row_fields)
        return tuple(row for value in named for row in ((value,) if isinstance(value, str) else value))


@dataclass(frozen=True)
class Ratio(Condition):
    """row / min(of) op fraction: e.g. (1) keeps ≥ 85% of (0); (6) < 50% of the smaller of (4), (5)."""

    row_fields = ("row", "of")

    row: str
    of: tuple[str, ...]
    op: str
    fraction: float

    @property
    def rule(self) -> str:
        of = self.of[0] if len(self.of) == 1 else f"min({', '.join(self.of)})"
        return f"{self.row} {OPERATORS[self.op][1]} {self.fraction:g} × {of}"

    def compare(self, v: dict) -> tuple[bool, str]:
        base = min(self.of, key=lambda r: v[r])
        ratio = v[self.row] / v[base] if v[base] else float("inf")
        holds, symbol = relation(ratio, self.op, self.fraction)
        row, of = shown(v[self.row], v[base])
        ratio_text, fraction = shown(ratio, self.fraction, least=2)
        return holds, f"{self.row}/{base} = {row}/{of} = {ratio_text} {symbol} {fraction}"


@dataclass(frozen=True)
class Compare(Condition):
    """left op right, e.g. (4) ≥ (5)."""

    row_fields = ("left", "right")

    left: str
    op: str
    right: str

    @property
    def rule(self) -> str:
        return f"{self.left} {OPERATORS[self.op][1]} {self.right}"

    def compare(self, v: dict) -> tuple[bool, str]:
        holds, symbol = relation(v[self.left], self.op, v[self.right])
        left, right = shown(v[self.left], v[self.right])
        return holds, f"{self.left} {left} {symbol} {self.right} {right}"


@dataclass(frozen=True)
class Close(Condition):
    """|a − b| ≤ fraction × scale, e.g. |(3.1) − (3)| ≤ 5% of (0)."""

    row_fields = ("a", "b", "scale")

    a: str
    b: str
    scale: str
    fraction: float

    @property
    def rule(self) -> str:
        return f"|{self.a} − {self.b}| ≤ {self.fraction:g} × {self.scale}"

    def compare(self, v: dict) -> tuple[bool, str]:
        gap, allowed = abs(v[self.a] - v[self.b]), self.fraction * v[self.scale]
        holds, symbol = relation(gap, "<=", allowed)
        scale = f"{self.fraction:g} × {self.scale}"
        gap_text, allowed_text = shown(gap, allowed)
        return holds, f"|{self.a} − {self.b}| = {gap_text} {symbol} {scale} = {allowed_text}"


@dataclass(frozen=True)
class Extreme(Condition):
    """row has the highest (or lowest) value among `among`, e.g. (1) has the highest perplexity of (1), (2), (3)."""

    row_fields = ("among",)

    row: str
    among: tuple[str, ...]
    highest: bool

    @property
    def rule(self) -> str:
        return f"{self.row} = {'max' if self.highest else 'min'}({', '.join(self.among)})"

    def compare(self, v: dict) -> tuple[bool, str]:
        others = [v[r] for r in self.among if r != self.row]
        holds = v[self.row] > max(others) if self.highest else v[self.row] < min(others)
        values = ", ".join(f"{r} {text}" for r, text in zip(self.among, shown(*(v[r] for r in self.among))))
        extreme = "highest" if self.highest else "lowest"
        return holds, f"{self.row} is {'' if holds else 'not '}the {extreme} of {values}"


@dataclass(frozen=True)
class Claim:
    """A finding: holds when every condition holds on a table of the claim's metric (and model, when named)."""

    key: str
    statement: str
    metric_name: str  # the tables it is checked on: "bleu" | "ppl" | "mlm_ppl"
    conditions: tuple
    quantity: str = "metric"  # the row values compared: "metric" (test BLEU / PPL) or "epochs" (to convergence)
    models: tuple[str, ...] = ()  # only tables of these models; () for all

    @property
    def rows(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(row for c in self.conditions for row in c.rows))

    @property
    def rule(self) -> str:
        return " and ".join(c.rule for c in self.conditions)


ONE_FROZEN = ("(1)", "(2)", "(3)")
FROZEN_ROWS = ROWS[1:]
CLAIMS = (
    Claim("F1", "one frozen component costs little (each keeps ≥ 85% of (0)'s BLEU)", "bleu",
          tuple(Ratio(row, (BASELINE,), ">=", 0.85) for row in ONE_FROZEN)),
    Claim("F2", "(6), only the embeddings trainable, collapses (< 50% of the smaller of (4), (5))", "bleu",
          (Ratio("(6)", ("(4)", "(5)"), "<", 0.5),)),
    Claim("F3", "ATT-only ≥ FFN-only > EMB-only", "bleu", (Compare("(4)", ">=", "(5)"), Compare("(5)", ">", "(6)"))),
    Claim("F4", "identity ATT hurts more than random ATT; identity FFN ≈ random FFN (within 5% of (0))", "bleu",
          (Compare("(2.1)", "<", "(2)"), Close("(3.1)", "(3)", BASELINE, 0.05))),
    Claim("F5", "language model: frozen embeddings hurt most (highest perplexity of (1), (2), (3))", "ppl",
          (Extreme("(1)", ONE_FROZEN, highest=True),)),
    Claim("M1", "masked LM: frozen embeddings hurt most, F5 on an MLM (highest MLM perplexity of (1), (2), (3))",
          "mlm_ppl", (Extreme("(1)", ONE_FROZEN, highest=True),)),
    Claim("E1", "every frozen row takes at least as many epochs to converge as (0) (the big table)",
          "bleu", tuple(Compare(row, ">=", BASELINE) for row in FROZEN_ROWS), quantity="epochs"),
    # transformer-big with FFN width 1024 (paper_big_ffn1024): a narrow FFN carries little, attention much
    Claim("B1", "FFN 1024: a frozen FFN costs almost nothing (≥ 95% of (0))", "bleu",
          (Ratio("(3)", (BASELINE,), ">=", 0.95),), models=("big_ffn1024",)),
    Claim("B2", "FFN 1024: frozen ATT hurts most of the single components", "bleu",
          (Extreme("(2)", ONE_FROZEN, highest=False),), models=("big_ffn1024",)),
    Claim("B3", "FFN 1024: FFN-only falls clearly below ATT-only (< 90% of it)", "bleu",
          (Ratio("(5)", ("(4)",), "<", 0.9),), models=("big_ffn1024",)),
)  # fmt: skip


@dataclass(frozen=True)
class ReservoirClaim:
    """A reservoir-transformer finding (Shen et al. 2021), checked per depth on a reservoir table: every row with
    reservoir layers against the all-trainable row of the same depth (reservoir and updatable layers together)."""

    key: str
    statement: str
    column: str  # the reservoir table's per-row mean compared: "aucc" (or "metric": the test metric)

    @property
    def rule(self) -> str:
        return f"{self.column} better than the all-trainable row of the same depth (BLEU higher, perplexity lower)"


RESERVOIR_CLAIMS = (
    ReservoirClaim("R1", "reservoir runs reach a better AUCC than the all-trainable run of the same depth", "aucc"),
)
