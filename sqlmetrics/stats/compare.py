"""compare(): several runs, with a significance test (significance.py) for every pair (or every run against a
baseline), segment and measure. Per-query values come from one evaluate() call (same options for every run,
logs and engines too); paired tests run on the queries present in all runs, unpaired ones on each run's own.
"""
from __future__ import annotations

import math
from itertools import combinations
from statistics import NormalDist

from ..catalogue import parse_all
from ..errors import SqlmetricsError, warn
from ..engines import as_text
from ..evaluation import engine_options, evaluate
from ..identifiers import quote_identifier
from ..local.collect import python_rows
from ..local.connection import connect
from ..local.readers import load
from ..local.runs import unique_names
from ..options import (COMPARE, CORRECTIONS, DECIDE_CMD, EVALUATE, RUN_ROLES, TESTS, UNPAIRED, check_log_options,
                       resolve, signature, taken_by)
from ..statement import GMAP_FLOOR
from . import rows, units
from .aggregates import (IN_ENGINE, TIE, aggregate_rows, bootstrap_ranks, check_covariate, covariate_sql,
                         unit_statistics)
from .report import SAMPLE_RATIO_P, Comparison, Report, Summary, sample_ratio_message, segment_key
from .significance import (adjust, chi2_sf, mann_whitney, resample, student_moments, t_quantile, tukey_hsd,
                           tukey_moments, unpaired, welch, wilcoxon)

RESOURCES = ("memory_limit", "threads", "temp_directory")  # DuckDB's, which the tests' own queries keep to too

# Recorded in the report (column mappings are not).
_RECORDED = ("queries", "ties", "relevance_level", "score_precision", "duplicates")


def _recorded(o, qrels) -> dict:
    """The options a report records. queries= says which judged queries are averaged: a log (qrels=None) has
    none but its lists, so it records none (and its tables print no footer about judged queries)."""
    return {k: None if k == "queries" and qrels is None else getattr(o, k) for k in _RECORDED}


def compare(qrels, runs, measures, **options):
    """Compare runs ({name: run}, a list of runs named by file stem, or one table whose run_name column,
    mapped in columns=, names the runs) on `measures` with a significance test.

    Returns a Report: per-run means and summaries (n, mean, sd, se, the t interval at level 1 - max_p), and for every pair (or every run
    against `baseline`), segment and measure the mean difference, the test statistic, the p-value (adjusted
    by `correction` over every test of the report), the effect size and win/tie/loss counts, and for the
    bootstrap a (1 - max_p) percentile confidence interval of the difference. A run beats another
    significantly when p < max_p and the difference favours it (`better` of the measure).

    Paired tests run over the queries the runs share; unpaired ones (welch, mannwhitney, the unpaired
    bootstrap) when the runs' queries differ (sessions or users of an A/B test): `pairing` decides, by
    default from the data. The evaluation options (queries, ties, label, relevance, group_by, engine, ...)
    are evaluate()'s; with group_by every segment is compared on its own.
    """
    progress = options.pop("_progress", None)  # the command line's progress line, told each step (local only)
    o = resolve(COMPARE, options)
    _check_options(o.test, o.max_p, o.correction, o.seed, o.n_resamples)
    _check_max_excluded(o.max_excluded)
    single = "run_name" in (o.columns or {}) and not isinstance(runs, dict)
    # No qrels and no runs, with nuggets= and assignments=: the nugget measures of every run the assignments name.
    alone = qrels is None and runs is None and o.nuggets is not None and o.assignments is not None
    named = None if single or alone else _named_runs(runs)
    if single and isinstance(runs, (list, tuple)):
        if len(runs) != 1:
            raise SqlmetricsError("columns= maps run_name: pass one table holding every run (its run_name column "
                                  "names them), not several.")
        runs = runs[0]
    if isinstance(measures, str):
        measures = [measures]
    calls = parse_all(measures, o.relevance_level, o.compat)
    whole_run = [c.text for c in calls if c.measure.aggregate == "once"]
    if whole_run:  # one value per run: there are no per-query values to test
        raise SqlmetricsError(f"{whole_run[0]} is one value per run, not per query: a significance test has nothing "
                              "to resample. evaluate() reports it; compare the ranking measures here.")
    evaluate_options = {k: v for k, v in o.as_dict().items() if k in _EVALUATE_KEYWORDS}
    info = {c.text: (c.measure.better, c.measure.aggregate) for c in calls}
    if o.unit is not None or o.pre_period is not None or o.covariate is not None:
        return _compare_units(qrels, runs, calls, info, o, single, evaluate_options, progress)
    if o.engine is not None and single and o.test in IN_ENGINE:  # only the tests' aggregates leave the engine
        segs = check_log_options(qrels, o.group_by, o.label, o.relevance)
        scopes = {"paired": (1,), "unpaired": (0,)}.get(o.pairing, (0, 1))
        boot = (o.seed, o.n_resamples, 1 - o.max_p, scopes) if o.test == "bootstrap" else None
        rows = aggregate_rows(o.engine, calls, qrels, runs, engine_options(resolve(EVALUATE, evaluate_options)), boot,
                              complete=o.test == "tukey")
        return analyse_aggregates(info, rows, segment_names=segs, test=o.test,
                                  max_p=o.max_p, correction=o.correction, pairing=o.pairing, baseline=o.baseline,
                                  options=_recorded(o, qrels), seed=o.seed,
                                  n_resamples=o.n_resamples, split=o.split, sequential=o.sequential)
    results = evaluate(qrels, runs if single or alone else named, [c.text for c in calls], **evaluate_options,
                       _fetch=python_rows, _progress=progress)
    segment_names = () if alone else check_log_options(qrels, o.group_by, o.label, o.relevance)
    per_query = results.per_query
    if o.engine is not None:  # the engine's per-list values come back as a pyarrow table, not Python rows
        per_query = (per_query.column_names, list(zip(*per_query.to_pydict().values())))
    run_names, lists = lists_by_segment(per_query, segment_names, [c.text for c in calls])
    if named is not None:
        run_names = list(named) + [str(name) for name in o.fuse or {}]  # fused runs are compared like the others
    if len(run_names) < 2:
        # A run whose every list went unevaluated (no judgment: with label=, every label NULL) has no values.
        empty = [str(n) for n, values in results.aggregate.items() if isinstance(values, dict) and str(n) not in run_names]
        raise SqlmetricsError(f"compare needs at least two runs, got {len(run_names)}"
                              + (f" in the run_name column ({run_names!r})" if single else "")
                              + (f"; {', '.join(map(repr, empty))} has no evaluated list (the warning above says why)."
                                 if empty else "."))
    return analyse_lists(run_names, info, lists, segment_names=segment_names, test=o.test, max_p=o.max_p,
                         correction=o.correction, seed=o.seed, n_resamples=o.n_resamples, pairing=o.pairing,
                         baseline=o.baseline, options=_recorded(o, qrels),
                         resources={k: getattr(o, k) for k in RESOURCES}, split=o.split, sequential=o.sequential)


