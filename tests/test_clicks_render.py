"""render_clicks(): a click model's fit as a SQL script, executed where the log lives (DuckDB, SQLite, PostgreSQL,
Spark, ClickHouse through chDB, MariaDB, DataFusion), creates parameter tables equal to fit_clicks()'s on the same log
to 1e-9 (EM: the same iterations, the tolerance so small that the Python fit runs them all), per segment (a NULL
segment one of them), over a log whose table and column names need quoting. Every dialect renders. The fast tier runs
SQLite on one log and one model, and renders every dialect once; the other engines and models, and the hypothesis
corpus of odd logs, are slow. An engine that is not here skips; SQLMETRICS_REQUIRE_ENGINES=1 fails."""
from __future__ import annotations

import decimal
import json
import math
import os
import random
import sqlite3
import warnings

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError, SqlmetricsWarning
from sqlmetrics.dialects.info import DIALECTS
from sqlmetrics.identifiers import column_identifier, table_reference

from conftest import mariadb_connection, postgres_connection, spark_session, unavailable

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

# The log's columns as a user might have named them: a space, a keyword, a quote, upper case.
COLUMNS = {"session": "Session ID", "query": "query", "doc": 'the "doc"', "position": "order", "clicked": "Clicked"}
SEGMENT = "Mär ket"
EM = ("pbm", "ubm", "dcm", "dbn")
MODELS = ["cascade", "sdbn", "pbm", "ubm", "dcm", "dbn"]
KEYS = {"attractiveness": ("query", "doc"), "satisfaction": ("query", "doc"), "examination": ("position",),
        "continuation": ("position",)}


def _simulated(sessions: int, seed: int) -> pa.Table:
    """Sessions of 3-4 of a query's 5 documents in random order, clicked with probability 0.7^(position-1) * alpha, in
    three markets, one of them NULL."""
    rng = random.Random(seed)
    rows = []
    for s in range(sessions):
        q, market = rng.randrange(3), rng.choice(["de", "fr", None])
        for position, d in enumerate(rng.sample(range(5), rng.choice([3, 4])), 1):
            clicked = int(rng.random() < 0.7 ** (position - 1) * (0.2 + 0.15 * d))
            rows.append((f"s{s}", f"q{q}", f"d{d}", position, clicked, market))
    names = [COLUMNS[r] for r in ("session", "query", "doc", "position", "clicked")] + [SEGMENT]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


def _fit(log: pa.Table, model: str, iterations: int, group_by=(SEGMENT,)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)  # not converged: the tolerance asks for every iteration
        return sqlmetrics.fit_clicks(log, model, columns=COLUMNS, group_by=list(group_by),
                                     **({"iterations": iterations, "tolerance": 1e-300} if model in EM else {}))


def _script(model: str, dialect: str, log, prefix: str, iterations: int, group_by=(SEGMENT,)) -> list:
    return sqlmetrics.render_clicks(model, dialect, log=log, columns=COLUMNS, group_by=list(group_by), prefix=prefix,
                                    **({"iterations": iterations} if model in EM else {}))


def _keyed(rows: list, name: str, segments: tuple) -> dict:
    key = (*segments, *(k for k in (*KEYS[name], "previous_click") if rows and k in rows[0]))  # DBN's gamma: no key
    return {tuple(r[k] for k in key): r for r in rows}


def _assert_equal(there: dict, fit) -> None:
    """{parameter: rows read back from the engine} against the fit's parameter tables: the same keys, the same counts,
    the values to 1e-9."""
    assert set(there) == set(fit.parameters)
    for name, table in fit.parameters.items():
        here = _keyed(table.to_pylist(), name, fit.group_by)
        rows = _keyed(there[name], name, fit.group_by)
        assert rows.keys() == here.keys(), name
        for key, row in rows.items():
            assert set(row) == set(here[key]), name
            for column, value in here[key].items():
                if isinstance(value, float):
                    assert math.isclose(row[column], value, rel_tol=1e-9, abs_tol=1e-9), (name, key, column)
                else:
                    assert row[column] == value, (name, key, column)


def _sqlite_rows(con, sql: str) -> list:
    cur = con.execute(sql)
    return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]


