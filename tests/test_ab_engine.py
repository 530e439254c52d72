"""compare(..., engine=) for the tests of IN_ENGINE (student, welch, mannwhitney, the seeded bootstrap, tukey): the
statistics' aggregates are computed on the engine (stats/aggregates.py) and only they are fetched; the Report
equals the local compare's (which computes from every per-list value) to 1e-9, on SQLite, PostgreSQL, DuckDB,
DataFusion, ClickHouse (chDB), MariaDB (the evaluation staged in a temporary table) and Spark (local, the tables as
Parquet files), paired and unpaired, with segments. An engine that is not here skips; SQLMETRICS_REQUIRE_ENGINES=1
fails."""
from __future__ import annotations

import functools
import gzip
import math
import os
import sqlite3

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot

import sqlmetrics
from sqlmetrics.dialects.info import DIALECTS
from sqlmetrics.stats.aggregates import IN_ENGINE

from conftest import mariadb_connection, postgres_connection, spark_session, unavailable

# pyspark 4 warns on import that it has not caught up with pandas 3; it does not use pandas here.
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

DEMO = "sqlmetrics/demo/"
LOG_COLUMNS = {"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"}
LOG_OPTIONS = dict(qrels=None, columns=LOG_COLUMNS, ties="rank", relevance="2*purchased + clicked", group_by=["date"])
RUN_OPTIONS = dict(columns={"run_name": "run_name"}, group_by=["part"])
MEASURES = ["nDCG@5", "RR", "GMAP", "P@10"]  # GMAP: tested on the logs' scale; P@10: many ties


@functools.lru_cache(maxsize=None)  # built at first use, not at collection (half a second in every process)
def _tables() -> dict:
    """{name: pyarrow table}: the log (unpaired: sessions differ between arms), the demo qrels and both demo runs
    in one table, with a segment column `part` (one of two parts, or NULL for a few queries). The log has a unit
    column `visitor` too: the arm and the query (several sessions each), but q17's sessions are one visitor in both
    arms (a unit in more than one arm), s0002's visitor is blank and s0003's NULL."""
    qrels = [line.split() for line in open(DEMO + "qrels.txt")]
    runs = []
    for name in ("bm25", "rerank"):
        with gzip.open(f"{DEMO}{name}.run.gz", "rt") as f:
            for q, _, doc, _rank, score, _ in (line.split() for line in f):
                part = None if int(q) % 7 == 0 else ("odd" if int(q) % 2 else "even")
                runs.append((name, q, doc, float(score), part))
    log = pq.read_table(DEMO + "search_log.parquet")
    users = [None if s == "s0003" else "  " if s == "s0002" else "control:q17" if q == "q17" else f"{a}:{q}"
             for a, q, s in zip(*(log[c].to_pylist() for c in ("arm", "query", "session")))]
    return {
        "log": log.append_column("visitor", pa.array(users, pa.string())),
        "qrels": pa.table({"query_id": [r[0] for r in qrels], "doc_id": [r[2] for r in qrels],
                           "relevance": [int(r[3]) for r in qrels]}),
        "runs": pa.table(dict(zip(["run_name", "query_id", "doc_id", "score", "part"], map(list, zip(*runs))))),
    }


class CountingCursor(sqlite3.Cursor):
    """A cursor that counts the rows fetched through it."""
    fetched = 0

    def fetchall(self):
        rows = super().fetchall()
        CountingCursor.fetched += len(rows)
        return rows


class CountingConnection(sqlite3.Connection):
    def cursor(self, factory=CountingCursor):
        return super().cursor(factory)


CountingConnection.__module__ = "sqlite3"  # recognised as SQLite, as a sqlite3.Connection is


def _load(con, placeholder: str, prefix: str = "") -> None:
    cur = con.cursor()
    for name, table in _tables().items():
        types = {pa.string(): "TEXT", pa.float64(): "DOUBLE PRECISION"}
        cols = ", ".join(f"{c} {types.get(t, 'BIGINT')}" for c, t in zip(table.column_names, table.schema.types))
        cur.execute(f"CREATE TABLE {prefix}{name} ({cols})")
        cur.executemany(f"INSERT INTO {prefix}{name} VALUES ({', '.join([placeholder] * table.num_columns)})",
                        [tuple(r.values()) for r in table.to_pylist()])
    con.commit()


