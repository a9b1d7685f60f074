"""The paper's row labels, table sections and published numbers (DESIGN.md section 2), as data.

Kept free of torch so that the collector loads in a fraction of a second; tests check ROWS against
`frozen_sweep.freeze.PAPER_ROWS`.
"""

from dataclasses import dataclass

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