def _on_sqlite(log: pa.Table, model: str, iterations: int, table: str, prefix: str, group_by=(SEGMENT,)) -> dict:
    con = sqlite3.connect(":memory:")
    quoted = table_reference(table, "sqlite").sql("sqlite")
    con.execute(f"CREATE TABLE {quoted} ({', '.join(_q(c) for c in log.column_names)})")
    con.executemany(f"INSERT INTO {quoted} VALUES ({', '.join('?' * log.num_columns)})",
                    [tuple(r.values()) for r in log.to_pylist()])
    for statement in _script(model, "sqlite", table, prefix, iterations, group_by):
        con.execute(statement)
    return {name: _sqlite_rows(con, f"SELECT * FROM {table_reference(prefix + name, 'sqlite').sql('sqlite')}")
            for name in _tables(model)}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _tables(model: str) -> list:
    other = {"cascade": [], "sdbn": ["satisfaction"], "dcm": ["continuation"], "dbn": ["satisfaction", "continuation"]}
    return ["attractiveness", *other.get(model, ["examination"])]


def test_sqlite_script_equals_the_fit_with_odd_names_and_a_null_segment():
    """PBM, 4 iterations, on SQLite: a log table named with a space and a quote, columns needing quotes, a segment
    whose value is NULL in some sessions, created tables under a prefix with a quote; and the working tables are
    gone after."""
    log = _simulated(24, seed=1)
    there = _on_sqlite(log, "pbm", 4, 'click "log" 1', "fit 'x\" ")
    fit = _fit(log, "pbm", 4)
    assert None in fit.summary[SEGMENT].to_pylist()
    _assert_equal(there, fit)


def test_names_like_the_scripts_own():
    """A log whose columns and table are named as the script's placeholders and inner columns are: each stays the
    caller's name (bound once, never re-read as a placeholder)."""
    names = {"session": "sqlm_c_doc", "query": "sqlm_doc", "doc": "sqlm_session", "position": "sqlm_t_cells",
             "clicked": "sqlm_log"}
    log = _simulated(6, seed=4).rename_columns([*names.values(), "sqlm_seg_1"])
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TABLE sqlm_c_query ({', '.join(log.column_names)})")
    con.executemany(f"INSERT INTO sqlm_c_query VALUES ({', '.join('?' * log.num_columns)})",
                    [tuple(r.values()) for r in log.to_pylist()])
    for statement in sqlmetrics.render_clicks("sdbn", "sqlite", log="sqlm_c_query", columns=names,
                                              group_by="sqlm_seg_1", prefix="sqlm_t_"):
        con.execute(statement)
    fit = sqlmetrics.fit_clicks(log, "sdbn", columns=names, group_by="sqlm_seg_1")
    _assert_equal({name: _sqlite_rows(con, f"SELECT * FROM sqlm_t_{name}") for name in fit.parameters}, fit)


def test_the_script_leaves_only_its_parameter_tables():
    log = _simulated(3, seed=2)
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TABLE clicks ({', '.join(_q(c) for c in log.column_names)})")
    con.executemany(f"INSERT INTO clicks VALUES ({', '.join('?' * log.num_columns)})",
                    [tuple(r.values()) for r in log.to_pylist()])
    for _ in range(2):  # run twice: the second run replaces the first's tables
        for statement in _script("ubm", "sqlite", "clicks", "p_", 2):
            con.execute(statement)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"clicks", "p_attractiveness", "p_examination"}


def test_every_dialect_renders():
    """Cascade (a window, CREATE TABLE ... AS) for every dialect the package lists; the other models, EM's joins and
    UBM's window frame, in the slow tier."""
    for dialect in DIALECTS:
        assert len(sqlmetrics.render_clicks("cascade", dialect)) == 2, dialect


@pytest.mark.slow
@pytest.mark.parametrize("model", ["sdbn", "pbm", "ubm", "dcm", "dbn"])
def test_every_dialect_renders_every_model(model):
    for dialect in DIALECTS:
        script = sqlmetrics.render_clicks(model, dialect, log="db.s.clicks", group_by=["a", "b"], prefix="s.p_",
                                          **({"iterations": 2} if model in EM else {}))
        assert len(script) == {"sdbn": 4, "pbm": 25, "ubm": 25, "dcm": 37, "dbn": 59}[model], dialect


