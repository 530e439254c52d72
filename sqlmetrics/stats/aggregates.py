"""The aggregates of the closed-form tests (Student's t, Welch's t, Mann-Whitney U), computed on the engine
that holds the data in one statement built on the evaluation statement, so that only they are fetched.

The statement is written once (PostgreSQL's SQL, read by sqlglot) and transpiled to the engine's dialect;
it keeps to DESIGN.md's portable subset: CAST before dividing, SUM(CASE ...) for counts, null-safe
segment joins (IS NOT DISTINCT FROM), window functions for ranks. Its rows, one `kind` each:

    lists    run, segment; n = the run's lists, v1 = those whose query every run has (shared)
    moments  sc (0: own lists, 1: shared, 2 with complete=: the shared lists where every run has a value of
             the measure, Tukey's HSD's groups), run, segment, measure; n, v1 = mean, v2 = sum of squared
             deviations, v3 = sum of the raw values (of the logs, for a geometric measure, in mean/ss)
    ranks    run rx < run ry, segment, measure; v1 = rx's rank sum in the pooled values (ties, within ranks.py's
             tolerance, averaged),
             v2 = sum(t^3 - t) over groups of t tied values
    diffs    rx < ry, segment, measure, over the shared queries: n, v1 = mean and v2 = sum of squared
             deviations of x(rx) - x(ry); v3, v4, v5 = queries where rx's raw value is above, level, below
    boot     (with bootstrap=) sc (1: paired, over the shared queries' differences x(rx) - x(ry); 0: unpaired,
             rx's and ry's own values), rx <> ry, segment, measure; n = resamples at least as far from the
             observed difference as it is from 0, v1 .. v4 = the resampled differences at bootstrap_ranks()

The bootstrap is significance.py's local one, the Poisson bootstrap: each value weighs Poisson(1) drawn from
draws.py's hash of its slot (the values in ascending order, rx's at slots 0 .. nx-1 and ry's at nx .. nx+ny-1), so
its interval and p equal the local ones, and a resample is a weighted sum, never a table of draws; a resample's
slots differ with the direction of the difference, so both directions are drawn.
"""
from __future__ import annotations

import math
import uuid
from contextlib import contextmanager

import sqlglot
from sqlglot import exp

from ..catalogue import parse_all
from ..catalogue.names import COMPAT
from ..dialects import render
from ..dialects.info import dialect_info
from ..dialects.portable import name_qualified_columns
from ..engines import evaluation_statement, run_statement
from ..errors import SqlmetricsError
from ..identifiers import column_identifier, table_reference
from ..options import check_log_options
from ..plan import output_columns
from ..results import json_text
from ..statement import GMAP_FLOOR
from .draws import RESAMPLED_TIE, draw_sql, poisson_sql, replicates_sql, slots_sql
from .ranks import tolerant_ranks_sql

# The tests whose statistics are aggregates: with engine= (and in render_compare()'s statement), only those leave
# the engine. fisher and wilcoxon need every per-list value: the randomization test's exact enumeration and scipy's
# switch to a permutation test of the signed ranks (ties or zeros among few queries).
IN_ENGINE = ("student", "welch", "mannwhitney", "bootstrap", "tukey")
TIE = 1e-12  # values closer than this (relative) are a tie in win/tie/loss counts, here and in compare.py
COLUMNS = ("kind", "sc", "rx", "ry", "segment", "m", "n", "v1", "v2", "v3", "v4", "v5")
SETTINGS = ("test", "max_p", "n_resamples", "seed", "pairing", "unit")  # the test's, which render_compare() records
# render_compare()'s rows end with these: SETTINGS, the segment columns' names (a JSON list: decide() finds the
# segments by name, whatever the order of an export's columns) and the statement's number of rows (a dropped or
# filtered row is known for one)
LABELS = (*SETTINGS, "group_by", "n_rows")


def aggregate_rows(engine, calls: list, qrels, run, options: dict, bootstrap=None, complete=False) -> list:
    """The aggregate statement's rows, run on the engine, as dicts of COLUMNS (the segment columns' values as
    one tuple). options: evaluate_on()'s, with run_name mapped; bootstrap: None or (seed, n_resamples,
    confidence, scopes) with scopes the boot rows' sc values to compute (1 paired, 0 unpaired); complete: add
    the moments of scope 2."""
    o, kind, sql, tables = evaluation_statement(engine, [c.text for c in calls], qrels, run, **options)
    segs = [o.group_by] if isinstance(o.group_by, str) else list(o.group_by or [])
    statement = _statement(segs, output_columns(calls), [c.measure.aggregate for c in calls], bootstrap, complete)
    with _evaluated(engine, kind, [sql], tables) as (evaluation,):
        return _run(engine, kind, statement, sqlglot.parse_one(evaluation, read=dialect_info(kind).sqlglot), tables,
                    len(segs))


