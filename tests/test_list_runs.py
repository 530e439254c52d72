"""Runs with one row per query and a list of document ids (optionally a parallel list of scores), as
recommender and search logs store them: evaluated as they are, the list position being the rank.

The oracle is ir_measures on the same rankings written out as {query: {doc: score}}; without scores the
list order is the ranking, written out as scores falling with the position.
"""
import os
from pathlib import Path

import duckdb
import ir_measures
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from sqlglot import exp

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli import main

from sqlmetrics.dialects import DIALECTS

from conftest import postgres_connection, spark_session, unavailable

GOLDEN = Path(__file__).parent / "golden" / "list_runs"
REGEN = os.environ.get("SQLMETRICS_REGEN_GOLDEN") == "1"

QRELS = {"q1": {"d1": 2, "d3": 1, "d7": 1}, "q2": {"d4": 1, "d5": 2}, "q3": {"d6": 1}}
# q1's scores are not sorted as its list is: ordering by score and by position differ.
LISTS = [("q1", ["d1", "d5", "d3", "d2"], [0.9, 0.95, 0.7, 0.6]), ("q2", ["d6", "d5", "d4"], [3.0, 2.5, 1.0]),
         ("q3", ["d9", "d6"], [5.0, 4.0])]
MEASURES = ["AP", "nDCG@10", "P@2", "RR"]
MAPPED = dict(columns={"doc_id": "items", "score": "scores"}, qrels_columns={"doc_id": "doc_id"})
UNSCORED = dict(columns={"doc_id": "items"}, qrels_columns={"doc_id": "doc_id"})


def expected(by_position: bool) -> dict:
    if by_position:
        run = {q: {d: -float(i) for i, d in enumerate(docs)} for q, docs, _ in LISTS}
    else:
        run = {q: dict(zip(docs, scores)) for q, docs, scores in LISTS}
    values = ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in MEASURES], QRELS, run)
    return {m: values[ir_measures.parse_measure(m)] for m in MEASURES}


def lists_table(scores=True) -> pa.Table:
    q, docs, s = zip(*LISTS)
    columns = {"query_id": list(q), "items": list(docs)}
    if scores:
        columns["scores"] = list(s)
    return pa.table(columns)


def qrels_rows() -> list:
    return [(q, d, r) for q, docs in QRELS.items() for d, r in docs.items()]


def test_local_lists_with_and_without_scores(tmp_path):
    assert sqlmetrics.evaluate(QRELS, lists_table(), MEASURES, **MAPPED).aggregate == \
        pytest.approx(expected(by_position=False), abs=1e-12)
    # ties='rank' orders by the list position, whatever the scores say.
    assert sqlmetrics.evaluate(QRELS, lists_table(), MEASURES, ties="rank", **MAPPED).aggregate == \
        pytest.approx(expected(by_position=True), abs=1e-12)
    assert sqlmetrics.evaluate(QRELS, lists_table(scores=False), MEASURES, **UNSCORED).aggregate == \
        pytest.approx(expected(by_position=True), abs=1e-12)
    frame = pl.from_arrow(lists_table())  # polars' list columns
    assert sqlmetrics.evaluate(QRELS, frame, MEASURES, **MAPPED).aggregate == \
        pytest.approx(expected(by_position=False), abs=1e-12)
    path = tmp_path / "lists.parquet"  # as a log stores them
    pq.write_table(lists_table(scores=False), path)
    assert sqlmetrics.evaluate(QRELS, path, MEASURES, **UNSCORED).aggregate == \
        pytest.approx(expected(by_position=True), abs=1e-12)


