"""The engines sqlmetrics renders for: each one's sqlglot dialect and what it needs beyond sqlglot (see
portable.py). Adding a dialect is one entry here, plus a fix in portable.py when it needs one."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SqlmetricsError


@dataclass(frozen=True)
class DialectInfo:
    name: str
    sqlglot: str  # the sqlglot dialect the SQL is generated in
    ids: str | None  # how ids are forced to byte order (see _binary_id), None: the engine already does
    float32: str | None  # the 4-byte float type name, None when the engine has none
    fold_case: bool = True  # unquoted names are case-folded as sqlglot's dialect says (Polars: never)
    # How a run of lists (list_run) is unnested with each element's position, portable.py's _unnest_lists:
    # 'ordinality' UNNEST(array) WITH ORDINALITY and array[i] from 1; 'offset' positions and array[i] from 0
    # (BigQuery's WITH OFFSET, Spark's posexplode, Snowflake's FLATTEN index, which sqlglot writes);
    # 'array_join' ClickHouse's ARRAY JOIN with arrayEnumerate; None: no arrays (or no such unnesting).
    unnest: str | None = None
    # The deepest greedy ideal ranking (the diversity measures', statement/subtopics.py: two CTEs per position) the
    # engine takes, None: no limit met in the tests. Spark's analyzer stops past 20 positions at its default
    # spark.sql.analyzer.maxIterations (100), and its executor overflows its stack at 41 with a larger one;
    # SQLite's expression depth (1000) is reached past 42.
    greedy_depth: int | None = None


# Executed on the real engine in tests/test_engines.py: duckdb, sqlite, postgres, mysql (MySQL 8 and
# MariaDB 10.4+), clickhouse (also chDB), spark (SparkSession.sql), datafusion (Apache DataFusion, through
# the postgres dialect), polars (polars.SQLContext, through the duckdb dialect). The others are rendered
# and parsed back in tests/test_render.py. tsql covers SQL Server, Azure SQL and Fabric.
DIALECTS = {d.name: d for d in [
    DialectInfo("duckdb", "duckdb", None, "FLOAT", unnest="ordinality"),
    DialectInfo("sqlite", "sqlite", "collate_binary", None, greedy_depth=42),
    DialectInfo("postgres", "postgres", "collate_c", "REAL", unnest="ordinality"),
    DialectInfo("mysql", "mysql", "binary", "FLOAT"),
    DialectInfo("clickhouse", "clickhouse", None, "Float32", unnest="array_join"),
    DialectInfo("spark", "spark", None, "FLOAT", unnest="offset", greedy_depth=20),
    DialectInfo("datafusion", "postgres", None, "REAL"),
    DialectInfo("polars", "duckdb", None, "REAL", fold_case=False),
    DialectInfo("databricks", "databricks", None, "FLOAT", unnest="offset", greedy_depth=20),
    DialectInfo("bigquery", "bigquery", None, None, unnest="offset"),
    DialectInfo("snowflake", "snowflake", None, None, unnest="offset"),
    DialectInfo("trino", "trino", None, "REAL", unnest="ordinality"),
    DialectInfo("presto", "presto", None, "REAL", unnest="ordinality"),
    DialectInfo("athena", "athena", None, "REAL", unnest="ordinality"),
    DialectInfo("redshift", "redshift", None, "REAL"),
    DialectInfo("tsql", "tsql", "collate_bin2", "REAL"),
    DialectInfo("oracle", "oracle", "nlssort", "BINARY_FLOAT"),
]}
UNNEST_DIALECTS = [d.name for d in DIALECTS.values() if d.unnest]
ALIASES = {"postgresql": "postgres", "pg": "postgres", "mariadb": "mysql", "chdb": "clickhouse",
           "sqlserver": "tsql", "mssql": "tsql", "spark2": "spark", "sparksql": "spark", "pyspark": "spark"}


def dialect_info(dialect: str) -> DialectInfo:
    key = str(dialect).lower()
    key = ALIASES.get(key, key)
    if key not in DIALECTS:
        raise SqlmetricsError(f"dialect={dialect!r} is not supported: use one of {', '.join(DIALECTS)}.")
    return DIALECTS[key]