@contextmanager
def _evaluated(engine, kind: str, sqls: list, tables: dict):
    """The evaluations' statements as the aggregates read them: as they are, or on MariaDB staged. MariaDB does
    not share a WITH query's result: it evaluates it again at each reference, and through the chain of references
    one statement would evaluate the measures hundreds of times (EXPLAIN of the demo runs' student test: 226 scans
    of the run table, not finished in minutes). There each evaluation is a TEMPORARY table, the connection's own,
    which the aggregates read and which is dropped afterwards."""
    if kind != "mysql":
        yield sqls
        return
    staged = []
    try:
        for sql in sqls:
            staged.append(f"sqlmetrics_eval_{uuid.uuid4().hex[:16]}")
            run_statement(engine, kind, f"CREATE TEMPORARY TABLE {staged[-1]} AS {sql}", tables)
        yield [f"SELECT * FROM {name}" for name in staged]
    finally:
        for name in staged:
            run_statement(engine, kind, f"DROP TEMPORARY TABLE IF EXISTS {name}", tables)


def unit_statistics(engine, calls: list, qrels, run, options: dict, unit: str, max_p: float, pre_period=None,
                    covariate: str | None = None) -> list:
    """compare(unit=, engine=): render_compare()'s rows over units (with pre_period=, a table there, or covariate=,
    a column of the run, CUPED's too), run on the engine, as dicts by column name (decide() reads them)."""
    segs = list(check_log_options(qrels, options.get("group_by"), options.get("label"), options.get("relevance")))
    texts = [c.text for c in calls]
    o, kind, sql, tables = evaluation_statement(engine, texts, qrels, run, **{**options, "group_by": [*segs, unit]})
    pre_sql = None
    if covariate is not None:
        pre_sql = covariate_sql(kind, run, unit, covariate, output_columns(calls))
    elif pre_period is not None:
        _, _, pre_sql, pre_tables = evaluation_statement(engine, texts, qrels, pre_period,
                                                         **_pre_period_options(options, unit))
        tables = {**tables, **pre_tables}
    names = ["kind", "sc", "rx", "ry", *segs, "m", "measure", "n", "v1", "v2", "v3", "v4", "v5", *LABELS]
    with _evaluated(engine, kind, [sql] + ([pre_sql] if pre_sql else []), tables) as evaluations:
        # the resampling settings are render_compare()'s defaults: Welch's test over units draws nothing
        tree = _units_tree(kind, calls, segs, unit, ("welch", max_p, 10000, 42, "unpaired", unit), evaluations[0],
                           evaluations[1] if pre_sql else None)
        rows = run_statement(engine, kind, tree.sql(dialect_info(kind).sqlglot), tables)
    return [dict(zip(names, r)) for r in rows]


def _units_tree(kind: str, calls: list, segs: list, unit: str, settings: tuple, evaluation: str,
                pre_evaluation: str | None) -> exp.Expression:
    """The statement of the moments over units (_units_statement) on the evaluation's SQL for `kind` (and, for
    CUPED, the pre-period's), its rows labelled with LABELS' values."""
    read = dialect_info(kind).sqlglot
    statement = _units_statement(segs, unit, output_columns(calls), (segs, [c.text for c in calls], settings),
                                 pre=pre_evaluation is not None)
    before = None if pre_evaluation is None else sqlglot.parse_one(pre_evaluation, read=read)
    return _tree(kind, statement, sqlglot.parse_one(evaluation, read=read), before)


def _renamed(tree: exp.Expression, prefix: str) -> exp.Expression:
    """The statement with its WITH queries renamed prefix + name (and every reference to them): Spark refuses a
    WITH query named as one of another WITH, and the pre-period's evaluation names its queries as the test's does."""
    names = {cte.alias for cte in tree.find_all(exp.CTE)}
    for cte in tree.find_all(exp.CTE):
        cte.set("alias", exp.TableAlias(this=exp.to_identifier(prefix + cte.alias)))
    for table in tree.find_all(exp.Table):
        if not table.db and table.name in names:
            table.set("this", exp.to_identifier(prefix + table.name))
    for column in tree.find_all(exp.Column):
        if column.table in names:
            column.set("table", exp.to_identifier(prefix + column.table))
    return tree


def covariate_sql(dialect: str, run, unit: str, covariate: str, outs: list) -> str:
    """covariate=: CUPED's per-unit covariate from a column of the run, shaped as a pre-period's per-list values are
    (the unit's column, each measure's): one row per unit, its value for every measure. A unit whose rows disagree
    or hold NULL gets NULL, which the statement leaves out: it has no covariate, as a unit absent from a pre-period."""
    info = dialect_info(dialect)
    d, fold = info.sqlglot, info.fold_case
    u = column_identifier(unit, d, fold)
    x = exp.cast(exp.Column(this=column_identifier(covariate, d, fold)), exp.DataType.build("DOUBLE"))
    same = exp.and_(exp.EQ(this=exp.func("MIN", x.copy()), expression=exp.func("MAX", x.copy())),
                    exp.EQ(this=exp.func("COUNT", x.copy()), expression=exp.func("COUNT", exp.Star())))
    value = exp.Case(ifs=[exp.If(this=same, true=exp.func("MIN", x.copy()))])
    select = exp.select(exp.alias_(exp.Column(this=u.copy()), u.copy()),
                        *(exp.alias_(value.copy(), out) for out in outs))
    return select.from_(table_reference(run, d, fold)).group_by(exp.Column(this=u.copy())).sql(d)