@pytest.mark.parametrize("call, says", [
    (dict(model="pmb"), "Did you mean 'pbm'"),
    (dict(model="cascade", iterations=5), "closed-form"),
    (dict(model="pbm", iterations=0), "at least 1"),
    (dict(model="pbm", prefix=None), "prefix=None"),
    (dict(model="pbm", columns={"sesion": "s"}), "Did you mean 'session'"),
    (dict(model="pbm", group_by="clicks"), "also a column of the results"),
    (dict(model="pbm", dialect="oracel"), "not supported"),
    (dict(model="pbm", log=""), "log='': a table name"),
    (dict(model="pbm", prefix="a.b.c."), "prefix='a.b.c.': table 'a.b.c.attractiveness'"),
])
def test_bad_arguments_are_named(call, says):
    with pytest.raises(SqlmetricsError, match=says):
        sqlmetrics.render_clicks(**call)


# --- the engines (slow): every model, with segments and odd names, against fit_clicks() on the same log.

@pytest.fixture(scope="module")
def log() -> pa.Table:
    return _simulated(60, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_on_sqlite(log, model):
    _assert_equal(_on_sqlite(log, model, 7, "click log", "p_"), _fit(log, model, 7))


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_on_duckdb(log, model):
    con = duckdb.connect()
    con.register("arrow_log", log)
    con.execute('CREATE TABLE "Click Log" AS SELECT * FROM arrow_log')
    for statement in _script(model, "duckdb", "Click Log", "My ", 7):
        con.execute(statement)
    there = {name: con.sql(f'SELECT * FROM "My {name}"').to_arrow_table().to_pylist() for name in _tables(model)}
    _assert_equal(there, _fit(log, model, 7))


@pytest.fixture(scope="module")
def postgres_con(log):
    con = postgres_connection()
    schema = f"sqlm_clicks_{os.getpid()}"
    with con.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        cur.execute(f"CREATE SCHEMA {schema}")
        # Declared as a user's SQL would name them (Clicked unquoted: clicked), as the script reads them.
        types = {"order": "BIGINT", "Clicked": "INTEGER"}
        declared = (f"{column_identifier(c, 'postgres').sql('postgres')} {types.get(c, 'TEXT')}"
                    for c in log.column_names)
        cur.execute(f'CREATE TABLE {schema}."click log" ({", ".join(declared)})')
        cur.executemany(f'INSERT INTO {schema}."click log" VALUES ({", ".join(["%s"] * log.num_columns)})',
                        [tuple(r.values()) for r in log.to_pylist()])
    con.commit()
    yield con, schema
    con.rollback()
    with con.cursor() as cur:
        cur.execute(f"DROP SCHEMA {schema} CASCADE")
    con.commit()
    con.close()


@pytest.mark.slow  # a server
@pytest.mark.parametrize("model", MODELS)
def test_on_postgres(postgres_con, log, model):
    con, schema = postgres_con
    con.rollback()  # a failed test before leaves the transaction aborted
    with con.cursor() as cur:
        for statement in _script(model, "postgres", f'{schema}."click log"', f"{schema}.{model}_", 7):
            cur.execute(statement)
        there = {}
        for name in _tables(model):
            cur.execute(f"SELECT * FROM {schema}.{model}_{name}")
            there[name] = [dict(zip([d.name for d in cur.description], r)) for r in cur.fetchall()]
    con.commit()
    _assert_equal(there, _fit(log, model, 7))


@pytest.fixture(scope="module")
def spark_con(log, tmp_path_factory):
    spark = spark_session()
    folder = tmp_path_factory.mktemp("spark_clicks")
    pq.write_table(log, folder / "log.parquet")
    spark.read.parquet(str(folder / "log.parquet")).createOrReplaceTempView("click_log")
    database = f"sqlm_clicks_{os.getpid()}"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database} LOCATION '{folder / 'tables'}'")
    yield spark, database
    spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


@pytest.mark.slow  # a JVM
@pytest.mark.parametrize("model", MODELS)
def test_on_spark(spark_con, log, model):
    spark, database = spark_con
    for statement in _script(model, "spark", "click_log", f"{database}.{model}_", 3):
        spark.sql(statement)
    there = {name: [r.asDict() for r in spark.sql(f"SELECT * FROM {database}.{model}_{name}").collect()]
             for name in _tables(model)}
    _assert_equal(there, _fit(log, model, 3))


