"""The rendered SQL, executed on every engine that runs here, equals evaluate() on DuckDB.

One shared fixture set (below) is loaded into each engine as tables with awkward column names, and
every measure in the catalogue (cutoffs and parameters exercised) is evaluated there with
sqlmetrics.engines.evaluate_on, under each option set; every per-query value must equal
sqlmetrics.evaluate's within 1e-9, and so must the aggregates.

Engines: DuckDB, SQLite, PostgreSQL and MariaDB (Debian servers, started by .ci/engines.sh), ClickHouse
(chDB), DataFusion, Polars and Spark (pyspark, local mode). An engine that is not available here skips
with the reason; SQLMETRICS_REQUIRE_ENGINES=1 (CI) turns that skip into a failure.

The PostgreSQL test database uses an ICU en-US collation and MariaDB's its case-insensitive default, so
the doc-id tie-break below only passes when the rendered SQL forces byte order (test_the_traps_are_live
checks that they would bite).
"""
from __future__ import annotations

import math
import os
import random
import time
import warnings
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from sqlglot import exp

import sqlmetrics
from sqlmetrics.catalogue import measures as catalogue
from sqlmetrics.catalogue import parse
from sqlmetrics.dialects.info import dialect_info
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.engines import evaluate_on
from sqlmetrics.plan import plan_measures

from conftest import MYSQL, mariadb_connection, postgres_connection, spark_session, unavailable

# Servers, JVMs and drivers: left out of the fast suite (`pytest -m 'not slow'`), run by .ci/run. pyspark 4
# warns on import that it has not caught up with pandas 3; it does not use pandas here.
pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

TOLERANCE = 1e-9




# ---------------------------------------------------------------------------------------------- data

# Score ties among ids that differ only in case, punctuation, accents or a trailing space: byte order,
# case-insensitive and ICU collations all sort these differently.
TIE_DOCS = ["doc-A", "Doc_a", "doc.a", "DOC-a", "b", "B", "a b", "Éa", "ea", "x ", "x", "z9", "Z10"]
# Two queries whose ids differ only in case: a case-insensitive engine merges them.
QUERIES = ["q1", "Q1", "q-2", "q.3", "q4_zero", "q5_norun"]


def fixture_rows():
    """(qrels, run, runs) as rows: qrels (query, doc, grade); run (query, doc, score, rank); runs adds a name.

    - graded and negative judgments (-1 = pooled, not judged), more than 20 judged and ranked documents;
    - q4_zero has no relevant document, q5_norun is judged but not ranked, q6_noqrels ranked but not judged;
    - ties in score among awkward ids (TIE_DOCS) and scores equal only in float32 (1 and 1 + 1e-9);
    - a rank column that disagrees with the scores and has its own ties (for ties='rank').
    """
    rnd = random.Random(20240611)
    qrels, run = [], []
    for qi, q in enumerate(QUERIES):
        docs = TIE_DOCS + [f"d{qi}_{i:02d}" for i in range(25)] + ["f32a", "f32b"]
        for d in docs:
            if d in ("f32a", "f32b") and q != "q4_zero":
                qrels.append((q, d, 1 if d == "f32b" else 0))
            elif rnd.random() < 0.55:
                grade = rnd.choice([-1, 0]) if q == "q4_zero" else rnd.choice([-1, 0, 0, 1, 1, 2, 3])
                qrels.append((q, d, grade))
        if q == "q5_norun":
            continue
        ranked = [d for d in docs if not (d == "x " and q != "q1")]
        for i, d in enumerate(ranked):
            if d in TIE_DOCS:
                score = [3.0, 3.0, 2.5][i % 3]
            elif d == "f32a":
                score = 1.0 + 1e-9  # above f32b in float64; equal in float32, where the doc-id tie-break puts f32b first
            elif d == "f32b":
                score = 1.0
            else:
                score = round(rnd.uniform(0, 2), 3)
            run.append((q, d, score, 1 + (i * 7) % 19))
    run += [("q6_noqrels", f"n{i}", float(i), i + 1) for i in range(5)]
    second = [(q, d, round(2 - s, 6) if q != "Q1" else s, r) for q, d, s, r in run if q != "q-2"]
    runs = [("bm25",) + r for r in run] + [("Dense",) + r for r in second]
    return qrels, run, runs


