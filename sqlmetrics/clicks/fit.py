"""fit_clicks(): a click model fitted to a click log by maximum likelihood, as SQL run by DuckDB: the log read and
checked once (log.py), the model's statements (closed.py, pbm.py), the results as Arrow tables (ClickFit)."""
from __future__ import annotations

import difflib
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..local.connection import connect
from ..local.readers import load
from ..local.readers.loaded import _first_line
from ..options import check_log_options
from . import closed, dbn, pbm
from .log import ROLES, checked_log

@dataclass(frozen=True)
class Model:
    """How one click model is fitted: fit(con, iterations, tolerance) writes its parameter tables from sqlm_clicks
    and returns ({parameter: table}, {seg: (iterations run, last change)} or None for a closed form);
    log_likelihood(con, tables) is SQL of (seg, log_likelihood); predict(con, tables) SQL of (seg, session, position,
    conditional, marginal), one row per row of sqlm_clicks (issue 44's contract; None where not written yet). UBM
    and DCM come in MODELS the same way."""

    fit: Callable
    log_likelihood: Callable
    iterates: bool
    predict: Callable | None = None


def _closed(model: Callable) -> Callable:
    return lambda con, iterations, tolerance: (model(con), None)


def _pbm(con, iterations: int, tolerance: float) -> tuple:
    pbm.aggregate(con)
    runs = pbm.fit(con, iterations, tolerance)
    return pbm.parameters(con), runs


def _dbn(con, iterations: int, tolerance: float) -> tuple:
    dbn.aggregate(con)
    runs = dbn.fit(con, iterations, tolerance)
    return dbn.parameters(con), runs


MODELS = {"cascade": Model(_closed(closed.cascade), closed.log_likelihood, False),
          "sdbn": Model(_closed(closed.sdbn), closed.log_likelihood, False),
          "pbm": Model(_pbm, pbm.log_likelihood, True),
          "dbn": Model(_dbn, dbn.log_likelihood, True, dbn.predict)}
DEFAULT_ITERATIONS, DEFAULT_TOLERANCE = 100, 1e-6
# The columns of the long table (ClickFit.table()) after the model and the segments, and of the summary: a segment
# column of one of these names is refused.
LONG = ("parameter", "query", "doc", "position", "value", "impressions", "clicks", "last_clicks")
SUMMARY = ("sessions", "rows", "iterations", "last_change", "converged", "log_likelihood")


@dataclass
class ClickFit:
    """A fitted click model. parameters: {name: Arrow table}, each with the segment columns (group_by=) first, then
    the parameter's key, its value and the counts behind it:
      attractiveness  query, doc, attractiveness, impressions, clicks   (every model)
      examination     position, examination, impressions, clicks         (pbm)
      satisfaction    query, doc, satisfaction, clicks, last_clicks      (sdbn, dbn)
      continuation    continuation, impressions, clicks, last_clicks     (dbn: one per segment)
    summary: one row per segment: sessions, rows, iterations (0 for a closed form), last_change (the last
    iteration's largest change of a parameter; null for a closed form), converged, log_likelihood."""

    model: str
    group_by: tuple
    parameters: dict
    summary: object  # pyarrow.Table

    def table(self):
        """Every parameter in one long table, as `sqlmetrics clicks -o` writes it: model, the segments, parameter
        (its name), query, doc, position (null where the parameter has none), value, impressions, clicks, last_clicks.
        Its columns have the same types whichever the model: a file's schema does not depend on it."""
        import pyarrow as pa

        keys = self.parameters["attractiveness"].schema
        types = {"model": pa.string(), **{g: keys.field(g).type for g in self.group_by}, "parameter": pa.string(),
                 "query": keys.field("query").type, "doc": keys.field("doc").type, "position": pa.int64(),
                 "value": pa.float64(), "impressions": pa.int64(), "clicks": pa.int64(), "last_clicks": pa.int64()}
        parts = []
        for name, t in self.parameters.items():
            given = {"model": self.model, "parameter": name, "value": t[name]}
            columns = {c: given.get(c, t[c] if c in t.column_names else None) for c in types}
            parts.append(pa.table({c: v if isinstance(v, pa.ChunkedArray) else pa.array([v] * t.num_rows, kind)
                                   for (c, kind), v in zip(types.items(), columns.values())},
                                  schema=pa.schema(types.items())))
        return pa.concat_tables(parts)


