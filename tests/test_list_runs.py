"""Runs with one row per query and a list of document ids (optionally a parallel list of scores), as
recommender and search logs store them: evaluated as they are, the list position being the rank.

The oracle is ir_measures on the same rankings written out as {query: {doc: score}}; without scores the
list order is the ranking, written out as scores falling with the position.
"""
import os

import duckdb
import ir_measures
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli import main

from conftest import postgres_connection

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
    with pytest.raises(SqlmetricsError, match=r"list_run: sqlite has no UNNEST"):
        sqlmetrics.render(MEASURES, dialect="sqlite", list_run=True)


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