def subtopic_rows(qrels):
    """Subtopic qrels (query, subtopic, doc, grade) from the fixture's judgments: each judgment for one to three of
    subtopics whose ids differ only in case or punctuation (merged by a case-insensitive engine), graded -1..2.
    The judged documents include TIE_DOCS, so the greedy ideal ranking's ties (to the greatest id) need byte order;
    q4_zero has no relevant subtopic."""
    rnd = random.Random(20251125)
    rows = []
    for q, d, grade in qrels:
        for subtopic in rnd.sample(["s1", "S1", "s-2", "s.3"], rnd.randint(1, 3)):
            rows.append((q, subtopic, d, min(grade, 0) if q == "q4_zero" else rnd.choice([-1, 0, 1, 1, 2])))
    return rows


def history_rows(qrels):
    """Training interactions (user, item, grade) for the recommender measures: the positive judgments, so
    that some ranked items are absent from the history and the awkward ids are among its items."""
    return [row for row in qrels if row[2] >= 1]


def verdict_rows():
    """A RAG pipeline's judged statements (query, statement, statement_of, verdict) for the fixture's queries (the
    awkward ids among them): a few of each kind per query, some kinds missing (no value there), q6_noqrels's
    unread (not a judged query)."""
    rnd = random.Random(20261125)
    rows = []
    for q in (*QUERIES, "q6_noqrels"):
        for of in ("answer", "reference", "context"):
            rows += [(q, f"{of} {i}", of, rnd.choice([0, 1])) for i in range(rnd.choice([0, 1, 3, 4]))]
    return rows


def embedding_rows():
    """Question embeddings (query, generated, vector of 4, noncommittal): the question asked (0) and one to three
    generated ones for most fixture queries, none for some; every generation noncommittal for a few."""
    rnd = random.Random(20261126)
    rows = []
    for q in (*QUERIES, "q6_noqrels"):
        generated = rnd.choice([0, 1, 2, 3])
        all_noncommittal = rnd.random() < 0.2
        for g in range(generated + 1):
            vector = [round(rnd.choice([-1, 1]) * rnd.uniform(0.1, 2), 3) for _ in range(4)]
            rows.append((q, g, vector, 1 if all_noncommittal and g else rnd.choice([0, 0, 1]) if g else 0))
    return rows


def nugget_rows():
    """Each fixture query's nuggets (topic, nugget, importance, weight): three to six, vital or okay, a few topics
    without a vital one; nugget ids that differ only in case or hold a space; q6_noqrels's unread (not judged)."""
    rnd = random.Random(20261207)
    rows = []
    for q in (*QUERIES, "q6_noqrels"):
        vital = 0 if q in ("q-2", "q4_zero") else 0.5
        rows += [(q, n, "vital" if rnd.random() < vital else "okay", rnd.choice([0.25, 1.0, 2.0]))
                 for n in rnd.sample(["n1", "N1", "n 2", "n3", "n4", "n5"], rnd.randint(3, 6))]
    return rows


def assignment_rows(nuggets):
    """The two runs' (bm25, Dense) support of some of the nuggets (topic, run, nugget, assignment): a nugget not
    listed is not_support; Dense assigns none of q1's."""
    rnd = random.Random(20261208)
    return [(q, run, n, rnd.choice(["support", "partial_support", "not_support"])) for run in ("bm25", "Dense")
            for q, n, _, _ in nuggets if rnd.random() < 0.8 and not (run == "Dense" and q == "q1")]


def item_rows(qrels, run):
    """Item features in long form (item, dimension, value) for the item similarities: values of either sign on
    dimensions whose names differ only in case (apart on a case-insensitive engine only if compared byte-wise);
    every fourth item has none (its similarities are 0)."""
    rnd = random.Random(20251126)
    items = sorted({row[1] for row in (*qrels, *run)})
    return [(item, dimension, rnd.choice([-1.5, -0.5, 0.25, 1.0, 2.0])) for n, item in enumerate(items) if n % 4
            for dimension in rnd.sample(["x", "X", "y"], rnd.randint(1, 3))]


# Awkward column names: a space and capitals, SQL keywords ("order", "rank"), and none named after its role.
QRELS_COLUMNS = ("topic", "Doc ID", "grade")
RUN_COLUMNS = ("topic", "Doc ID", "order", "rank")
RUNS_COLUMNS = ("tag",) + RUN_COLUMNS
SUBTOPICS_COLUMNS = ("topic", "Sub Topic", "Doc ID", "grade")  # subtopic qrels, for the diversity measures
VERDICTS_COLUMNS = ("topic", "statement", "statement_of", "verdict")  # the query column as the qrels name it
EMBEDDINGS_COLUMNS = ("topic", "generated", "dimension", "value", "noncommittal")  # long form: any engine
NUGGETS_COLUMNS = ("topic", "nugget", "importance", "Nugget Weight")  # the weight mapped by columns=
ASSIGNMENTS_COLUMNS = ("topic", "run", "nugget", "assignment")
TABLE_COLUMNS = {"qrels": QRELS_COLUMNS, "run": RUN_COLUMNS, "runs": RUNS_COLUMNS, "subtopics": SUBTOPICS_COLUMNS,
                 "history": QRELS_COLUMNS, "verdicts": VERDICTS_COLUMNS, "embeddings": EMBEDDINGS_COLUMNS,
                 "items": ("Doc ID", "dimension", "value"), "nuggets": NUGGETS_COLUMNS,
                 "assignments": ASSIGNMENTS_COLUMNS}
