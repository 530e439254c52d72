"""Shared test fixtures.

Acceptance data (trec_eval's own test suite, the seeds' worked examples) lives in ../shared beside the
repository and is never copied in. Where it is absent (a user's clone) those tests skip with the reason;
CI sets SQLMETRICS_REQUIRE_SHARED=1, which turns that skip into a failure.
"""
import sys

# pytest rewrites every test module's asserts as it imports it, and keeps the result only where Python may write
# bytecode: with PYTHONDONTWRITEBYTECODE=1 (this workplace's shells set it) each xdist worker rewrote the tests
# again on every run, ~3 s of each worker's start. The suite's own caches are allowed here (a read-only checkout
# is still fine: a cache that cannot be written is skipped).
sys.dont_write_bytecode = False

import atexit  # noqa: E402 - after the bytecode setting, which applies to what is imported from here on
import functools
import gc
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from sqlmetrics import embedded
from sqlmetrics.cli import main
from sqlmetrics.local import connection

REPO = Path(__file__).resolve().parent.parent
# CI is a gate: its property tests draw the same examples on every run (a new failure found at random there would
# stop a change that did not cause it). A run on a workstation draws new ones each time, which is how they find bugs;
# a failure found so is kept as a hand-picked case. SQLMETRICS_FUZZ_RANDOM=1 draws new ones under CI's settings too.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("SQLMETRICS_REQUIRE_SHARED") and not os.environ.get("SQLMETRICS_FUZZ_RANDOM"):
    settings.load_profile("ci")
# The engine tests' servers (.ci/engines.sh starts them); with SQLMETRICS_REQUIRE_ENGINES=1 (CI) a missing one fails.
REQUIRE_ENGINES = os.environ.get("SQLMETRICS_REQUIRE_ENGINES") == "1"
PG_DSN = os.environ.get("SQLMETRICS_PG_DSN",
                        "host=127.0.0.1 port=5432 user=sqlmetrics password=sqlmetrics dbname=sqlmetrics connect_timeout=5")
SHARED = Path(os.environ.get("SQLMETRICS_SHARED", REPO.parent / "shared"))
# PostgreSQL compiles a statement whose estimated cost passes jit_above_cost with LLVM: for the engine tests'
# statements (every measure at once) that is 15 s of compiling for a 0.3 s query. JIT changes no result, so the
# tests' connections, and dbt's, go without it (libpq reads PGOPTIONS); a setting already given is kept.
os.environ.setdefault("PGOPTIONS", "-c jit=off")
# The statements kept on disk between processes (caches.Stored) go to a folder of this test process, removed at
# its exit, not to the user's cache: every command-line test in it shares the folder, as a user's calls would.
os.environ["SQLMETRICS_CACHE_DIR"] = CACHE_DIR = tempfile.mkdtemp(prefix="sqlmetrics-test-cache-")
atexit.register(shutil.rmtree, CACHE_DIR, ignore_errors=True)


