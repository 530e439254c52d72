"""The results: the statement's per-list rows checked for overflow, and the aggregates, per-list and per-segment
tables fetched as Arrow tables or Python rows."""
from __future__ import annotations

from ..deferred import exp
from ..errors import SqlmetricsError
from ..identifiers import sql_literal as _lit
from ..plan import output_columns
from ..results import Results
from ..statement import aggregate_sql
from .job import _Job


def fetch_arrow(con, query: str, names: list):
    return con.sql(query).to_arrow_table().rename_columns(names)


def python_rows(con, query: str, names: list) -> tuple:
    """For evaluate_local(fetch=python_rows): per_query and per_group as (column names, list of row tuples)
    instead of Arrow tables. The command line prints these, and never imports pyarrow (~0.15 s)."""
    return names, con.execute(query).fetchall()


def _check_finite(con, job: _Job) -> None:
    """No NaN or infinity ever reaches the results. The inputs are finite (checked), so a non-finite value is an
    overflow inside a measure (an exponential gain 2^grade - 1 past grade 1023) or, below relevance level 0, a
    measure whose formula assumes that unjudged documents are not relevant (trec_eval's yaap and Rndcg print inf
    or nan there)."""
    outs = output_columns(job.calls)
    counts = con.execute("SELECT " + ", ".join(f"COUNT(*) FILTER (WHERE NOT isfinite({o}))" for o in outs)
                         + " FROM per_list_result").fetchall()[0]
    for out, call, count in zip(outs, job.calls, counts):
        if count:
            where = con.execute(f"SELECT query_id, {out} FROM per_list_result WHERE NOT isfinite({out}) "
                                "ORDER BY ALL LIMIT 1").fetchall()[0]
            level = call.values.get("rel")
            undefined = isinstance(level, (int, float)) and level < 0
            if undefined:
                cause = (f"relevance_level={level:g} counts every judged document, and those trec_eval marks "
                         "unjudged, as relevant, which leaves the measure undefined; use a relevance level of 0 "
                         "or more.")
            else:
                cause = ("An exponential gain (2^grade - 1, as gain='exp' and ERR compute it) overflows for grades "
                         "of 1024 or more; use smaller grades or the linear gain.")
            raise SqlmetricsError(
                f"{call.text} {'has no finite value' if undefined else 'overflows a double'} for query {where[0]!r}"
                + (f" and {count - 1} more lists" if count > 1 else "") + f": it would be {where[1]}. " + cause)


# How far past a bound a value may be and still be the rounding of a value on it (Personalization of identical
# lists is 1 - a cosine of 1.0000000000000007): a few ulps of a value near 1. Farther is a fault of the measure,
# which is left for the tests to find rather than hidden.
ROUNDING = 1e-12


def _keep_in_range(con, job: _Job) -> None:
    """Every per-list value inside its measure's declared range (the template's `range:`): a value rounding put a
    hair outside it is put back on the bound, so that a share is never -6.7e-16 (printed -0.0000) or 1.0000000002."""
    sets = []
    for out, call in zip(output_columns(job.calls), job.calls):
        low, high = call.measure.range
        for bound, past in ((low, "<"), (high, ">")):
            if bound is not None:
                outside = f"{out} {past} {bound!r} AND abs({out} - {bound!r}) <= {ROUNDING!r}"
                sets.append((out, outside, bound))
    if not sets:
        return
    updates = {}
    for out, outside, bound in sets:
        updates.setdefault(out, []).append(f"WHEN {outside} THEN {bound!r}")
    assignments = ", ".join(f"{out} = CASE {' '.join(cases)} ELSE {out} END" for out, cases in updates.items())
    where = " OR ".join(f"({outside})" for _, outside, _ in sets)
    con.execute(f"UPDATE per_list_result SET {assignments} WHERE {where}")


def _collect(con, job: _Job, run_names: list, multi: bool, union: bool, fetch) -> Results:
    """Results from per_list_result: the aggregates, the per-list rows, and the per-segment rows."""
    texts = job.texts
    keys = ["run_name"] if union else []
    aggregates = [(out, c.measure.aggregate) for out, c in zip(output_columns(job.calls), job.calls)]
    segs = list(job.segments)
    list_key = [*keys, *segs, "query_id"]
    rows = con.execute(aggregate_sql("per_list_result", aggregates, keys, list_key)).fetchall()
    # One named run's results get its name as their first column.
    named = f"{_lit(str(run_names[0]))} AS run_name, " if multi and not union else ""
    run_col = ["run"] if multi else []
    per_list = fetch(con, f"SELECT {named}* FROM per_list_result", [*run_col, *segs, "query_id", *texts])
    per_group = None
    if segs:
        groups = [(g, exp.to_identifier(g, quoted=True)) for g in segs]
        con.execute("CREATE TEMP TABLE per_group_result AS " + aggregate_sql("per_list_result", aggregates, keys, list_key,
                                                                          groups))
        per_group = fetch(con, f"SELECT {named}* FROM per_group_result", [*run_col, *segs, *texts, "num_lists"])
    if multi:
        if not union:
            rows = [(str(run_names[0]), *row) for row in rows]
        aggregate = {row[0]: dict(zip(texts, row[1:])) for row in rows}
        for name in run_names:  # a run with no judged query at all still gets its (empty) values
            aggregate.setdefault(str(name), {t: None for t in texts})
    else:
        aggregate = dict(zip(texts, rows[0])) if rows else {t: None for t in texts}
    return Results(aggregate=aggregate, per_query=per_list, measures=texts, per_group=per_group)