TABLES = tuple(TABLE_COLUMNS)
COLUMNS = {"query_id": "topic", "doc_id": "Doc ID", "relevance": "grade", "score": "order",
           "rank_position": "rank", "subtopic": "Sub Topic"}
RUNS_MAP = {**COLUMNS, "run_name": "tag"}
TYPES = {"topic": "text", "Doc ID": "text", "grade": "int", "order": "float", "rank": "int", "tag": "text",
         "Sub Topic": "text", "statement": "text", "statement_of": "text", "verdict": "int",
         "generated": "int", "dimension": "int", "value": "float", "noncommittal": "int",
         "nugget": "text", "importance": "text", "Nugget Weight": "float", "run": "text", "assignment": "text"}
# A column whose type differs by table: an item feature's dimension is a name, an embedding's a number.
TABLE_TYPES = {"items": {"dimension": "text"}}


def column_type(table: str, column: str) -> str:
    return TABLE_TYPES.get(table, {}).get(column, TYPES[column])


def arrow(rows, columns, table: str = "") -> pa.Table:
    arrays = {}
    for i, c in enumerate(columns):
        kind = column_type(table, c)
        typ = pa.string() if kind == "text" else pa.int64() if kind == "int" else pa.float64()
        arrays[c] = pa.array([r[i] for r in rows], typ)
    return pa.table(arrays)


def all_measures(diversity: bool = False) -> list[str]:
    """Every catalogue measure: bare, at two cutoffs (or three recall points), and each parameter varied; the
    diversity measures (subtopic qrels) apart."""
    out = []
    for m in catalogue().values():
        if (m.rows == "subtopics") != diversity:
            continue
        if m.rows in ("recommendations", "ratings", "items"):
            continue  # history=, items=: test_recommender_measures_equal_duckdb
        if m.rows in ("verdicts", "embeddings", "nuggets"):
            continue  # verdicts, embeddings, nuggets: test_rag_measures_equal_duckdb, test_nugget_measures_equal_duckdb
        at = m.params.get(m.at) if m.at else None
        ats = [] if at is None else ["5", "20"] if at.type == "cutoff" else ["0", "0.3", "1"]
        if at is None or not at.required:
            out.append(m.name)
        out += [f"{m.name}@{a}" for a in ats]
        suffix = "" if at is None else f"@{ats[0]}" if at.required else "@10"
        for p in m.params.values():
            if p.name == m.at:
                continue
            values = {"choice": [f"'{o}'" for o in p.options if o != p.default], "level": ["2"], "count": ["7"],
                      "prob": ["0.5"], "number": ["2"], "fraction": ["0.5"], "cutoff": ["3"], "real": ["-2.5"],
                      "gains": ["{0:1,1:3,2:2}"], "grade": ["2", "'max'"]}[p.type]
            out += [f"{m.name}({p.name}={v}){suffix}" for v in values]
    return out


MEASURES = all_measures()
DIVERSITY = all_measures(diversity=True) + ["nNRBP(alpha=0.3,beta=0.3)"]  # 20 positions: on Spark too


def fitting(measures: list, engine_name: str) -> list:
    """The measures whose greedy ideal ranking the engine takes (DialectInfo.greedy_depth: Spark's is shallower than
    nNRBP's 34 positions at beta 0.5); the others it refuses before running anything: test_render."""
    limit = dialect_info(engine_name).greedy_depth
    return [m for m in measures if not limit or plan_measures([parse(m)], 1).subtopic_depth <= limit]


CASES = {
    "defaults": {},
    "intersection": {"queries": "intersection"},
    "docid_asc": {"ties": "docid_asc"},
    "rank": {"ties": "rank"},
    "level2": {"relevance_level": 2},
    "float32": {"score_precision": "float32"},
    "depth_judged_only": {"depth": 3, "judged_only": True, "queries": "intersection"},
    "runs": {"runs": True},
}