def test_bad_lists_are_named():
    q, docs, s = zip(*LISTS)
    short = pa.table({"query_id": list(q), "items": list(docs), "scores": [s[0], s[1][:2], s[2]]})
    with pytest.raises(SqlmetricsError, match=r"query 'q2' has 3 document ids and 2 scores; give one score per document"):
        sqlmetrics.evaluate(QRELS, short, MEASURES, **MAPPED)
    flat = pa.table({"query_id": list(q), "items": list(docs), "scores": [1.0, 2.0, 3.0]})
    with pytest.raises(SqlmetricsError, match=r"doc_id \('items'\) is a list, and score \('scores'\) is not"):
        sqlmetrics.evaluate(QRELS, flat, MEASURES, **MAPPED)
    repeated = pa.table({"query_id": ["q1"], "items": [["d1", "d1"]]})
    with pytest.raises(SqlmetricsError, match=r"one list per row.*'d1'"):
        sqlmetrics.evaluate(QRELS, repeated, MEASURES, **UNSCORED)

@pytest.mark.parametrize("dialect", [d for d, info in DIALECTS.items() if info.unnest is None])
def test_engines_without_arrays_name_the_option(dialect):
    with pytest.raises(SqlmetricsError, match=rf"^list_run: {dialect} has no array type, or no way to unnest one "
                                              r"with each element's position .* render list_run for duckdb, "):
        sqlmetrics.render(MEASURES, dialect=dialect, list_run=True)


def _duckdb_tables():
    con = duckdb.connect()
    con.execute("CREATE TABLE qrels (query_id VARCHAR, doc_id VARCHAR, relevance INTEGER)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", qrels_rows())
    con.execute("CREATE TABLE lists (query_id VARCHAR, items VARCHAR[], scores DOUBLE[])")
    con.executemany("INSERT INTO lists VALUES (?, ?, ?)", LISTS)
    return con


@pytest.mark.parametrize("options,by_position", [(MAPPED, False), (UNSCORED, True)])
def test_rendered_sql_runs_on_duckdb(options, by_position):
    con = _duckdb_tables()
    sql = sqlmetrics.render(MEASURES, qrels="qrels", run="lists", list_run=True, **options)
    row = con.execute(sql).fetchall()[0]
    assert dict(zip(MEASURES, row)) == pytest.approx(expected(by_position), abs=1e-12)


def test_sql_command_renders_lists(tmp_path, capsys):
    out = tmp_path / "eval.sql"
    main(["sql", "-m", "AP", "-m", "nDCG@10", "-m", "P@2", "-m", "RR", "--run", "lists", "--list-run",
          "--column", "doc_id=items", "--qrels-column", "doc_id=doc_id", "-o", str(out)])
    row = _duckdb_tables().execute(out.read_text()).fetchall()[0]
    assert dict(zip(MEASURES, row)) == pytest.approx(expected(by_position=True), abs=1e-12)


@pytest.mark.slow  # a server
def test_rendered_sql_runs_on_postgres():
    con = postgres_connection()
    schema = f"sqlm_lists_{os.getpid()}"
    try:
        with con.cursor() as cur:
            cur.execute(f"CREATE SCHEMA {schema}")
            cur.execute(f"CREATE TABLE {schema}.qrels (query_id TEXT, doc_id TEXT, relevance INTEGER)")
            cur.executemany(f"INSERT INTO {schema}.qrels VALUES (%s, %s, %s)", qrels_rows())
            cur.execute(f"CREATE TABLE {schema}.lists (query_id TEXT, items TEXT[], scores DOUBLE PRECISION[])")
            cur.executemany(f"INSERT INTO {schema}.lists VALUES (%s, %s, %s)", LISTS)
        con.commit()
        for options, by_position in ((MAPPED, False), (UNSCORED, True)):
            res = sqlmetrics.evaluate(f"{schema}.qrels", f"{schema}.lists", MEASURES, engine=con, list_run=True,
                                      **options)
            assert res.aggregate == pytest.approx(expected(by_position), abs=1e-12)
    finally:
        con.rollback()
        with con.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.commit()
        con.close()


