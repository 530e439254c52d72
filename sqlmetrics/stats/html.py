"""The HTML report: one self-contained page (inline CSS and SVG, no script, nothing fetched when viewed).

build_report() evaluates once, with the measures asked for plus interpolated precision at the eleven recall
levels, and keeps what the page shows:
- compare()'s analysis (compare.analyse_lists on the same per-list values): without group_by the results
  table with its significance letters and every pair's test; with group_by (logs) each segment's mean and
  t interval at the tests' level (compare's Report.summary) and, against the baseline, its ▲/▼ marks and tests;
- per-query differences of every run against the baseline (sorted win/loss bars), without group_by; for unpaired
  runs (A/B arms: no query in common) each run's distribution over its lists instead;
- precision–recall curves from the mean interpolated precision (IPrec@0.0 ... IPrec@1.0);
- the SQL statement of the evaluation (sqlmetrics.render() for DuckDB, folded in a <details> block).
"""
from __future__ import annotations

import html
import importlib.metadata
import math
from dataclasses import dataclass, field

from ..caches import Stored
from ..catalogue import parse_all
from ..catalogue.templates import built_from
from ..errors import SqlmetricsError
from ..evaluation import evaluate
from ..local.collect import python_rows
from ..options import COMPARE, EVALUATE, RENDER, REPORT, BY_NAME, check_log_options, resolve, signature
from . import charts
from ..local.runs import unique_names
from .compare import RESOURCES, analyse_lists, compare, lists_by_segment
from .report import _CUPED_NOTE, _cell, _number as _shown, _p, _signed

RECALL_LEVELS = [i / 10 for i in range(11)]
CURVE = [f"IPrec@{r:.1f}" for r in RECALL_LEVELS]


@dataclass
class HtmlReport:
    """What the page shows; to_html() writes it, chart() draws any of its charts as a matplotlib Figure."""

    runs: list
    measures: list
    better: dict  # measure -> higher | lower
    aggregate: dict  # measure -> mean | sum | geometric
    baseline: str | None
    comparison: object  # stats.report.Report: compare's means, tests and summaries (per segment with group_by)
    deltas: dict  # {measure: {run: [(query_id, run - baseline)]}}, every query both runs have a value for
    curves: dict  # {run: [mean interpolated precision at RECALL_LEVELS]}
    group_by: tuple
    segments: dict  # {measure: [stats.report.Summary]}, with group_by; only measures averaged as a mean
    sql: str
    options: dict = field(default_factory=dict)  # the evaluation options that differ from their defaults
    # Unpaired runs (A/B arms, whose lists differ: no per-query differences): {measure: {run: [value per list]}}
    spreads: dict = field(default_factory=dict)

    def chart_names(self) -> list:
        """Every chart of the page, in page order: ('deltas', measure) or ('spread', measure), ('segments', measure),
        ('pr', None)."""
        return ([("deltas", m) for m in self.deltas] + [("spread", m) for m in self.spreads]
                + [("segments", m) for m in self.segments] + [("pr", None)])

    def chart(self, kind: str, measure: str | None = None):
        if kind == "deltas":
            return charts.deltas_chart(measure, self.better[measure], self.baseline, self.deltas[measure])
        if kind == "spread":
            return charts.spread_chart(measure, self.spreads[measure])
        if kind == "segments":
            return charts.segments_chart(measure, _points(self.segments[measure], len(self.runs) > 1),
                                         self.comparison.level())
        return charts.pr_chart(RECALL_LEVELS, self.curves)

    def to_html(self, digits: int = 4) -> str:
        return _page(self, digits)


