"""Report: the result of compare(), as an aligned table, Markdown, LaTeX (booktabs), a dict, JSON or pandas.

Also the small table-rendering helpers the command line shares (aligned text, Markdown pipes).
"""
from __future__ import annotations

import html as _html
import json
import math
from dataclasses import dataclass, field

from ..options import CORRECTIONS, TESTS

_SUPERSCRIPT = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))


@dataclass
class Comparison:
    """One measure, one pair: `run` against `baseline` (the earlier of the two in the report's order)."""

    measure: str
    run: str
    baseline: str
    n: int  # queries with a value for both runs
    difference: float  # mean of run - baseline per query (of the logs for a geometric measure such as GMAP)
    statistic: float  # t (student), W (wilcoxon), the mean difference (fisher, bootstrap, tukey)
    p_value: float
    wins: int  # queries where run is better than baseline
    ties: int
    losses: int
    p_adjusted: float = math.nan  # = p_value without a correction
    significant: bool = False
    exact: bool | None = None  # fisher: all 2^n sign patterns enumerated
    ci_low: float = math.nan  # bootstrap: percentile interval of the mean difference at level 1 - max_p
    ci_high: float = math.nan
    winner: str | None = None  # the run that is significantly better, if either


@dataclass
class Report:
    """compare()'s result. `means[run][measure]`; `comparisons` holds every pair for every measure."""

    runs: list
    measures: list
    better: dict  # measure -> higher | lower
    aggregate: dict  # measure -> mean | sum | geometric
    means: dict
    comparisons: list
    test: str
    max_p: float
    correction: str | None
    seed: int
    n_resamples: int
    n_queries: int
    options: dict = field(default_factory=dict)
    queries: list = field(default_factory=list)  # the queries every run has, which the tests pair
    values: dict = field(default_factory=dict)  # measure -> [[value per query] per run], aligned on queries

    # ------------------------------------------------------------------------------------------ queries

    @property
    def labels(self) -> dict:
        """run -> its letter: a, b, c, ... (aa, ab, ... after z)."""
        out = {}
        for i, r in enumerate(self.runs):
            out[r] = _label(i)
        return out

    def comparison(self, measure: str, run_a: str, run_b: str) -> Comparison:
        """The comparison of two runs on a measure, in either order."""
        for c in self.comparisons:
            if c.measure == measure and {c.run, c.baseline} == {run_a, run_b}:
                return c
        raise KeyError((measure, run_a, run_b))

    def beats(self, run: str, measure: str) -> list:
        """The runs that `run` beats significantly on `measure`, in report order."""
        out = [c.baseline if c.winner == c.run else c.run
               for c in self.comparisons if c.measure == measure and c.winner == run]
        return [r for r in self.runs if r in out]

    def markers(self, run: str, measure: str) -> str:
        labels = self.labels
        letters = [labels[r] for r in self.beats(run, measure)]
        return ("," if any(len(x) > 1 for x in letters) else "").join(letters)

    def best(self, measure: str, digits: int = 4) -> set:
        """The runs with the best mean on a measure, compared as displayed (ties are all best)."""
        shown = {r: _number(self.means[r][measure], self.aggregate[measure], digits) for r in self.runs
                 if self.means[r][measure] is not None}
        if not shown:
            return set()
        pick = max if self.better[measure] == "higher" else min
        top = pick(float(v) for v in shown.values())
        return {r for r, v in shown.items() if float(v) == top}

    # ------------------------------------------------------------------------------------------ text

    def method(self) -> str:
        """The test as one phrase: its name, how it resampled, the correction."""
        what = TESTS[self.test]
        if self.test == "fisher":
            exact = [c.exact for c in self.comparisons if c.exact is not None]
            if exact and all(exact):
                what += " (exact: every sign flip)"
            else:
                what += f" ({self.n_resamples:,} random sign flips, seed {self.seed})"
        elif self.test == "bootstrap":
            what += f" ({self.n_resamples:,} resamples, seed {self.seed})"
        if self.correction:
            what += f", {CORRECTIONS[self.correction]}"
        return what

    def describe(self) -> str:
        """One phrase: the test, the threshold, the number of queries."""
        return f"{self.method()}, p < {_g(self.max_p)}; {self.n_queries} queries"

    def footnote(self) -> str:
        return (f"Superscripts: significantly better than the run with that letter ({self.describe()}).")

    def _rows(self, digits: int, marker, bold=None, missing: str = "–") -> list:
        labels = self.labels
        rows = []
        for r in self.runs:
            cells = [labels[r], r]
            for m in self.measures:
                v = self.means[r][m]
                text = _number(v, self.aggregate[m], digits) if v is not None else missing
                if bold and v is not None and r in self.best(m, digits):
                    text = bold(text)
                cells.append(text + marker(self.markers(r, m)))
            rows.append(cells)
        return rows

    def to_table(self, digits: int = 4, pairs: bool = True) -> str:
        """Runs x measures with significance superscripts, the footnote, then (pairs=True) every pair."""
        rows = self._rows(digits, lambda s: "".join(_SUPERSCRIPT.get(ch, ch) for ch in s))
        out = aligned([["", "run", *self.measures], *rows], ["l", "l"] + ["l"] * len(self.measures))
        out += "\n" + self.footnote() + "\n"
        if pairs:
            out += "\n" + self.pairs_table(digits)
        return out

    def pairs_table(self, digits: int = 4) -> str:
        """Every pair and measure: difference, statistic, p (adjusted), win/tie/loss, interval."""
        stat = {"student": "t", "wilcoxon": "W", "tukey": "statistic"}.get(self.test)  # else: = difference
        header = ["measure", "run", "baseline", "difference", *([stat] if stat else []), "p"]
        if self.correction:
            header.append(f"p ({self.correction})")
        if self.test == "bootstrap":
            header.append(f"{_g(100 * (1 - self.max_p))}% interval")
        header += ["win/tie/loss", ""]
        rows = [header]
        for c in self.comparisons:
            row = [c.measure, c.run, c.baseline, _signed(c.difference, digits)]
            if stat:
                row.append(_plain(c.statistic, digits) if self.test == "wilcoxon" else _signed(c.statistic, digits))
            row.append(_p(c.p_value))
            if self.correction:
                row.append(_p(c.p_adjusted))
            if self.test == "bootstrap":
                row.append(f"[{_signed(c.ci_low, digits)}, {_signed(c.ci_high, digits)}]")
            row += [f"{c.wins}/{c.ties}/{c.losses}", "*" if c.significant else ""]
            rows.append(row)
        align = ["l", "l", "l", "r"] + (["r"] if stat else []) + ["r"] + (["r"] if self.correction else []) + (
            ["l"] if self.test == "bootstrap" else []) + ["r", "l"]
        return aligned(rows, align) + "\n" + f"* p < {_g(self.max_p)}" + (
            " after correction" if self.correction else "") + "; difference = run - baseline" + (
            " (of log values for geometric means)" if "geometric" in self.aggregate.values() else "") + ".\n"

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table (best value per measure in bold, superscript letters) and the footnote."""
        rows = self._rows(digits, lambda s: "".join(_SUPERSCRIPT.get(ch, ch) for ch in s), bold=lambda t: f"**{t}**")
        return markdown([["", "run", *[_md_escape(m) for m in self.measures]],
                         *[[a, _md_escape(b), *rest] for a, b, *rest in rows]],
                        ["l", "l"] + ["r"] * len(self.measures)) + "\n\n" + self.footnote() + "\n"

    def to_html(self, digits: int = 4) -> str:
        """An HTML table (best value per measure in bold, superscript letters) and the footnote."""
        rows = self._rows(digits, lambda s: f"<sup>{s}</sup>" if s else "", bold=lambda t: f"<b>{t}</b>")
        header = ["", "run", *map(_html.escape, self.measures)]
        return html([header, *[[a, _html.escape(b), *rest] for a, b, *rest in rows]],
                    ["l", "l"] + ["r"] * len(self.measures)) + f"\n<p>{_html.escape(self.footnote())}</p>\n"

    def to_latex(self, digits: int = 4, caption: str | None = None, label: str = "tab:results") -> str:
        """A booktabs table: best value per measure in bold, superscript letters, caption naming the test."""
        rows = self._rows(digits, lambda s: f"$^{{{s}}}$" if s else "", bold=lambda t: f"\\textbf{{{t}}}", missing="--")
        caption = caption or (
            f"Results on {self.n_queries} queries. Superscripts mark a significant improvement over the run "
            f"with that letter ({_latex_escape(self.method())}, "
            f"$p < {_g(self.max_p)}$). The best value per measure is in bold.")
        lines = [
            "\\begin{table}[t]",
            "\\centering",
            f"\\caption{{{caption}}}",
            f"\\label{{{label}}}",
            "\\begin{tabular}{ll" + "r" * len(self.measures) + "}",
            "\\toprule",
            " & Run & " + " & ".join(_latex_escape(m) for m in self.measures) + " \\\\",
            "\\midrule",
        ]
        for letter, run, *cells in rows:
            lines.append(f"{letter} & {_latex_escape(run)} & " + " & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------------------------------ data

    def to_dict(self) -> dict:
        labels = self.labels
        return {
            "test": self.test,
            "test_name": TESTS[self.test],
            "max_p": self.max_p,
            "correction": self.correction,
            "seed": self.seed,
            "n_resamples": self.n_resamples,
            "n_queries": self.n_queries,
            "options": self.options,
            "runs": [{"label": labels[r], "name": r} for r in self.runs],
            "measures": [{"name": m, "better": self.better[m], "aggregate": self.aggregate[m]} for m in self.measures],
            "means": {r: {m: _clean(self.means[r][m]) for m in self.measures} for r in self.runs},
            "markers": {r: {m: self.markers(r, m) for m in self.measures} for r in self.runs},
            "comparisons": [
                {"measure": c.measure, "run": c.run, "baseline": c.baseline, "n": c.n,
                 "difference": _clean(c.difference), "statistic": _clean(c.statistic), "p_value": _clean(c.p_value),
                 "p_adjusted": _clean(c.p_adjusted), "significant": c.significant, "winner": c.winner,
                 "wins": c.wins, "ties": c.ties, "losses": c.losses, "exact": c.exact,
                 "ci_low": _clean(c.ci_low), "ci_high": _clean(c.ci_high)}
                for c in self.comparisons
            ],
        }

    def deltas(self) -> list:
        """Every pair, measure and query: both runs' values and their difference (run - baseline), one dict each."""
        index = {r: i for i, r in enumerate(self.runs)}
        out = []
        for c in self.comparisons:
            mine, theirs = self.values[c.measure][index[c.run]], self.values[c.measure][index[c.baseline]]
            for q, x, y in zip(self.queries, mine, theirs):
                out.append({"measure": c.measure, "run": c.run, "baseline": c.baseline, "query_id": q, "run_value": x,
                            "baseline_value": y, "difference": None if x is None or y is None else x - y})
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_pandas(self, pairs: bool = False):
        """The means (runs x measures) as a pandas DataFrame, or with pairs=True one row per comparison."""
        import pandas as pd

        if pairs:
            return pd.DataFrame(self.to_dict()["comparisons"])
        return pd.DataFrame({m: [self.means[r][m] for r in self.runs] for m in self.measures},
                            index=pd.Index(self.runs, name="run"))

    def __str__(self) -> str:
        return self.to_table()


