"""evaluate(): load inputs into DuckDB, check them, run the rendered statement, return Results."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from . import inputs, validate
from .errors import SqlmetricsError, SqlmetricsWarning
from .names import parse_all
from .render import Options, Source, aggregate_sql, output_columns, render_duckdb


@dataclass
class Results:
    """Evaluation results, keyed by the measure strings exactly as passed.

    aggregate: {measure: value}, or {run_name: {measure: value}} when several runs were evaluated.
    per_query: a pyarrow Table with `query_id` (and `run` for several runs) and one column per measure.
    """

    aggregate: dict
    per_query: pa.Table
    measures: list


def _is_run_dict(run) -> bool:
    """{run_name: run} rather than one ranx-style {query_id: {doc_id: score}} dict."""
    if not isinstance(run, dict) or not run:
        return False
    values = list(run.values())
    if all(isinstance(v, dict) for v in values):
        # A ranx run maps documents to numbers; a dict of runs maps queries to dicts one level deeper.
        return all(isinstance(inner, dict) for v in values for inner in v.values())
    return True


def _dedup(con, loaded: inputs.Loaded, policy: str) -> inputs.Loaded:
    if policy == "error":
        return loaded
    c = loaded.columns
    q, d = inputs._q(c["query_id"]), inputs._q(c["doc_id"])
    view = inputs._fresh("dedup")
    if policy == "max":
        aggs = [f"MAX({inputs._q(c['score'])}) AS {inputs._q(c['score'])}"] if "score" in c else []
        aggs += [f"MIN({inputs._q(c['rank_position'])}) AS {inputs._q(c['rank_position'])}"] if "rank_position" in c else []
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT {q}, {d}, {', '.join(aggs)} FROM {loaded.view} GROUP BY {q}, {d}")
    else:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {loaded.numbered} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {q}, {d} ORDER BY line_no) = 1")
    return inputs.Loaded(view, {r: c[r] for r in c}, loaded.label, loaded.row_word, inputs._numbered(view, 0))


def _warn_missing(con, qrels: inputs.Loaded, runs: list, queries: str) -> None:
    q_col = inputs._q(qrels.columns["query_id"])
    judged = f"SELECT DISTINCT CAST({q_col} AS VARCHAR) AS q FROM {qrels.view}"
    for name, loaded in runs:
        r_col = inputs._q(loaded.columns["query_id"])
        ranked = f"SELECT DISTINCT CAST({r_col} AS VARCHAR) AS q FROM {loaded.view}"
        label = loaded.label
        missing = [r[0] for r in con.execute(f"{judged} EXCEPT {ranked} ORDER BY q").fetchall()]
        extra = [r[0] for r in con.execute(f"{ranked} EXCEPT {judged} ORDER BY q").fetchall()]
        if missing and queries == "qrels":
            warnings.warn(f"{label} has no ranking for {len(missing)} qrels "
                          f"quer{'y' if len(missing) == 1 else 'ies'} ({_few(missing)}); they score 0 "
                          "(queries='intersection' averages only the queries in both).", SqlmetricsWarning, stacklevel=3)
        if extra:
            warnings.warn(f"{label} ranks {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments "
                          f"({_few(extra)}); they are not averaged.", SqlmetricsWarning, stacklevel=3)


def _few(ids: list) -> str:
    return ", ".join(map(repr, ids[:5])) + (", ..." if len(ids) > 5 else "")


def connect(memory_limit=None, threads=None, temp_directory=None):
    """An in-memory DuckDB connection; past memory_limit (e.g. "2GB") DuckDB spills to temp_directory."""
    config = {}
    for name, value in (("memory_limit", memory_limit), ("threads", threads), ("temp_directory", temp_directory)):
        if value is not None:
            config[name] = str(value) if name != "threads" else value
    try:
        return duckdb.connect(config=config)
    except (duckdb.Error, TypeError, ValueError) as e:
        raise SqlmetricsError(f"memory_limit/threads/temp_directory: {inputs._first_line(e)} "
                              "(e.g. memory_limit='2GB', threads=2, temp_directory='/tmp/spill').") from None


def evaluate(qrels, run, measures, *, queries="qrels", ties="docid_desc", relevance_level=1,
             score_precision="float64", columns=None, qrels_columns=None, duplicates="error",
             memory_limit=None, threads=None, temp_directory=None, engine=None, dialect=None) -> Results:
    """Evaluate one run, or {run_name: run}, against qrels; every measure in one SQL statement on DuckDB.

    columns / qrels_columns map roles (query_id, doc_id, score, rank_position / relevance) to the run's and
    the qrels' column names where they are not recognised by name. memory_limit ("2GB"), threads and
    temp_directory are DuckDB's: past the limit it spills to disk instead of failing.

    engine= (a DB-API connection, chdb session, DataFusion or Polars SQL context, SparkSession) runs the
    same SQL where the tables live: qrels and run are then table names there (see evaluate_on).
    """
    if engine is not None:
        if duplicates != "error" or memory_limit or threads or temp_directory:
            raise SqlmetricsError("duplicates=, memory_limit=, threads= and temp_directory= are DuckDB's; with "
                                  "engine= the tables are evaluated where they live.")
        from .engines import evaluate_on

        return evaluate_on(engine, measures, qrels=qrels, run=run, columns=columns, qrels_columns=qrels_columns,
                           dialect=dialect, queries=queries, ties=ties, relevance_level=relevance_level,
                           score_precision=score_precision)
    options = Options(queries=queries, ties=ties, relevance_level=relevance_level, score_precision=score_precision)
    options.check()
    calls = parse_all(measures, relevance_level)  # fails on a bad name before any data is read
    if duplicates not in validate.DUPLICATE_POLICIES:
        raise SqlmetricsError(f"duplicates={duplicates!r} is not valid: use one of 'error', 'max', 'first'.")
    multi = _is_run_dict(run)
    run_items = list(run.items()) if multi else [(None, run)]
    if multi and not run_items:
        raise SqlmetricsError("run: the dict of runs is empty.")

    con = connect(memory_limit, threads, temp_directory)
    try:
        q = inputs.load(con, qrels, "qrels", qrels_columns)
        validate.check(con, q, "qrels")
        loaded_runs = []
        for name, item in run_items:
            loaded = inputs.load(con, item, "run", columns, None if name is None else str(name))
            if ties == "rank" and "rank_position" not in loaded.columns:
                raise SqlmetricsError(f"{loaded.label}: ties='rank' orders by a rank or position column, and it has none.")
            if ties != "rank" and "score" not in loaded.columns:
                raise SqlmetricsError(f"{loaded.label}: has no score column; map one, or pass ties='rank' to order by rank.")
            validate.check(con, loaded, "run", duplicates)
            loaded_runs.append((name, _dedup(con, loaded, duplicates)))
        _warn_missing(con, q, loaded_runs, queries)

        run_roles = ["query_id", "doc_id", "rank_position" if ties == "rank" else "score"]
        if multi:
            options.run_key = ("run_name",)
            parts = []
            for name, loaded in loaded_runs:
                cols = ", ".join(f"{inputs._q(loaded.columns[r])} AS {r}" for r in run_roles)
                parts.append(f"SELECT {inputs._lit(str(name))} AS run_name, {cols} FROM {loaded.view}")
            run_view = inputs._fresh("runs")
            con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
            run_source = Source(run_view, {r: r for r in ["run_name", *run_roles]})
        else:
            loaded = loaded_runs[0][1]
            run_source = Source(loaded.view, {r: loaded.columns[r] for r in run_roles})
        qrels_source = Source(q.view, {r: q.columns[r] for r in inputs.QRELS_ROLES})
        sql = render_duckdb(calls, qrels_source, run_source, options, per_query=True)
        try:
            per_list = con.sql(sql).to_arrow_table()
        except duckdb.Error as e:  # the inputs were checked, so this is ours, not the caller's
            raise RuntimeError(f"sqlmetrics generated SQL that DuckDB rejected: {e}\n{sql}") from e

        keys = ["run_name"] if multi else []
        aggregates = [(out, c.measure.aggregate) for out, c in zip(output_columns(calls), calls)]
        con.register("per_list_result", per_list)
        agg = con.execute(aggregate_sql("per_list_result", aggregates, keys))
        rows = agg.fetchall()
    finally:
        con.close()

    texts = [c.text for c in calls]
    if multi:
        aggregate = {row[0]: dict(zip(texts, row[1:])) for row in rows}
        for name, _ in run_items:  # a run with no judged query at all still gets its (empty) values
            aggregate.setdefault(str(name), {t: None for t in texts})
        names = ["run", "query_id", *texts]
    else:
        aggregate = dict(zip(texts, rows[0])) if rows else {t: None for t in texts}
        names = ["query_id", *texts]
    per_query = per_list.rename_columns(names)
    return Results(aggregate=aggregate, per_query=per_query, measures=texts)