def _pre_period_options(options: dict, unit: str) -> dict:
    """The pre-period log's evaluation options: the experiment's, its lists keyed by unit alone (no arm, no
    segment: a unit's whole pre-period is its covariate)."""
    columns = {r: c for r, c in (options.get("columns") or {}).items() if r != "run_name"}
    return {**options, "columns": columns, "group_by": [unit]}


def _run(engine, kind: str, statement: str, evaluation: exp.Expression, tables: dict, k: int) -> list:
    """The aggregate statement (written in PostgreSQL's SQL) on top of the evaluation, run in the engine's
    dialect; rows as aggregate_rows() returns them (k segment columns)."""
    tree = _tree(kind, statement, evaluation)
    rows = run_statement(engine, kind, tree.sql(dialect_info(kind).sqlglot, copy=False), tables)
    # MySQL/MariaDB return an integer SUM as a DECIMAL: the counts become ints and the values floats
    return [dict(zip(COLUMNS, [*r[:4], tuple(r[4:4 + k]), *(_int(v) for v in r[4 + k:6 + k]),
                               *(None if v is None else float(v) for v in r[6 + k:])])) for r in rows]


def _tree(kind: str, statement: str, evaluation: exp.Expression, before: exp.Expression | None = None
          ) -> exp.Expression:
    """The aggregate statement (PostgreSQL's SQL) with the evaluation as its first WITH query, for `kind` (and
    with unit= and a pre-period, that period's evaluation, `before`, as the second)."""
    tree = sqlglot.parse_one(statement, read="postgres")
    name_qualified_columns(tree)
    ctes = tree.args["with_"].expressions
    tree.set("with_", None)
    tree = tree.with_("ab_v", as_=evaluation, copy=False)  # the evaluation first: the others read it
    if before is not None:
        tree = tree.with_("ab_pv", as_=_renamed(before, "pre_"), copy=False)
    for cte in ctes:
        tree = tree.with_(cte.alias, as_=cte.this, copy=False)
    if kind == "clickhouse":  # it plans each WITH query anew where it is read: the bootstrap's plan is large
        tree.set("settings", [exp.EQ(this=exp.column("query_plan_max_optimizations_to_apply"),
                                     expression=exp.Literal.number(1000000))])
    return tree


