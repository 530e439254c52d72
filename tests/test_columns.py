"""One meaning per option: columns= maps both tables wherever the role exists, qrels_columns= overrides it
for the qrels, and the run-name column is honoured — locally, with engine= and in `sqlmetrics sql`.

Hand-computed values. Qrels: q1: d1 1, d2 1, d3 0; q2: d1 1.
Run A: q1: d1 .9, d3 .8, d2 .7; q2: d2 .5, d1 .4.
    P@5: q1 2/5, q2 1/5 -> 0.3.   AP: q1 (1/1 + 2/3)/2 = 5/6, q2 (1/2)/1 = 1/2 -> 2/3.
Run B: q1: d3 .9, d2 .8; q2: d1 .9.
    P@5: q1 1/5, q2 1/5 -> 0.2.   AP: q1 (1/2)/2 = 1/4, q2 1 -> 5/8.
"""
import sqlite3

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli import main

from conftest import postgres_connection

QRELS = [("q1", "d1", 1), ("q1", "d2", 1), ("q1", "d3", 0), ("q2", "d1", 1)]
RUN_A = [("q1", "d1", 0.9), ("q1", "d3", 0.8), ("q1", "d2", 0.7), ("q2", "d2", 0.5), ("q2", "d1", 0.4)]
RUN_B = [("q1", "d3", 0.9), ("q1", "d2", 0.8), ("q2", "d1", 0.9)]
WANT_A = {"P@5": 0.3, "AP": 2 / 3}
WANT_B = {"P@5": 0.2, "AP": 5 / 8}
MEASURES = ["P@5", "AP"]


def qrels_q():
    return pa.table({"q": [r[0] for r in QRELS], "doc_id": [r[1] for r in QRELS], "relevance": [r[2] for r in QRELS]})


def run_q(rows=RUN_A):
    return pa.table({"q": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "score": [r[2] for r in rows]})


def both_runs():
    """One table holding runs A and B, told apart by the `system` column."""
    rows = [("A", *r) for r in RUN_A] + [("B", *r) for r in RUN_B]
    return pa.table({"system": [r[0] for r in rows], "q": [r[1] for r in rows], "doc_id": [r[2] for r in rows],
                     "score": [r[3] for r in rows]})


def close(got: dict, want: dict) -> bool:
    return all(abs(got[m] - want[m]) < 1e-12 for m in want)


def test_columns_map_both_tables_locally():
    res = sqlmetrics.evaluate(qrels_q(), run_q(), MEASURES, columns={"query_id": "q"})
    assert close(res.aggregate, WANT_A)


def test_qrels_columns_override_for_the_qrels():
    qrels = qrels_q().rename_columns(["topic_id", "doc_id", "relevance"])
    res = sqlmetrics.evaluate(qrels, run_q(), MEASURES, columns={"query_id": "q"},
                              qrels_columns={"query_id": "topic_id"})
    assert close(res.aggregate, WANT_A)
    with pytest.raises(SqlmetricsError, match="'q', which is not a column.*qrels_columns= overrides it"):
        sqlmetrics.evaluate(qrels, run_q(), MEASURES, columns={"query_id": "q"})


def test_run_name_column_is_honoured_locally_even_with_duplicates_max():
    """Before, the run-name column was ignored: A and B merged into one run, and duplicates='max' kept the
    better of their rows — one wrong number. Now each run is its own list, as {name: run} would be."""
    for duplicates in ("error", "max", "first"):
        res = sqlmetrics.evaluate(qrels_q(), both_runs(), MEASURES, columns={"query_id": "q", "run_name": "system"},
                                  duplicates=duplicates)
        assert set(res.aggregate) == {"A", "B"}
        assert close(res.aggregate["A"], WANT_A) and close(res.aggregate["B"], WANT_B), duplicates
        assert res.per_query.column_names[:2] == ["run", "query_id"]


def test_a_run_repeated_within_one_run_name_is_still_refused():
    rows = both_runs().to_pylist() + [{"system": "B", "q": "q2", "doc_id": "d1", "score": 0.1}]
    with pytest.raises(SqlmetricsError, match="run 'B' of .*'d1' appears more than once for query 'q2'"):
        sqlmetrics.evaluate(qrels_q(), pa.Table.from_pylist(rows), MEASURES,
                            columns={"query_id": "q", "run_name": "system"})


def _sqlite():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE qrels (q TEXT, doc_id TEXT, relevance REAL)")
    con.execute("CREATE TABLE run (system TEXT, q TEXT, doc_id TEXT, score REAL)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", QRELS)
    con.executemany("INSERT INTO run VALUES (?, ?, ?, ?)", [tuple(r.values()) for r in both_runs().to_pylist()])
    con.execute("CREATE TABLE run_a AS SELECT q, doc_id, score FROM run WHERE system = 'A'")
    return con


def _duckdb():
    con = duckdb.connect()
    con.register("q_view", qrels_q())
    con.register("r_view", both_runs())
    con.execute("CREATE TABLE qrels AS SELECT * FROM q_view")
    con.execute("CREATE TABLE run AS SELECT * FROM r_view")
    con.execute("CREATE TABLE run_a AS SELECT q, doc_id, score FROM run WHERE system = 'A'")
    return con


def _postgres():
    con = postgres_connection(autocommit=True)
    with con.cursor() as cur:
        cur.execute("DROP SCHEMA IF EXISTS sqlm_columns CASCADE")
        cur.execute("CREATE SCHEMA sqlm_columns")
        cur.execute("CREATE TABLE sqlm_columns.qrels (q TEXT, doc_id TEXT, relevance DOUBLE PRECISION)")
        cur.execute("CREATE TABLE sqlm_columns.run (system TEXT, q TEXT, doc_id TEXT, score DOUBLE PRECISION)")
        cur.executemany("INSERT INTO sqlm_columns.qrels VALUES (%s, %s, %s)", QRELS)
        cur.executemany("INSERT INTO sqlm_columns.run VALUES (%s, %s, %s, %s)",
                        [tuple(r.values()) for r in both_runs().to_pylist()])
        cur.execute("CREATE TABLE sqlm_columns.run_a AS SELECT q, doc_id, score FROM sqlm_columns.run WHERE system = 'A'")
    return con


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def test_the_same_mapping_on_engines(engine):
    con = {"duckdb": _duckdb, "sqlite": _sqlite, "postgres": _postgres}[engine]()
    prefix = "sqlm_columns." if engine == "postgres" else ""
    tables = dict(qrels=prefix + "qrels", run=prefix + "run")
    res = sqlmetrics.evaluate(*tables.values(), MEASURES, engine=con, columns={"query_id": "q", "run_name": "system"})
    assert close(res.aggregate["A"], WANT_A) and close(res.aggregate["B"], WANT_B)
    res = sqlmetrics.evaluate(prefix + "qrels", prefix + "run_a", MEASURES, engine=con, columns={"query_id": "q"})
    assert close(res.aggregate, WANT_A)
    con.close()


def test_the_same_mapping_in_sqlmetrics_sql(capsys):
    assert main(["sql", "-m", "P@5,AP", "--column", "query_id=q", "--column", "run_name=system", "--no-header"]) == 0
    sql = capsys.readouterr().out
    con = _duckdb()
    rows = {r[0]: dict(zip(MEASURES, r[1:])) for r in con.execute(sql.rstrip().rstrip(";")).fetchall()}
    assert close(rows["A"], WANT_A) and close(rows["B"], WANT_B)
