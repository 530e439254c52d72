"""fuse() on DuckDB, embedded: load and check the runs as evaluate() does, run the one fusion statement
(sqlmetrics/fusion.py), and return the fused run as a pyarrow Table or write it atomically (TREC text,
Parquet, CSV, or a table of a DuckDB file)."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from ..catalogue.fusion import DEFAULT_NORM
from ..errors import SqlmetricsError
from ..fusion import fusion_settings, fusion_statement
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..statement import READ
from . import checks
from .evaluate import _is_run_dict, _source, connect
from .output import replace_file, writable_target
from .readers import _split_duckdb_target, file_format, load

FUSED_COLUMNS = ("query_id", "doc_id", "rank", "score")


def named_runs(runs) -> list:
    """[(name, run)]: a {name: run} dict as it is, a list or tuple named by position (run1, run2, ...)."""
    if _is_run_dict(runs):
        return [(str(name), run) for name, run in runs.items()]
    if isinstance(runs, (list, tuple)):
        return [(f"run{i}", run) for i, run in enumerate(runs, 1)]
    raise SqlmetricsError("fusion takes two or more runs: a list of runs, or a {name: run} dict; one run was given.")


def fused_sources(con, items: list, columns: dict | None, inputs: list) -> list:
    """One checked Source per (name, run) (query_id, doc_id, score), loaded on con; `inputs` collects the
    Loaded inputs, for the caller to clean up."""
    sources = []
    for name, run in items:
        loaded = load(con, run, "run", columns, name)
        inputs.append(loaded)
        if "score" not in loaded.columns:
            raise SqlmetricsError(f"{loaded.label}: has no score column; fusion reads each run's scores.")
        checks.check(con, loaded, "run", "error", "score")
        sources.append(_source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "score")}))
    return sources


def ranked_sql(fused_sql: str, tag: str | None = None) -> str:
    """The fused run ranked: per query by score descending, ties by document id descending (trec_eval's
    order), the queries by id; with a tag, as TREC text's six fields."""
    rank = "ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC)"
    if tag is None:
        return f"SELECT query_id, doc_id, {rank} AS rank, score FROM ({fused_sql}) ORDER BY query_id, rank"
    return (f"SELECT query_id, 'Q0' AS q0, doc_id, {rank} AS rank, score, {_lit(tag)} AS tag FROM ({fused_sql}) "
            "ORDER BY query_id, rank")


def fuse(runs, method, norm=DEFAULT_NORM, output=None, tag: str = "fused", columns: dict | None = None, **params):
    """Fuse two or more runs into one, in ONE SQL statement on DuckDB (the method's template in sql/fusion/).

    runs: a list of runs or a {name: run} dict, each anything evaluate() reads as a run. method: a fusion
    method's name or ranx's (rrf, CombSUM / sum, CombMNZ / mnz, wsum, bordafuse, ...; `sqlmetrics list`
    shows them); norm: none, min-max (default, as ranx), max, sum, zmuv or rank, per query and run;
    params: the method's (k=60 for RRF, phi= for RBC, weights=[...] for WSum, one per run in order).

    Returns a pyarrow Table (query_id, doc_id, rank, score), ranked per query by score descending, ties by
    document id descending; with output=, writes it atomically instead: `.parquet`, `.csv`, a DuckDB file's
    table (`fused.duckdb:rrf`), or else TREC text (`query Q0 doc rank score tag`).
    """
    items = named_runs(runs)
    settings = fusion_settings(method, norm, params, len(items))
    target = _split_duckdb_target(str(output)) if output is not None else None
    if output is not None and target is None:
        writable_target(output, f"output={str(output)!r}")  # before any work
    con = connect()
    inputs: list = []
    try:
        sources = fused_sources(con, items, columns, inputs)
        sql = fusion_statement(sources, *settings, fixed_order=True).sql(READ)
        if output is None:
            return con.sql(ranked_sql(sql)).to_arrow_table()
        if target is not None:
            _write_table(con, ranked_sql(sql), *target)
            return None
        fmt = file_format(Path(output))
        copy = {"parquet": "FORMAT parquet", "csv": "FORMAT csv, HEADER true"}.get(
            fmt, "FORMAT csv, DELIMITER ' ', HEADER false, QUOTE ''")
        query = ranked_sql(sql, None if fmt in ("parquet", "csv") else tag)
        replace_file(output, f"output={str(output)!r}",
                     lambda tmp: con.execute(f"COPY ({query}) TO {_lit(str(tmp))} ({copy})"))
        return None
    finally:
        con.close()
        for folder in {i.temporary for i in inputs if i.temporary}:
            shutil.rmtree(folder, ignore_errors=True)


def _write_table(con, query: str, path: Path, table: str) -> None:
    """CREATE OR REPLACE the table in a DuckDB file, in one transaction: all of it or nothing."""
    if path.suffix.lower() not in (".duckdb", ".ddb"):
        raise SqlmetricsError(f"output='{path}:{table}': fused runs are written to DuckDB files (.duckdb).")
    try:
        con.execute(f"ATTACH {_lit(str(path))} AS sqlm_fused_out")
    except duckdb.Error as e:
        raise SqlmetricsError(f"output='{path}:{table}': cannot be opened as a DuckDB file ({e}).") from None
    try:
        con.execute("BEGIN")
        con.execute(f"CREATE OR REPLACE TABLE sqlm_fused_out.{_q(table)} AS {query}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.execute("DETACH sqlm_fused_out")