def render_compare(measures, dialect: str = "duckdb", qrels="qrels", run="run", *, test: str = "student",
                   max_p: float = 0.01, seed: int = 42, n_resamples: int = 10000, pairing: str = "auto",
                   unit: str | None = None, pre_period=None, covariate: str | None = None, **options) -> str:
    """compare()'s sufficient statistics as ONE SQL statement for `dialect`, over tables that live in that engine:
    per segment, run (pair of runs) and measure the counts, means, sums of squares, rank sums and (test=
    'bootstrap') the resampled differences that the test needs; never a per-list value. Fetch its rows from the
    engine (into a file or a frame) and decide() turns them into compare()'s report. measures, qrels, run and
    the evaluation options are render()'s (columns= maps run_name: the runs of one table, such as A/B arms);
    test, max_p, seed, n_resamples, pairing and unit are compare()'s, recorded in the rows; with unit= (Welch's
    test over units), the rows are each arm's moments over units (kind 'units') and its number of units, and with
    pre_period= (a table of the log before the test, read as `run` is) or covariate= (a column of `run`, each
    unit's value from before) CUPED's moments too.

    Its columns: kind, sc, rx, ry, the segment columns by name, m and measure (the measure's index and name), n,
    v1 .. v5 (aggregates.py's docstring says what each kind holds), then test, max_p, n_resamples, seed, pairing
    and unit (SETTINGS), group_by (the segment columns' names as a JSON list) and n_rows (the statement's rows)."""
    info = dialect_info(dialect)
    if test not in IN_ENGINE:
        raise SqlmetricsError(f"test={test!r}: the statistics of {', '.join(map(repr, IN_ENGINE))} are aggregates; "
                              f"{test!r} needs every per-list value (compare() fetches them).")
    if "run_name" not in (options.get("columns") or {}):
        raise SqlmetricsError("render_compare() compares the runs of one table: map its run_name column in columns= "
                              "(e.g. columns={'run_name': 'arm'}).")
    calls = parse_all(measures, options.get("relevance_level", 1), options.get("compat", COMPAT))
    segs = list(check_log_options(qrels, options.get("group_by"), options.get("label"), options.get("relevance")))
    # decide() reads the names case-insensitively (Snowflake upper-cases the unquoted ones)
    if taken := [g for g in segs if g.lower() in {c.lower() for c in (*COLUMNS, "measure", *LABELS)}]:
        raise SqlmetricsError(f"group_by= {taken[0]!r}: the statistics' rows have a column of that name (in any "
                              "case); rename the segment column.")
    if unit is not None and (test not in ("student", "welch") or pairing == "paired" or unit in segs):
        raise SqlmetricsError("unit= takes Welch's test (test='welch' or 'student') on unpaired arms, and a unit "
                              "column that is not a segment.")
    check_covariate(unit, pre_period, covariate)
    if unit is not None and (other := [c.text for c in calls if c.measure.aggregate != "mean"]):
        raise SqlmetricsError(f"unit= sums each unit's values of a measure averaged over lists; {other[0]} is "
                              "aggregated otherwise.")
    labels = (test, max_p, n_resamples, seed, pairing, unit)
    scopes = {"paired": (1,), "unpaired": (0,)}.get(pairing, (0, 1))
    boot = (seed, n_resamples, 1 - max_p, scopes) if test == "bootstrap" else None
    if unit is not None:  # the lists keyed by their unit too: summed per unit in the statement
        options["group_by"] = [*segs, unit]
    evaluation = render([c.text for c in calls], dialect=info.name, qrels=qrels, run=run, per_query=True, **options)
    described = [line for line in evaluation.splitlines() if line.startswith("--")]  # render()'s header
    evaluation = "\n".join(line for line in evaluation.splitlines() if not line.startswith("--"))
    if unit is None:
        statement = _statement(segs, output_columns(calls), [c.measure.aggregate for c in calls], boot,
                               complete=test == "tukey", labels=(segs, [c.text for c in calls], labels))
        tree = _tree(info.name, statement, sqlglot.parse_one(evaluation, read=info.sqlglot))
    else:
        pre_sql = None
        if covariate is not None:
            pre_sql = covariate_sql(info.name, run, unit, covariate, output_columns(calls))
        elif pre_period is not None:  # the same measures on the log before the test, per unit
            pre_sql = render([c.text for c in calls], dialect=info.name, qrels=qrels, run=pre_period, per_query=True,
                             header=False, **_pre_period_options(options, unit))
        tree = _units_tree(info.name, calls, segs, unit, labels, evaluation, pre_sql)
    header = [f"-- sqlmetrics: compare's sufficient statistics ({test}, max_p={max_p!r}, pairing={pairing!r}"
              + (f", seed={seed}, n_resamples={n_resamples}" if test == "bootstrap" else "") + "), rendered for "
              f"{info.name}; save its rows and `sqlmetrics decide` (decide()) prints the comparison. Its evaluation:",
              *described]
    return "\n".join(header) + "\n" + tree.sql(dialect=info.sqlglot, pretty=True,
                                               unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)


def check_covariate(unit, pre_period, covariate) -> None:
    """CUPED's covariate comes from one place, per unit."""
    if (pre_period is not None or covariate is not None) and unit is None:
        raise SqlmetricsError(f"{'pre_period' if pre_period is not None else 'covariate'}= gives each unit its "
                              "covariate: name the unit's column in unit= (the unit of randomisation, such as "
                              "user_id).")
    if pre_period is not None and covariate is not None:
        raise SqlmetricsError("pre_period= and covariate= each give CUPED its covariate: give one of them.")


def _int(value):
    return None if value is None else int(value)


def bootstrap_ranks(n_resamples: int, confidence: float) -> tuple:
    """The 1-based ranks among the sorted resampled differences that the percentile interval interpolates
    between (as numpy's and DuckDB's linear quantile), and the interpolation weights: (ranks, weights)."""
    alpha = (1 - confidence) / 2
    ranks, weights = [], []
    for q in (alpha, 1 - alpha):
        pos = q * (n_resamples - 1)
        ranks += [math.floor(pos) + 1, math.ceil(pos) + 1]
        weights.append(pos - math.floor(pos))
    return ranks, weights