@pytest.fixture(scope="module")
def clickhouse_con(log):
    try:
        from chdb import session
    except ImportError:
        unavailable("chdb is not installed (pip install chdb)")
    sess = session.Session()
    sess.query("CREATE DATABASE IF NOT EXISTS clicks")
    types = {"order": "Int64", "Clicked": "Int64"}
    columns = ", ".join(f"`{c}` {types.get(c, 'Nullable(String)')}" for c in log.column_names)
    sess.query(f"CREATE TABLE clicks.`click log` ({columns}) ENGINE = Memory")
    values = ", ".join("(" + ", ".join(sqlglot.exp.convert(v).sql("clickhouse") for v in r.values()) + ")"
                       for r in log.to_pylist())
    sess.query(f"INSERT INTO clicks.`click log` VALUES {values}")
    yield sess
    sess.close()


@pytest.mark.slow  # an engine library
@pytest.mark.parametrize("model", MODELS)
def test_on_clickhouse(clickhouse_con, log, model):
    """ClickHouse (chDB): a column selected as `c.x` is named `c.x` there, so every qualified column is aliased (the
    EM's tables were unreadable before)."""
    for statement in _script(model, "clickhouse", "clicks.`click log`", f"clicks.{model}_", 3):
        clickhouse_con.query(statement)
    there = {name: [json.loads(line) for line in str(clickhouse_con.query(f"SELECT * FROM clicks.{model}_{name}",
                                                                          "JSONEachRow")).splitlines() if line]
             for name in _tables(model)}
    _assert_equal(there, _fit(log, model, 3))


@pytest.mark.slow  # an engine library
@pytest.mark.parametrize("model", MODELS)
def test_on_datafusion(log, model):
    """DataFusion (the postgres dialect), which folds a bare name to lower case as PostgreSQL does: the table holds
    `clicked`, the script's bare Clicked finds it."""
    try:
        import datafusion
    except ImportError:
        unavailable("datafusion is not installed (pip install datafusion)")
    ctx = datafusion.SessionContext()
    folded = log.rename_columns([c.lower() if c == "Clicked" else c for c in log.column_names])
    ctx.register_record_batches("click_log", [folded.to_batches()])
    for statement in _script(model, "datafusion", "click_log", "p_", 3):
        ctx.sql(statement).collect()
    there = {name: ctx.sql(f"SELECT * FROM p_{name}").to_arrow_table().to_pylist() for name in _tables(model)}
    _assert_equal(there, _fit(log, model, 3))


def _cased(log: pa.Table) -> pa.Table:
    """The log with ids that differ only in case or a trailing space: 'D1' beside 'd1', 'd2 ' beside 'd2', 'DE' beside
    'de' (a segment)."""
    rows = log.to_pylist()
    doc, market = COLUMNS["doc"], SEGMENT
    for r in rows:
        number = int(r[COLUMNS["session"]][1:])
        if number % 3 == 0:
            r[doc] = r[doc].upper()
        elif number % 3 == 1 and r[doc] == "d2":
            r[doc] = "d2 "
        if number % 4 == 0 and r[market] == "de":
            r[market] = "DE"
    return pa.Table.from_pylist(rows, log.schema)


@pytest.fixture(scope="module")
def mariadb_con(log):
    con = mariadb_connection(autocommit=True)
    prefix = f"sqlm_clicks_{os.getpid()}_"
    types = {"order": "BIGINT", "Clicked": "INTEGER"}
    cased = _cased(log)
    with con.cursor() as cur:
        declared = ", ".join(f"`{c}` {types.get(c, 'VARCHAR(50)')}" for c in log.column_names)
        cur.execute(f"CREATE TABLE `{prefix}log` ({declared})")
        cur.executemany(f"INSERT INTO `{prefix}log` VALUES ({', '.join(['%s'] * log.num_columns)})",
                        [tuple(r.values()) for r in cased.to_pylist()])
    yield con, prefix, cased
    with con.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND "
                    "table_name LIKE %s", (prefix + "%",))
        for (name,) in cur.fetchall():
            cur.execute(f"DROP TABLE `{name}`")
    con.close()