@pytest.mark.slow  # chDB, a ClickHouse in the process
def test_rendered_sql_runs_on_clickhouse():
    """ClickHouse (chDB): ARRAY JOIN of the documents and arrayEnumerate's positions."""
    try:
        from chdb import session
    except ImportError:
        unavailable("chdb is not installed (pip install chdb)")
    sess = session.Session()
    try:
        sess.query("CREATE DATABASE IF NOT EXISTS lists_test")
        sess.query("CREATE TABLE lists_test.qrels (query_id String, doc_id String, relevance Int32) ENGINE = Memory")
        sess.query("INSERT INTO lists_test.qrels VALUES "
                   + ", ".join(f"('{q}', '{d}', {r})" for q, d, r in qrels_rows()))
        sess.query("CREATE TABLE lists_test.lists (query_id String, items Array(String), scores Array(Float64)) "
                   "ENGINE = Memory")
        sess.query("INSERT INTO lists_test.lists VALUES " + ", ".join(f"('{q}', {d!r}, {s!r})" for q, d, s in LISTS))
        for options, by_position in ((MAPPED, False), (UNSCORED, True)):
            res = sqlmetrics.evaluate("lists_test.qrels", "lists_test.lists", MEASURES, engine=sess, list_run=True,
                                      **options)
            assert res.aggregate == pytest.approx(expected(by_position), abs=1e-12)
        # ties='rank': the list position (arrayEnumerate's, from 1) is the rank
        res = sqlmetrics.evaluate("lists_test.qrels", "lists_test.lists", MEASURES, engine=sess, list_run=True,
                                  ties="rank", **MAPPED)
        assert res.aggregate == pytest.approx(expected(by_position=True), abs=1e-12)
    finally:
        sess.close()


@pytest.mark.slow  # a JVM
def test_rendered_sql_runs_on_spark():
    """Spark (local): LATERAL VIEW posexplode, positions and array subscripts from 0."""
    spark = spark_session()  # the suite's: never stopped here
    spark.createDataFrame(qrels_rows(), "query_id STRING, doc_id STRING, relevance INT") \
        .createOrReplaceTempView("qrels")
    spark.createDataFrame(LISTS, "query_id STRING, items ARRAY<STRING>, scores ARRAY<DOUBLE>") \
        .createOrReplaceTempView("lists")
    for options, by_position in ((MAPPED, False), (UNSCORED, True), ({**MAPPED, "ties": "rank"}, True)):
        res = sqlmetrics.evaluate("qrels", "lists", MEASURES, engine=spark, list_run=True, **options)
        assert res.aggregate == pytest.approx(expected(by_position), abs=1e-12)


# The engines with arrays that cannot run here: the run_rows step of the rendered statement, as a golden file
# to review (regenerate with SQLMETRICS_REGEN_GOLDEN=1), and the whole statement parsed back.
@pytest.mark.parametrize("dialect", ["bigquery", "snowflake", "databricks", "trino", "presto", "athena"])
def test_list_runs_render_for_engines_with_arrays(dialect):
    texts = []
    for ties in ("docid_desc", "rank"):  # the score read from the list of scores; the rank from the list position
        sql = sqlmetrics.render(MEASURES, qrels="qrels", run="lists", list_run=True, dialect=dialect, ties=ties,
                                **MAPPED)
        tree = sqlglot.parse_one(sql, read=DIALECTS[dialect].sqlglot)
        run_rows = next(c.this for c in tree.find_all(exp.CTE) if c.alias == "run_rows")
        texts.append(f"-- ties={ties!r}\n" + run_rows.sql(DIALECTS[dialect].sqlglot, pretty=True) + "\n")
    text = "".join(texts)
    path = GOLDEN / f"{dialect}.sql"
    if REGEN or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if REGEN:  # comparing with what was just written would prove nothing
            pytest.skip(f"{path} regenerated: review the diff")
        pytest.fail(f"{path} did not exist and was written: review it, then run again")
    assert text == path.read_text(encoding="utf-8")