def _compare_units(qrels, log, calls: list, info: dict, o, single: bool, evaluate_options: dict, progress) -> Report:
    """compare() with unit= (and pre_period=): the arms' lists summed per unit, Welch's test on the ratio of the
    units' sums with the delta method's variance, and CUPED with a pre-period (units.py)."""
    check_covariate(o.unit, o.pre_period, o.covariate)
    if not single:
        raise SqlmetricsError("unit= compares the arms of one log: pass one table and map its arm column in "
                              "columns={'run_name': ...}.")
    if o.test not in ("student", "welch") or o.pairing == "paired":
        raise SqlmetricsError(f"unit= compares arms of different units by Welch's t-test on the delta method's "
                              f"variance: use test='welch' (or 'student', which becomes it), not test={o.test!r}"
                              + (" with pairing='paired'" if o.pairing == "paired" else "") + ".")
    other = [m for m, (_, aggregate) in info.items() if aggregate != "mean"]
    if other:
        raise SqlmetricsError(f"unit= sums each unit's values of a measure averaged over lists; {other[0]} is "
                              f"aggregated otherwise ({info[other[0]][1]}).")
    segs = check_log_options(qrels, o.group_by, o.label, o.relevance)
    if o.unit in segs or o.unit in (o.columns or {}).values():
        raise SqlmetricsError(f"unit= {o.unit!r} is also a segment or a role's column; the unit is a column of its own.")
    if o.covariate is not None and (o.covariate in segs or o.covariate in (o.unit, *(o.columns or {}).values())):
        raise SqlmetricsError(f"covariate= {o.covariate!r} is also the unit, a segment or a role's column; the "
                              "covariate is a column of its own, each unit's value from before the experiment.")
    if o.engine is not None:  # the moments over units computed there, as render_compare() renders them
        rows = unit_statistics(o.engine, calls, qrels, log, engine_options(resolve(EVALUATE, evaluate_options)),
                               o.unit, o.max_p, o.pre_period, o.covariate)
        return decide(rows, baseline=o.baseline, correction=o.correction, split=o.split, sequential=o.sequential,
                      max_excluded=o.max_excluded)
    texts = [c.text for c in calls]
    options = {k: v for k, v in evaluate_options.items() if k != "group_by"}
    results = evaluate(qrels, log, texts, group_by=[*segs, o.unit], **options, _fetch=python_rows,
                       _progress=progress)
    run_names, lists = lists_by_segment(results.per_query, (*segs, o.unit), texts)
    by_unit, excluded = _assigned(lists, o.unit, o.max_excluded)
    pre = None
    if o.covariate is not None:  # a column of the log: each unit's value, the same for every measure
        pre = _covariates(log, o, calls)
    elif o.pre_period is not None:  # the same measures before the experiment, per unit, whatever the arm
        options["columns"] = {r: c for r, c in (options.get("columns") or {}).items() if r != "run_name"}
        names, rows = evaluate(qrels, o.pre_period, texts, group_by=[o.unit], **options, _fetch=python_rows).per_query
        at = [names.index(o.unit), *(names.index(t) for t in texts)]
        pre = {}
        for row in rows:
            pre.setdefault(row[at[0]], []).append([row[i] for i in at[1:]])
    return analyse_units(run_names, info, by_unit, pre, unit=o.unit, segment_names=segs, max_p=o.max_p,
                         correction=o.correction, baseline=o.baseline, split=o.split,
                         options=_recorded(o, qrels), sequential=o.sequential, excluded=excluded)


def _covariates(log, o, calls: list) -> dict:
    """covariate=: {unit: [[its value per measure]]} from the log's column, by the statement the engines run
    (aggregates.covariate_sql), on DuckDB: a unit whose rows disagree or hold NULL has none."""
    con = connect(o.memory_limit, o.threads, o.temp_directory)
    try:
        loaded = load(con, log, "run", {r: c for r, c in (o.columns or {}).items() if r in RUN_ROLES}, glob=o.glob)
        for name in (o.unit, o.covariate):
            if name not in con.sql(f"SELECT * FROM {loaded.view}").columns:
                raise SqlmetricsError(f"{'unit' if name == o.unit else 'covariate'}= {name!r}: the log has no such "
                                      "column.")
        _check_covariate_values(con, loaded.view, o.unit, o.covariate)
        rows = con.execute(covariate_sql("duckdb", loaded.view, o.unit, o.covariate, ["x"])).fetchall()
    finally:
        con.close()
    return {u: [[x] * len(calls)] for u, x in rows if x is not None}


def _check_covariate_values(con, view: str, unit: str, covariate: str) -> None:
    """Every covariate value is a finite number (or NULL, no covariate): a NaN would make every CUPED number NaN,
    an infinite one break the sums, a text one the cast. The refusal names the units that hold such values."""
    u, x = quote_identifier(unit), quote_identifier(covariate)
    bad = (f"FROM {view} WHERE {u} IS NOT NULL AND {x} IS NOT NULL "
           f"AND NOT coalesce(isfinite(TRY_CAST({x} AS DOUBLE)), false)")
    (count,) = con.execute(f"SELECT COUNT(DISTINCT {u}) {bad}").fetchone()
    if not count:
        return
    shown = con.execute(f"SELECT DISTINCT CAST({u} AS VARCHAR), CAST({x} AS VARCHAR) {bad} ORDER BY 1 LIMIT 3"
                        ).fetchall()
    raise SqlmetricsError(f"covariate= {covariate!r} is not a finite number for {count:,} "
                          f"unit{'s' if count > 1 else ''} "
                          f"({unit} {', '.join(f'{a!r}: {b!r}' for a, b in shown)}"
                          f"{', ...' if count > len(shown) else ''}"
                          "). CUPED's covariate is each unit's number from before the experiment: fix those values, or "
                          "make them NULL (a unit without one counts as a unit absent from a pre-period).")


def analyse_units(run_names: list, info: dict, by_unit: dict, pre: dict | None, *, unit: str, **options) -> Report:
    """The report of Welch's tests over units from the per-list values: by_unit = {segment: {run: {unit: [[value per
    measure of info] per list]}}}; pre (CUPED) = {unit: [[value per measure] per list]} before the experiment, or
    None. options: unit_report()'s."""

    def unit_rows(of_run: dict, k: int) -> list:
        rows = []
        for u, values in of_run.items():
            present = [v[k] for v in values if v[k] is not None]
            if not present:
                continue
            row = {"y": math.fsum(present), "l": len(present)}
            if pre is not None:
                before = [v[k] for v in pre.get(u, []) if v[k] is not None]
                row.update(yp=math.fsum(before), lp=len(before))
            rows.append(row)
        return rows

    stats = {(seg, m, r): units.moments(unit_rows(by_unit[seg].get(r, {}), k))
             for seg in by_unit for k, m in enumerate(info) for r in run_names}
    counts = {r: len({u for seg in by_unit for u in by_unit[seg].get(r, {})}) for r in run_names}
    return unit_report(run_names, info, stats, counts, unit=unit, cuped=pre is not None, **options)