@pytest.mark.slow  # a server
@pytest.mark.parametrize("model", MODELS)
def test_on_mariadb(mariadb_con, model):
    """MariaDB, whose default collation equals 'd1' and 'D1', 'd2' and 'd2 ', 'de' and 'DE': the ids compare as bytes
    there (and come out as text), so they stay apart as in fit_clicks()."""
    con, prefix, cased = mariadb_con
    there = {}
    with con.cursor() as cur:
        for statement in _script(model, "mysql", f"{prefix}log", f"{prefix}{model}_", 3):
            cur.execute(statement)
        for name in _tables(model):
            cur.execute(f"SELECT * FROM {prefix}{model}_{name}")
            there[name] = [{d[0]: float(v) if isinstance(v, decimal.Decimal) else v for d, v in zip(cur.description, r)}
                           for r in cur.fetchall()]
    _assert_equal(there, _fit(cased, model, 3))


# --- hostile logs (slow): odd but valid logs, the script on SQLite equal to the fit on DuckDB.

@st.composite
def odd_logs(draw):
    """Valid logs that are odd: one session, one position, every or no click, a document shown twice in a session,
    segment values NULL, empty or unicode, ids of text that looks like numbers, or whole numbers, clicks as booleans,
    sessions of up to 7 positions."""
    numbers, booleans = draw(st.booleans()), draw(st.booleans())
    docs = [1, 2, 10, 0] if numbers else ["a", "b", "01", "1", "A"]
    rows = []
    for s in range(draw(st.integers(1, 5))):
        query = draw(st.sampled_from([7, 8] if numbers else ["q", "1", "é q"]))
        market = draw(st.sampled_from(["de", None, "", "ü"]))
        for position in range(1, draw(st.integers(1, 7)) + 1):
            click = draw(st.sampled_from([0, 1]))
            rows.append((s if numbers else f"s{s}", query, draw(st.sampled_from(docs)), position,
                         bool(click) if booleans else click, market))
    names = [COLUMNS[r] for r in ("session", "query", "doc", "position", "clicked")] + [SEGMENT]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


@pytest.mark.slow  # hypothesis: 60 logs, each fitted and run on SQLite
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_logs(), st.sampled_from(MODELS), st.booleans())
def test_odd_logs_on_sqlite_equal_the_fit(log, model, segmented):
    group_by = (SEGMENT,) if segmented else ()
    _assert_equal(_on_sqlite(log, model, 3, "log", "p_", group_by), _fit(log, model, 3, group_by))


def test_command_line_prints_the_script(cli):
    """`sqlmetrics clicks TABLE --render sqlite`: the script, run by sqlite3 as printed, creates the fit's tables; -o
    writes it to a file; flags the script cannot honour are one line and exit 2."""
    log = _simulated(8, seed=5)
    code, out, err = cli("clicks", "click log", "--render", "sqlite", "--model", "sdbn", "--group-by", SEGMENT,
                         *(f"--column={role}={column}" for role, column in COLUMNS.items()))
    assert code == 0 and not err and out.startswith("-- sqlmetrics: the click model sdbn")
    con = sqlite3.connect(":memory:")
    con.execute(f'CREATE TABLE "click log" ({", ".join(_q(c) for c in log.column_names)})')
    con.executemany(f'INSERT INTO "click log" VALUES ({", ".join("?" * log.num_columns)})',
                    [tuple(r.values()) for r in log.to_pylist()])
    con.executescript(out)
    fit = _fit(log, "sdbn", 0)
    _assert_equal({name: _sqlite_rows(con, f"SELECT * FROM clicks_{name}") for name in fit.parameters}, fit)
    code, out, _ = cli("clicks", "t", "--render", "postgres", "--iterations", "3", "--prefix", "s.fit_", "-o", "f.sql")
    assert code == 0 and out == ""
    with open("f.sql") as f:
        assert "CREATE TABLE s.fit_gamma_1 AS" in f.read()
    for flags, says in [(("--tolerance", "1e-3"), "--tolerance asks"), (("-f", "csv"), "--format asks"),
                        (("--model", "pmb"), "Did you mean 'pbm'"), (("--render", "nosuch"), "no such dialect"),
                        (("--model", "pbm,ubm"), "one model's script")]:
        code, _, err = cli("clicks", "t", "--render", "sqlite", *flags)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli("clicks", "log.csv", "--prefix", "x_")
    assert code == 2 and "give --render" in err