@pytest.fixture(scope="module")
def sqlite_con():
    con = sqlite3.connect(":memory:", factory=CountingConnection)
    _load(con, "?")
    yield con, ""
    con.close()


@pytest.fixture(scope="module")
def postgres_con():
    con = postgres_connection()
    schema = f"sqlm_ab_{os.getpid()}"
    with con.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        cur.execute(f"CREATE SCHEMA {schema}")
    _load(con, "%s", schema + ".")
    yield con, schema + "."
    con.rollback()
    with con.cursor() as cur:
        cur.execute(f"DROP SCHEMA {schema} CASCADE")
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def duckdb_con():
    con = duckdb.connect()
    for name, table in _tables().items():
        con.register("arrow_table", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow_table")
        con.unregister("arrow_table")
    yield con, ""
    con.close()


@pytest.fixture(scope="module")
def mariadb_con():
    con = mariadb_connection()
    prefix = f"sqlm_ab_{os.getpid()}_"
    _load(con, "%s", prefix)
    yield con, prefix
    with con.cursor() as cur:
        for name in _tables():
            cur.execute(f"DROP TABLE {prefix}{name}")
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def clickhouse_con():
    try:
        from chdb import session
    except ImportError:
        unavailable("chdb is not installed (pip install chdb)")
    sess = session.Session()
    sess.query("CREATE DATABASE IF NOT EXISTS ab")
    types = {pa.string(): "Nullable(String)", pa.float64(): "Float64"}
    for name, table in _tables().items():
        cols = ", ".join(f"{c} {types.get(t, 'Int64')}" for c, t in zip(table.column_names, table.schema.types))
        sess.query(f"CREATE TABLE ab.{name} ({cols}) ENGINE = Memory")
        values = ", ".join("(" + ", ".join(sqlglot.exp.convert(v).sql("clickhouse") for v in r.values()) + ")"
                           for r in table.to_pylist())
        sess.query(f"INSERT INTO ab.{name} VALUES {values}")
    yield sess, "ab."
    sess.close()


@pytest.fixture(scope="module")
def datafusion_con():
    try:
        import datafusion
    except ImportError:
        unavailable("datafusion is not installed (pip install datafusion)")
    ctx = datafusion.SessionContext()
    for name, table in _tables().items():
        ctx.register_record_batches(name, [table.to_batches()])
    yield ctx, ""


@pytest.fixture(scope="module")
def spark_con(tmp_path_factory):
    spark = spark_session()
    for name, table in _tables().items():  # Parquet files, as Spark's tables are (not the data in the plan)
        path = tmp_path_factory.mktemp("spark") / f"{name}.parquet"
        pq.write_table(table, path)
        spark.read.parquet(str(path)).createOrReplaceTempView(name)
    yield spark, ""  # the suite's session: conftest stops it


def _flat(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flat(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, value


def _differences(there: dict, here: dict) -> list:
    """Every entry of two Report.to_dict()s that differs by more than 1e-9 (the intervals too: Welch's and
    Student's come from the moments on either side, and only test='bootstrap' draws resamples)."""
    a, b = dict(_flat(there)), dict(_flat(here))
    assert a.keys() == b.keys()
    bad = []
    for k in a:
        if isinstance(a[k], float) and isinstance(b[k], float):
            if not math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-9):
                bad.append((k, a[k], b[k]))
        elif a[k] != b[k]:
            bad.append((k, a[k], b[k]))
    return bad


CASES = [  # data, test, expected pairing
    ("runs", "student", True), ("runs", "welch", False), ("runs", "mannwhitney", False),
    ("log", "student", False), ("log", "welch", False), ("log", "mannwhitney", False),
    ("runs", "bootstrap", True), ("log", "bootstrap", False), ("runs", "tukey", True),
]


SLOW_ENGINES = ("postgres_con", "datafusion_con", "clickhouse_con", "mariadb_con", "spark_con")  # servers, JVMs
# SQLite takes seconds on the demo runs: the fast suite holds it to an unpaired case on the log (and test_ab.py's
# bootstrap on the log); the full suite runs every case on every engine.
SQLITE_FAST = (("log", "welch"),)
# DuckDB as an engine: the fast suite runs each kind of aggregate once (paired moments on the runs, unpaired ones on
# the log, the ranks, the bootstrap, the complete lists of Tukey's HSD); the other data of each test, the full suite.
DUCKDB_SLOW = (("log", "student"), ("runs", "welch"), ("log", "mannwhitney"), ("log", "bootstrap"))
# MariaDB takes about 20 s to evaluate the demo runs (the log, 1 s): the log's cases, and one of each kind of
# aggregate (moments, complete lists, the bootstrap) on the runs
MARIADB_RUNS = ("student", "tukey", "bootstrap")


def _options(data: str, test: str) -> dict:
    return dict(LOG_OPTIONS if data == "log" else RUN_OPTIONS, test=test, max_p=0.05,
                correction=None if test == "tukey" else "holm",  # Tukey's HSD controls the error rate itself
                n_resamples=150, seed=9)


@functools.lru_cache(maxsize=None)
def _local_compare(data: str, test: str):
    """The local compare every engine's is held against: computed once per case (a Report is not changed by
    to_dict())."""
    options = _options(data, test)
    qrels = options.pop("qrels", "qrels")
    return sqlmetrics.compare(qrels and _tables()[qrels], _tables()[data], MEASURES, **options)


@pytest.mark.parametrize("engine, data, test, paired", [
    pytest.param(engine, *case, marks=[pytest.mark.slow] if engine in SLOW_ENGINES or
                 engine == "sqlite_con" and case[:2] not in SQLITE_FAST
                 or engine == "duckdb_con" and case[:2] in DUCKDB_SLOW else [])
    for engine in ("sqlite_con", "duckdb_con", *SLOW_ENGINES) for case in CASES
    if engine != "mariadb_con" or case[0] == "log" or case[1] in MARIADB_RUNS])
def test_engine_aggregates_equal_local_compare(engine, data, test, paired, request):
    con, prefix = request.getfixturevalue(engine)
    options = _options(data, test)
    qrels = options.pop("qrels", "qrels")
    there = sqlmetrics.compare(qrels and prefix + qrels, prefix + data, MEASURES, engine=con, **options)
    here = _local_compare(data, test)
    assert here.paired is paired and there.paired is paired and there.test == here.test
    assert len(there.comparisons) == len(here.comparisons) > 0 and len(there.summary) == len(here.summary)
    assert _differences(there.to_dict(), here.to_dict()) == []


# render_compare()'s statement, run by hand where the tables are, and decide() on its rows: the fast suite runs
# DuckDB on an unpaired case; the full suite the other cases, SQLite, PostgreSQL and Spark.
RENDERED = [("log", "welch"), ("runs", "student"), ("log", "bootstrap"), ("runs", "tukey"), ("log", "mannwhitney")]
RENDERED_FAST = (("duckdb_con", "log", "welch"),)


@pytest.mark.parametrize("engine, data, test", [
    pytest.param(engine, *case, marks=[] if (engine, *case) in RENDERED_FAST else [pytest.mark.slow])
    for engine in ("duckdb_con", "sqlite_con", "postgres_con", "spark_con") for case in RENDERED])
def test_rendered_statistics_decide_as_compare_does(engine, data, test, request):
    """The warehouse half of an A/B test: the statement's rows, fetched as a table and saved, give the local
    compare's report to 1e-9 (sqlmetrics sql --compare, then sqlmetrics decide)."""
    from sqlmetrics.engines import _fetch, engine_dialect

    con, prefix = request.getfixturevalue(engine)
    options = _options(data, test)
    qrels = options.pop("qrels", "qrels")
    correction = options.pop("correction")
    sql = sqlmetrics.render_compare(MEASURES, engine_dialect(con), qrels=qrels and prefix + qrels, run=prefix + data,
                                    **options)
    rows, names = _fetch(con, engine_dialect(con), sql)
    there = sqlmetrics.decide([dict(zip(names, r)) for r in rows], correction=correction)
    here = _local_compare(data, test)
    assert there.test == here.test and there.paired == here.paired
    assert _differences(_decided(there), _decided(here)) == []


@pytest.mark.parametrize("engine, cuped", [
    pytest.param(e, cuped, marks=[] if e == "duckdb_con" and cuped else [pytest.mark.slow])
    for e in ("duckdb_con", "sqlite_con", "postgres_con", "spark_con") for cuped in (False, True)])
def test_rendered_statistics_over_units_decide_as_compare_does(engine, cuped, request):
    """unit= in the warehouse: each arm's moments over units (the delta method's Σy, Σl, Σy², Σl², Σyl as means
    and sums of deviations; with a pre-period, CUPED's too) computed there, the same report as the local
    compare(unit=, pre_period=) to 1e-9, the log itself standing for the pre-period. The visitor in both arms and the
    lists without a visitor id are left out there as here, with the same warning's counts."""
    from sqlmetrics.engines import _fetch, engine_dialect

    con, prefix = request.getfixturevalue(engine)
    options = {k: v for k, v in LOG_OPTIONS.items() if k != "qrels"}
    measures = ["nDCG@5", "RR", "P@10"]
    sql = sqlmetrics.render_compare(measures, engine_dialect(con), qrels=None, run=prefix + "log", unit="visitor",
                                    test="welch", max_p=0.05, pre_period=prefix + "log" if cuped else None, **options)
    rows, names = _fetch(con, engine_dialect(con), sql)
    kw = dict(baseline="control", correction="holm", max_excluded=0.05)  # 1 unit of 76: more than the default 1%
    users = {u for u in _tables()["log"]["visitor"].to_pylist() if u and u.strip()}
    assert len(users) == 76
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"1 of 76 units .* 2 of 300 lists"):
        there = sqlmetrics.decide([dict(zip(names, r)) for r in rows], **kw)
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"1 of 76 units .*\('control:q17'\)"):
        here = sqlmetrics.compare(None, _tables()["log"], measures, unit="visitor", max_p=0.05,
                                  pre_period=_tables()["log"] if cuped else None, **kw, **options)
    sessions = {r["session"]: r["query"] for r in _tables()["log"].to_pylist()}
    assert here.excluded == {"multiple_arms": 1, "multiple_arms_lists": sum(q == "q17" for q in sessions.values()),
                             "no_id_lists": 2}
    assert there.unit == here.unit == "visitor" and there.cuped is here.cuped is cuped
    assert len(there.comparisons) == len(here.comparisons) == 9
    assert _differences(_decided(there), _decided(here)) == []
    # compare(engine=, unit=) runs the same statement there
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="1 of 76 units"):
        on_engine = sqlmetrics.compare(None, prefix + "log", measures, unit="visitor", max_p=0.05, engine=con,
                                       pre_period=prefix + "log" if cuped else None, **kw, **options)
    assert _differences(_decided(on_engine), _decided(here)) == []


