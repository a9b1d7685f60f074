"""Tables → GitHub Markdown, booktabs LaTeX, CSV. Every study's tables share this shape (`Table`)."""

import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional

import pandas as pd

from frozen_sweep.tables.provenance import provenance
from frozen_sweep.tables.runs import CSV_COLUMNS

LEFT_ALIGNED = {"Row", "Stack", "Layer", "Parts", "Type", "Pattern", "Pre-training", "Fine-tuned"}
CENTRED = {"EMB", "ATT", "FFN"}


@dataclass
class Table:
    title: str
    metric_name: str
    rows: pd.DataFrame  # display strings, indexed by section, columns (group, name)
    runs: pd.DataFrame  # the completed runs behind it, for the plots
    footnotes: list[str]
    plot: Optional[Callable] = field(default=None, repr=False)  # plot(table, path): the study's figure
    checks: list = field(default_factory=list)  # claims.Check: the papers' findings checked on this table


CHECKS_HEADING = (
    "Findings (✓ holds, ✗ does not, inconclusive: the seeds disagree or a row never learned; row means over seeds; "
    "rules: docs/collect.md)"
)


def check_lines(table: Table) -> list[str]:
    """One line per check: key, verdict, statement, the numbers compared, the paper's when given, the evidence."""
    return [
        f"{c.key} {c.verdict}{' (indicative)' * c.indicative}{f' (untrained: {c.untrained})' * bool(c.untrained)}"
        f" — {c.statement}: {c.compared}"
        + (f" (paper: {c.paper})" if c.paper else "") + (f" [evidence: {c.evidence}]" if c.evidence else "")
        for c in table.checks
    ]


def number(x: float, digits: int = 1) -> str:
    return "–" if pd.isna(x) else f"{x:.{digits}f}"


def fraction(x: float) -> str:
    return number(x, 2)


def parameters(n) -> str:
    """A parameter count: "1.08M", "171,234"; "–" when unknown."""
    if pd.isna(n):
        return "–"
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{int(n):,}"


def mean_std(summary: pd.DataFrame) -> pd.Series:
    """The `metric` column as "mean ± std" over the `n` runs behind each row (just the mean when n = 1)."""
    cells = summary.metric.map(number)
    return cells.mask(summary.n > 1, cells + " ± " + summary["std"].map(number))


def problems(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.loc[runs.status != "completed", ["path", "status", "reason"]]


def alignment(name: str) -> str:
    return "l" if name in LEFT_ALIGNED else "c" if name in CENTRED else "r"


def markdown(tables: list[Table], runs: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown: a table per task × model × setting, then the runs left out."""

    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", r"\|") for c in cells) + " |"

    rules = {"l": ":--", "c": ":-:", "r": "--:"}
    out = []
    for table in tables:
        columns = table.rows.columns
        out += [f"### {table.title}", "", provenance(table.runs), ""]
        out.append(line(" ".join(filter(None, c)) for c in columns))
        out.append(line(rules[alignment(name)] for _, name in columns))
        for section, block in table.rows.groupby(level="section", sort=False):
            if section:
                out.append(line([f"*{section}*"] + [""] * (len(columns) - 1)))
            out += [line(cells) for cells in block.itertuples(index=False)]
        out.append("")
        if table.footnotes:
            out += [f"{note}  " for note in table.footnotes] + [""]
        if table.checks:
            out += [f"**{CHECKS_HEADING}**", ""] + [f"- {line}" for line in check_lines(table)] + [""]
    left_out = problems(runs)
    if len(left_out):
        out += [f"### Not included ({len(left_out)} runs)", ""]
        columns = (left_out[name].tolist() for name in ("path", "status", "reason"))  # thousands after reruns:
        out += [f"- `{path}` — {status}: {reason}" for path, status, reason in zip(*columns)] + [""]  # not itertuples
    return "\n".join(out)


LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "≥": r"$\geq$", "≈": r"$\approx$",
    "✓": r"$\checkmark$", "✗": r"$\times$", "†": r"$^\dagger$", "‡": r"$^\ddagger$", "⊘": r"$^\oslash$",
    "·": "--", "–": "--", "—": "---", "→": r"$\to$",
    "×": r"$\times$", ">": r"$>$", "<": r"$<$", "≤": r"$\leq$", "−": r"$-$", "|": r"$|$",
}  # fmt: skip


def latex_escape(text) -> str:
    return "".join(LATEX_ESCAPES.get(ch, ch) for ch in str(text))


def latex_header(columns: pd.MultiIndex) -> list[str]:
    """Column names, under a row of group headings with \\cmidrule when a reference adds groups."""
    names = " & ".join(latex_escape(name) for _, name in columns) + r" \\"
    groups = [(group, len(list(members))) for group, members in itertools.groupby(columns.get_level_values(0))]
    if len(groups) == 1:
        return [names]
    cells, rules, first = [], [], 1
    for group, width in groups:
        cells.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(group)}}}" if group else " & " * (width - 1))
        rules += [rf"\cmidrule(lr){{{first}-{first + width - 1}}}"] if group else []
        first += width
    return [" & ".join(cells) + r" \\", "".join(rules), names]


def latex(tables: list[Table], runs: pd.DataFrame) -> str:
    """booktabs tables for pdflatex; the preamble needs \\usepackage{booktabs,amssymb} (amssymb: \\checkmark)."""
    out = ["% frozen_sweep.collect tables: \\usepackage{booktabs} and \\usepackage{amssymb} in the preamble"]
    for table in tables:
        columns = table.rows.columns
        spec = "".join(alignment(name) for _, name in columns)
        out += [r"\begin{table}[ht]", r"\centering\small\setlength{\tabcolsep}{4pt}"]
        out.append(rf"\caption{{{latex_escape(table.title)}}}")
        out += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", *latex_header(columns)]
        for section, block in table.rows.groupby(level="section", sort=False):
            out.append(r"\midrule")
            if section:
                out.append(rf"\multicolumn{{{len(columns)}}}{{l}}{{\textit{{{latex_escape(section)}}}}} \\")
            out += [" & ".join(map(latex_escape, cells)) + r" \\" for cells in block.itertuples(index=False)]
        out += [r"\bottomrule", r"\end{tabular}"]
        out += [rf"\par\smallskip{{\footnotesize {latex_escape(note)}\par}}" for note in table.footnotes]
        if table.checks:
            lines = [CHECKS_HEADING + ":"] + check_lines(table)
            out.append(r"\par\smallskip{\footnotesize " + r"\\ ".join(map(latex_escape, lines)) + r"\par}")
        out += [r"\end{table}", ""]
    out += [f"% not included: {r.path} ({r.status}: {r.reason})" for r in problems(runs).itertuples()]
    return "\n".join(out) + "\n"


def csv(runs: pd.DataFrame) -> str:
    """One row per run, completed or not, with flat columns (and p_vs_0, when significance was tested)."""
    return runs[CSV_COLUMNS + ["p_vs_0"] * ("p_vs_0" in runs)].to_csv(index=False)


def checks_csv(tables: list[Table]) -> str:
    """One row per check: the table it was made on, the claim, its rule, the verdict and the numbers compared."""
    fields = ("key", "statement", "rule", "verdict", "indicative", "untrained", "compared", "paper", "evidence")
    rows = [{"table": t.title, **{f: getattr(c, f) for f in fields}} for t in tables for c in t.checks]
    return pd.DataFrame(rows, columns=["table", *fields]).to_csv(index=False)
