"""Mann-Whitney's ranks with a tie tolerance, in SQL that the local statistics (significance.py, on DuckDB) and the
engine's (aggregates.py) share. Exact ties would not do: a measure summed in another order (Spark's against
DuckDB's) differs in the last bit, so values tied on one engine are ordered on the other and a rank sum moves by
0.5. Here sorted values whose gap is within RANK_TIE (relative to the larger value, or to 1 below 1) are one tie
group, and share the group's average rank.

Portable: ROW_NUMBER, a one-row frame for the value before (ClickHouse has no LAG), and a running SUM with the
default RANGE frame, under which exact ties (in whatever order the engine put them) get the same group number.
"""
from __future__ import annotations

RANK_TIE = 1e-12


def tolerant_ranks_sql(source: str, partition: str, carry: str) -> str:
    """A query over `source` (rows with the value `x`) that keeps `partition` (columns, comma-separated) and
    `carry` and adds r, x's average rank within its partition, and t, the size of its tie group."""
    # NULLS FIRST, the ascending default of MySQL, BigQuery and SQL Server, which cannot say NULLS LAST (DuckDB's
    # default, which sqlglot would spell out for them); x is never NULL.
    over = f"PARTITION BY {partition} ORDER BY x NULLS FIRST"
    return f"""
SELECT {partition}, {carry}, AVG(CAST(pos AS DOUBLE PRECISION)) OVER (PARTITION BY {partition}, grp) AS r,
       CAST(COUNT(*) OVER (PARTITION BY {partition}, grp) AS DOUBLE PRECISION) AS t
FROM (SELECT {partition}, {carry}, pos, SUM(starts) OVER ({over}) AS grp
      FROM (SELECT {partition}, {carry}, x, ROW_NUMBER() OVER ({over}) AS pos,
                   CASE WHEN x - MAX(x) OVER ({over} ROWS BETWEEN 1 PRECEDING AND 1 PRECEDING)
                             <= {RANK_TIE!r} * (CASE WHEN ABS(x) > 1 THEN ABS(x) ELSE 1 END) THEN 0 ELSE 1 END AS starts
            FROM {source}) AS ordered) AS grouped"""