@pytest.mark.slow  # a server
@pytest.mark.parametrize("cuped", [False, True])
def test_units_on_mariadb_are_staged_and_equal_local_compare(mariadb_con, cuped):
    """compare(engine=, unit=) on MariaDB: the evaluations (the test's and the pre-period's) staged in temporary
    tables, as the other aggregates are (MariaDB evaluates a WITH query again at each reference), the same report
    as the local compare to 1e-9."""
    import pymysql

    _, prefix = mariadb_con
    statements = []

    class Recording(pymysql.cursors.Cursor):
        def execute(self, query, args=None):
            statements.append(query)
            return super().execute(query, args)

    options = {k: v for k, v in LOG_OPTIONS.items() if k != "qrels"}
    measures = ["nDCG@5", "RR", "P@10"]
    kw = dict(unit="visitor", max_excluded=0.05, max_p=0.05, baseline="control", correction="holm", **options)
    con = mariadb_connection(cursorclass=Recording)
    try:
        there = sqlmetrics.compare(None, prefix + "log", measures, engine=con,
                                   pre_period=prefix + "log" if cuped else None, **kw)
    finally:
        con.close()
    here = sqlmetrics.compare(None, _tables()["log"], measures, pre_period=_tables()["log"] if cuped else None, **kw)
    assert there.cuped is here.cuped is cuped and len(there.comparisons) == 9
    assert _differences(_decided(there), _decided(here)) == []
    staged = [q.split()[3] for q in statements if q.startswith("CREATE TEMPORARY TABLE")]
    dropped = [q.split()[-1] for q in statements if q.startswith("DROP TEMPORARY TABLE")]
    assert len(staged) == 1 + cuped and sorted(dropped) == sorted(staged)