def _statement(segs: list, outs: list, aggregates: list, bootstrap=None, complete=False, labels=None) -> str:
    """The aggregate statement over ab_v, the evaluation's per-list rows. labels, for render_compare(): (segment
    names, measure names, SETTINGS' values), which name its columns and fill its last ones."""
    s = [f"s{i}" for i in range(len(segs))]

    def cols(prefix=""):
        return "".join(f"{prefix}{c}, " for c in s)

    def same(a, b):
        return "".join(f" AND {a}.{c} IS NOT DISTINCT FROM {b}.{c}" for c in s)

    def scaled(col, aggregate):
        raw = f"CAST({col} AS DOUBLE PRECISION)"
        if aggregate != "geometric":
            return raw
        return f"LN(CASE WHEN {raw} < {GMAP_FLOOR!r} THEN {GMAP_FLOOR!r} ELSE {raw} END)"

    null = "CAST(NULL AS DOUBLE PRECISION)"
    seg_select = "".join(f"{exp.to_identifier(g, quoted=True).sql('postgres')} AS {c}, " for g, c in zip(segs, s))
    measures = "".join(f", {out} AS m{j}" for j, out in enumerate(outs))
    vals = " UNION ALL ".join(
        f"SELECT run, {cols()}query_id, is_shared, {j} AS m, CAST(m{j} AS DOUBLE PRECISION) AS raw, "
        f"{scaled(f'm{j}', a)} AS x FROM ab_flagged WHERE m{j} IS NOT NULL" for j, a in enumerate(aggregates))
    big = ("CASE WHEN ABS(a.raw) >= ABS(b.raw) THEN (CASE WHEN ABS(a.raw) > 1 THEN ABS(a.raw) ELSE 1 END) "
           "ELSE (CASE WHEN ABS(b.raw) > 1 THEN ABS(b.raw) ELSE 1 END) END")
    complete_lists = f"""
ab_complete AS (SELECT {cols()}query_id, m FROM ab_vals WHERE is_shared = 1 GROUP BY {cols()}query_id, m
             HAVING COUNT(*) = (SELECT COUNT(DISTINCT run) FROM ab_base)),""" if complete else ""
    complete_scope = f"""
           UNION ALL SELECT 2 AS sc, v.run, {cols('v.')}v.m, v.raw, v.x FROM ab_vals AS v
           JOIN ab_complete AS c ON c.query_id = v.query_id AND c.m = v.m{same('v', 'c')}""" if complete else ""
    boot = f"\nUNION ALL\nSELECT 'boot', sc, rx, ry, {cols()}m, n, v1, v2, v3, v4, {null} FROM ab_boot" if bootstrap else ""
    final = f"""
SELECT 'lists' AS kind, 0 AS sc, run AS rx, run AS ry, {cols()}0 AS m, COUNT(*) AS n,
       CAST(SUM(is_shared) AS DOUBLE PRECISION) AS v1, {null} AS v2, {null} AS v3, {null} AS v4, {null} AS v5
FROM ab_flagged GROUP BY run{''.join(f', {c}' for c in s)}
UNION ALL
SELECT 'moments', sc, run AS rx, run AS ry, {cols()}m, n, mean, ss, total, {null}, {null} FROM ab_squares
UNION ALL
SELECT 'ranks', 0, rx, ry, {cols()}m, COUNT(*), SUM(CASE WHEN is_x = 1 THEN r ELSE 0 END), SUM(t * t - 1),
       {null}, {null}, {null}
FROM ab_ranked GROUP BY rx, ry, {cols()}m
UNION ALL
SELECT 'diffs', 0, o.rx, o.ry, {cols('o.')}o.m, o.n, o.mean, SUM((l.d - o.mean) * (l.d - o.mean)),
       CAST(SUM(CASE WHEN l.cmp = 1 THEN 1 ELSE 0 END) AS DOUBLE PRECISION),
       CAST(SUM(CASE WHEN l.cmp = 0 THEN 1 ELSE 0 END) AS DOUBLE PRECISION),
       CAST(SUM(CASE WHEN l.cmp = -1 THEN 1 ELSE 0 END) AS DOUBLE PRECISION)
FROM ab_diffs AS l JOIN ab_dmoments AS o ON l.rx = o.rx AND l.ry = o.ry AND l.m = o.m{same('l', 'o')}
GROUP BY o.rx, o.ry, {cols('o.')}o.m, o.n, o.mean{boot}"""
    return f"""
WITH ab_base AS (SELECT run_name AS run, {seg_select}query_id{measures} FROM ab_v),
ab_shared AS (SELECT {cols()}query_id FROM ab_base GROUP BY {cols()}query_id
           HAVING COUNT(*) = (SELECT COUNT(DISTINCT run) FROM ab_base)),
ab_flagged AS (SELECT b.*, CASE WHEN s.query_id IS NULL THEN 0 ELSE 1 END AS is_shared
            FROM ab_base AS b LEFT JOIN ab_shared AS s ON b.query_id = s.query_id{same('b', 's')}),
ab_vals AS ({vals}),{complete_lists}
ab_scoped AS (SELECT 0 AS sc, run, {cols()}m, raw, x FROM ab_vals
           UNION ALL SELECT 1 AS sc, run, {cols()}m, raw, x FROM ab_vals WHERE is_shared = 1{complete_scope}),
ab_moments AS (SELECT sc, run, {cols()}m, COUNT(*) AS n, AVG(x) AS mean, SUM(raw) AS total FROM ab_scoped
            GROUP BY sc, run, {cols()}m),
ab_squares AS (SELECT o.sc, o.run, {cols('o.')}o.m, o.n, o.mean, o.total, SUM((l.x - o.mean) * (l.x - o.mean)) AS ss
            FROM ab_scoped AS l JOIN ab_moments AS o ON l.sc = o.sc AND l.run = o.run AND l.m = o.m{same('l', 'o')}
            GROUP BY o.sc, o.run, {cols('o.')}o.m, o.n, o.mean, o.total),
ab_runs AS (SELECT DISTINCT run FROM ab_base),
ab_pairs AS (SELECT a.run AS rx, b.run AS ry FROM ab_runs AS a JOIN ab_runs AS b ON a.run < b.run),
ab_pooled AS (SELECT p.rx, p.ry, {cols('l.')}l.m, l.x, CASE WHEN l.run = p.rx THEN 1 ELSE 0 END AS is_x
           FROM ab_pairs AS p JOIN ab_vals AS l ON l.run = p.rx OR l.run = p.ry),
ab_ranked AS ({tolerant_ranks_sql("ab_pooled", f"rx, ry, {cols()}m", "is_x")}),
ab_diffs AS (SELECT a.run AS rx, b.run AS ry, {cols('a.')}a.m, a.x - b.x AS d,
                 CASE WHEN ABS(a.raw - b.raw) <= {TIE!r} * ({big}) THEN 0 WHEN a.raw > b.raw THEN 1 ELSE -1 END AS cmp
          FROM ab_vals AS a JOIN ab_vals AS b ON a.run < b.run AND a.query_id = b.query_id AND a.m = b.m{same('a', 'b')}
          WHERE a.is_shared = 1 AND b.is_shared = 1),
ab_dmoments AS (SELECT rx, ry, {cols()}m, COUNT(*) AS n, AVG(d) AS mean FROM ab_diffs GROUP BY rx, ry, {cols()}m){
    _bootstrap(s, same, *bootstrap) if bootstrap else ''}
{final if labels is None else _labelled(final, s, labels)}
"""