@pytest.fixture(scope="session")
def data():
    qrels, run, runs = fixture_rows()
    subtopics, history, verdicts = subtopic_rows(qrels), history_rows(qrels), verdict_rows()
    embeddings = [(q, g, i, x, n) for q, g, vector, n in embedding_rows() for i, x in enumerate(vector, 1)]
    items = item_rows(qrels, run)
    nuggets = nugget_rows()
    rows = {"qrels": qrels, "run": run, "runs": runs, "subtopics": subtopics, "history": history,
            "verdicts": verdicts, "embeddings": embeddings, "items": items, "nuggets": nuggets,
            "assignments": assignment_rows(nuggets)}
    return {"rows": rows, "arrow": {key: arrow(rows[key], cols, key) for key, cols in TABLE_COLUMNS.items()}}


@pytest.fixture(scope="session")
def reference(data):
    """evaluate() on DuckDB, once per case."""
    cache = {}

    def get(case: str, diversity: bool = False):
        if (case, diversity) not in cache:
            options = dict(CASES[case])
            q = data["arrow"]["subtopics" if diversity else "qrels"]
            qcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "relevance", *(["subtopic"] if diversity else []))}
            rcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "score", "rank_position")}
            measures = DIVERSITY if diversity else MEASURES
            if diversity:
                options["qrels_format"] = "subtopics"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if options.pop("runs", False):
                    runs = data["arrow"]["runs"]
                    split = {name: runs.filter(pc.equal(runs["tag"], name)).drop_columns(["tag"])
                             for name in ("bm25", "Dense")}
                    result = sqlmetrics.evaluate(q, split, measures, columns=rcols, qrels_columns=qcols, **options)
                else:
                    result = sqlmetrics.evaluate(q, data["arrow"]["run"], measures, columns=rcols,
                                                 qrels_columns=qcols, **options)
            cache[case, diversity] = result
        return cache[case, diversity]

    return get


# ---------------------------------------------------------------------------------------------- engines


@dataclass
class Engine:
    name: str
    con: object
    tables: dict  # "qrels" / "run" / "runs" -> the name to pass (qualified where the engine has schemas)
    float32: bool = True
    close: list = field(default_factory=list)


def _ident(name: str, dialect: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect)


def _sql_type(kind: str, dialect: str) -> str:
    return {"postgres": {"text": "TEXT", "int": "INTEGER", "float": "DOUBLE PRECISION"},
            "mysql": {"text": "VARCHAR(100)", "int": "INT", "float": "DOUBLE"},
            "sqlite": {"text": "TEXT", "int": "INTEGER", "float": "REAL"},
            "clickhouse": {"text": "String", "int": "Int32", "float": "Float64"}}[dialect][kind]


def _create_all(cursor_execute, executemany, data, dialect: str, table_name, placeholder: str):
    for key, cols in TABLE_COLUMNS.items():
        table = table_name(key)
        cursor_execute(f"DROP TABLE IF EXISTS {table}")
        defs = ", ".join(f"{_ident(c, dialect)} {_sql_type(column_type(key, c), dialect)}" for c in cols)
        cursor_execute(f"CREATE TABLE {table} ({defs})")
        executemany(f"INSERT INTO {table} VALUES ({', '.join([placeholder] * len(cols))})", data["rows"][key])


def _duckdb(data):
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE SCHEMA eval")
    for key in TABLES:
        con.register("src", data["arrow"][key])
        con.execute(f"CREATE TABLE eval.{key} AS SELECT * FROM src")
        con.unregister("src")
    return Engine("duckdb", con, {k: f"eval.{k}" for k in TABLES}, close=[con.close])


def _sqlite(data):
    import sqlite3

    con = sqlite3.connect(":memory:")
    _create_all(con.execute, con.executemany, data, "sqlite", lambda k: k, "?")
    return Engine("sqlite", con, {k: k for k in TABLES}, float32=False, close=[con.close])


def _postgres(data):
    con = postgres_connection()
    schema = f"sqlm_{os.getpid()}"
    with con.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        cur.execute(f"CREATE SCHEMA {schema}")
        _create_all(cur.execute, cur.executemany, data, "postgres", lambda k: f"{schema}.{k}", "%s")
    con.commit()

    def drop():
        con.rollback()
        with con.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.commit()
        con.close()

    return Engine("postgres", con, {k: f"{schema}.{k}" for k in TABLES}, close=[drop])