def _assigned(lists: dict, unit: str, max_excluded: float) -> tuple:
    """({segment: {run: {unit: [[value per measure] per list]}}}, the exclusions' counts) from lists keyed by
    segment and unit: a list without a unit id (NULL, empty or spaces only) and the units seen in more than one arm
    are left out of every arm, as aggregates._units_statement leaves them out (exclusions() warns or refuses)."""
    arms: dict = {}
    n_lists = no_id = 0
    for key, runs in lists.items():
        n_lists += sum(map(len, runs.values()))
        if _no_id(key[-1]):
            no_id += sum(map(len, runs.values()))
        else:
            arms.setdefault(key[-1], set()).update(runs)
    mixed = {u for u, of in arms.items() if len(of) > 1}
    by_unit: dict = {}
    mixed_lists = 0
    for key, runs in lists.items():
        if key[-1] in mixed:
            mixed_lists += sum(map(len, runs.values()))
        elif not _no_id(key[-1]):
            for run, values in runs.items():
                by_unit.setdefault(key[:-1], {}).setdefault(run, {})[key[-1]] = list(values.values())
    excluded = exclusions(unit, max_excluded, units=len(arms), mixed=len(mixed), mixed_lists=mixed_lists,
                          lists=n_lists, no_id=no_id, examples=sorted(map(str, mixed))[:3])
    return by_unit, excluded


def _no_id(u) -> bool:
    """A unit id that names no unit: NULL, or text of spaces alone (the SQL's TRIM() = '')."""
    return u is None or isinstance(u, str) and not u.strip(" ")


def exclusions(unit: str, max_excluded: float, *, units: int, mixed: int, mixed_lists: int, lists: int, no_id: int,
               examples=()) -> dict:
    """The units seen in more than one arm (`mixed` of `units`, with `mixed_lists` lists) and the lists without a unit
    id (`no_id` of `lists`), left out of every arm: a warning that counts them, and a SqlmetricsError when either is
    more than max_excluded of the whole, as GrowthBook flags multiple exposures above 1% of the users. Returns the
    counts, as Report.excluded holds them."""
    counts = {"multiple_arms": mixed, "multiple_arms_lists": mixed_lists, "no_id_lists": no_id}
    found = []
    if mixed:
        shown = f" ({', '.join(map(repr, examples))}{', ...' if mixed > len(examples) else ''})" if examples else ""
        found.append(f"{mixed:,} of {units:,} units ({_percent(mixed, units)}; {mixed_lists:,} lists) were in more "
                     f"than one arm{shown}")
    if no_id:
        found.append(f"{no_id:,} of {lists:,} lists ({_percent(no_id, lists)}) have no unit id (NULL, empty or "
                     "spaces only)")
    if not found:
        return counts
    said = f"unit= {unit!r}: {' and '.join(found)}"
    if mixed > max_excluded * units or no_id > max_excluded * lists:
        raise SqlmetricsError(f"{said}: more than max_excluded={max_excluded:g} of them, so the assignment (or the "
                              "log) is broken: a unit belongs to one arm, and every list to a unit. Fix it, or pass a "
                              "larger max_excluded= to leave them out and compare the rest.")
    warn(f"{said}; they are left out of every arm (as experimentation platforms leave out multiple exposures). Find "
         "why in the assignment or the log.")
    return counts


def _check_max_excluded(max_excluded) -> None:
    if isinstance(max_excluded, bool) or not isinstance(max_excluded, (int, float)) or not 0 <= max_excluded <= 1:
        raise SqlmetricsError(f"max_excluded={max_excluded!r}: give the largest share (0 .. 1) of the units in more "
                              "than one arm, and of the lists without a unit id, that may be left out, e.g. 0.01.")


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.3g}%" if whole else "all"


def unit_report(run_names: list, info: dict, stats: dict, counts: dict, *, unit: str, cuped: bool, segment_names=(),
                max_p=0.01, correction=None, baseline=None, split=None, options=None, sequential=None,
                excluded=None) -> Report:
    """The report of Welch's tests over units from each (segment, measure, run)'s UnitMoments (stats) and each
    run's number of units (counts, for the sample ratio check), computed here or by an engine; excluded: the
    counts of what was left out (exclusions())."""
    if correction == "none":
        correction = None
    if baseline is not None and baseline not in run_names:
        raise SqlmetricsError(f"baseline={baseline!r} is not one of the runs: {', '.join(map(repr, run_names))}.")
    if empty := [r for r in run_names if not counts.get(r)]:  # every unit of it left out (exclusions())
        raise SqlmetricsError(f"unit= {unit!r}: no unit of {', '.join(map(repr, empty))} is left once the units in "
                              "more than one arm and the lists without a unit id are left out: there is nothing to "
                              "compare. Fix the assignment or the log.")
    _check_sequential(sequential, "welch")
    measures = list(info)
    segments = sorted({seg for seg, _, _ in stats}, key=lambda seg: [(v is None, str(v)) for v in seg])
    ratio = sample_ratio(counts, split, of=unit)
    empty = units.UnitMoments(0, {}, {})
    means = {seg: {r: {} for r in run_names} for seg in segments}
    summary, comparisons = [], []
    for seg in segments:
        for m in measures:
            for r in run_names:
                at = stats.get((seg, m, r), empty)
                mean, var = units.ratio(at) if at.n else (math.nan, math.nan)
                means[seg][r][m] = None if math.isnan(mean) else mean
                summary.append(Summary(seg, r, m, **_describe({"n": at.n, "mean": mean, "var": var}, max_p)))
            for run, base in _pairs(run_names, baseline):
                x, y = stats.get((seg, m, run), empty), stats.get((seg, m, base), empty)
                c = Comparison(measure=m, run=run, baseline=base, segment=seg, n=x.n + y.n, difference=math.nan,
                               statistic=math.nan, p_value=math.nan)
                _unit_test(c, x, y, cuped, max_p)
                comparisons.append(c)
    _one_unit(stats, unit, segment_names)
    _decide(comparisons, info, correction, max_p, sequential)
    return Report(runs=list(run_names), measures=measures, better={m: info[m][0] for m in measures},
                  aggregate={m: info[m][1] for m in measures}, segment_means=means, comparisons=comparisons,
                  test="welch", max_p=max_p, correction=correction, seed=0, n_resamples=0,
                  n_queries=sum(ratio["lists"].values()) if ratio else 0, options=dict(options or {}),
                  segment_names=tuple(segment_names), paired=False, baseline=baseline, summary=summary,
                  sample_ratio=ratio, unit=unit, cuped=cuped, sequential=sequential, excluded=excluded)