def _labelled(final: str, s: list, labels: tuple) -> str:
    """The statement's rows as render_compare() gives them: the segments by name, each measure's name beside
    its index, and on every row the test's settings, the segments' names and the number of rows (decide() reads
    them back)."""
    segs, names, (test, max_p, n_resamples, seed, pairing, unit) = labels
    quoted = [exp.to_identifier(g, quoted=True).sql("postgres") for g in segs]
    measure = "CASE m " + " ".join(f"WHEN {j} THEN {exp.Literal.string(name).sql('postgres')}"
                                   for j, name in enumerate(names)) + " END"
    return f""",
ab_stats AS ({final})
SELECT kind, sc, rx, ry, {''.join(f'{c} AS {q}, ' for c, q in zip(s, quoted))}m, {measure} AS measure, n, v1, v2, v3,
       v4, v5, {exp.Literal.string(test).sql('postgres')} AS test, CAST({float(max_p)!r} AS DOUBLE PRECISION) AS max_p,
       {int(n_resamples)} AS n_resamples, {int(seed)} AS seed, {exp.Literal.string(pairing).sql('postgres')} AS pairing,
       {'CAST(NULL AS TEXT)' if unit is None else exp.Literal.string(unit).sql('postgres')} AS unit,
       {exp.Literal.string(json_text(list(segs))).sql('postgres')} AS group_by, COUNT(*) OVER () AS n_rows
FROM ab_stats"""