def _mariadb(data):
    con = mariadb_connection()
    db, prefix = MYSQL["database"], f"sqlm_{os.getpid()}_"
    with con.cursor() as cur:
        _create_all(cur.execute, cur.executemany, data, "mysql", lambda k: f"{db}.{prefix}{k}", "%s")
    con.commit()

    def drop():
        with con.cursor() as cur:
            for k in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {db}.{prefix}{k}")
        con.commit()
        con.close()

    return Engine("mariadb", con, {k: f"{db}.{prefix}{k}" for k in TABLES}, close=[drop])


def _clickhouse(data):
    try:
        from chdb import session
    except ImportError:
        unavailable("chdb is not installed (pip install chdb)")
    sess = session.Session()
    sess.query("CREATE DATABASE IF NOT EXISTS eval")

    def execute(sql):
        sess.query(sql)

    def executemany(sql, rows):
        values = ", ".join("(" + ", ".join(exp.convert(v).sql("clickhouse") for v in r) + ")" for r in rows)
        sess.query(sql.split(" VALUES ")[0] + " VALUES " + values)

    def create(sql):
        execute(sql + " ENGINE = Memory" if sql.startswith("CREATE TABLE") else sql)

    _create_all(create, executemany, data, "clickhouse", lambda k: f"eval.{k}", "?")
    return Engine("clickhouse", sess, {k: f"eval.{k}" for k in TABLES}, close=[sess.close])


def _datafusion(data):
    try:
        import datafusion
    except ImportError:
        unavailable("datafusion is not installed (pip install datafusion)")
    ctx = datafusion.SessionContext()
    for key in TABLES:
        ctx.register_record_batches(key, [data["arrow"][key].to_batches()])
    return Engine("datafusion", ctx, {k: k for k in TABLES})


def _polars(data):
    try:
        import polars as pl
    except ImportError:
        unavailable("polars is not installed (pip install polars)")
    ctx = pl.SQLContext(frames={k: pl.from_arrow(data["arrow"][k]) for k in TABLES})
    return Engine("polars", ctx, {k: k for k in TABLES})


def _spark(data):
    spark = spark_session()
    for key, cols in TABLE_COLUMNS.items():
        # A VALUES view lives in the JVM: no Python worker runs at query time.
        values = ", ".join("(" + ", ".join(exp.convert(v).sql("spark") for v in row) + ")" for row in data["rows"][key])
        names = ", ".join(f"`{c}`" for c in cols)
        spark.sql(f"CREATE OR REPLACE GLOBAL TEMPORARY VIEW {key} AS SELECT * FROM VALUES {values} AS t({names})")
    return Engine("spark", spark, {k: f"global_temp.{k}" for k in TABLES})  # conftest stops the session


FACTORIES = {"duckdb": _duckdb, "sqlite": _sqlite, "postgres": _postgres, "mariadb": _mariadb,
             "clickhouse": _clickhouse, "datafusion": _datafusion, "polars": _polars, "spark": _spark}
_started: dict = {}
TIMINGS: dict = {}


@pytest.fixture(scope="session")
def engines(data):
    """Engines are started on first use and closed at the end of the session (Spark only once)."""

    def get(name: str) -> Engine:
        if name not in _started:
            t0 = time.perf_counter()
            _started[name] = FACTORIES[name](data)
            TIMINGS.setdefault(name, []).append(("start+load", time.perf_counter() - t0))
        return _started[name]

    yield get
    for engine in _started.values():
        for close in engine.close:
            try:
                close()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
    _started.clear()


@pytest.fixture(scope="session", autouse=True)
def _report_timings():
    """Seconds per engine and case, printed at the end of the session (seen with pytest -s)."""
    yield
    if TIMINGS:
        print("\nengine timings:")
        for name, rows in TIMINGS.items():
            print(f"  {name}: " + ", ".join(f"{what} {sec:.1f}s" for what, sec in rows))


# ---------------------------------------------------------------------------------------------- tests


def _rows(results, multi: bool) -> dict:
    out = {}
    for row in results.per_query.to_pylist():
        key = (row["run"], row["query_id"]) if multi else row["query_id"]
        out[key] = row
    return out


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOLERANCE


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_engine_equals_duckdb(engine_name, case, engines, reference):
    _engine_equals_duckdb(engine_name, case, engines, reference, diversity=False)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_diversity_engine_equals_duckdb(engine_name, case, engines, reference):
    """The diversity measures over subtopic qrels (qrels_format='subtopics'): their subtopic rows and greedy
    ideal ranking (20 steps: the bare measures' cutoff) on every engine."""
    _engine_equals_duckdb(engine_name, case, engines, reference, diversity=True)