def _one_unit(stats: dict, unit: str, segment_names) -> None:
    """Warn of the arms with one unit in a segment: their comparisons give the difference alone."""
    alone = sorted({(r, seg) for (seg, _, r), m in stats.items() if m.n == 1}, key=repr)
    if alone:
        arms = ", ".join(f"{r!r}" + "".join(f" {g}={v!r}" for g, v in zip(segment_names, seg)) for r, seg in alone)
        warn(f"unit= {unit!r}: one unit in {arms}: the difference of the means is given, but a variance over one unit "
             "is not defined, so those comparisons have no interval and no p-value (Welch's test needs 2 units in each "
             "arm).")


def _unit_test(c: Comparison, x, y, cuped: bool, max_p: float) -> None:
    """Welch's test of two arms' ratios over units (x: the run, y: the baseline), CUPED-adjusted when the units
    carry a pre-period; the interval of the difference at 1 - max_p, and the share of variance CUPED removed. An
    arm of one unit has a mean, not a variance: the difference alone."""
    if not (x.n and y.n):
        return
    (mx, vx), (my, vy) = units.ratio(x), units.ratio(y)
    raw = vx / x.n + vy / y.n
    if cuped:
        (mx, vx), (my, vy), _ = units.cuped(x, y)
    c.difference = mx - my
    if x.n < 2 or y.n < 2:
        return
    if cuped:
        c.variance_reduction = 1 - (vx / x.n + vy / y.n) / raw if raw > 0 else math.nan
    c.statistic, c.p_value, df = welch(x.n, mx, vx, y.n, my, vy)
    se = c.se = math.sqrt(vx / x.n + vy / y.n)
    half = t_quantile(1 - max_p / 2, df) * se if se > 0 else 0.0
    c.ci_low, c.ci_high = c.difference - half, c.difference + half
    _relative(c, (x.n, mx, vx), (y.n, my, vy), max_p)
    pooled = ((x.n - 1) * vx + (y.n - 1) * vy) / (x.n + y.n - 2)
    c.effect_size = c.difference / math.sqrt(pooled) if pooled > 0 else math.nan


compare.__signature__ = signature(COMPARE, "qrels, runs, measures")
_EVALUATE_KEYWORDS = {o.name for o in taken_by(COMPARE) if EVALUATE in o.takers}