def _decided(report) -> dict:
    """A report as decide() can know it: the evaluation's options are the statement's (its header), not its rows'."""
    return {k: v for k, v in report.to_dict().items() if k != "options"}


def test_decide_reads_the_statistics_from_a_file_and_refuses_what_is_not_them(duckdb_con, tmp_path, capsys):
    from sqlmetrics.cli import main as cli_main

    con, _ = duckdb_con
    options = _options("log", "welch")
    options.pop("qrels"), options.pop("correction")
    sql = sqlmetrics.render_compare(MEASURES, "duckdb", qrels=None, run="log", **options)
    con.execute(f"COPY ({sql}) TO '{tmp_path / 'stats.parquet'}'")
    con.execute(f"COPY ({sql}) TO '{tmp_path / 'stats.csv'}'")
    here = _local_compare("log", "welch")
    for name in ("stats.parquet", "stats.csv"):
        decided = sqlmetrics.decide(tmp_path / name, correction="holm")
        assert _differences(_decided(decided), _decided(here)) == []
    assert cli_main(["decide", str(tmp_path / "stats.parquet"), "--correction", "holm"]) == 0
    assert capsys.readouterr().out == here.to_table()  # the table prints no option
    with pytest.raises(sqlmetrics.SqlmetricsError, match="these rows have no kind, sc, rx"):
        sqlmetrics.decide(pq.read_table(DEMO + "search_log.parquet"))
    rows = con.sql(sql).to_arrow_table().to_pylist()
    with pytest.raises(sqlmetrics.SqlmetricsError, match="the rows disagree on max_p: 0.05 on row 1, 0.01 on row"):
        sqlmetrics.decide(rows + [{**rows[0], "max_p": 0.01}])
    with pytest.raises(sqlmetrics.SqlmetricsError, match="there is no file"):
        sqlmetrics.decide(tmp_path / "missing.parquet")
    with pytest.raises(sqlmetrics.SqlmetricsError, match="'fisher' needs every per-list value"):
        sqlmetrics.render_compare(MEASURES, "duckdb", qrels=None, run="log", **{**options, "test": "fisher"})
    with pytest.raises(sqlmetrics.SqlmetricsError, match="map its run_name column"):
        sqlmetrics.render_compare(MEASURES, "duckdb", run="runs")
    assert cli_main(["sql", "-m", "RR", "--max-p", "0.05"]) == 2
    assert "--max-p is a setting of the test: give --compare TEST too" in capsys.readouterr().err
    # as a dbt model: the log a dbt reference, kept as it is; the statement the same otherwise
    out = tmp_path / "ab_stats.sql"
    assert cli_main(["sql", "--compare", "welch", "-m", "RR", "--qrels", "none", "--run", "{{ ref('log') }}", "--dbt",
                     "--label", "clicked", "--column", "run_name=arm", "--column", "query_id=session",
                     "--column", "doc_id=doc", "-o", str(out)]) == 0
    model = out.read_text()
    plain = sqlmetrics.render_compare(["RR"], "duckdb", qrels=None, run="log", label="clicked", test="welch",
                                      columns={"run_name": "arm", "query_id": "session", "doc_id": "doc"})
    assert "{{ ref('log') }}" in model and "sqlmetrics_dbt" not in model and not model.rstrip().endswith(";")
    assert model.replace("{{ ref('log') }}", "log").split("\n", 3)[3] == plain.split("\n", 3)[3] + "\n"