def _engine_equals_duckdb(engine_name, case, engines, reference, diversity: bool):
    engine = engines(engine_name)
    options = dict(CASES[case])
    multi = options.pop("runs", False)
    run_table = engine.tables["runs" if multi else "run"]
    columns = RUNS_MAP if multi else COLUMNS
    measures = fitting(DIVERSITY, engine_name) if diversity else MEASURES
    qrels = engine.tables["subtopics" if diversity else "qrels"]
    if diversity:
        options["qrels_format"] = "subtopics"
    if options.get("score_precision") == "float32" and not engine.float32:
        with pytest.raises(SqlmetricsError, match="float32"):
            evaluate_on(engine.con, measures, qrels=qrels, run=run_table, columns=columns, **options)
        return
    t0 = time.perf_counter()
    got = evaluate_on(engine.con, measures, qrels=qrels, run=run_table, columns=columns, **options)
    TIMINGS.setdefault(engine_name, []).append((case + (" diversity" if diversity else ""), time.perf_counter() - t0))
    want = reference(case, diversity)

    ours, theirs = _rows(got, multi), _rows(want, multi)
    assert sorted(ours) == sorted(theirs), "different lists evaluated"
    bad = [f"{key} {m}: {engine_name}={ours[key][m]!r} duckdb={theirs[key][m]!r}"
           for key in theirs for m in measures if not _close(ours[key][m], theirs[key][m])]
    assert not bad, f"{len(bad)} per-query values differ:\n" + "\n".join(bad[:30])

    aggs = want.aggregate.items() if multi else [(None, want.aggregate)]
    for run_name, values in aggs:
        mine = got.aggregate[run_name] if multi else got.aggregate
        bad = [f"{run_name} {m}: {mine[m]!r} vs {v!r}" for m, v in values.items()
               if m in measures and not _close(mine[m], v)]
        assert not bad, "aggregates differ:\n" + "\n".join(bad[:30])


RECOMMENDER_MEASURES = [m.name for m in catalogue().values() if m.rows in ("recommendations", "ratings", "items")] + [
    "IntraListDiversity(similarity='features')@5", "Serendipity(similarity='features',weight='relevant')"]


@pytest.mark.parametrize("multi", [False, True], ids=["run", "runs"])
@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_recommender_measures_equal_duckdb(engine_name, multi, engines, data):
    """The measures of a whole run (its recommendations, read with history=, and its rated pairs) and of the item
    similarities (by co-occurrence in history=, by the features of items=, long form) on every engine."""
    engine = engines(engine_name)
    qcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "relevance")}
    rcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "score")}
    runs = data["arrow"]["runs"]
    run = {name: runs.filter(pc.equal(runs["tag"], name)).drop_columns(["tag"]) for name in ("bm25", "Dense")} \
        if multi else data["arrow"]["run"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sqlmetrics.evaluate(data["arrow"]["qrels"], run, RECOMMENDER_MEASURES, columns=rcols,
                                   qrels_columns=qcols, history=data["arrow"]["history"], items=data["arrow"]["items"])
    got = evaluate_on(engine.con, RECOMMENDER_MEASURES, qrels=engine.tables["qrels"],
                      run=engine.tables["runs" if multi else "run"], columns=RUNS_MAP if multi else COLUMNS,
                      history=engine.tables["history"], items=engine.tables["items"])
    ours, theirs = _rows(got, multi), _rows(want, multi)
    assert sorted(ours) == sorted(theirs), "different lists evaluated"
    bad = [f"{key} {m}: {engine_name}={ours[key][m]!r} duckdb={theirs[key][m]!r}"
           for key in theirs for m in RECOMMENDER_MEASURES if not _close(ours[key][m], theirs[key][m])]
    assert not bad, "\n".join(bad[:30])
    for run_name, values in (want.aggregate.items() if multi else [(None, want.aggregate)]):
        mine = got.aggregate[run_name] if multi else got.aggregate
        assert all(_close(mine[m], v) for m, v in values.items()), (run_name, mine, values)


RAG_MEASURES = [m.name for m in catalogue().values() if m.rows in ("verdicts", "embeddings")] + ["ContextPrecision@5"]


def _array_embeddings(engine) -> str:
    """The embeddings as arrays, where the rendered SQL reads them so (DuckDB, PostgreSQL): a table made here."""
    rows = embedding_rows()
    if engine.name == "duckdb":
        engine.con.register("src", pa.table({"topic": [r[0] for r in rows], "generated": [r[1] for r in rows],
                                             "embedding": pa.array([r[2] for r in rows], pa.list_(pa.float64(), 4)),  # DOUBLE[4]
                                             "noncommittal": [r[3] for r in rows]}))
        engine.con.execute("CREATE OR REPLACE TABLE eval.embedding_arrays AS SELECT * FROM src")
        engine.con.unregister("src")
        return "eval.embedding_arrays"
    table = engine.tables["qrels"].rsplit(".", 1)[0] + ".embedding_arrays"
    with engine.con.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(f"CREATE TABLE {table} (topic TEXT, generated INTEGER, embedding DOUBLE PRECISION[], "
                    "noncommittal INTEGER)")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", rows)
    engine.con.commit()
    return table


@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_rag_measures_equal_duckdb(engine_name, engines, data):
    """The RAG measures over the judged statements (verdicts=), beside a ranking one, on every engine."""
    engine = engines(engine_name)
    qcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "relevance")}
    rcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "score")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sqlmetrics.evaluate(data["arrow"]["qrels"], data["arrow"]["run"], RAG_MEASURES, columns=rcols,
                                   qrels_columns=qcols, verdicts=data["arrow"]["verdicts"],
                                   embeddings=data["arrow"]["embeddings"])
    embeddings = _array_embeddings(engine) if engine_name in ("duckdb", "postgres") else engine.tables["embeddings"]
    got = evaluate_on(engine.con, RAG_MEASURES, qrels=engine.tables["qrels"], run=engine.tables["run"],
                      columns=COLUMNS, verdicts=engine.tables["verdicts"], embeddings=embeddings)
    ours, theirs = _rows(got, False), _rows(want, False)
    assert sorted(ours) == sorted(theirs), "different lists evaluated"
    assert any(v is None for row in theirs.values() for v in row.values())  # a query without statements of a kind
    bad = [f"{key} {m}: {engine_name}={ours[key][m]!r} duckdb={theirs[key][m]!r}"
           for key in theirs for m in RAG_MEASURES if not _close(ours[key][m], theirs[key][m])]
    assert not bad, "\n".join(bad[:30])
    assert all(_close(got.aggregate[m], v) for m, v in want.aggregate.items()), (got.aggregate, want.aggregate)


