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

from .. import embedded
from ..catalogue import parse_all
from ..dialects import DIALECTS, dialect_info, render
from ..errors import SqlmetricsError
from ..identifiers import column_identifier, table_reference
from ..options import EVALUATE_ON, resolve, role_columns, signature
from ..plan import output_columns
from ..relevance import relevance_expression
from ..results import Results
from sqlglot import exp

from ..statement import aggregate_sql

__all__ = ["evaluate_on", "engine_dialect", "evaluation_statement", "run_statement", "as_text"]


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
        if cursor.description is None:  # a statement without rows (CREATE TEMPORARY TABLE, DROP)
            return [], []
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


def _check_tables(engine, info, qrels, run, o, segs: list) -> dict:
    """{table reference: its columns}, after checking that each table can be read and has every column the
    mapping names: an engine may otherwise read a quoted name that is not a column as a string (SQLite
    does), and every score would be 0. One probe per table that reads no row."""
    run_map, qrels_map = role_columns(o.columns, o.qrels_columns, o.ties, o.list_run, o.qrels_format)
    wanted_run = [*run_map.values(), *segs, *([o.label] if o.label is not None else [])]
    if o.relevance is not None:
        wanted_run += relevance_expression(o.relevance, None, info.sqlglot)[1]
    tables = [("run", run, wanted_run)] + ([("qrels", qrels, list(qrels_map.values()))] if qrels is not None else [])
    columns = {}
    for what, table, wanted in tables:
        ref = table_reference(table, info.sqlglot, info.fold_case)
        shown = ref.sql(info.sqlglot)
        probe = exp.select(exp.Star()).from_(ref).where(exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0)))
        try:
            _rows, present = _fetch(engine, info.name, probe.sql(info.sqlglot))
        except Exception as e:  # noqa: BLE001 - the engine's own error type: no such table, no permission
            raise SqlmetricsError(f"{info.name} {what} table {shown}: cannot be read ({_first_line(e)}). "
                                  f"Check the name{'' if what == 'run' else ' (qrels=)'} and the connection.") from None
        present = columns[shown] = [str(c) for c in present]
        for name in dict.fromkeys(wanted):
            ident = column_identifier(name, info.sqlglot, info.fold_case)
            found = ident.name in present if ident.quoted else ident.name.lower() in {c.lower() for c in present}
            if not found:
                option = "qrels_columns=" if what == "qrels" else "columns="
                raise SqlmetricsError(
                    f"{info.name} {what} table {shown}: no column {name!r} (its columns: "
                    f"{', '.join(present)}); map the role to one of them with {option}.")
    return columns


def _first_line(e: Exception) -> str:
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def _arrow_rows(table) -> tuple[list, list]:
    return [list(r.values()) for r in table.to_pylist()], table.column_names


def as_text(value):
    """A key as the results hold it: text (bytes decoded as UTF-8), or None."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8")
    return None if value is None else str(value)


def _number(value):
    return None if value is None else float(value)


def evaluation_statement(engine, measures, qrels="qrels", run="run", **options) -> tuple:
    """(resolved options, dialect, the per-list evaluation statement for the engine, {table: its columns}),
    after checking that the tables and every mapped column exist there."""
    o = resolve(EVALUATE_ON, options)
    kind = dialect_info(o.dialect).name if o.dialect is not None else engine_dialect(engine)
    sql = render(measures, dialect=kind, qrels=qrels, run=run, per_query=True,
                 **{k: v for k, v in o.as_dict().items() if k != "dialect"})
    segs = [o.group_by] if isinstance(o.group_by, str) else list(o.group_by or [])
    tables = _check_tables(engine, dialect_info(kind), qrels, run, o, segs)
    return o, kind, sql, tables


def run_statement(engine, kind: str, sql: str, tables: dict) -> list:
    """The rows of one statement run on the engine (none for one without rows); its rejection is one line
    naming the tables' columns."""
    try:
        return _fetch(engine, kind, sql)[0]
    except Exception as e:  # noqa: BLE001 - the engine's own error type
        # One line and the tables' columns, not the whole statement; the statement is kept on the error
        # (`error.sql`, or render() with the same arguments prints it).
        error = SqlmetricsError(
            f"{kind} rejected the evaluation statement: {_first_line(e)} (tables: "
            + "; ".join(f"{t}: {', '.join(cols)}" for t, cols in tables.items())
            + "). The statement is the error's .sql; render() with the same arguments prints it.")
        error.sql = sql
        raise error from e


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
    o, kind, sql, tables = evaluation_statement(engine, measures, qrels, run, **options)
    rows = run_statement(engine, kind, sql, tables)
    calls = parse_all(measures, o.relevance_level, o.compat)
    multi = "run_name" in (o.columns or {})
    segs = [o.group_by] if isinstance(o.group_by, str) else list(o.group_by or [])

    import pyarrow as pa  # not at the top: the command line never comes here and never pays its import

    nkeys = (2 if multi else 1) + len(segs)
    # Byte order of the keys, as evaluate() returns them, whatever order the engine sorted in; a NULL
    # segment value last, as DuckDB sorts it.
    rows.sort(key=lambda r: tuple((k is None, b"" if k is None else as_text(k).encode("utf-8")) for k in r[:nkeys]))
    outs = output_columns(calls)
    texts = [c.text for c in calls]
    key_names = (["run"] if multi else []) + segs + ["query_id"]
    data = {k: pa.array([as_text(r[i]) for r in rows], pa.string()) for i, k in enumerate(key_names)}
    for j, text in enumerate(texts):
        data[text] = pa.array([_number(r[nkeys + j]) for r in rows], pa.float64())
    per_query = pa.table(data)

    aggregates = [(out, c.measure.aggregate) for out, c in zip(outs, calls)]
    con = embedded.connect()
    try:
        run_key = ["run_name"] if multi else []
        list_key = [*run_key, *segs, "query_id"]
        con.register("per_list_result", pa.table({**({"run_name": per_query["run"]} if multi else {}),
                                                  **{k: per_query[k] for k in list_key if k != "run_name"},
                                                  **{out: per_query[t] for out, t in zip(outs, texts)}}))
        agg_rows = con.execute(aggregate_sql("per_list_result", aggregates, run_key, list_key)).fetchall()
        per_group = None
        if segs:
            per_group = con.sql(aggregate_sql("per_list_result", aggregates, run_key, list_key,
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