def build_report(qrels, runs, measures, baseline=None, **options) -> HtmlReport:
    """Evaluate `runs` ({name: run}, a list named by file stem, or one table whose run_name column, mapped in
    columns=, names the runs, as compare() takes them) on `measures` and gather the report.

    Without group_by there must be at least two runs; `baseline` (default: the first run) is the run the
    per-query differences, and with group_by each segment's tests, are taken against; a baseline given by name
    also keeps the table of pairs to the pairs with it (without one, every pair of runs is tested). The options are
    evaluate()'s and compare()'s; group_by, label and relevance evaluate a log per segment."""
    progress = options.pop("_progress", None)  # the command line's progress line, told each step
    chosen = baseline is not None  # a baseline named by the caller: the tables compare each run with it alone
    o = resolve(REPORT, options)
    segs = check_log_options(qrels, o.group_by, o.label, o.relevance)
    single = "run_name" in (o.columns or {})
    if single:  # one table: its run_name column names the runs, known once it is evaluated
        if isinstance(runs, (dict, list, tuple)):
            tables = list(runs.values()) if isinstance(runs, dict) else list(runs)
            if len(tables) != 1:
                raise SqlmetricsError("columns= maps run_name: pass one table holding every run (its run_name "
                                      f"column names them), not {len(tables)}.")
            runs = tables[0]
    else:
        runs = {str(k): v for k, v in runs.items()} if isinstance(runs, dict) else dict(zip(unique_names(runs), runs))
        baseline = _check_runs(list(runs), segs, baseline)
    if isinstance(measures, str):
        measures = [measures]
    calls = parse_all(measures, o.relevance_level, o.compat)
    texts = [c.text for c in calls]
    evaluated = texts + [m for m in CURVE if m not in texts]
    given = o.as_dict()
    res = evaluate(qrels, runs, evaluated, _fetch=python_rows, _progress=progress,
                   **{k: v for k, v in given.items() if EVALUATE in BY_NAME[k].takers})
    run_names, lists = lists_by_segment(res.per_query, segs, texts)
    named = list(runs) if not single else run_names
    if single:
        baseline = _check_runs(named, segs, baseline)
    better = {c.text: c.measure.better for c in calls}
    aggregate = {c.text: c.measure.aggregate for c in calls}
    if o.unit is not None or o.pre_period is not None or o.covariate is not None:  # over units: compare()'s own
        comparison = compare(qrels, runs, texts, baseline=baseline,
                             **{k: v for k, v in given.items() if COMPARE in BY_NAME[k].takers})
    else:
        comparison = analyse_lists(named, {m: (better[m], aggregate[m]) for m in texts}, lists, segment_names=segs,
                                   test=o.test, max_p=o.max_p, correction=o.correction, seed=o.seed,
                                   n_resamples=o.n_resamples, pairing=o.pairing,
                                   baseline=baseline if segs or chosen else None,
                                   resources={k: getattr(o, k) for k in RESOURCES}, split=o.split,
                                   sequential=o.sequential)
    deltas, spreads, segments = {}, {}, {}
    if segs:
        segments = {m: [s for s in comparison.summary if s.measure == m and s.n] for m in texts
                    if aggregate[m] == "mean"}
    elif comparison.paired:
        by_run = lists.get((), {})  # {run: {query_id: [value per measure]}}
        deltas = {m: {r: _differences(by_run.get(r, {}), by_run.get(baseline, {}), k) for r in named if r != baseline}
                  for k, m in enumerate(texts)}
    else:  # each arm's own lists: what there is to draw is each arm's distribution of values
        by_run = lists.get((), {})
        spreads = {m: {r: [v[k] for _, v in sorted(by_run.get(r, {}).items()) if _number(v[k])] for r in named}
                   for k, m in enumerate(texts)}
    curves = {r: [res.aggregate[r][m] for m in CURVE] for r in named}
    render_options = {k: v for k, v in given.items() if RENDER in BY_NAME[k].takers}
    if len(named) > 1:  # the runs as one table with a run_name column, as evaluate() unions them
        render_options["columns"] = {"run_name": "run_name", **(o.columns or {})}
    for name in ("nuggets", "assignments"):  # named in the page's SQL as the qrels and the run are
        if render_options.get(name) is not None:
            render_options[name] = name
    sql = _sql(evaluated, qrels is None, render_options)
    changed = {k: v for k, v in given.items() if v != BY_NAME[k].default}
    return HtmlReport(runs=named, measures=texts, better=better, aggregate=aggregate, baseline=baseline,
                      comparison=comparison, deltas=deltas, spreads=spreads, curves=curves, group_by=segs,
                      segments=segments, sql=sql, options=changed)


build_report.__signature__ = signature(REPORT, "qrels, runs, measures, baseline=None")


