"""Evaluation on DuckDB, embedded: load the inputs into two relations, check them, run the one planned
statement, return Results. evaluate_local() composes the steps: connection.py (the connection, its resources
and their errors), job.py (what the evaluation is, from its options), inputs.py (the qrels and the other inputs),
runs.py (the runs, checked; logs.py: in log mode), sources.py (the relations the statement reads), collect.py
(the results)."""
from __future__ import annotations

from dataclasses import replace

import duckdb

from ..caches import Kept, Stored
from ..catalogue.templates import built_from
from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import QRELS_ROLES, Settings
from ..plan import output_columns, plan_measures
from ..results import Results
from ..statement import ONE_PIPELINE, RAG_ROWS, READ, build_statement
from .collect import _check_finite, _collect, _keep_in_range, fetch_arrow
from .connection import GeneratedSQLError, _error_instead, _release, _resource_error, connect
from .inputs import _load_qrels, _other_inputs, warn_outside_catalogue
from .job import _Job, _prepare, _table_columns
from .nuggets import load_nuggets, nugget_source, runs_assigned, stand_ins, warn_without_nuggets
from .readers.loaded import _first_line, own_names
from .runs import _check_runs, _is_run_dict, _load_runs, _named_ranx, _warn
from .sources import _each_run_source, _fused_runs, _run_source, _source


class _Steps:
    """step(name): tells `progress` (evaluate_local's) that the evaluation starts the named step, with the
    rows its checks have counted so far (step.rows). Without `progress`, nothing."""

    def __init__(self, con, progress):
        self.con, self.progress, self.rows = con, progress, 0
        if progress is not None:
            # DuckDB keeps a query's progress from its start (not after its default 2 s), and prints no bar of
            # its own: the caller draws one. Both are settings of this connection alone.
            con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false; "
                        "SET progress_bar_time = 0")

    def __call__(self, name: str) -> None:
        if self.progress is not None:
            self.progress(name, self.rows, self.con)


def evaluate_local(qrels, run, measures, o: Settings, fetch=None, progress=None, trec_grades=False) -> Results:
    """evaluate() on an embedded DuckDB: see sqlmetrics.evaluate for the arguments. progress(step, rows,
    con), when given, is told each step as it starts (reading, checking, computing, collecting), the rows
    read so far, and the connection running it (whose query_progress() DuckDB then keeps). trec_grades:
    Shape.trec_grades (`sqlmetrics trec_eval` at a negative -l)."""
    with own_names():  # the connection is this evaluation's alone
        return _evaluate(qrels, run, measures, o, fetch, progress, trec_grades)