def pytest_configure(config):
    """Under pytest-xdist each process gets its share of the cores: the shared DuckDB database that evaluations
    without resource options run on (local/connection.py) is opened with cores / processes threads. DuckDB's
    default, every core in every process, oversubscribes them: on 2 cores the fast suite took 10% more CPU in
    threads waiting on each other. The tests of thread counts set threads= themselves (a database of its own)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        share = max(1, (os.cpu_count() or 1) // int(workers))
        with connection._SHARED_LOCK:
            if not connection._SHARED:
                connection._SHARED.append(embedded.connect(config={"temp_directory": connection._spill_folder(),
                                                                   "threads": share}))


# At exit the interpreter's module teardown runs full cyclic collections over everything the tests left: 1-3 s
# per process after the fast suite, which pytest-xdist's main process waits for. Frozen objects are skipped by
# the collector, so only reference counting is left to do. (Registered here, it runs before the atexit
# handlers registered earlier: the package's removal of its temporary folders, coverage's save.)
atexit.register(gc.freeze)


def _need(path: Path) -> Path:
    if path.exists():
        return path
    reason = f"{path} not found: the shared acceptance data sits beside the repository (set SQLMETRICS_SHARED)"
    if os.environ.get("SQLMETRICS_REQUIRE_SHARED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@functools.lru_cache(maxsize=None)
def trec_eval_printed(path: Path) -> dict:
    """{measure: {query id or 'all': value text}} from one trec_eval output file (`measure<TAB>qid<TAB>value`)."""
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split("\t")
        out.setdefault(measure.strip(), {})[qid] = value.strip()
    return out


@pytest.fixture(scope="session")
def trec_eval_dir() -> Path:
    return _need(SHARED / "data" / "trec_eval_test")


@pytest.fixture(scope="session")
def trec_eval_10_dir() -> Path:
    return _need(SHARED / "data" / "trec_eval_10_test")


@pytest.fixture(scope="session")
def seed_examples_path() -> Path:
    return _need(SHARED / "data" / "seed_examples.json")


@pytest.fixture(scope="session")
def metrics_md_path() -> Path:
    return _need(SHARED / "METRICS.md")


@pytest.fixture
def cli(capsys, tmp_path, monkeypatch):
    """Run `sqlmetrics ARGV...` in-process from tmp_path: (exit status, stdout, stderr). Whatever the input,
    the command line never shows a traceback or an "internal error" (a bug of ours): that is checked here."""
    monkeypatch.chdir(tmp_path)

    def run(*argv) -> tuple:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert "Traceback" not in err and "internal error" not in err, err
        return code, out, err

    return run


def unavailable(reason: str):
    """Something the test needs from outside the package's extras is not here (an engine's server, the browser,
    Recommenders): a failure in CI (SQLMETRICS_REQUIRE_ENGINES=1), else a skip. Also at a module's top."""
    if REQUIRE_ENGINES:
        pytest.fail(f"{reason} (SQLMETRICS_REQUIRE_ENGINES=1)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def postgres_connection(autocommit: bool = False):
    """A psycopg connection to the test PostgreSQL server (SQLMETRICS_PG_DSN), or unavailable()."""
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed (pip install 'psycopg[binary]')")
    try:
        return psycopg.connect(PG_DSN, autocommit=autocommit)
    except psycopg.Error as e:
        unavailable(f"no PostgreSQL server at {PG_DSN!r} ({str(e).strip().splitlines()[0]}); run .ci/engines.sh")


MYSQL = dict(host=os.environ.get("SQLMETRICS_MYSQL_HOST", "127.0.0.1"),
             port=int(os.environ.get("SQLMETRICS_MYSQL_PORT", "3306")),
             user=os.environ.get("SQLMETRICS_MYSQL_USER", "sqlmetrics"),
             password=os.environ.get("SQLMETRICS_MYSQL_PASSWORD", "sqlmetrics"),
             database=os.environ.get("SQLMETRICS_MYSQL_DATABASE", "sqlmetrics"))


def mariadb_connection(**options):
    """A pymysql connection to the test MariaDB/MySQL server (SQLMETRICS_MYSQL_*), or unavailable(); options:
    pymysql.connect()'s (autocommit=, cursorclass=)."""
    try:
        import pymysql
    except ImportError:
        unavailable("pymysql is not installed (pip install pymysql)")
    try:
        return pymysql.connect(charset="utf8mb4", connect_timeout=5, **MYSQL, **options)
    except pymysql.Error as e:
        unavailable(f"no MariaDB/MySQL server at {MYSQL['host']}:{MYSQL['port']} ({e}); run .ci/engines.sh")


def spark_session():
    """The suite's one local Spark session, created on first use and stopped when pytest ends (or unavailable()).
    getOrCreate() hands every caller the same session, so no test may stop it: one that did broke the others'."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        unavailable("pyspark is not installed (pip install pyspark)")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        unavailable("no Java runtime for pyspark (run .ci/engines.sh)")
    spark = (SparkSession.builder.master("local[2]").appName("sqlmetrics-tests")
             .config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.adaptive.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             # Tiny data, statements with large plans: interpreted expressions beat Spark's code generation,
             # while the optimizer's minutes on those plans repay HotSpot's C2 (C1 alone: the Spark tests took
             # 469 s in one process; with C2, 269 s).
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
             .config("spark.sql.codegen.wholeStage", "false").config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def pytest_collection_modifyitems(config, items):
    """The suite runs on every core (pytest-xdist, --dist loadgroup): each process starts what its tests need.
    The tests that share something costly to start go to one process, as one xdist_group: every Spark test (one
    JVM, the session spark_session() makes) and test_dbt's (a dbt build per target, minutes each); and the modules
    whose module fixtures start servers or build the same report in each process (S3 and HTTP servers; the demo
    report): split, each process would pay for them again."""
    for item in items:
        params = item.callspec.params if hasattr(item, "callspec") else {}
        if params.get("engine_name") == "spark" or params.get("engine") == "spark_con" or "on_spark" in item.name:
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif item.path.name in ("test_dbt.py", "test_remote.py", "test_report.py"):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))


def pytest_collection_finish(session):
    """Everything imported so far (pytest, the package, numpy, pandas, scipy, matplotlib, the oracles) lives to the
    end: frozen, the cyclic collector's full passes skip it. And sqlglot's trees allocate many small objects that
    reference counting frees: the collector runs every 20,000 allocations instead of 700. Both spare CPU only
    (3% of the fast suite, measured paired with farm-bench); a test that calls gc.collect() still collects."""
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def pytest_sessionfinish(session, exitstatus):
    if "pyspark.sql" in sys.modules:  # the session spark_session() started, if any
        spark = sys.modules["pyspark.sql"].SparkSession.getActiveSession()
        if spark is not None:
            spark.stop()
