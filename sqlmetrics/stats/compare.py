"""compare(): several runs on the same queries, with a significance test (significance.py) for every pair
and measure. Per-query values come from one evaluate() call (same options for every run); each pair is
tested on the queries present in all runs.
"""
from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

from ..catalogue import parse_all
from ..errors import SqlmetricsError
from ..evaluation import evaluate
from ..local.databases import DATABASE_FILES
from ..local.evaluate import python_rows
from ..options import COMPARE, CORRECTIONS, EVALUATE, TESTS, resolve, signature, taken_by
from ..statement import GMAP_FLOOR
from .report import Comparison, Report
from .significance import adjust, resample, student, tukey_hsd, wilcoxon

_TIE = 1e-12  # per-query values closer than this (relative) are a tie in win/tie/loss counts
# Recorded in the report (column mappings are not).
_RECORDED = ("queries", "ties", "relevance_level", "score_precision", "duplicates")


def compare(qrels, runs, measures, **options):
    """Compare runs ({name: run}, or a list of runs named by file stem) on `measures` with a significance test.

    Returns a Report: per-run means, and for every pair and measure the mean difference, the test statistic,
    the p-value (adjusted when `correction` is "bonferroni" or "holm"; the family is the pairs of one
    measure), win/tie/loss counts and, for the bootstrap, a (1 - max_p) percentile confidence interval.
    A run beats another significantly when p < max_p and the difference favours it (`better` of the
    measure); the report marks it with the other run's letter, as ranx does.

    The evaluation options (queries, ties, relevance_level, ...) are evaluate()'s.
    """
    o = resolve(COMPARE, options)
    _check_options(o.test, o.max_p, o.correction, o.seed, o.n_resamples)
    named = _named_runs(runs)
    if isinstance(measures, str):
        measures = [measures]
    calls = parse_all(measures, o.relevance_level, o.compat)
    evaluate_options = {k: v for k, v in o.as_dict().items() if k in _EVALUATE_KEYWORDS}
    results = evaluate(qrels, named, [c.text for c in calls], **evaluate_options, _fetch=python_rows)
    run_names = list(named) + [str(name) for name in o.fuse or {}]  # fused runs are compared like the others
    queries, values = _per_query_values(results.per_query, run_names, [c.text for c in calls])
    info = {c.text: (c.measure.better, c.measure.aggregate) for c in calls}
    return analyse(run_names, info, queries, values, test=o.test, max_p=o.max_p, correction=o.correction,
                   seed=o.seed, n_resamples=o.n_resamples, options={k: getattr(o, k) for k in _RECORDED})


compare.__signature__ = signature(COMPARE, "qrels, runs, measures")
_EVALUATE_KEYWORDS = {o.name for o in taken_by(COMPARE) if EVALUATE in o.takers}