def _sql(measures: list, no_qrels: bool, options: dict) -> str:
    """The page's SQL: sqlmetrics.render() for DuckDB. Its text depends on the measures and the options alone, so
    it is kept on disk between processes (caches.Stored, as the evaluation's own statement: a changed template,
    code or sqlglot names another entry): a report called again on the same measures neither binds the
    statement a second time nor imports sqlglot. Options holding anything but plain values are rendered anew."""
    def make() -> str:
        from ..dialects.render import render

        return render(measures, "duckdb", qrels=None if no_qrels else "qrels", run="run", per_query=True, **options)

    if not _plain(options):
        return make()
    return _STORED_SQL.get(repr((list(measures), no_qrels, sorted(options.items()))), make)


_STORED_SQL = Stored("report_sql", built_from)


def _plain(value) -> bool:
    """Whether repr() spells the value out whole: text, numbers, None and lists, tuples and dicts of them."""
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(map(_plain, value))
    return value is None or type(value) in (str, int, float, bool)


def _check_runs(names: list, segs: tuple, baseline):
    """The baseline (default: the first run), once the runs are known to be enough to report on."""
    if not names:
        raise SqlmetricsError("the report needs at least one run.")
    if not segs and len(names) < 2:
        raise SqlmetricsError(f"the report compares runs: give at least two (got {len(names)}), or evaluate a log "
                              "per segment with group_by.")
    if baseline is None:
        return names[0]
    if baseline not in names:
        raise SqlmetricsError(f"baseline={baseline!r} is not one of the runs: {', '.join(map(repr, names))}.")
    return baseline


def _differences(run: dict, baseline: dict, k: int) -> list:
    """[(query_id, run - baseline)] on the k-th measure, over the queries where both have a value, by query id."""
    out = []
    for q in sorted(set(run) & set(baseline)):
        a, b = run[q][k], baseline[q][k]
        if _number(a) and _number(b):
            out.append((q, a - b))
    return out


def _number(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _points(segments: list, several_runs: bool) -> list:
    """(category, series, mean, low, high) for the chart: the last segment column (the arm, say) and the run
    tell the series apart, the other columns (the day) make the categories."""
    out = []
    for s in segments:
        shown = ["null" if v is None else str(v) for v in s.segment]
        category = " · ".join(shown[:-1]) if len(shown) > 1 else shown[0]
        series = [s.run] if several_runs else []
        series += shown[-1:] if len(shown) > 1 else []
        low, high = (None, None) if math.isnan(s.ci_low) else (s.ci_low, s.ci_high)  # one list: no interval
        out.append((category, " · ".join(series), s.mean, low, high))
    return out


# ---------------------------------------------------------------------------------------------- the page

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; margin: 0;
       padding: 24px; }
p { max-width: 980px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; }
p.meta { color: #555; margin: 0 0 12px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; display: block; max-width: 100%;
        overflow-x: auto; }  /* the window's width; a wider table scrolls inside itself */