def _check_options(test, max_p, correction, seed, n_resamples) -> None:
    if test not in TESTS:
        raise SqlmetricsError(f"test={test!r} is not a known test: use one of {', '.join(map(repr, TESTS))}.")
    if correction == "none":
        correction = None
    if correction not in CORRECTIONS:
        raise SqlmetricsError(f"correction={correction!r} is not known: use None, 'bonferroni', 'holm' or 'bh'.")
    if test == "tukey" and correction:
        raise SqlmetricsError("test='tukey' already controls the error rate over all pairs of runs; "
                              "drop the correction (or pick another test).")
    if isinstance(max_p, bool) or not isinstance(max_p, (int, float)) or not 0 < max_p < 1:
        raise SqlmetricsError(f"max_p={max_p!r} must be a number strictly between 0 and 1, such as 0.01 or 0.05.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise SqlmetricsError(f"seed={seed!r} must be an integer between 0 and 2**32 - 1.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or not 1 <= n_resamples <= 10**7:
        raise SqlmetricsError(f"n_resamples={n_resamples!r} must be an integer between 1 and 10,000,000.")


def _named_runs(runs) -> dict:
    if isinstance(runs, dict):
        named = {str(k): v for k, v in runs.items()}
    elif isinstance(runs, (list, tuple)):
        named = dict(zip(unique_names(runs), runs))
    else:
        raise SqlmetricsError("runs must be a dict {name: run} or a list of runs (file paths, frames, ...).")
    if len(named) < 2:
        raise SqlmetricsError(f"compare needs at least two runs, got {len(named)}.")
    return named


def lists_by_segment(per_query: tuple, segment_names: tuple, measures: list):
    """(run names in order of appearance, {segment: {run: {query_id: [value per measure]}}}) from evaluate()'s
    per-query rows (run, segment columns, query_id, measures); the segment is () without group_by, and its NaN
    values are one (segment_key())."""
    names, rows = per_query
    at = {name: i for i, name in enumerate(names)}
    seg_at = [at[g] for g in segment_names]
    m_at = [at[m] for m in measures]
    run_names: list = []
    lists: dict = {}
    for row in rows:
        run = row[at["run"]]
        if run not in run_names:
            run_names.append(run)
        segment = segment_key(row[i] for i in seg_at)
        lists.setdefault(segment, {}).setdefault(run, {})[row[at["query_id"]]] = [row[i] for i in m_at]
    return run_names, lists


# ---------------------------------------------------------------------------------------------- analysis


def analyse(run_names: list, info: dict, queries: list, values: dict, **options):
    """The report for per-query values already in hand, aligned on `queries` (one segment); `options` are
    analyse_lists()'.

    info: {measure: (better, aggregate)} with better in higher/lower and aggregate in mean/sum/geometric;
    values: {measure: [[value or None per query] per run]}.
    """
    measures = list(info)
    lists = {(): {r: {q: [values[m][k][i] for m in measures] for i, q in enumerate(queries)}
                  for k, r in enumerate(run_names)}}
    return analyse_lists(run_names, info, lists, **options)


def analyse_lists(run_names: list, info: dict, lists: dict, *, segment_names=(), test="student", max_p=0.01,
                  correction=None, seed=42, n_resamples=10000, pairing="auto", baseline=None, options=None,
                  resources=None, split=None, sequential=None):
    """The report for per-list values: lists = {segment: {run: {query_id: [value per measure of info]}}}.

    Each segment is compared on its own; the correction's family is every test of the report. resources: the
    caller's memory_limit, threads and temp_directory, which the tests' DuckDB work keeps to. split: the
    arms' expected shares of the lists, which unpaired runs are checked against (sample_ratio()).
    """
    if correction == "none":
        correction = None
    _check_options(test, max_p, correction, seed, n_resamples)
    if baseline is not None and baseline not in run_names:
        raise SqlmetricsError(f"baseline={baseline!r} is not one of the runs: {', '.join(map(repr, run_names))}.")
    paired = _paired(pairing, test, _list_counts(lists, run_names))
    _check_pairing(paired, test)
    test = test if paired else UNPAIRED[test]
    _check_sequential(sequential, test)
    ratio = None if paired else sample_ratio({r: sum(len(by_run.get(r, {})) for by_run in lists.values())
                                              for r in run_names}, split)
    if baseline is None:
        pairs = list(combinations(range(len(run_names)), 2))
    else:
        b = run_names.index(baseline)
        pairs = [(b, j) for j in range(len(run_names)) if j != b]
    measures = list(info)
    segments = sorted(lists, key=lambda seg: [(v is None, str(v)) for v in seg])
    means = {seg: {r: {} for r in run_names} for seg in segments}
    groups, group_of = [], {}  # the scaled values of each (segment, measure, run): summaries and unpaired tests
    comparisons, jobs, n_lists = [], [], 0
    for seg in segments:
        per_run = [lists[seg].get(r, {}) for r in run_names]
        shared = sorted(set.intersection(*(set(x) for x in per_run)))
        own = [shared if paired else sorted(x) for x in per_run]
        n_lists += len(shared) if paired else sum(map(len, own))
        for k, m in enumerate(measures):
            better, aggregate = info[m]
            raw = [[x[q][k] for q in qs] for x, qs in zip(per_run, own)]
            scaled = [[_scale(v, aggregate) for v in vals] for vals in raw]
            for r, vals, sc in zip(run_names, raw, scaled):
                means[seg][r][m] = _aggregate(vals, aggregate)
                group_of[seg, m, r] = len(groups)
                groups.append([v for v in sc if v is not None])
            tukey = tukey_hsd(scaled) if test == "tukey" else None
            for i, j in pairs:  # run j against baseline i: difference = run - baseline
                c = Comparison(measure=m, run=run_names[j], baseline=run_names[i], segment=seg, n=0,
                               difference=math.nan, statistic=math.nan, p_value=math.nan)
                if paired:
                    _paired_test(c, test, scaled[j], scaled[i], raw[j], raw[i], better,
                                 (tukey[0][j][i], tukey[1][j][i]) if tukey else None, max_p)
                    if test in ("fisher", "bootstrap"):
                        jobs.append((c, [x - y for x, y in zip(scaled[j], scaled[i]) if x is not None and y is not None]))
                comparisons.append(c)
    unpaired_jobs = [] if paired else [(c, group_of[c.segment, c.measure, c.run], group_of[c.segment, c.measure, c.baseline])
                                       for c in comparisons]
    moments, rank_sums = unpaired(groups, [(gx, gy) for _, gx, gy in unpaired_jobs], seed, n_resamples,
                                  1 - max_p, None if paired else test, resources)
    summary = [Summary(seg, r, m, **_describe(moments[group_of[seg, m, r]], max_p))
               for seg in segments for m in measures for r in run_names]
    for (c, gx, gy), ranks in zip(unpaired_jobs, rank_sums):
        _unpaired_test(c, test, moments[gx], moments[gy], ranks, max_p)
    if jobs:
        for (c, _), res in zip(jobs, resample(test, [d for _, d in jobs], seed, n_resamples, 1 - max_p, resources)):
            c.p_value, c.exact = res["p"], res["exact"]
            if test == "bootstrap":
                c.ci_low, c.ci_high = res["ci_low"], res["ci_high"]
    _decide(comparisons, info, correction, max_p, sequential)
    return Report(runs=list(run_names), measures=measures, better={m: info[m][0] for m in measures},
                  aggregate={m: info[m][1] for m in measures}, segment_means=means, comparisons=comparisons, test=test,
                  max_p=max_p, correction=correction, seed=seed, n_resamples=n_resamples, n_queries=n_lists,
                  options=dict(options or {}), segment_names=tuple(segment_names), paired=paired,
                  baseline=baseline, summary=summary, lists=lists, sample_ratio=ratio, sequential=sequential)


def analyse_aggregates(info: dict, rows: list, *, segment_names=(), test="student", max_p=0.01, correction=None,
                       seed=42, n_resamples=10000, pairing="auto", baseline=None, options=None, split=None,
                       sequential=None):
    """analyse_lists()'s report for the tests of IN_ENGINE from aggregate_rows() (counts, moments, rank sums,
    per-query differences and bootstrap resamples computed on the engine); no per-list value is at hand, so
    the report has no lists."""
    if correction == "none":
        correction = None
    measures = list(info)
    by_kind: dict = {}
    for r in rows:
        r["segment"] = tuple(as_text(v) for v in r["segment"])
        r["rx"], r["ry"] = as_text(r["rx"]), as_text(r["ry"])
        by_kind.setdefault(r["kind"], []).append(r)
    lists = by_kind.get("lists", [])
    # evaluate_on()'s order: run names and segments by their UTF-8 bytes, a NULL segment value last
    run_names = sorted({r["rx"] for r in lists}, key=lambda n: n.encode("utf-8"))
    if len(run_names) < 2:
        raise SqlmetricsError(f"compare needs at least two runs, got {len(run_names)} in the run_name column "
                              f"({run_names!r}).")
    if baseline is not None and baseline not in run_names:
        raise SqlmetricsError(f"baseline={baseline!r} is not one of the runs: {', '.join(map(repr, run_names))}.")
    paired = _paired(pairing, test, [(r["n"], int(r["v1"])) for r in lists])
    _check_pairing(paired, test)
    test = test if paired else UNPAIRED[test]
    _check_sequential(sequential, test)
    ratio = None if paired else sample_ratio({r: sum(row["n"] for row in lists if row["rx"] == r) for r in run_names},
                                             split)
    segments = sorted({r["segment"] for r in lists}, key=lambda seg: [(v is None, str(v)) for v in seg])
    shared = {r["segment"]: int(r["v1"]) for r in lists}
    n_lists = sum(shared.values()) if paired else sum(r["n"] for r in lists)
    moments = {(r["segment"], measures[r["m"]], r["rx"]): {"n": r["n"], "mean": r["v1"], "total": r["v3"],
                                                           "var": r["v2"] / (r["n"] - 1) if r["n"] > 1 else math.nan}
               for r in by_kind.get("moments", []) if r["sc"] == int(paired)}
    none = {"n": 0, "mean": math.nan, "var": math.nan, "total": 0.0}
    means = {seg: {r: {m: _mean_of(moments.get((seg, m, r), none), info[m][1]) for m in measures}
                   for r in run_names} for seg in segments}
    summary = [Summary(seg, r, m, **_describe(moments.get((seg, m, r), none), max_p))
               for seg in segments for m in measures for r in run_names]
    pair_rows = {(r["kind"], r["segment"], measures[r["m"]], r["rx"], r["ry"]): r
                 for r in by_kind.get("ranks", []) + by_kind.get("diffs", [])}
    boots = {(r["segment"], measures[r["m"]], r["rx"], r["ry"]): _bootstrap_from_row(r, n_resamples, 1 - max_p)
             for r in by_kind.get("boot", []) if r["sc"] == int(paired)}
    complete = {(r["segment"], measures[r["m"]], r["rx"]): {"n": r["n"], "mean": r["v1"], "ss": r["v2"]}
                for r in by_kind.get("moments", []) if r["sc"] == 2}
    comparisons = []
    for seg in segments:
        for m in measures:
            if test == "tukey":
                tukey = tukey_moments([complete.get((seg, m, r), {"n": 0, "mean": math.nan, "ss": math.nan})
                                       for r in run_names])
            for run, base in _pairs(run_names, baseline):
                c = Comparison(measure=m, run=run, baseline=base, segment=seg, n=0, difference=math.nan,
                               statistic=math.nan, p_value=math.nan)
                boot = boots.get((seg, m, run, base), _NO_RESAMPLES)
                if paired:
                    _paired_from_row(c, test, pair_rows, info[m][0], max_p)
                    if test == "tukey":
                        j, i = run_names.index(run), run_names.index(base)
                        c.statistic, c.p_value = tukey[0][j][i], tukey[1][j][i]
                    elif test == "bootstrap":
                        c.statistic, c.p_value = c.difference, boot["p"]
                        c.exact = None if boot is _NO_RESAMPLES else False  # as resample() for no difference at all
                        c.ci_low, c.ci_high = boot["ci_low"], boot["ci_high"]
                else:
                    _unpaired_test(c, test, moments.get((seg, m, run), none), moments.get((seg, m, base), none),
                                   {**_ranks_from_row(pair_rows, seg, m, run, base), **boot}, max_p)
                comparisons.append(c)
    _decide(comparisons, info, correction, max_p, sequential)
    return Report(runs=run_names, measures=measures, better={m: info[m][0] for m in measures},
                  aggregate={m: info[m][1] for m in measures}, segment_means=means, comparisons=comparisons, test=test,
                  max_p=max_p, correction=correction, seed=seed, n_resamples=n_resamples, n_queries=n_lists,
                  options=dict(options or {}), segment_names=tuple(segment_names), paired=paired,
                  baseline=baseline, summary=summary, sample_ratio=ratio, sequential=sequential)


def sample_ratio(lists: dict, split, of: str = "lists") -> dict | None:
    """The sample ratio mismatch check of unpaired runs (A/B arms): each arm's lists (sessions) against the expected
    split ({arm: share}; None: equal), by a chi-square goodness-of-fit test; `of` names what was counted (with
    unit=, the unit's column). Warns when p < SAMPLE_RATIO_P: a broken
    split (a bug in the assignment or the logging) makes every other number of the comparison suspect."""
    if split is not None:
        unknown, missing = [a for a in split if a not in lists], [r for r in lists if r not in split]
        if unknown or missing:
            raise SqlmetricsError(f"split= must give a share to each arm, {', '.join(map(repr, lists))}"
                                  + (f"; it names {', '.join(map(repr, unknown))}, which is not one" if unknown else "")
                                  + (f"; it leaves out {', '.join(map(repr, missing))}" if missing else "") + ".")
    total = sum(lists.values())
    if not total:
        return None
    shares = {r: 1.0 if split is None else float(split[r]) for r in lists}
    whole = math.fsum(shares.values())
    expected = {r: shares[r] / whole for r in lists}
    statistic = math.fsum((n - total * expected[r]) ** 2 / (total * expected[r]) for r, n in lists.items())
    ratio = {"lists": dict(lists), "of": of, "expected": expected, "statistic": statistic,
             "p_value": chi2_sf(statistic, len(lists) - 1)}
    ratio["mismatch"] = ratio["p_value"] < SAMPLE_RATIO_P
    if ratio["mismatch"]:
        warn(sample_ratio_message(ratio))
    return ratio


def decide(stats, *, baseline=None, correction=None, split=None, sequential=None, max_excluded=0.01) -> Report:
    """compare()'s report from the rows of render_compare()'s statement, run on any engine and fetched: a file
    (Parquet, CSV, TSV or JSON Lines, by its extension), a pyarrow table, a pandas frame or a list of dicts. The
    test and its settings are the statement's (its rows carry them); baseline, correction, split, sequential and
    max_excluded are compare()'s. The rows are checked first (rows.py): a row missing, repeated or out of its
    bounds is a SqlmetricsError naming it, never a number computed from it."""
    resolve(DECIDE_CMD, {"baseline": baseline, "correction": correction, "split": split, "sequential": sequential,
                         "max_excluded": max_excluded})
    _check_max_excluded(max_excluded)
    s = rows.read(stats)
    calls = parse_all(s.measures)
    info = {c.text: (c.measure.better, c.measure.aggregate) for c in calls}
    if s.unit is not None:  # the delta method's moments over units (aggregates._units_statement)
        counts = [r for r in s.rows if r["kind"] == "unit_count"]
        kept = {as_text(r["rx"]): r["n"] for r in counts}
        mixed = int(counts[0]["v3"]) if counts else 0
        excluded = exclusions(s.unit, max_excluded, units=sum(kept.values()) + mixed, mixed=mixed,
                              mixed_lists=int(sum(r["v4"] for r in counts)), lists=int(sum(r["v2"] for r in counts)),
                              no_id=int(sum(r["v1"] for r in counts)))
        run_names = sorted(kept, key=lambda n: n.encode("utf-8"))
        stats, cuped = _unit_moments(s)
        return unit_report(run_names, info, stats, kept, unit=s.unit, cuped=cuped, segment_names=s.segments,
                           max_p=s.max_p, correction=correction, baseline=baseline, split=split,
                           sequential=sequential, excluded=excluded)
    return analyse_aggregates(info, s.rows, segment_names=s.segments, test=s.test, max_p=s.max_p,
                              correction=correction, seed=s.seed, n_resamples=s.n_resamples, pairing=s.pairing,
                              baseline=baseline, split=split, sequential=sequential)


def _unit_moments(s) -> tuple:
    """({(segment, measure, run): UnitMoments}, CUPED) from the rows of kinds units, units_pre and units_cross."""
    parts: dict = {}
    for r in s.rows:
        if r["kind"] in ("units", "units_pre", "units_cross"):
            key = (tuple(as_text(v) for v in r["segment"]), s.measures[r["m"]], as_text(r["rx"]))
            parts.setdefault(key, {})[r["kind"]] = (r["n"], [r[v] for v in ("v1", "v2", "v3", "v4", "v5")])
    cuped = any("units_pre" in kinds for kinds in parts.values())  # rows.read() found all three of each, or none
    stats = {}
    for key, kinds in parts.items():
        n, (my, ml, yy, ll, yl) = kinds["units"]
        means, sums = {"y": my, "l": ml}, {("y", "y"): yy, ("l", "l"): ll, ("l", "y"): yl}
        if cuped:
            (n_pre, (myp, mlp, ypyp, lplp, yplp)), (n_cross, (y_yp, y_lp, l_yp, l_lp, _)) = (kinds["units_pre"],
                                                                                             kinds["units_cross"])
            if not n == n_pre == n_cross:
                raise SqlmetricsError(f"decide(): the units, units_pre and units_cross rows of run {key[2]!r}, "
                                      f"{key[1]} count {n}, {n_pre} and {n_cross} units: the statement gives them "
                                      "one count. Export every row of the statement as it gave them.")
            means.update(yp=myp, lp=mlp)
            sums.update({("yp", "yp"): ypyp, ("lp", "lp"): lplp, ("lp", "yp"): yplp, ("y", "yp"): y_yp,
                         ("lp", "y"): y_lp, ("l", "yp"): l_yp, ("l", "lp"): l_lp})
        stats[key] = units.from_sums(n, means, sums)
    return stats, cuped


def _pairs(run_names: list, baseline) -> list:
    """(run, baseline) of every comparison: every pair in the report's order, or every run against baseline."""
    if baseline is None:
        return [(run_names[j], run_names[i]) for i, j in combinations(range(len(run_names)), 2)]
    return [(r, baseline) for r in run_names if r != baseline]


def _mean_of(m: dict, aggregate: str):
    """A run's segment mean (_aggregate()) from its moments: the scaled values' mean, their sum, or exp(mean log)."""
    if aggregate == "sum":
        return m["total"]
    if not m["n"]:
        return None
    return math.exp(m["mean"]) if aggregate == "geometric" else m["mean"]


def _paired_from_row(c: Comparison, test: str, pair_rows: dict, better: str, max_p: float) -> None:
    """A paired comparison from its 'diffs' row, held for the runs in either order (x(rx) - x(ry))."""
    row = pair_rows.get(("diffs", c.segment, c.measure, c.run, c.baseline))
    flip = row is None
    row = row or pair_rows.get(("diffs", c.segment, c.measure, c.baseline, c.run))
    if row is None:  # no query with a value in both runs
        return
    n, mean, above, level, below = row["n"], row["v1"], int(row["v3"]), int(row["v4"]), int(row["v5"])
    if flip:
        mean, above, below = -mean, below, above
    _paired_moments(c, test, n, mean, row["v2"] / (n - 1) if n > 1 else math.nan, max_p)
    c.wins, c.ties, c.losses = (above, level, below) if better == "higher" else (below, level, above)


_NO_RESAMPLES = {"p": math.nan, "ci_low": math.nan, "ci_high": math.nan}


def _bootstrap_from_row(row: dict, n_resamples: int, confidence: float) -> dict:
    """p and the percentile interval from a 'boot' row (the resampled differences at bootstrap_ranks())."""
    if row["v1"] is None:  # one of the runs has no value in this segment
        return _NO_RESAMPLES
    _, (w_low, w_high) = bootstrap_ranks(n_resamples, confidence)
    return {"p": min(1.0, (row["n"] + 1) / (n_resamples + 1)), "ci_low": row["v1"] + w_low * (row["v2"] - row["v1"]),
            "ci_high": row["v3"] + w_high * (row["v4"] - row["v3"])}


def _ranks_from_row(pair_rows: dict, seg: tuple, m: str, run: str, base: str) -> dict:
    """_unpaired_test()'s ranks from the pair's 'ranks' row: run's rank sum, whichever run the row names first."""
    out = {"rank_sum_x": math.nan, "tie_term": math.nan}
    row = pair_rows.get(("ranks", seg, m, run, base))
    if row is not None:
        out.update(rank_sum_x=row["v1"], tie_term=row["v2"])
    elif (row := pair_rows.get(("ranks", seg, m, base, run))) is not None:
        out.update(rank_sum_x=row["n"] * (row["n"] + 1) / 2 - row["v1"], tie_term=row["v2"])
    return out


def _decide(comparisons: list, info: dict, correction, max_p: float, sequential=None) -> None:
    """Adjusted p-values over every comparison of the report, significance and winners. sequential (the tuning N):
    the moment tests' intervals and p-values become always-valid ones first (_always_valid)."""
    if sequential is not None:
        for c in comparisons:
            _always_valid(c, sequential, max_p)
    else:  # the moment tests' minimum detectable effect (se is theirs alone)
        shift = minimum_detectable(max_p)
        for c in comparisons:
            if c.se > 0:
                c.mde = shift * c.se
    for c, adj in zip(comparisons, adjust([c.p_value for c in comparisons], correction)):
        c.p_adjusted = adj
        improves = _improves(c.difference, info[c.measure][0])
        c.significant = not math.isnan(adj) and adj < max_p and improves is not None
        c.winner = (c.run if improves else c.baseline) if c.significant else None


# The power at which the minimum detectable effect is given: the usual 80%.
POWER = 0.8


def minimum_detectable(max_p: float, power: float = POWER) -> float:
    """The standardised difference (in standard errors) that a two-sided test at level max_p detects with
    probability `power`, by the normal approximation experimentation platforms use (as statsmodels'
    NormalIndPower): the δ at which Φ(δ - z) + Φ(-δ - z) = power, z the 1 - max_p/2 quantile. Without the far
    tail's term it is z + z_power; Newton's steps from there settle it (the power rises with δ)."""
    normal = NormalDist()
    z = normal.inv_cdf(1 - max_p / 2)
    delta = z + normal.inv_cdf(power)
    for _ in range(50):
        gap = normal.cdf(delta - z) + normal.cdf(-delta - z) - power
        step = gap / (normal.pdf(delta - z) - normal.pdf(-delta - z))
        delta -= step
        if abs(step) < 1e-15 * delta:
            break
    return delta


def _check_sequential(sequential, test: str) -> None:
    if sequential is None:
        return
    if isinstance(sequential, bool) or not isinstance(sequential, int) or sequential < 1:
        raise SqlmetricsError(f"sequential={sequential!r}: give the number of lists (or units) at which the always-valid "
                              "interval should be tightest, e.g. sequential=5000 (GrowthBook's default).")
    if test not in ("student", "welch"):
        raise SqlmetricsError(f"sequential= makes Student's and Welch's t-tests always valid; test={test!r} has no "
                              "sequential form here: use test='student' (or 'welch').")


def _always_valid(c: Comparison, tuning: int, max_p: float) -> None:
    """Student's or Welch's comparison as an asymptotic confidence sequence (Waudby-Smith, Arnold, Wu, Howard,
    Ramdas, "Time-uniform central limit theory and asymptotic confidence sequences", 2023, eq. 9 and 155; as
    GrowthBook's sequential testing): an interval and a p-value that stay valid however often the data are looked
    at. N is the comparison's lists (or units), the difference's variance its squared standard error; `tuning` is
    the N at which the interval is tightest."""
    if math.isnan(c.se) or c.se <= 0 or math.isnan(c.difference):
        return
    n, var = c.n, c.se * c.se
    rho2 = (-2 * math.log(max_p) + math.log(-2 * math.log(max_p) + 1)) / tuning
    spread = n * rho2 + 1
    half = math.sqrt(var * n) * math.sqrt(2 * spread * math.log(math.sqrt(spread) / max_p) / (n * n * rho2))
    c.ci_low, c.ci_high = c.difference - half, c.difference + half
    c.rel_ci_low = c.rel_ci_high = math.nan  # a fixed-sample interval: not given beside always-valid ones
    log_evidence = rho2 * (c.difference ** 2 * n / var) / (2 * spread) - math.log(spread) / 2
    c.p_value = min(1.0, math.exp(-log_evidence))


def _paired(pairing: str, test: str, counts: list) -> bool:
    """Paired when asked, or ('auto') when in every segment at least half of each run's queries are shared by
    all runs; welch and mannwhitney are unpaired tests. counts: (lists, those whose query every run has) per
    run and segment."""
    if pairing not in ("auto", "paired", "unpaired"):
        raise SqlmetricsError(f"pairing={pairing!r} is not valid: use 'auto', 'paired' or 'unpaired'.")
    if test in ("welch", "mannwhitney"):
        if pairing == "paired":
            raise SqlmetricsError(f"test={test!r} is an unpaired test; with pairing='paired' use 'student' or "
                                  "'wilcoxon'.")
        return False
    if pairing != "auto":
        return pairing == "paired"
    return all(2 * shared >= own for own, shared in counts)


def _check_pairing(paired: bool, test: str) -> None:
    if not paired and test not in UNPAIRED:
        raise SqlmetricsError(f"test={test!r} needs paired runs (the same queries), but these runs do not share "
                              "their queries: use test='welch', 'mannwhitney' or 'bootstrap'.")


def _list_counts(lists: dict, run_names: list) -> list:
    counts = []
    for per_run in lists.values():
        sets = [set(per_run.get(r, {})) for r in run_names]
        shared = len(set.intersection(*sets))
        counts += [(len(s), shared) for s in sets]
    return counts


def _paired_test(c: Comparison, test: str, x: list, y: list, raw_x: list, raw_y: list, better: str, tukey,
                 max_p: float) -> None:
    """Fill in a paired comparison: difference, effect size d_z, win/tie/loss and the closed-form tests."""
    d = [a - b for a, b in zip(x, y) if a is not None and b is not None]
    mean = math.fsum(d) / len(d) if d else math.nan
    var = math.fsum((v - mean) ** 2 for v in d) / (len(d) - 1) if len(d) >= 2 else math.nan
    _paired_moments(c, test, len(d), mean, var, max_p)
    c.wins, c.ties, c.losses = _wtl([(a, b) for a, b in zip(raw_x, raw_y) if a is not None and b is not None], better)
    if test == "wilcoxon":
        c.statistic, c.p_value = wilcoxon(d)
    elif test == "tukey":
        c.statistic, c.p_value = tukey
    elif test != "student":
        c.statistic = c.difference


def _paired_moments(c: Comparison, test: str, n: int, mean: float, var: float, max_p: float) -> None:
    """A paired comparison's n, difference, effect size d_z and (test='student') Student's t and the t interval
    of the difference at level 1 - max_p, from the count, mean and sample variance of its per-query differences."""
    c.n = n
    if n:
        c.difference = mean
    if n >= 2:
        c.effect_size = mean / math.sqrt(var) if var > 0 else math.nan
    if test == "student":
        c.statistic, c.p_value = student_moments(n, mean, var)
        if n >= 2:
            c.se = math.sqrt(var / n)
            half = t_quantile(1 - max_p / 2, n - 1) * c.se if var > 0 else 0.0
            c.ci_low, c.ci_high = mean - half, mean + half


def _unpaired_test(c: Comparison, test: str, x: dict, y: dict, ranks: dict, max_p: float) -> None:
    """Fill in an unpaired comparison from each run's moments and the pair's rank sum or bootstrap (computed in
    SQL): difference of means, Cohen's d (pooled sd), the test, and the interval of the difference at level
    1 - max_p: Welch's t interval, or the bootstrap's percentile interval (Mann-Whitney's U has none)."""
    c.n = x["n"] + y["n"]
    c.difference = x["mean"] - y["mean"] if x["n"] and y["n"] else math.nan
    if c.n > 2 and x["n"] and y["n"]:
        pooled = ((x["n"] - 1) * _zero_nan(x["var"]) + (y["n"] - 1) * _zero_nan(y["var"])) / (c.n - 2)
        c.effect_size = c.difference / math.sqrt(pooled) if pooled > 0 else math.nan
    if test == "welch":
        c.statistic, c.p_value, df = welch(x["n"], x["mean"], x["var"], y["n"], y["mean"], y["var"])
        if x["n"] >= 2 and y["n"] >= 2:
            se = c.se = math.sqrt(x["var"] / x["n"] + y["var"] / y["n"])
            half = t_quantile(1 - max_p / 2, df) * se if se > 0 else 0.0
            c.ci_low, c.ci_high = c.difference - half, c.difference + half
            _relative(c, (x["n"], x["mean"], x["var"]), (y["n"], y["mean"], y["var"]), max_p)
    elif test == "mannwhitney":
        c.statistic, c.p_value = mann_whitney(x["n"], y["n"], ranks["rank_sum_x"], ranks["tie_term"])
    else:
        c.statistic, c.p_value = c.difference, ranks["p"]
        c.ci_low, c.ci_high = ranks["ci_low"], ranks["ci_high"]


def _relative(c: Comparison, x: tuple, y: tuple, max_p: float) -> None:
    """The relative difference run / baseline - 1 and its interval at 1 - max_p, by the delta method on the log of
    the ratio (each arm's variance over its squared mean; Welch's degrees of freedom), as tea-tasting's. x, y: the
    run's and the baseline's (n, mean, variance)."""
    (nx, mx, vx), (ny, my, vy) = x, y
    if not mx or not my or (mx > 0) != (my > 0):
        return
    c.rel_difference = mx / my - 1
    sx, sy = vx / (mx * mx) / nx, vy / (my * my) / ny
    if sx + sy > 0:
        df = (sx + sy) ** 2 / (sx * sx / (nx - 1) + sy * sy / (ny - 1))
        spread = math.exp(t_quantile(1 - max_p / 2, df) * math.sqrt(sx + sy))
    else:
        spread = 1.0
    c.rel_ci_low, c.rel_ci_high = (mx / my) / spread - 1, (mx / my) * spread - 1


def _zero_nan(v: float) -> float:
    return 0.0 if math.isnan(v) else v


def _describe(m: dict, max_p: float) -> dict:
    """n, mean, sd, se and the t interval of the mean at level 1 - max_p (the tests' level: the table prints one)
    from a group's moments."""
    n, mean, var = m["n"], m["mean"], m["var"]
    sd = math.sqrt(var) if n >= 2 else math.nan
    se = sd / math.sqrt(n) if n >= 2 else math.nan
    half = t_quantile(1 - max_p / 2, n - 1) * se if n >= 2 else math.nan
    return {"n": n, "mean": mean, "sd": sd, "se": se, "ci_low": mean - half, "ci_high": mean + half}


def _improves(difference: float, better: str):
    """True if run beats baseline, False if the baseline beats the run, None for no difference."""
    if math.isnan(difference) or difference == 0:
        return None
    return (difference > 0) == (better == "higher")


def _scale(v, aggregate: str):
    """The scale a test works on: the values themselves, or their logs for a geometric mean (GMAP)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return math.log(max(v, GMAP_FLOOR)) if aggregate == "geometric" else float(v)


def _aggregate(per_run: list, aggregate: str):
    vals = [v for v in per_run if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if aggregate == "sum":
        return math.fsum(vals)
    if not vals:
        return None
    if aggregate == "geometric":
        return math.exp(math.fsum(math.log(max(v, GMAP_FLOOR)) for v in vals) / len(vals))
    return math.fsum(vals) / len(vals)


def _wtl(raw: list, better: str) -> tuple:
    wins = ties = losses = 0
    for x, y in raw:
        if abs(x - y) <= TIE * max(1.0, abs(x), abs(y)):
            ties += 1
        elif (x > y) == (better == "higher"):
            wins += 1
        else:
            losses += 1
    return wins, ties, losses