def _check_options(test, max_p, correction, seed, n_resamples) -> None:
    if test not in TESTS:
        raise SqlmetricsError(f"test={test!r} is not a known test: use one of {', '.join(map(repr, TESTS))}.")
    if correction == "none":
        correction = None
    if correction not in CORRECTIONS:
        raise SqlmetricsError(f"correction={correction!r} is not known: use None, 'bonferroni' or 'holm'.")
    if test == "tukey" and correction:
        raise SqlmetricsError("test='tukey' already controls the error rate over all pairs of runs; "
                              "drop the correction (or pick another test).")
    if isinstance(max_p, bool) or not isinstance(max_p, (int, float)) or not 0 < max_p < 1:
        raise SqlmetricsError(f"max_p={max_p!r} must be a number strictly between 0 and 1, such as 0.01 or 0.05.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise SqlmetricsError(f"seed={seed!r} must be an integer between 0 and 2**32 - 1.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or not 1 <= n_resamples <= 10**7:
        raise SqlmetricsError(f"n_resamples={n_resamples!r} must be an integer between 1 and 10,000,000.")


def run_name(obj, index: int) -> str:
    """A run's display name: the file stem for a path ('bm25.run.gz' -> 'bm25'), else run1, run2, ..."""
    if isinstance(obj, (str, Path)):
        text = str(obj)
        if text == "-":
            return "stdin"
        path, sep, table = text.rpartition(":")
        if sep and table and path.lower().endswith(DATABASE_FILES):
            return table
        name = Path(text).name
        for suffix in (".gz", ".zst", ".bz2"):
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
        for suffix in (".txt", ".run", ".trec", ".tsv", ".csv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json"):
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        stem = Path(name).stem
        return stem or name or text
    return f"run{index + 1}"


def unique_names(objs) -> list[str]:
    """Names for several runs: stems; where stems collide, whole file names; then paths; then #2, #3."""
    objs = list(objs)
    names = [run_name(o, i) for i, o in enumerate(objs)]
    for fallback in (lambda o, i: Path(str(o)).name, lambda o, i: str(o)):
        dup = {n for n in names if names.count(n) > 1}
        if not dup:
            break
        names = [fallback(o, i) if n in dup and isinstance(o, (str, Path)) else n for i, (o, n) in enumerate(zip(objs, names))]
    seen: dict = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


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


def _per_query_values(per_query: tuple, run_names: list, measures: list):
    """(common query ids, {measure: [[value per common query] per run]}) from evaluate()'s per-query rows."""
    names, rows = per_query
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    runs, qids = columns["run"], columns["query_id"]
    row_of: dict = {name: {} for name in run_names}
    for i, (r, q) in enumerate(zip(runs, qids)):
        row_of[r][q] = i
    common = set.intersection(*(set(rows) for rows in row_of.values()))
    queries = sorted(common)
    values = {m: [[columns[m][row_of[r][q]] for q in queries] for r in run_names] for m in measures}
    return queries, values


# ---------------------------------------------------------------------------------------------- analysis


def analyse(run_names: list, info: dict, queries: list, values: dict, *, test="student", max_p=0.01,
            correction=None, seed=42, n_resamples=10000, options=None):
    """The report for per-query values already in hand.

    info: {measure: (better, aggregate)} with better in higher/lower and aggregate in mean/sum/geometric;
    values: {measure: [[value or None per query] per run]}, aligned on `queries`.
    """
    if correction == "none":
        correction = None
    _check_options(test, max_p, correction, seed, n_resamples)
    measures = list(info)
    means = {r: {} for r in run_names}
    comparisons = []
    jobs = []  # (comparison index, differences) for the tests that resample
    for m in measures:
        better, aggregate = info[m]
        scaled = [[_scale(v, aggregate) for v in per_run] for per_run in values[m]]
        for r, per_run in zip(run_names, values[m]):
            means[r][m] = _aggregate(per_run, aggregate)
        tukey = tukey_hsd(scaled) if test == "tukey" else None
        for i, j in combinations(range(len(run_names)), 2):
            # run j against baseline i: difference = run - baseline
            pairs = [(x, y) for x, y in zip(scaled[j], scaled[i]) if x is not None and y is not None]
            raw = [(x, y) for x, y in zip(values[m][j], values[m][i]) if x is not None and y is not None]
            d = [x - y for x, y in pairs]
            wins, ties, losses = _wtl(raw, better)
            c = Comparison(measure=m, run=run_names[j], baseline=run_names[i], n=len(d),
                           difference=math.fsum(d) / len(d) if d else math.nan,
                           statistic=math.nan, p_value=math.nan, wins=wins, ties=ties, losses=losses)
            if test == "student":
                c.statistic, c.p_value = student(d)
            elif test == "wilcoxon":
                c.statistic, c.p_value = wilcoxon(d)
            elif test == "tukey":
                c.statistic, c.p_value = tukey[0][j][i], tukey[1][j][i]
            else:
                c.statistic = c.difference
                jobs.append((len(comparisons), d))
            comparisons.append(c)
    if jobs:
        confidence = 1 - max_p
        for (index, _), res in zip(jobs, resample(test, [d for _, d in jobs], seed, n_resamples, confidence)):
            c = comparisons[index]
            c.p_value, c.exact = res["p"], res["exact"]
            if test == "bootstrap":
                c.ci_low, c.ci_high = res["ci_low"], res["ci_high"]
    for m in measures:
        family = [c for c in comparisons if c.measure == m]
        for c, adj in zip(family, adjust([c.p_value for c in family], correction)):
            c.p_adjusted = adj
            improves = _improves(c.difference, info[m][0])
            c.significant = not math.isnan(adj) and adj < max_p and improves is not None
            c.winner = (c.run if improves else c.baseline) if c.significant else None
    return Report(runs=list(run_names), measures=measures, better={m: info[m][0] for m in measures},
                  aggregate={m: info[m][1] for m in measures}, means=means, comparisons=comparisons, test=test,
                  max_p=max_p, correction=correction, seed=seed, n_resamples=n_resamples, n_queries=len(queries),
                  options=dict(options or {}))


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
        if abs(x - y) <= _TIE * max(1.0, abs(x), abs(y)):
            ties += 1
        elif (x > y) == (better == "higher"):
            wins += 1
        else:
            losses += 1
    return wins, ties, losses