@pytest.mark.slow  # a server
def test_mariadb_drops_its_staging_table(mariadb_con):
    """The evaluation is staged in a temporary table of the connection's own, dropped afterwards."""
    import pymysql

    _, prefix = mariadb_con
    statements = []

    class Recording(pymysql.cursors.Cursor):
        def execute(self, query, args=None):
            statements.append(query)
            return super().execute(query, args)

    con = mariadb_connection(cursorclass=Recording)
    try:
        sqlmetrics.compare(None, prefix + "log", MEASURES, engine=con, test="welch",
                           **{k: v for k, v in LOG_OPTIONS.items() if k != "qrels"})
        staged = [q.split()[3] for q in statements if q.startswith("CREATE TEMPORARY TABLE")]
        assert len(staged) == 1 and any(staged[0] in q for q in statements if q.startswith("WITH"))
        with con.cursor() as cur, pytest.raises(pymysql.err.ProgrammingError, match="doesn't exist"):
            cur.execute(f"SELECT 1 FROM {staged[0]}")
    finally:
        con.close()


def test_only_aggregates_leave_the_engine(sqlite_con):
    con, _ = sqlite_con
    n_lists = len(set(zip(*(_tables()["log"][c].to_pylist() for c in ("arm", "date", "session")))))
    CountingCursor.fetched = 0
    report = sqlmetrics.compare(None, "log", MEASURES, engine=con, test="welch",
                                **{k: v for k, v in LOG_OPTIONS.items() if k != "qrels"})
    aggregated = CountingCursor.fetched
    # 2 arms x 3 days: 6 list counts, 24 moments (4 measures; no session is in both arms, so none over shared
    # lists and no per-query differences), 12 rank sums; the tables' probes read no row
    assert aggregated == 6 + 24 + 12 and report.n_queries == n_lists == 300
    CountingCursor.fetched = 0  # the bootstrap adds a row per direction, day and measure: the resamples stay there
    sqlmetrics.compare(None, "log", MEASURES, engine=con, test="bootstrap", n_resamples=50,
                       **{k: v for k, v in LOG_OPTIONS.items() if k != "qrels"})
    assert CountingCursor.fetched == aggregated + 2 * 3 * 4
    CountingCursor.fetched = 0  # a test that needs every value still fetches one row per list
    sqlmetrics.compare(None, "log", MEASURES, engine=con, test="wilcoxon",
                       **{k: v for k, v in LOG_OPTIONS.items() if k != "qrels"})
    assert CountingCursor.fetched >= n_lists


@pytest.mark.parametrize("dialect", ["bigquery", *(pytest.param(d, marks=pytest.mark.slow) for d in sorted(DIALECTS)
                                                  if d != "bigquery")])
def test_the_statement_renders_for_every_dialect(dialect):
    """MySQL, BigQuery and SQL Server cannot say NULLS LAST, DuckDB's default order, which sqlglot spelled out for
    the rank and bootstrap windows: render_compare() raised sqlglot's UnsupportedError for them, whatever the test
    (BigQuery is where docs/compare.md's warehouse example runs). Every test the engine computes, with segments and
    over units, renders for every dialect."""
    tests = IN_ENGINE if dialect in ("mysql", "bigquery", "tsql") else ("bootstrap",)
    for test in tests:
        sql = sqlmetrics.render_compare(["AP"], dialect, qrels="qrels", run="runs", columns={"run_name": "run_name"},
                                        test=test, group_by=["part"])
        assert "NULLS LAST" not in sql.upper() or dialect not in ("mysql", "bigquery", "tsql")
    sqlmetrics.render_compare(["RR"], dialect, qrels=None, run="log", relevance="clicked", unit="user",
                              covariate="pre", columns={"run_name": "arm"})