def fit_clicks(log, model: str = "pbm", columns: dict | None = None, group_by=None, iterations: int | None = None,
               tolerance: float | None = None, *, memory_limit=None, threads=None, temp_directory=None) -> ClickFit:
    """Fit a click model to a click log by maximum likelihood, in SQL on DuckDB.

    log: one row per shown (session, position), anything the package reads (a CSV, TSV, Parquet or JSON Lines file, a
    DuckDB table 'file.duckdb:table', a pyarrow Table, a pandas or polars DataFrame, a dict of columns), with the
    roles session (one result page), query, doc, position (1..n within the session) and clicked (0/1), found by those
    names or mapped with columns={role: column}.
    model: 'cascade' or 'sdbn' (closed forms) or 'pbm' or 'dbn' (EM from every parameter at 0.5, at most `iterations`
    (100) simultaneous updates, stopping when the largest change of any parameter is below `tolerance` (1e-6); one
    not converged then is a SqlmetricsWarning naming the segment and the last change).
    group_by: a column or columns: one model per segment (per market, per device).
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them. See docs/clicks.md.
    """
    name, chosen = _model(model)
    iterations, tolerance = _iteration_options(name, chosen.iterates, iterations, tolerance)
    segments = check_log_options("log", group_by, None, None)  # group_by= checked as a log's segments are
    if isinstance(log, dict):
        log = _columns_table(log)
    con = connect(memory_limit, threads, temp_directory)
    loaded = None
    try:
        loaded = load(con, log, "clicks", _roles(columns), what="click log")
        _refuse_clashes(segments, loaded.label)
        segments = checked_log(con, loaded, segments)
        tables, runs = chosen.fit(con, iterations, tolerance)
        result = _collected(con, name, segments, tables, runs, chosen.log_likelihood(con, tables), tolerance)
    except duckdb.Error as e:  # a column of a type DuckDB cannot compare or group (a map, a union)
        raise SqlmetricsError(f"{loaded.label if loaded else 'click log'}: cannot be fitted: {_first_line(e)}") \
            from None
    finally:
        con.close()
        if loaded is not None and loaded.temporary:
            shutil.rmtree(loaded.temporary, ignore_errors=True)
    return result


