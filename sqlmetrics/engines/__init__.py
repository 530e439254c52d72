"""Run the evaluation on another engine, over tables that already live there.

    evaluate_on(sqlite3.connect("eval.db"), ["nDCG@10", "AP"], qrels="qrels", run="run")  -> Results

The statement is dialects.render(..., per_query=True) for the engine's dialect, run there in one round
trip; the per-query rows come back and are aggregated (mean, sum, geometric mean) by the same DuckDB
statement evaluate() uses, so Results are evaluate()'s in every respect. Loading data into an engine is
the caller's business.
"""
from __future__ import annotations

import math
import sqlite3

import duckdb

from ..catalogue import parse_all
from ..dialects import DIALECTS, dialect_info, render
from ..errors import SqlmetricsError
from ..options import EVALUATE_ON, resolve, signature
from ..plan import output_columns
from ..results import Results
from sqlglot import exp

from ..statement import aggregate_sql

__all__ = ["evaluate_on", "engine_dialect"]


def engine_dialect(engine) -> str:
    """The dialect of a connection or session, recognised by its type."""
    module = type(engine).__module__ or ""
    name = type(engine).__name__
    top = _top(engine)
    if top == "duckdb":
        return "duckdb"
    if top == "sqlite3":
        return "sqlite"
    if top in ("psycopg", "psycopg2", "pg8000"):
        return "postgres"
    if top in ("pymysql", "MySQLdb", "mariadb") or module.startswith("mysql.connector"):
        return "mysql"
    if top == "chdb":
        return "clickhouse"
    if top == "datafusion":
        return "datafusion"
    if top == "polars" and name == "SQLContext":
        return "polars"
    if top == "pyspark" and name == "SparkSession":
        return "spark"
    if top == "snowflake":
        return "snowflake"
    if top == "google" and "bigquery" in module:
        return "bigquery"
    if top == "trino":
        return "trino"
    if top == "redshift_connector":
        return "redshift"
    if top == "databricks":
        return "databricks"
    if top in ("pyodbc", "pymssql"):
        return "tsql"
    if top in ("oracledb", "cx_Oracle"):
        return "oracle"
    raise SqlmetricsError(
        f"cannot tell which SQL a {module}.{name} speaks; pass dialect=, one of {', '.join(DIALECTS)}.")


def _top(engine) -> str:
    """The top-level package a connection's type comes from (`_duckdb` counts as duckdb)."""
    return (type(engine).__module__ or "").split(".")[0].lstrip("_")


def _fetch(engine, kind: str, sql: str) -> tuple[list, list]:
    """Run one statement on the engine; rows as lists, in the statement's column order."""
    top = _top(engine)
    if top == "duckdb":
        rel = engine.sql(sql)
        return [list(r) for r in rel.fetchall()], rel.columns
    if kind == "clickhouse" and top == "chdb" and hasattr(engine, "query"):
        table = engine.query(sql, "ArrowTable")
        return _arrow_rows(table)
    if kind == "datafusion":
        return _arrow_rows(engine.sql(sql).to_arrow_table())
    if kind == "polars":
        return _arrow_rows(engine.execute(sql, eager=True).to_arrow())
    if kind == "spark" and hasattr(engine, "sql") and not hasattr(engine, "cursor"):
        df = engine.sql(sql)
        return [list(r) for r in df.collect()], df.columns
    if top == "sqlite3":
        _sqlite_math(engine)
    cursor = engine.cursor()  # DB-API 2.0
    try:
        cursor.execute(sql)
        names = [d[0] for d in cursor.description]
        return [list(r) for r in cursor.fetchall()], names
    finally:
        cursor.close()


def _sqlite_math(con) -> None:
    """SQLite built without its math functions (SQLITE_ENABLE_MATH_FUNCTIONS, 3.35+) gets them from Python."""
    try:
        con.execute("SELECT LN(2), EXP(0), POWER(2, 2), FLOOR(1.5)").fetchall()
    except sqlite3.OperationalError:
        def power(x, y):
            return None if x is None or y is None else math.pow(x, y)

        def unary(f):
            return lambda x: None if x is None else f(x)

        con.create_function("LN", 1, unary(math.log), deterministic=True)
        con.create_function("EXP", 1, unary(math.exp), deterministic=True)
        con.create_function("POWER", 2, power, deterministic=True)
        con.create_function("FLOOR", 1, unary(lambda x: float(math.floor(x))), deterministic=True)