def _evaluate(qrels, run, measures, o: Settings, fetch, progress, trec_grades) -> Results:
    # No qrels and no runs, nuggets= and assignments= given: the nuggets' topics scored for each run assigned.
    alone = qrels is None and run is None and (o.nuggets is not None or o.assignments is not None)
    job = _prepare(o.nuggets if alone else qrels, measures, o, trec_grades)
    if alone and any(c.measure.rows != "nuggets" for c in job.calls):
        raise SqlmetricsError(f"{next(c.text for c in job.calls if c.measure.rows != 'nuggets')} ranks documents: "
                              "pass qrels and runs; with nuggets= and assignments= alone, only the nugget measures "
                              "(NuggetAll, NuggetVital, NuggetWeighted, NuggetRecall, ...) are scored.")
    run = _named_ranx(run)
    qrels_columns, run_columns = _table_columns(o)
    con = connect(o.memory_limit, o.threads, o.temp_directory)
    inputs: list = []  # every Loaded input, to remove the temporary folders made to read them
    step = _Steps(con, progress)
    try:
        nugget_inputs = None
        if alone or any(c.measure.rows == "nuggets" for c in job.calls):
            step("reading nuggets")
            nugget_inputs = load_nuggets(con, o, qrels_columns, inputs)
        if alone:
            q, runs = stand_ins(con, *nugget_inputs)
        else:
            q = None if job.labels else _load_qrels(con, qrels, qrels_columns, job.group_roles, o, inputs, step)
            runs = _load_runs(con, run, run_columns, inputs, o.glob, step)
            if nugget_inputs:
                warn_without_nuggets(con, q, nugget_inputs[0])
        others = _other_inputs(con, o, qrels_columns, inputs, q, job.calls)  # history, verdicts, embeddings, items
        # Each run's nugget values are its own assignments', taken by its name there.
        assigned = runs_assigned(con, nugget_inputs[1], runs, run) if nugget_inputs else [None] * len(runs)
        others["nuggets"] = nugget_source(*nugget_inputs) if nugget_inputs else None
        if run_columns and all(lr.fixed_columns for _, lr in runs) and (q is None or q.fixed_columns):
            raise SqlmetricsError("columns= applies to CSV, Parquet and tables; every input here is TREC text, "
                                  "whose columns are fixed.")
        checked = _check_runs(con, runs, job, o, step)
        _warn(con, q, checked, job, o)
        warn_outside_catalogue(con, others["items"], checked, job.calls)
        # One named run is evaluated as a plain run (no run_name in the list key, no scan for run names)
        # and its results are labelled afterwards: the same numbers, a cheaper statement.
        multi = alone or _is_run_dict(run) or "run_name" in run_columns
        fused = _fused_runs(con, o.fuse, checked, job, multi)
        union = multi and len(checked) + len(fused) > 1
        qrels_source = None if job.labels else _source(q.view, {r: q.columns[r] for r in (*QRELS_ROLES, *job.group_roles)})
        if union and not job.log_mode:
            _compute_each(con, checked, fused, job, o, qrels_source, others, step, assigned)
        else:
            run_source = _run_source(con, checked, job, union)
            one = _assigned(others, assigned[0] if len(assigned) == 1 else None)
            sqls = [_statement(calls, o.relevance_level, qrels_source, run_source, job.part_shape(judged), one)
                    for calls, judged in job.parts]
            step("computing measures")
            _compute(con, sqls, job, o)
        _check_finite(con, job)
        _keep_in_range(con, job)
        step("collecting results")
        return _collect(con, job, [name for name, _ in runs] + [name for name, _ in fused], multi, union,
                        fetch or fetch_arrow)
    except (duckdb.Error, RuntimeError, SqlmetricsError) as e:  # memory, disk or Ctrl-C, wherever it struck
        instead = _error_instead(e, con, o, inputs)
        if instead is None:
            raise
        raise instead from None
    finally:
        _release(con, inputs)


def _statement(calls, relevance_level, qrels_source, run_source, shape, others: dict) -> str:
    """The statement's text. The same measures over inputs of the same kinds and columns (a loop over runs,
    compare(), a notebook, a script calling the command line in a loop) are the same text, the views being
    named alike (own_names): generated once, kept in this process and on disk (caches.Stored). Its key is
    everything plan_measures and build_statement read, spelled out (repr): the calls as plan_measures keys
    them, the relevance level, the sources' trees and the shape."""
    key = (tuple((c.text, str(c.measure.path), c.measure.body, c.params, c.judged_only) for c in calls),
           relevance_level, repr((qrels_source, run_source, shape, sorted(others.items()))))

    def build() -> str:
        plan = plan_measures(calls, relevance_level)
        # Built for this text alone: generated in place, not copied first.
        return build_statement(plan, qrels_source, run_source, shape, per_query=True, **others).sql(READ, copy=False)

    return _STATEMENTS.get(key, lambda: _STORED_STATEMENTS.get(key, build))


_STATEMENTS = Kept()
_STORED_STATEMENTS = Stored("statements", built_from)


def _assigned(others: dict, name: str | None) -> dict:
    """The other inputs of one run's statement: the nugget values from its assignments (by its name there)."""
    if others.get("nuggets") is None:
        return others
    return {**others, "nuggets": replace(others["nuggets"], run=name)}


