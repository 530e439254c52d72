"""Report: the result of compare(), as an aligned table, Markdown, LaTeX (booktabs), a dict, JSON or pandas.

Also the small table-rendering helpers the command line shares (aligned text, Markdown pipes).
"""
from __future__ import annotations

import html as _html
import math
from dataclasses import dataclass, field

from ..options import CORRECTIONS, TESTS
from ..results import AVERAGED, fixed, json_text

_SUPERSCRIPT = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ"))


@dataclass
class Comparison:
    """One measure, one pair, one segment: `run` against `baseline` (the earlier of the two in the report's
    order, or the report's baseline)."""

    measure: str
    run: str
    baseline: str
    n: int  # paired: queries with a value for both runs; unpaired: the lists of both runs
    difference: float  # mean of run - baseline (of the logs for a geometric measure such as GMAP)
    statistic: float  # t (student, welch), W (wilcoxon), U of run (mannwhitney), the difference (others)
    p_value: float
    wins: int | None = None  # paired: queries where run is better than baseline
    ties: int | None = None
    losses: int | None = None
    segment: tuple = ()  # the group_by values
    effect_size: float = math.nan  # paired: d_z = mean / sd of the differences; unpaired: Cohen's d (pooled sd)
    p_adjusted: float = math.nan  # = p_value without a correction
    significant: bool = False
    exact: bool | None = None  # fisher: all 2^n sign patterns enumerated
    # The interval of the difference at level 1 - max_p: Student's t (paired), Welch's t (unpaired), the
    # bootstrap's percentile interval; the other tests (ranks, signs, Tukey's HSD) give none.
    ci_low: float = math.nan
    ci_high: float = math.nan
    winner: str | None = None  # the run that is significantly better, if either
    variance_reduction: float = math.nan  # CUPED (unit= with pre_period=): the share of the variance it removed
    se: float = field(default=math.nan, repr=False)  # Student's and Welch's: the difference's standard error
    # Welch's: the relative difference run / baseline - 1, and its interval at 1 - max_p (the delta method)
    rel_difference: float = math.nan
    rel_ci_low: float = math.nan
    rel_ci_high: float = math.nan
    # Student's and Welch's (fixed-sample): the minimum detectable effect, the smallest absolute difference the test
    # finds at level max_p with probability POWER, from the same standard error (compare.minimum_detectable)
    mde: float = math.nan


@dataclass
class Summary:
    """One run on one measure in one segment: its lists' values (of the logs for a geometric measure)."""

    segment: tuple
    run: str
    measure: str
    n: int
    mean: float
    sd: float
    se: float
    ci_low: float  # the t interval of the mean at level 1 - max_p, the tests' level
    ci_high: float


_CUPED_NOTE = ("; unadjusted = run - baseline of the arms' means; CUPED difference = the same, less the part the "
               "covariate predicts (the pre-period's values), which the test, interval and d are of")