def _units_statement(segs: list, unit: str, outs: list, labels: tuple, pre: bool = False) -> str:
    """render_compare()'s statement with unit=: each list's values summed per unit (y, the sum; l, the lists),
    then per segment, arm and measure the units' count, the means of y and l and the sums of squared deviations
    and of cross-products (kind 'units': n, v1 = mean y, v2 = mean l, v3 = Σ(y - ȳ)², v4 = Σ(l - l̄)², v5 =
    Σ(y - ȳ)(l - l̄)), and each arm's units over all segments (kind 'unit_count': n, its units; v1, its lists
    without a unit id (NULL, empty or spaces only); v2, all its lists; v3, the units seen in more than one arm, of
    every arm (the same on each row); v4, its lists of those units), and each arm's lists and units per segment
    (kind 'unit_lists': n, v1; what the moments' rows of that arm and segment promise): the delta method's
    sufficient statistics (units.py). The lists without a unit id and the units of several arms are left out of the moments (decide()
    warns of them, and refuses more than max_excluded of either). With pre (CUPED; the pre-period's per-list rows are ab_pv), each unit's
    pre-period sums yp and lp (0 for a unit not seen then) join y and l: kind 'units_pre' holds their means and
    sums of products as 'units' does y's and l's, kind 'units_cross' v1 .. v4 = Σ(y - ȳ)(yp - ȳp), Σ(y - ȳ)(lp -
    l̄p), Σ(l - l̄)(yp - ȳp), Σ(l - l̄)(lp - l̄p)."""
    s = [f"s{i}" for i in range(len(segs))]
    cols = "".join(f"{c}, " for c in s)
    ocols = "".join(f"o.{c}, " for c in s)
    ident = lambda name: exp.to_identifier(name, quoted=True).sql("postgres")  # noqa: E731
    seg_select = "".join(f"{ident(g)} AS {c}, " for g, c in zip(segs, s))
    measures = "".join(f", {out} AS m{j}" for j, out in enumerate(outs))
    # an id of spaces alone (or empty) names no unit, as NULL does; an id of another type is never blank. LENGTH, not
    # = '': Oracle's '' is NULL, and its CLOB (sqlglot's TEXT there) is not compared with =
    no_blank = f"CASE WHEN COALESCE(LENGTH(TRIM(CAST({ident(unit)} AS TEXT))), 0) = 0 THEN NULL ELSE {ident(unit)} END"

    def values(table: str, key: str) -> str:
        return " UNION ALL ".join(f"SELECT {key}u, {j} AS m, CAST(m{j} AS DOUBLE PRECISION) AS x FROM {table} "
                                  f"WHERE m{j} IS NOT NULL" for j in range(len(outs)))

    same = "".join(f" AND t.{c} IS NOT DISTINCT FROM o.{c}" for c in s)
    null = "CAST(NULL AS DOUBLE PRECISION)"
    names = ["y", "l", *(["yp", "lp"] if pre else [])]
    means = ", ".join(f"AVG(CAST({v} AS DOUBLE PRECISION)) AS m_{v}" for v in names)
    products = ", ".join(f"SUM((t.{a} - o.m_{a}) * (t.{b} - o.m_{b})) AS s_{a}_{b}"
                         for i, a in enumerate(names) for b in names[i:])
    final = (f"\nSELECT 'units' AS kind, 0 AS sc, run AS rx, run AS ry, {cols}m, n, m_y AS v1, m_l AS v2, "
             "s_y_y AS v3, s_l_l AS v4, s_y_l AS v5 FROM ab_ustats")
    if pre:
        final += (f"\nUNION ALL\nSELECT 'units_pre', 0, run, run, {cols}m, n, m_yp, m_lp, s_yp_yp, s_lp_lp, s_yp_lp "
                  f"FROM ab_ustats\nUNION ALL\nSELECT 'units_cross', 0, run, run, {cols}m, n, s_y_yp, s_y_lp, s_l_yp, "
                  f"s_l_lp, {null} FROM ab_ustats")
    final += (f"\nUNION ALL\nSELECT 'unit_count', 0, b.run, b.run, {'NULL, ' * len(s)}0, "
              "COUNT(DISTINCT CASE WHEN x.u IS NULL THEN b.u END), "
              "CAST(SUM(CASE WHEN b.u IS NULL THEN 1 ELSE 0 END) AS DOUBLE PRECISION), CAST(COUNT(*) AS DOUBLE PRECISION), "
              "CAST(MAX(k.units) AS DOUBLE PRECISION), "
              f"CAST(SUM(CASE WHEN x.u IS NULL THEN 0 ELSE 1 END) AS DOUBLE PRECISION), {null} "
              "FROM ab_base AS b LEFT JOIN ab_mixed AS x ON x.u = b.u "
              "CROSS JOIN (SELECT COUNT(*) AS units FROM ab_mixed) AS k GROUP BY b.run"
              f"\nUNION ALL\nSELECT 'unit_lists', 0, run, run, {cols}0, COUNT(*), CAST(COUNT(DISTINCT u) AS DOUBLE "
              f"PRECISION), {null}, {null}, {null}, {null} FROM ab_kept GROUP BY run{''.join(f', {c}' for c in s)}")
    before = f"""
ab_pvals AS ({values("(SELECT " + ident(unit) + " AS u" + measures + " FROM ab_pv) AS ab_pbase", "")}),
ab_pre AS (SELECT u, m, SUM(x) AS yp, COUNT(*) AS lp FROM ab_pvals GROUP BY u, m),
ab_joined AS (SELECT t.run, {''.join(f't.{c}, ' for c in s)}t.u, t.m, t.y, t.l, COALESCE(p.yp, 0) AS yp,
                     COALESCE(p.lp, 0) AS lp
              FROM ab_units AS t LEFT JOIN ab_pre AS p ON p.u = t.u AND p.m = t.m),""" if pre else ""
    unit_rows = "ab_joined" if pre else "ab_units"
    return f"""
WITH ab_base AS (SELECT run_name AS run, {seg_select}{no_blank} AS u, query_id{measures} FROM ab_v),
ab_mixed AS (SELECT u FROM ab_base WHERE u IS NOT NULL GROUP BY u HAVING COUNT(DISTINCT run) > 1),
ab_kept AS (SELECT b.* FROM ab_base AS b LEFT JOIN ab_mixed AS x ON x.u = b.u WHERE b.u IS NOT NULL AND x.u IS NULL),
ab_vals AS ({values("ab_kept", "run, " + cols)}),
ab_units AS (SELECT run, {cols}u, m, SUM(x) AS y, COUNT(*) AS l FROM ab_vals GROUP BY run, {cols}u, m),{before}
ab_umeans AS (SELECT run, {cols}m, COUNT(*) AS n, {means} FROM {unit_rows} GROUP BY run, {cols}m),
ab_ustats AS (SELECT o.run, {ocols}o.m, o.n, {', '.join(f'o.m_{v}' for v in names)}, {products}
              FROM {unit_rows} AS t JOIN ab_umeans AS o ON t.run = o.run AND t.m = o.m{same}
              GROUP BY o.run, {ocols}o.m, o.n, {', '.join(f'o.m_{v}' for v in names)})
{_labelled(final, s, labels)}
"""