NUGGET_MEASURES = [m.name for m in catalogue().values() if m.rows == "nuggets"] + ["nDCG@10"]


@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_nugget_measures_equal_duckdb(engine_name, engines, data):
    """The nugget measures of two runs (the runs table, run_name mapped) beside a ranking one, on every engine, the
    nuggets' weight column mapped by columns=: evaluate() on DuckDB's values."""
    engine = engines(engine_name)
    mapped = {"weight": "Nugget Weight"}
    qcols = {r: COLUMNS[r] for r in ("query_id", "doc_id", "relevance")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sqlmetrics.evaluate(data["arrow"]["qrels"], data["arrow"]["runs"], NUGGET_MEASURES,
                                   columns={**{r: RUNS_MAP[r] for r in ("run_name", "query_id", "doc_id", "score")},
                                            **mapped}, qrels_columns=qcols,
                                   nuggets=data["arrow"]["nuggets"], assignments=data["arrow"]["assignments"])
    got = evaluate_on(engine.con, NUGGET_MEASURES, qrels=engine.tables["qrels"], run=engine.tables["runs"],
                      columns={**RUNS_MAP, **mapped}, nuggets=engine.tables["nuggets"],
                      assignments=engine.tables["assignments"])
    ours, theirs = _rows(got, True), _rows(want, True)
    assert sorted(ours) == sorted(theirs), "different lists evaluated"
    assert any(row["NuggetVital"] == 0 and row["NuggetAll"] > 0 for row in theirs.values())  # no vital nugget
    bad = [f"{key} {m}: {engine_name}={ours[key][m]!r} duckdb={theirs[key][m]!r}"
           for key in theirs for m in NUGGET_MEASURES if not _close(ours[key][m], theirs[key][m])]
    assert not bad, "\n".join(bad[:30])


@pytest.mark.parametrize("engine_name", ["postgres", "mariadb"])
def test_the_traps_are_live(engine_name, engines, monkeypatch):
    """Without the forced byte order, the same statement gives other numbers on these servers: the fixture
    and the test databases really exercise the collation traps."""
    import dataclasses

    from sqlmetrics import dialects

    engine = engines(engine_name)
    dialect = "postgres" if engine_name == "postgres" else "mysql"
    kwargs = dict(qrels=engine.tables["qrels"], run=engine.tables["run"], columns=COLUMNS)
    right = evaluate_on(engine.con, ["AP", "NumRet"], **kwargs).per_query.to_pylist()
    monkeypatch.setitem(dialects.DIALECTS, dialect, dataclasses.replace(dialects.DIALECTS[dialect], ids=None))
    wrong = evaluate_on(engine.con, ["AP", "NumRet"], **kwargs).per_query.to_pylist()
    assert right != wrong


def test_engine_dialect_is_recognised_or_asked_for():
    import sqlite3

    from sqlmetrics.engines import engine_dialect

    assert engine_dialect(sqlite3.connect(":memory:")) == "sqlite"
    with pytest.raises(SqlmetricsError, match="pass dialect="):
        engine_dialect(object())


@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_a_missing_column_is_named_on_every_engine(engine_name, engines):
    """Checked before the statement runs: SQLite once read a quoted name that is not a column as a string
    literal, and every score was 0."""
    engine = engines(engine_name)
    kwargs = dict(qrels=engine.tables["qrels"], run=engine.tables["run"])
    with pytest.raises(SqlmetricsError, match=r"run table .*: no column 'no_such_score' \(its columns: .*columns="):
        evaluate_on(engine.con, ["AP"], columns={**COLUMNS, "score": "no_such_score"}, **kwargs)
    with pytest.raises(SqlmetricsError, match=r"qrels table .*: no column 'no_such_grade' .*qrels_columns="):
        evaluate_on(engine.con, ["AP"], columns=COLUMNS, qrels_columns={"relevance": "no_such_grade"}, **kwargs)


def test_per_query_order_and_shape_match_evaluate(data, reference, engines):
    """Results from an engine are evaluate()'s: same columns, same row order, same aggregate keys."""
    engine = engines("sqlite")
    got = evaluate_on(engine.con, MEASURES, qrels=engine.tables["qrels"], run=engine.tables["runs"], columns=RUNS_MAP)
    want = reference("runs")
    assert got.per_query.column_names == want.per_query.column_names
    assert got.per_query.select(["run", "query_id"]).to_pylist() == want.per_query.select(["run", "query_id"]).to_pylist()
    assert list(got.aggregate) == list(want.aggregate) and got.measures == want.measures


def test_mariadb_looks_up_judgments_by_key():
    """MariaDB merged the judgments CTE into the join with the run and compared every run row with every
    judgment through their cast ids (20k run rows took 28 s, growing with the square). The plan must
    not scan the qrels table once per block of run rows; the same statement gives evaluate()'s values."""
    import json

    con = mariadb_connection(autocommit=True)
    prefix = f"sqlm_keys_{os.getpid()}_"
    rng = random.Random(7)
    qrels = [(f"q{q}", f"d{rng.randrange(10**6)}", rng.choice([0, 1, 2])) for q in range(60) for _ in range(15)]
    run = [(f"q{q}", f"d{rng.randrange(10**6)}", round(rng.random(), 3)) for q in range(60) for _ in range(40)]
    run += [(q, d, 2.0) for q, d, _ in qrels[::2]]
    try:
        with con.cursor() as cur:
            for table, value, rows in (("qrels", "relevance INT", qrels), ("run", "score DOUBLE", run)):
                cur.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
                cur.execute(f"CREATE TABLE {prefix}{table} (query_id VARCHAR(20), doc_id VARCHAR(20), {value})")
                cur.executemany(f"INSERT INTO {prefix}{table} VALUES (%s, %s, %s)", rows)
            sql = sqlmetrics.render(["AP", "nDCG@10"], dialect="mysql", qrels=f"{prefix}qrels", run=f"{prefix}run",
                                    per_query=True)
            cur.execute("EXPLAIN FORMAT=JSON " + sql)
            plan = json.loads(cur.fetchall()[0][0])

        def buffered_tables(node, in_buffer=False):
            """The base tables the plan reads inside a block nested-loop join (once per block of the other side)."""
            if isinstance(node, list):
                return [t for item in node for t in buffered_tables(item, in_buffer)]
            if not isinstance(node, dict):
                return []
            found = [node["table"]["table_name"]] if in_buffer and isinstance(node.get("table"), dict) else []
            return found + [t for key, value in node.items()
                            for t in buffered_tables(value, in_buffer or key == "block-nl-join")]

        assert f"{prefix}qrels" not in buffered_tables(plan)
        got = evaluate_on(con, ["AP", "nDCG@10"], qrels=f"{prefix}qrels", run=f"{prefix}run")
        names = ("query_id", "doc_id")
        want = sqlmetrics.evaluate(pa.table(dict(zip((*names, "relevance"), zip(*qrels)))),
                                   pa.table(dict(zip((*names, "score"), zip(*run)))), ["AP", "nDCG@10"])
        assert got.aggregate == pytest.approx(want.aggregate, abs=1e-12)
    finally:
        with con.cursor() as cur:
            for table in ("qrels", "run"):
                cur.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
        con.close()