# ---------------------------------------------------------------------------------------------- helpers


def _label(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def _g(x: float) -> str:
    return f"{x:g}"


def _clean(v):
    return None if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))) else v


def _number(v, aggregate: str, digits: int) -> str:
    if aggregate == "sum" and float(v).is_integer():
        return str(int(v))
    return f"{v:.{digits}f}"


def _signed(v: float, digits: int) -> str:
    if v is None or math.isnan(v):
        return "–"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return f"{v:+.{digits}f}"


def _plain(v: float, digits: int) -> str:
    return "–" if v is None or math.isnan(v) else f"{v:.{digits}f}"


def _p(p: float) -> str:
    if p is None or math.isnan(p):
        return "–"
    return f"{p:.4f}" if p >= 0.001 else f"{p:.1e}"


def _width(text: str) -> int:
    return len(text)


def aligned(rows: list, align: list) -> str:
    """Rows of cells as aligned plain text: columns separated by two spaces, 'l' or 'r' per column."""
    widths = [max(_width(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = []
        for text, w, a in zip(map(str, row), widths, align):
            pad = " " * (w - _width(text))
            cells.append(text + pad if a == "l" else pad + text)
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def markdown(rows: list, align: list) -> str:
    """A GitHub-flavoured Markdown table: the first row is the header. A `|` in any cell is escaped here."""
    sep = ["---:" if a == "r" else "---" for a in align]

    def line(row) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"

    return "\n".join([line(rows[0]), "|" + "|".join(sep) + "|", *map(line, rows[1:])])


def html(rows: list, align: list) -> str:
    """An HTML table: the first row is the header; each cell is HTML already (escape text with html.escape)."""
    style = {"l": "", "r": ' style="text-align:right"'}

    def line(tag: str, row) -> str:
        return "<tr>" + "".join(f"<{tag}{style[a]}>{c}</{tag}>" for c, a in zip(row, align)) + "</tr>"

    return "\n".join(["<table>", "<thead>" + line("th", rows[0]) + "</thead>", "<tbody>",
                      *(line("td", r) for r in rows[1:]), "</tbody>", "</table>"])


def _md_escape(text: str) -> str:
    """A name as literal Markdown text: no emphasis from `*` or `_` (markdown() escapes `|`)."""
    return text.replace("*", "\\*").replace("_", "\\_")


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)