th, td { padding: 4px 10px; border-bottom: 1px solid #e6e6e6; text-align: right; }
th { background: #f5f5f7; } td.l, th.l { text-align: left; }
sup { color: #2e7d32; font-weight: 600; } td.best { font-weight: 700; }
td.sig { color: #2e7d32; font-weight: 600; text-align: center; }
figure { margin: 12px 0 20px; } figure svg { max-width: 100%; height: auto; }
figcaption, p.note { color: #555; font-size: 13px; }
p.mismatch { border: 2px solid #b00020; background: #fdecea; color: #b00020; padding: 8px 12px; font-size: 15px; }
details { background: #f8f8fa; border: 1px solid #ddd; border-radius: 6px; padding: 6px 12px; }
summary { cursor: pointer; font-weight: 600; }
pre { overflow-x: auto; font-size: 12px; }
"""


def _option(value) -> str:
    """An option's value as the page names it: a table given as an object (a pre-period log, an items table) by
    its kind, not its whole content."""
    plain = (str, int, float, bool, type(None), list, tuple, dict)
    return repr(value) if isinstance(value, plain) else f"<{type(value).__module__.split('.')[0]} {type(value).__name__}>"


def _page(report: HtmlReport, digits: int) -> str:
    e = html.escape
    version = importlib.metadata.version("sqlmetrics")
    what = (f"{len(report.runs)} run{'s' if len(report.runs) > 1 else ''} ({', '.join(report.runs)}), "
            f"measures {', '.join(report.measures)}")
    if report.group_by:
        what += f"; segments by {', '.join(report.group_by)}"
    if report.options:
        what += "; options " + ", ".join(f"{k}={_option(v)}" for k, v in report.options.items())
    parts = [f"<h1>sqlmetrics report</h1>\n<p class=\"meta\">{e(what)}. Made by sqlmetrics {e(version)}.</p>"]
    if (mismatch := report.comparison.mismatch_message()) is not None:
        parts.append(f"<p class=\"mismatch\" role=\"alert\"><strong>Warning:</strong> {e(mismatch)}</p>")
    if not report.group_by:
        parts.append(_results(report, digits))
        if report.deltas:
            parts.append(f"<h2 id=\"deltas\">Per-query differences against {e(report.baseline)}</h2>\n"
                         "<p class=\"note\">Each bar is one query: the run's value minus the baseline's, sorted from "
                         "the largest improvement (green) to the largest loss (red).</p>")
            parts += [_figure(report, "deltas", m) for m in report.deltas]
        if report.spreads:
            parts.append("<h2 id=\"spread\">Each run's values over its lists</h2>\n"
                         "<p class=\"note\">The runs rank different lists (the arms of an A/B test), so there are no "
                         "per-query differences: each run's share of lists at each value, and its mean (the dashed "
                         "line).</p>")
            parts += [_figure(report, "spread", m) for m in report.spreads]
    if report.group_by:
        parts.append(_segments_table(report, digits))
        parts += [_figure(report, "segments", m) for m in report.segments]
        left = [m for m in report.measures if m not in report.segments]
        if left:
            parts.append(f"<p class=\"note\">Not charted per segment (aggregated as a sum or a geometric mean, "
                         f"not a mean of lists): {e(', '.join(left))}.</p>")
    parts.append("<h2 id=\"pr\">Precision–recall</h2>")
    parts.append(_figure(report, "pr", None))
    parts.append("<h2 id=\"sql\">SQL</h2>\n<details><summary>The statement of this evaluation (DuckDB; "
                 "<code>sqlmetrics sql</code> renders it for other engines)</summary>\n"
                 f"<pre><code>{e(report.sql)}</code></pre>\n</details>")
    body = "\n".join(parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"  # no favicon request
            f"<title>sqlmetrics report: {e(', '.join(report.runs))}</title>\n<style>{_CSS}</style>\n</head>\n"
            f"<body>\n{body}\n</body>\n</html>\n")


def _figure(report: HtmlReport, kind: str, measure: str | None) -> str:
    index = report.chart_names().index((kind, measure))
    fig = report.chart(kind, measure)
    return f"<figure class=\"chart\" id=\"chart-{index + 1}\">\n{charts.svg(fig, f'chart{index + 1}')}</figure>"


def _value(v, aggregate: str, digits: int) -> str:
    return _shown(v, aggregate, digits) if _number(v) else "–"


def _results(report: HtmlReport, digits: int) -> str:
    e = html.escape
    rep = report.comparison
    labels = rep.labels
    head = "".join(f"<th>{e(m)}</th>" for m in rep.measures)
    rows = []
    for r in rep.runs:
        cells = []
        for m in rep.measures:
            best = " class=\"best\"" if r in rep.best(m, digits) else ""
            marks = rep.markers(r, m)
            cells.append(f"<td{best}>{_value(rep.means[r][m], rep.aggregate[m], digits)}"
                         + (f"<sup>{e(marks)}</sup>" if marks else "") + "</td>")
        rows.append(f"<tr><td class=\"l\">{labels[r]}</td><td class=\"l\">{e(r)}</td>{''.join(cells)}</tr>")
    return (f"<h2 id=\"results\">Results</h2>\n<table>\n<tr><th class=\"l\"></th><th class=\"l\">run</th>{head}</tr>\n"
            + "\n".join(rows) + f"\n</table>\n<p class=\"note\">{e(rep.footnote())} The best value per measure is in "
            "bold.</p>\n" + _pairs(rep, digits))


def _pairs(rep, digits: int) -> str:
    """compare's tests, one row per segment, measure and pair."""
    e = html.escape
    head = "".join(f"<th class=\"l\">{e(s)}</th>" for s in rep.segment_names)
    rows = []
    for c in rep.comparisons:
        wtl = "–" if c.wins is None else f"{c.wins}/{c.ties}/{c.losses}"  # unpaired: no per-list pairs
        interval = ("" if math.isnan(c.ci_low) else
                    f" [{_signed(c.ci_low, digits)}, {_signed(c.ci_high, digits)}]")  # as compare prints it
        rows.append("<tr>" + "".join(f"<td class=\"l\">{e(_cell(v))}</td>" for v in c.segment)
                    + f"<td class=\"l\">{e(c.measure)}</td><td class=\"l\">{e(c.run)}</td>"
                    f"<td class=\"l\">{e(c.baseline)}</td>"
                    + (f"<td>{_signed(rep.unadjusted(c), digits)}</td>" if rep.cuped else "")
                    + f"<td>{_signed(c.difference, digits)}{interval}</td>"
                    f"<td>{_p(c.p_adjusted)}</td>"
                    f"<td>{wtl}</td><td class=\"sig\">{'*' if c.significant else ''}</td></tr>")
    p_name = f"p ({rep.correction})" if rep.correction else "p"
    difference = ("CUPED difference" if rep.cuped else "difference") + (
        f" [{rep.level()} CI]" if any(not math.isnan(c.ci_low) for c in rep.comparisons) else "")
    return (f"<table>\n<tr>{head}<th class=\"l\">measure</th><th class=\"l\">run</th><th class=\"l\">baseline</th>"
            + ("<th>unadjusted</th>" if rep.cuped else "")
            + f"<th>{difference}</th><th>{e(p_name)}</th><th>win/tie/loss</th><th></th></tr>\n"
            + "\n".join(rows) + f"\n</table>\n<p class=\"note\">* p &lt; {rep.max_p:g}"
            + (e(_CUPED_NOTE) if rep.cuped else "; difference = mean of run − baseline per "
               + ("query" if rep.paired else "list"))
            + (" (of log values for geometric means)" if "geometric" in rep.aggregate.values() else "")
            + "; win/tie/loss counts the queries both runs answered"
            + ("" if rep.paired else " (–: the runs' lists are not paired, so there is nothing to count)") + ".</p>")


def _segments_table(report: HtmlReport, digits: int) -> str:
    """Each segment's mean and t interval (at the tests' level) per run (compare's summaries), ▲/▼ against the baseline, then the
    segments' tests."""
    e = html.escape
    rep = report.comparison
    several = len(report.runs) > 1
    head = "".join(f"<th class=\"l\">{e(s)}</th>" for s in report.group_by) + ("<th class=\"l\">run</th>" if several else "")
    level = rep.level()
    head += "<th>lists</th>" + "".join(f"<th>{e(m)} ({level} CI)</th>" for m in report.segments)
    keyed = {m: {(s.segment, s.run): s for s in segs} for m, segs in report.segments.items()}
    rows = []
    for seg in rep.segments:
        for run in report.runs:
            shown = [per[(seg, run)] for per in keyed.values() if (seg, run) in per]
            if not shown:
                continue
            cells = "".join(f"<td class=\"l\">{e(_cell(v))}</td>" for v in seg)
            cells += (f"<td class=\"l\">{e(run)}</td>" if several else "") + f"<td>{shown[0].n}</td>"
            for m in report.segments:
                s = keyed[m].get((seg, run))
                interval = "" if s is None or math.isnan(s.ci_low) else f" [{s.ci_low:.{digits}f}, {s.ci_high:.{digits}f}]"
                marks = rep.markers(run, m, seg)
                cells += (f"<td>{_value(None if s is None else s.mean, 'mean', digits)}{interval}"
                          + (f"<sup>{e(marks)}</sup>" if marks else "") + "</td>")
            rows.append(f"<tr>{cells}</tr>")
    out = (f"<h2 id=\"segments\">Per segment</h2>\n<table>\n<tr>{head}</tr>\n" + "\n".join(rows)
           + f"\n</table>\n<p class=\"note\">Each segment's mean over its lists and its {level} confidence interval "
           f"(the tests' level), mean ± t({1 - rep.max_p / 2:g}, n−1)·se (se: the lists' standard deviation / √n), "
           "as <code>sqlmetrics compare</code> prints them.</p>")
    if rep.comparisons:
        out += f"\n<p class=\"note\">{e(rep.footnote())}</p>\n" + _pairs(rep, digits)
    return out