def _arrow_rows(table) -> tuple[list, list]:
    return [list(r.values()) for r in table.to_pylist()], table.column_names


def _text(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8")
    return None if value is None else str(value)


def _number(value):
    return None if value is None else float(value)


def evaluate_on(engine, measures, qrels="qrels", run="run", **options) -> Results:
    """Evaluate tables that live in another engine, in one SQL statement run there; returns evaluate()'s Results.

    engine: a DB-API connection (sqlite3, psycopg, pymysql/MySQLdb/mariadb, snowflake, trino, ...), a DuckDB
    connection, a chDB session or connection, a DataFusion SessionContext, a polars SQLContext or a
    SparkSession. dialect= overrides the dialect recognised from its type. qrels, run, columns,
    qrels_columns: as render(); mapping run_name evaluates every run of the table and keys the results
    by run name, as evaluate() does for {name: run}. The per-query values come from the engine; their
    aggregation (mean, sum, geometric mean) is the same DuckDB statement evaluate() uses.
    group_by, label, relevance: as evaluate() (qrels=None reads the judgments from the run); the relevance
    expression's columns are bound as identifiers, and the engine checks that they exist. Positions are
    not checked for gaps here (evaluate() on DuckDB warns).
    """
    o = resolve(EVALUATE_ON, options)
    kind = dialect_info(o.dialect).name if o.dialect is not None else engine_dialect(engine)
    sql = render(measures, dialect=kind, qrels=qrels, run=run, per_query=True,
                 **{k: v for k, v in o.as_dict().items() if k != "dialect"})
    calls = parse_all(measures, o.relevance_level)
    multi = "run_name" in (o.columns or {})
    segs = [o.group_by] if isinstance(o.group_by, str) else list(o.group_by or [])
    try:
        rows, _names = _fetch(engine, kind, sql)
    except SqlmetricsError:
        raise
    except Exception as e:  # the engine's own error type; the statement is what the caller needs to see
        raise SqlmetricsError(f"{kind} rejected the evaluation statement: {e}\n{sql}") from e

    import pyarrow as pa  # not at the top: the command line never comes here and never pays its import

    nkeys = (2 if multi else 1) + len(segs)
    # Byte order of the keys, as evaluate() returns them, whatever order the engine sorted in; a NULL
    # segment value last, as DuckDB sorts it.
    rows.sort(key=lambda r: tuple((k is None, b"" if k is None else _text(k).encode("utf-8")) for k in r[:nkeys]))
    outs = output_columns(calls)
    texts = [c.text for c in calls]
    key_names = (["run"] if multi else []) + segs + ["query_id"]
    data = {k: pa.array([_text(r[i]) for r in rows], pa.string()) for i, k in enumerate(key_names)}
    for j, text in enumerate(texts):
        data[text] = pa.array([_number(r[nkeys + j]) for r in rows], pa.float64())
    per_query = pa.table(data)

    aggregates = [(out, c.measure.aggregate) for out, c in zip(outs, calls)]
    con = duckdb.connect()
    try:
        per_list = pa.table({**({"run_name": per_query["run"]} if multi else {}),
                             **{out: per_query[t] for out, t in zip(outs, texts)}})
        con.register("per_list_result", per_list)
        agg_rows = con.execute(aggregate_sql("per_list_result", aggregates, ["run_name"] if multi else [])).fetchall()
        per_group = None
        if segs:
            con.register("per_list_keys", pa.table({**({"run_name": per_query["run"]} if multi else {}),
                                                    **{g: per_query[g] for g in segs},
                                                    **{out: per_query[t] for out, t in zip(outs, texts)}}))
            per_group = con.sql(aggregate_sql("per_list_keys", aggregates, ["run_name"] if multi else [],
                                              [(g, exp.to_identifier(g, quoted=True)) for g in segs])).to_arrow_table()
            per_group = per_group.rename_columns([*(["run"] if multi else []), *segs, *texts, "num_lists"])
    finally:
        con.close()
    if multi:
        aggregate = {row[0]: dict(zip(texts, row[1:])) for row in agg_rows}
    else:
        aggregate = dict(zip(texts, agg_rows[0])) if agg_rows else {t: None for t in texts}
    return Results(aggregate=aggregate, per_query=per_query, measures=texts, per_group=per_group)


evaluate_on.__signature__ = signature(EVALUATE_ON, "engine, measures, qrels='qrels', run='run'")