def _bootstrap(s: list, same, seed: int, n_resamples: int, confidence: float, scopes: tuple) -> str:
    """The CTEs of the seeded bootstrap (module docstring), ending in ab_boot. A resample's number is `rep` past
    ab_breps: ClickHouse sees an alias in every scope, and `b` is a table's alias in ab_flagged."""
    segs = "".join(f"{c}, " for c in s)
    keys = f"sc, rx, ry, {segs}m"
    keys_first = ", ".join(f"{k} NULLS FIRST" for k in keys.split(", "))  # as ranks.py says why
    role0, role1 = "AVG(CASE WHEN role = 0 THEN v END)", "AVG(CASE WHEN role = 1 THEN v END)"
    slots = []
    if 1 in scopes:  # paired: the differences over the shared queries, in both directions
        slots.append(f"SELECT 1 AS sc, a.run AS rx, b.run AS ry, {''.join(f'a.{c}, ' for c in s)}a.m, 0 AS role, "
                     f"a.x - b.x AS v FROM ab_vals AS a JOIN ab_vals AS b ON a.run <> b.run AND a.query_id = b.query_id "
                     f"AND a.m = b.m{same('a', 'b')} WHERE a.is_shared = 1 AND b.is_shared = 1")
    if 0 in scopes:  # unpaired: each run's own values, rx's as role 0 and ry's as role 1
        slots.append(f"SELECT 0 AS sc, p.rx, p.ry, {''.join(f'l.{c}, ' for c in s)}l.m, "
                     f"CASE WHEN l.run = p.rx THEN 0 ELSE 1 END AS role, l.x AS v "
                     f"FROM (SELECT a.run AS rx, b.run AS ry FROM ab_runs AS a JOIN ab_runs AS b ON a.run <> b.run) AS p "
                     f"JOIN ab_vals AS l ON l.run = p.rx OR l.run = p.ry")
    ranks, _ = bootstrap_ranks(n_resamples, confidence)

    def mean(role):  # a resample's mean of one role's values, weighed; a role drawing no list keeps its mean
        return (f"COALESCE(SUM(CASE WHEN w.role = {role} THEN w.v * w.w END) / CAST(NULLIF(SUM(CASE WHEN w.role = "
                f"{role} THEN w.w END), 0) AS DOUBLE PRECISION), MAX(o.mean{role}))")

    quantiles = ", ".join(f"MAX(CASE WHEN r.q = {r} THEN r.stat END) AS v{i}" for i, r in enumerate(ranks, 1))
    return f""",
ab_bslots AS ({' UNION ALL '.join(slots)}),
ab_bpos AS (SELECT {keys}, role, v, ROW_NUMBER() OVER (PARTITION BY {keys}, role ORDER BY v NULLS FIRST) - 1
                + role * SUM(CASE WHEN role = 0 THEN 1 ELSE 0 END) OVER (PARTITION BY {keys}) AS slot,
                DENSE_RANK() OVER (ORDER BY {keys_first}) AS g FROM ab_bslots),
ab_bslots_hashed AS ({slots_sql("SELECT slot FROM ab_bpos")}),
ab_breps AS ({replicates_sql(seed, n_resamples)}),
ab_bobs AS (SELECT g, {keys}, CASE WHEN sc = 1 THEN AVG(v) ELSE {role0} - {role1} END AS obs, {role0} AS mean0,
                {role1} AS mean1,
                CASE WHEN sc = 1 THEN {RESAMPLED_TIE!r} * AVG(ABS(v)) ELSE {RESAMPLED_TIE!r} * (ABS({role0}) + ABS({role1})) END AS tol
            FROM ab_bpos GROUP BY g, {keys}),
ab_bweights AS (SELECT p.g, p.sc, p.role, p.v, r.b AS rep, {poisson_sql(draw_sql('r.hb', 's.hq'))} AS w
                FROM ab_bpos AS p JOIN ab_bslots_hashed AS s ON s.slot = p.slot CROSS JOIN ab_breps AS r),
ab_bstats AS (SELECT w.g, w.rep, CASE WHEN w.sc = 1 THEN {mean(0)} ELSE {mean(0)} - {mean(1)} END AS stat
              FROM ab_bweights AS w JOIN ab_bobs AS o ON o.g = w.g GROUP BY w.g, w.sc, w.rep),
ab_branked AS (SELECT g, stat, ROW_NUMBER() OVER (PARTITION BY g ORDER BY stat NULLS FIRST) AS q FROM ab_bstats),
ab_boot AS (SELECT {', '.join(f'o.{c}' for c in keys.split(', '))},
                SUM(CASE WHEN ABS(r.stat - o.obs) >= ABS(o.obs) - o.tol THEN 1 ELSE 0 END) AS n, {quantiles}
            FROM ab_branked AS r JOIN ab_bobs AS o ON o.g = r.g GROUP BY o.g, {', '.join(f'o.{c}' for c in keys.split(', '))})"""