@dataclass
class Report:
    """compare()'s result. `segment_means[segment][run][measure]` (`means[run][measure]` without segments);
    `comparisons` holds every pair (or every run against `baseline`) for every segment and measure."""

    runs: list
    measures: list
    better: dict  # measure -> higher | lower
    aggregate: dict  # measure -> mean | sum | geometric
    segment_means: dict
    comparisons: list
    test: str
    max_p: float
    correction: str | None
    seed: int
    n_resamples: int
    n_queries: int
    options: dict = field(default_factory=dict)
    segment_names: tuple = ()  # the group_by columns; () without group_by (one segment, ())
    paired: bool = True
    baseline: str | None = None
    summary: list = field(default_factory=list)  # Summary per segment, measure and run
    lists: dict = field(default_factory=dict)  # {segment: {run: {query_id: [value per measure]}}}, as tested
    # Unpaired runs (A/B arms): each arm's lists against the expected split, and the chi-square test of it
    # ({lists, of, expected, statistic, p_value, mismatch}; compare.sample_ratio); None for paired runs.
    sample_ratio: dict | None = None
    unit: str | None = None  # unit=: the unit of randomisation, whose lists are summed (the delta method)
    cuped: bool = False  # pre_period=: CUPED-adjusted differences
    sequential: int | None = None  # sequential=: always-valid intervals and p-values, tightest at this many lists
    # unit=: what was left out of every arm ({multiple_arms: units in more than one arm, multiple_arms_lists: their
    # lists, no_id_lists: lists without a unit id}; compare.exclusions)
    excluded: dict | None = None

    # ------------------------------------------------------------------------------------------ queries

    @property
    def means(self) -> dict:
        """means[run][measure] of a report without segments."""
        return self.segment_means.get((), {})

    @property
    def segments(self) -> list:
        return list(self.segment_means)

    @property
    def labels(self) -> dict:
        """run -> its letter: a, b, c, ... (aa, ab, ... after z)."""
        out = {}
        for i, r in enumerate(self.runs):
            out[r] = _label(i)
        return out

    def comparison(self, measure: str, run_a: str, run_b: str, segment: tuple = ()) -> Comparison:
        """The comparison of two runs on a measure (in a segment), in either order."""
        for c in self.comparisons:
            if c.measure == measure and c.segment == segment_key(segment) and {c.run, c.baseline} == {run_a, run_b}:
                return c
        raise KeyError((measure, run_a, run_b, segment))

    def beats(self, run: str, measure: str, segment: tuple = ()) -> list:
        """The runs that `run` beats significantly on `measure` (in a segment), in report order."""
        out = [c.baseline if c.winner == c.run else c.run for c in self.comparisons
               if c.measure == measure and c.segment == segment_key(segment) and c.winner == run]
        return [r for r in self.runs if r in out]

    def markers(self, run: str, measure: str, segment: tuple = ()) -> str:
        """Letters of the runs `run` beats; against a baseline, ▲ (significantly better) or ▼ (worse)."""
        if self.baseline is not None:
            if run == self.baseline:
                return ""
            c = self.comparison(measure, run, self.baseline, segment)
            return "▲" if c.winner == run else "▼" if c.winner == self.baseline else ""
        labels = self.labels
        letters = [labels[r] for r in self.beats(run, measure, segment)]
        return ("," if any(len(x) > 1 for x in letters) else "").join(letters)

    def best(self, measure: str, digits: int = 4, segment: tuple = ()) -> set:
        """The runs with the best mean on a measure (in a segment), compared as displayed (ties are all best)."""
        means = self.segment_means[segment_key(segment)]
        shown = {r: _number(means[r][measure], self.aggregate[measure], digits) for r in self.runs
                 if means[r][measure] is not None}
        if not shown:
            return set()
        pick = max if self.better[measure] == "higher" else min
        top = pick(float(v) for v in shown.values())
        return {r for r, v in shown.items() if float(v) == top}

    @property
    def extended(self) -> bool:
        """Segments, a baseline or unpaired runs: the text table adds the summaries and effect sizes."""
        return bool(self.segment_names) or self.baseline is not None or not self.paired

    # ------------------------------------------------------------------------------------------ text

    def method(self) -> str:
        """The test as one phrase: its name, how it resampled, the correction."""
        what = TESTS[self.test]
        resampled = f"{self.n_resamples:,} resamples, seed {self.seed}"
        if self.test == "fisher":
            exact = [c.exact for c in self.comparisons if c.exact is not None]
            if exact and all(exact):
                what += " (exact: every sign flip)"
            else:
                what += f" ({self.n_resamples:,} random sign flips, seed {self.seed})"
        elif self.test == "bootstrap":
            what = ("" if self.paired else "un") + f"paired bootstrap test ({resampled})"
        if self.unit is not None:
            what += f" over units ({self.unit}, the delta method)" + (", CUPED" if self.cuped else "")
        if self.sequential is not None:
            what += f", always valid (sequential, tuned for {self.sequential:,})"
        if self.correction:
            what += f", {CORRECTIONS[self.correction]}"
        return what

    def describe(self) -> str:
        """One phrase: the test, the threshold, the number of queries."""
        counted = "queries" if self.paired else "units" if self.unit is not None else "lists"
        return f"{self.method()}, p < {_g(self.max_p)}; {self.n_queries} {counted}"

    def footnote(self) -> str:
        """The significance marks' key; and for runs judged by qrels, which queries the means are over."""
        if self.baseline is not None:
            marks = f"▲/▼: significantly better/worse than {self.baseline} ({self.describe()})."
        else:
            marks = f"Superscripts: significantly better than the run with that letter ({self.describe()})."
        averaged = AVERAGED.get(self.options.get("queries")) if self.paired else None  # A/B logs: lists, not queries
        return marks + (f"\n{averaged}" if averaged else "")

    def _rows(self, digits: int, marker, bold=None, missing: str = "–") -> list:
        labels = self.labels
        rows = []
        for seg, means in self.segment_means.items():
            for r in self.runs:
                cells = [*map(_cell, seg), labels[r], r]
                for m in self.measures:
                    v = means[r][m]
                    text = _number(v, self.aggregate[m], digits) if v is not None else missing
                    if bold and v is not None and r in self.best(m, digits, seg):
                        text = bold(text)
                    cells.append(text + marker(self.markers(r, m, seg)))
                rows.append(cells)
        return rows

    def _header(self) -> list:
        return [*self.segment_names, "", "run", *self.measures]

    def to_table(self, digits: int = 4, pairs: bool = True) -> str:
        """Runs x measures with significance marks, the footnote, then (pairs=True) every pair; with segments,
        a baseline or unpaired runs, each run's summaries too."""
        rows = self._rows(digits, lambda s: "".join(_SUPERSCRIPT.get(ch, ch) for ch in s))
        out = f"WARNING: {self.mismatch_message()}\n\n" if self.mismatch_message() else ""
        if self.excluded and any(self.excluded.values()):
            out += (f"Left out of every arm: {self.excluded['multiple_arms']:,} units in more than one arm "
                    f"({self.excluded['multiple_arms_lists']:,} lists), {self.excluded['no_id_lists']:,} lists without "
                    f"a unit id.\n\n")
        out += aligned([self._header(), *rows], ["l"] * len(self._header()))
        out += "\n" + self.footnote() + "\n"
        if pairs and self.extended:
            out += "\n" + self.summary_table(digits)
        if pairs:
            out += "\n" + self.pairs_table(digits)
        return out

    def summary_table(self, digits: int = 4) -> str:
        """Every run, segment and measure: n, mean, standard deviation, standard error, and the interval at the
        tests' level (1 - max_p), the pairs table's."""
        level = self.level()
        rows = [[*self.segment_names, "measure", "run", "n", "mean", "sd", "se", f"{level} interval"]]
        for s in self.summary:
            rows.append([*map(_cell, s.segment), s.measure, s.run, s.n, _plain(s.mean, digits), _plain(s.sd, digits),
                         _plain(s.se, digits), f"[{_plain(s.ci_low, digits)}, {_plain(s.ci_high, digits)}]"])
        geometric = " (of log values for geometric means)" if "geometric" in self.aggregate.values() else ""
        return aligned(rows, ["l"] * (len(self.segment_names) + 2) + ["r"] * 4 + ["l"]) + (
            (f"\nPer unit ({self.unit}): mean = the lists' values over the lists, sd by the delta method" if self.unit
             else f"\nPer list{geometric}") + f"; {level} interval: mean +- t({_g(1 - self.max_p / 2)}, n-1) * se.\n")

    def mismatch_message(self) -> str | None:
        """The sample ratio mismatch warning, when the arms' lists break the expected split (p < 0.001)."""
        if not self.sample_ratio or not self.sample_ratio["mismatch"]:
            return None
        return sample_ratio_message(self.sample_ratio)

    def level(self) -> str:
        """The intervals' level, as the tables print it: '99%' at max_p=0.01."""
        return f"{_g(100 * (1 - self.max_p))}%"

    def pairs_table(self, digits: int = 4) -> str:
        """Every pair and measure: difference, statistic, p (adjusted), interval, effect size, win/tie/loss."""
        stat = {"student": "t", "welch": "t", "wilcoxon": "W", "mannwhitney": "U", "tukey": "statistic"}.get(self.test)
        interval = self.test in _INTERVALS
        effect = ("d_z" if self.paired else "d") if self.extended else None
        # CUPED's difference is not the difference of the means printed above it: both are shown, named.
        differences = ["unadjusted", "CUPED difference"] if self.cuped else ["difference"]
        header = [*self.segment_names, "measure", "run", "baseline", *differences, *([stat] if stat else []), "p"]
        if self.correction:
            header.append(f"p ({self.correction})")
        if interval:
            header.append(f"{self.level()} interval")
        if effect:
            header.append(effect)
        if self.cuped:
            header.append("variance removed")
        header += ["win/tie/loss", ""]
        rows = [header]
        for c in self.comparisons:
            row = [*map(_cell, c.segment), c.measure, c.run, c.baseline,
                   *([_signed(self.unadjusted(c), digits)] if self.cuped else []), _signed(c.difference, digits)]
            if stat:
                row.append(_plain(c.statistic, digits) if self.test in ("wilcoxon", "mannwhitney")
                           else _signed(c.statistic, digits))
            row.append(_p(c.p_value))
            if self.correction:
                row.append(_p(c.p_adjusted))
            if interval:
                row.append(f"[{_signed(c.ci_low, digits)}, {_signed(c.ci_high, digits)}]")
            if effect:
                row.append(_signed(c.effect_size, digits))
            if self.cuped:
                row.append(_plain(100 * c.variance_reduction, 1) + "%")
            wtl = "–" if c.wins is None else f"{c.wins}/{c.ties}/{c.losses}"
            row += [wtl, "*" if c.significant else ""]
            rows.append(row)
        align = ["l"] * (len(self.segment_names) + 3) + ["r"] * len(differences) + (["r"] if stat else []) + ["r"] + (
            ["r"] if self.correction else []) + (["l"] if interval else []) + (["r"] if effect else []) + (
            ["r"] if self.cuped else []) + ["r", "l"]
        return aligned(rows, align) + "\n" + f"* p < {_g(self.max_p)}" + (
            " after correction" if self.correction else "") + (
            _CUPED_NOTE if self.cuped else "; difference = run - baseline") + (
            " (of log values for geometric means)" if "geometric" in self.aggregate.values() else "") + (
            f"; {self.level()} interval: {_ALWAYS_VALID if self.sequential else _INTERVALS[self.test]}"
            if interval else "") + ".\n"

    def unadjusted(self, c: Comparison) -> float:
        """The difference of the two means the tables print (run - baseline in c's segment), before CUPED."""
        means = self.segment_means.get(c.segment, {})
        x, y = means.get(c.run, {}).get(c.measure), means.get(c.baseline, {}).get(c.measure)
        return math.nan if x is None or y is None else x - y

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table (best value per measure in bold, superscript letters) and the footnote."""
        rows = self._rows(digits, lambda s: "".join(_SUPERSCRIPT.get(ch, ch) for ch in s), bold=lambda t: f"**{t}**")
        k = len(self.segment_names)
        return markdown([[*map(_md_escape, self._header()[:k + 2]), *[_md_escape(m) for m in self.measures]],
                         *[[*map(_md_escape, row[:k]), row[k], _md_escape(row[k + 1]), *row[k + 2:]] for row in rows]],
                        ["l"] * (k + 2) + ["r"] * len(self.measures)) + "\n\n" + self.footnote() + "\n"

    def to_html(self, digits: int = 4) -> str:
        """An HTML table (best value per measure in bold, superscript letters) and the footnote."""
        rows = self._rows(digits, lambda s: f"<sup>{s}</sup>" if s else "", bold=lambda t: f"<b>{t}</b>")
        k = len(self.segment_names)  # the segment columns first, as in every other format
        return html([list(map(_html.escape, self._header())),
                     *[[*map(_html.escape, row[:k + 2]), *row[k + 2:]] for row in rows]],
                    ["l"] * (k + 2) + ["r"] * len(self.measures)) + f"\n<p>{_html.escape(self.footnote())}</p>\n"

    def to_latex(self, digits: int = 4, caption: str | None = None, label: str = "tab:results") -> str:
        """A booktabs table: best value per measure in bold, superscript letters, caption naming the test."""
        rows = self._rows(digits, lambda s: f"$^{{{_LATEX_MARKS.get(s, s)}}}$" if s else "",
                          bold=lambda t: f"\\textbf{{{t}}}", missing="--")
        marks = (f"$\\blacktriangle$/$\\blacktriangledown$ mark a significant improvement/degradation over "
                 f"{_latex_escape(self.baseline)}" if self.baseline is not None else
                 "Superscripts mark a significant improvement over the run with that letter")
        caption = caption or (
            f"Results on {self.n_queries} {'queries' if self.paired else 'lists'}. {marks} "
            f"({_latex_escape(self.method())}, "
            f"$p < {_g(self.max_p)}$). The best value per measure is in bold.")
        k = len(self.segment_names)
        lines = [
            "\\begin{table}[t]",
            "\\centering",
            f"\\caption{{{caption}}}",
            f"\\label{{{label}}}",
            "\\begin{tabular}{" + "l" * (k + 2) + "r" * len(self.measures) + "}",
            "\\toprule",
            "".join(_latex_escape(g) + " & " for g in self.segment_names) + " & Run & "
            + " & ".join(_latex_escape(m) for m in self.measures) + " \\\\",
            "\\midrule",
        ]
        for row in rows:
            segment, (letter, run, *cells) = row[:k], row[k:]
            lines.append("".join(_latex_escape(v) + " & " for v in segment) + f"{letter} & {_latex_escape(run)} & "
                         + " & ".join(cells) + " \\\\")
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
            "paired": self.paired,
            "baseline": self.baseline,
            "segment_names": list(self.segment_names),
            **({"unit": self.unit, "cuped": self.cuped, "excluded": self.excluded} if self.unit is not None else {}),
            **({"sequential": self.sequential} if self.sequential is not None else {}),
            "sample_ratio": None if self.sample_ratio is None else {
                k: _clean(v) if isinstance(v, float) else v for k, v in self.sample_ratio.items()},
            "runs": [{"label": labels[r], "name": r} for r in self.runs],
            "measures": [{"name": m, "better": self.better[m], "aggregate": self.aggregate[m]} for m in self.measures],
            **({"segments": [{"segment": self._segment(seg), "run": r,
                              "means": {m: _clean(means[r][m]) for m in self.measures},
                              "markers": {m: self.markers(r, m, seg) for m in self.measures}}
                             for seg, means in self.segment_means.items() for r in self.runs]}
               if self.segment_names else
               {"means": {r: {m: _clean(self.means[r][m]) for m in self.measures} for r in self.runs},
                "markers": {r: {m: self.markers(r, m) for m in self.measures} for r in self.runs}}),
            "summary": [{"segment": self._segment(s.segment), "run": s.run, "measure": s.measure, "n": s.n,
                         **{k: _clean(getattr(s, k)) for k in ("mean", "sd", "se", "ci_low", "ci_high")}}
                        for s in self.summary],
            "comparisons": [
                {"segment": self._segment(c.segment), "measure": c.measure, "run": c.run, "baseline": c.baseline,
                 "n": c.n, "effect_size": _clean(c.effect_size),
                 "difference": _clean(c.difference), "statistic": _clean(c.statistic), "p_value": _clean(c.p_value),
                 "p_adjusted": _clean(c.p_adjusted), "significant": c.significant, "winner": c.winner,
                 "wins": c.wins, "ties": c.ties, "losses": c.losses, "exact": c.exact,
                 "ci_low": _clean(c.ci_low), "ci_high": _clean(c.ci_high),
                 **({"variance_reduction": _clean(c.variance_reduction)} if self.cuped else {}),
                 **({k: _clean(getattr(c, k)) for k in ("rel_difference", "rel_ci_low", "rel_ci_high")}
                    if self.test == "welch" else {}),
                 **({"mde": _clean(c.mde)} if self.test in ("student", "welch") and self.sequential is None else {})}
                for c in self.comparisons
            ],
        }

    def _segment(self, segment: tuple) -> dict:
        return dict(zip(self.segment_names, segment))

    def deltas(self) -> list:
        """Every pair, segment, measure and query both runs have: both values and their difference (run -
        baseline), one dict each (its segment's columns first)."""
        out = []
        for c in self.comparisons:
            k = self.measures.index(c.measure)
            lists = self.lists.get(c.segment, {})  # none when only aggregates left the engine
            mine, theirs = lists.get(c.run, {}), lists.get(c.baseline, {})
            for q in sorted(set(mine) & set(theirs)):
                x, y = mine[q][k], theirs[q][k]
                out.append({**self._segment(c.segment), "measure": c.measure, "run": c.run, "baseline": c.baseline,
                            "query_id": q, "run_value": x, "baseline_value": y,
                            "difference": None if x is None or y is None else x - y})
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """to_dict() as strict JSON: segment values as json_text() writes them (a date as ISO text, NaN as null)."""
        return json_text(self.to_dict(), indent=indent)

    def to_pandas(self, pairs: bool = False):
        """The means (runs x measures) as a pandas DataFrame, or with pairs=True one row per comparison."""
        import pandas as pd

        if pairs:
            return pd.DataFrame([{**c.pop("segment"), **c} for c in self.to_dict()["comparisons"]])
        index = (pd.MultiIndex.from_tuples([(*seg, r) for seg in self.segment_means for r in self.runs],
                                           names=[*self.segment_names, "run"])
                 if self.segment_names else pd.Index(self.runs, name="run"))
        return pd.DataFrame({m: [means[r][m] for means in self.segment_means.values() for r in self.runs]
                             for m in self.measures}, index=index)

    def __str__(self) -> str:
        return self.to_table()


# ---------------------------------------------------------------------------------------------- helpers


SAMPLE_RATIO_P = 0.001  # below it, the split is broken (the experimentation platforms' usual threshold)


def sample_ratio_message(ratio: dict) -> str:
    counts = ", ".join(f"{r} {n:,}" for r, n in ratio["lists"].items())
    split = "/".join(f"{100 * share:.4g}" for share in ratio["expected"].values())
    of = ratio.get("of", "lists")
    return (f"sample ratio mismatch: the arms have {counts} {'lists' if of == 'lists' else f'units ({of})'} where a "
            f"{split} split was expected (chi-square "
            f"p = {ratio['p_value']:.2g} < {SAMPLE_RATIO_P}). The assignment or the logging is broken, and every other "
            "number of this comparison is suspect: find why before reading them (or, if the arms were meant "
            "to be unequal, give their shares with the split option).")


# The tests whose report gives an interval of each difference, and how it is made.
_INTERVALS = {"student": "Student's t interval of the mean difference", "welch": "Welch's t interval",
              "bootstrap": "the bootstrap's percentile interval"}
_ALWAYS_VALID = "the always-valid interval (an asymptotic confidence sequence), valid at every look"

def segment_key(values) -> tuple:
    """A segment's values as the report's key: every NaN as the one object math.nan. NaN equals nothing, itself
    included, so each NaN a row brings would make a segment of its own; a tuple compares its items by identity
    first, and one object is one key: one segment, as DuckDB's GROUP BY (and so evaluate()'s per_group) makes it."""
    return tuple(math.nan if isinstance(v, float) and v != v else v for v in values)


def _label(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


_LATEX_MARKS = {"▲": "\\blacktriangle", "▼": "\\blacktriangledown"}


def _cell(v) -> str:
    """A segment value as the text formats show it: NULL as –, a control character as its escape (\\n, \\x1b): a
    newline would break the row, an escape sequence would reach the terminal."""
    if v is None:
        return "–"
    text = str(v)
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _g(x: float) -> str:
    return f"{x:g}"


def _clean(v):
    return None if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))) else v


def _number(v, aggregate: str, digits: int) -> str:
    if aggregate == "sum" and float(v).is_integer():
        return str(int(v))
    return fixed(v, digits)


def _signed(v: float, digits: int) -> str:
    if v is None or math.isnan(v):
        return "–"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return f"{v:+.{digits}f}"


def _plain(v: float, digits: int) -> str:
    return "–" if v is None or math.isnan(v) else fixed(v, digits)


def _p(p: float) -> str:
    if p is None or math.isnan(p):
        return "–"
    if p == 0:  # below the smallest double: the test's statistic is that far out
        return "<1e-300"
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