def _compute_each(con, checked: list, fused: list, job: _Job, o: Settings, qrels_source, others: dict, step,
                  assigned: list) -> None:
    """Several runs (not logs): each run's statement on its own, one after the other, into per_list_result with
    run_name first, ordered by run_name, query_id. These are the values one statement over the runs' UNION ALL
    gave (as logs still run): there every window, join and GROUP BY is keyed by run_name, so a run's rows meet
    only its own, and each run is cast to the statement's types alike. But DuckDB sorts and joins one run at a
    time, and frees that run's buffers before the next: the peak is one run's, not the sum (M, two runs of 7M
    rows: 1.3 GB at once, 0.63 GB one after the other), and the smaller sorts take less time."""
    if any(c.measure.rows in RAG_ROWS for c in job.calls):  # each statement below sees one run: refused here
        raise SqlmetricsError(ONE_PIPELINE)
    tables = []
    for i, (name, run_source) in enumerate(_each_run_source(con, checked, job, fused)):
        one = _assigned(others, assigned[i] if i < len(assigned) else str(name))  # a fused run: by its name
        sqls = [_statement(calls, o.relevance_level, qrels_source, run_source, job.part_shape(judged), one)
                for calls, judged in job.parts]
        step(f"computing measures of run {name!r}")
        tables.append((name, f"per_run_result_{i}"))
        _compute(con, sqls, job, o, tables[-1][1])
    runs = " UNION ALL ".join(f"SELECT {_lit(name)} AS run_name, * FROM {table}" for name, table in tables)
    _create(con, "per_list_result", f"SELECT * FROM ({runs}) ORDER BY run_name, query_id", o)
    for _, table in tables:
        con.execute(f"DROP TABLE {table}")


def _compute(con, sqls: list, job: _Job, o: Settings, table: str = "per_list_result") -> None:
    """The statements' rows, per list, into per_list_result: one statement's as they are; several (job.parts)
    side by side, joined on the list key (each statement has every list), the measures in the order asked.
    Into `table` instead with _compute_each (one run's rows)."""
    if len(sqls) == 1:
        _create(con, table, sqls[0], o)
        return
    column = {}  # each measure's column in the parts: p0."ap", p1."ap_judged_only_true", ...
    for i, ((calls, _), sql) in enumerate(zip(job.parts, sqls)):
        _create(con, f"{table}_part_{i}", sql, o)
        column.update({id(c): f"p{i}.{_q(out)}" for c, out in zip(calls, output_columns(calls))})
    outs = output_columns(job.parts[0][0])
    key = [d[0] for d in con.execute(f"SELECT * FROM {table}_part_0 LIMIT 0").description if d[0] not in outs]
    joins = " ".join(f"JOIN {table}_part_{i} p{i} ON " + " AND ".join(f"p0.{_q(k)} IS NOT DISTINCT FROM p{i}.{_q(k)}"
                                                                         for k in key)
                     for i in range(1, len(sqls)))
    keys = ", ".join(f"p0.{_q(k)}" for k in key)
    values = ", ".join(f"{column[id(c)]} AS {_q(out)}" for c, out in zip(job.calls, output_columns(job.calls)))
    _create(con, table, f"SELECT {keys}, {values} FROM {table}_part_0 p0 {joins} ORDER BY {keys}", o)
    for i in range(len(sqls)):  # the parts are in the table now
        con.execute(f"DROP TABLE {table}_part_{i}")


def _create(con, table: str, sql: str, o: Settings) -> None:
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS {sql}")
    except duckdb.Error as e:
        if _resource_error(e, con, o) is not None:
            raise  # worded by evaluate_local
        # The inputs were checked, so this is ours, not the caller's. One line; the statement on .sql.
        raise GeneratedSQLError(f"sqlmetrics generated SQL that DuckDB rejected: {_first_line(e)}", sql) from e