def _model(model) -> tuple:
    """(the model's name, its Model): any case; an unknown name suggests the closest."""
    name = model.lower() if isinstance(model, str) else model
    if name not in MODELS:
        close = difflib.get_close_matches(str(name), list(MODELS), n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise SqlmetricsError(f"model={model!r} is not a click model.{hint} The models: {', '.join(MODELS)}.")
    return name, MODELS[name]


def _iteration_options(name: str, iterates: bool, iterations, tolerance) -> tuple:
    if not iterates:
        given = [f"{k}=" for k, v in (("iterations", iterations), ("tolerance", tolerance)) if v is not None]
        if given:
            raise SqlmetricsError(f"model={name!r} has closed-form estimates: {' and '.join(given)} "
                                  f"appl{'y' if len(given) > 1 else 'ies'} to EM (model='pbm' or 'dbn'); leave "
                                  f"{'them' if len(given) > 1 else 'it'} out.")
        return None, None
    iterations = DEFAULT_ITERATIONS if iterations is None else iterations
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise SqlmetricsError(f"iterations={iterations!r} must be a whole number of at least 1: the most EM "
                              f"iterations to run (default {DEFAULT_ITERATIONS}).")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance < 1:
        raise SqlmetricsError(f"tolerance={tolerance!r} must be a number between 0 and 1 (not included): EM stops "
                              "when no parameter changes by as much in an iteration (default "
                              f"{DEFAULT_TOLERANCE:g}).")
    return iterations, float(tolerance)


def _roles(columns) -> dict | None:
    if columns is None:
        return None
    if not isinstance(columns, dict):
        raise SqlmetricsError(f"columns= must be a dict {{role: column}}, got {type(columns).__name__}.")
    for role, column in columns.items():
        if role not in ROLES:
            close = difflib.get_close_matches(str(role), ROLES, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SqlmetricsError(f"columns= names an unknown role {role!r}.{hint} A click log's roles: "
                                  f"{', '.join(ROLES)}.")
        if not isinstance(column, str) or not column:
            raise SqlmetricsError(f"columns= maps {role!r} to {column!r}; give a column name.")
    return dict(columns)


def _columns_table(log: dict):
    """A dict of columns ({'session': [...], ...}) as an Arrow table."""
    import pyarrow as pa

    try:
        return pa.table(log)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise SqlmetricsError(f"click log (dict): cannot be read as columns {{name: [values]}}: {e}.") from None


def _refuse_clashes(segments: tuple, label: str) -> None:
    """A segment column named as a column of the results would make two of that name."""
    taken = {"model", *LONG, "attractiveness", "examination", "satisfaction", "continuation", *SUMMARY}
    clash = [s for s in segments if s.lower() in taken]
    if clash:
        raise SqlmetricsError(f"{label}: group_by={clash[0]!r} is also a column of the results "
                              f"({', '.join(sorted(taken))}); rename that column of the log.")


def _collected(con, model: str, segments: tuple, tables: dict, runs, likelihood: str, tolerance) -> ClickFit:
    """The parameter tables and the summary as Arrow, the segments by their own columns; a warning per segment that
    did not converge."""
    seg_cols = "".join(f"s.seg_{i}, " for i in range(1, len(segments) + 1))
    parameters = {}
    for name, table in tables.items():
        rest = con.execute(f"SELECT * EXCLUDE (seg) FROM {table} LIMIT 0").description
        order = ", ".join(_q(d[0]) for d in rest if d[0] in ("query", "doc", "position"))
        parameters[name] = _named(con.sql(f"SELECT {seg_cols}t.* EXCLUDE (seg) FROM {table} t JOIN sqlm_segments s "
                                          f"USING (seg) ORDER BY s.seg, {order}").to_arrow_table(), segments)
    runs = runs or {}
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_runs (seg BIGINT, iterations BIGINT, last_change DOUBLE)")
    if runs:
        con.executemany("INSERT INTO sqlm_runs VALUES (?, ?, ?)", [(s, i, c) for s, (i, c) in runs.items()])
    converged = f"r.last_change < {tolerance!r}" if tolerance is not None else "true"
    summary = con.sql(f"""
        SELECT s.seg, {seg_cols}COUNT(DISTINCT c.session) AS sessions, COUNT(*) AS rows,
               COALESCE(ANY_VALUE(r.iterations), 0) AS iterations, ANY_VALUE(r.last_change) AS last_change,
               COALESCE(ANY_VALUE({converged}), true) AS converged, ANY_VALUE(l.log_likelihood) AS log_likelihood
        FROM sqlm_clicks c JOIN sqlm_segments s USING (seg) LEFT JOIN sqlm_runs r ON r.seg = c.seg
        LEFT JOIN ({likelihood}) l ON l.seg = c.seg
        GROUP BY ALL ORDER BY s.seg""").to_arrow_table()
    summary = _named(summary, segments)
    for row in summary.to_pylist():
        if not row["converged"]:
            where = f" (segment {', '.join(f'{g}={row[g]!r}' for g in segments)})" if segments else ""
            warn(f"fit_clicks: {model} did not converge{where} within iterations={row['iterations']}: the last "
                 f"iteration changed a parameter by {row['last_change']:.3g}, above tolerance={tolerance:g}. Raise "
                 "iterations=, or accept a larger tolerance=.")
        for name in ("log_likelihood", "last_change"):
            if row[name] is not None and not math.isfinite(row[name]):  # a bug of ours: never a NaN in a result
                raise AssertionError(f"{name} is {row[name]} for {row}")
    return ClickFit(model, segments, parameters, summary)


def _named(table, segments: tuple):
    """The segment columns (seg_1, ...; the summary's seg first) under the log's names."""
    table = table.drop_columns(["seg"]) if "seg" in table.column_names else table
    return table.rename_columns([*segments, *table.column_names[len(segments):]])
