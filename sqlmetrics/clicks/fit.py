"""fit_clicks(): a click model fitted to a click log by maximum likelihood, as SQL run by DuckDB: the log read and
checked once (log.py), the model's statements (closed.py, pbm.py), the results as Arrow tables (ClickFit)."""
from __future__ import annotations

import difflib
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from ..embedded import connect as connect_embedded
from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..local.connection import connect
from ..local.readers import load
from ..local.readers.loaded import _first_line
from ..local.runs import named_runs
from ..options import check_log_options
from ..stats.compare import analyse_lists
from ..stats.report import segment_key
from . import closed, dbn, dcm, pbm, ubm
from .log import ROLES, checked_log
from .ranking import check_depth, per_query
from .score import ClickScore, load_parameters, scored

@dataclass(frozen=True)
class Model:
    """How one click model is fitted: fit(con, iterations, tolerance) writes its parameter tables from sqlm_clicks
    and returns ({parameter: table}, {seg: (iterations run, last change)} or None for a closed form);
    log_likelihood(con, tables) is SQL of (seg, log_likelihood); predict(con, tables) is SQL of (seg, session, position,
    conditional, marginal) per row of sqlm_clicks: P(click | the session's clicks above) and P(click), what a held-out
    log is scored by (score.py). Every model of MODELS has its own."""

    fit: Callable
    log_likelihood: Callable
    iterates: bool
    predict: Callable


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


MODELS = {"cascade": Model(_closed(closed.cascade), closed.log_likelihood, False, closed.predict_cascade),
          "sdbn": Model(_closed(closed.sdbn), closed.log_likelihood, False, closed.predict_sdbn),
          "pbm": Model(_pbm, pbm.log_likelihood, True, pbm.predict),
          "ubm": Model(ubm.fit, pbm.log_likelihood, True, ubm.predict),  # PBM's over UBM's counts
          "dcm": Model(dcm.fit, dcm.log_likelihood, True, dcm.predict),
          "dbn": Model(_dbn, dbn.log_likelihood, True, dbn.predict)}
DEFAULT_ITERATIONS, DEFAULT_TOLERANCE = 100, 1e-6
# The columns of the long table (ClickFit.table()) after the model and the segments, and of the summary: a segment
# column of one of these names is refused.
LONG = ("parameter", "query", "doc", "position", "previous_click", "value", "impressions", "clicks", "last_clicks")
SUMMARY = ("sessions", "rows", "iterations", "last_change", "converged", "log_likelihood")


@dataclass
class ClickFit:
    """A fitted click model. parameters: {name: Arrow table}, each with the segment columns (group_by=) first, then
    the parameter's key, its value and the counts behind it:
      attractiveness  query, doc, attractiveness, impressions, clicks   (every model)
      examination     position, examination, impressions, clicks         (pbm)
                      position, previous_click, examination, impressions, clicks   (ubm; previous_click: the position
                      of the session's click before, 0 for none)
      satisfaction    query, doc, satisfaction, clicks, last_clicks      (sdbn, dbn)
      continuation    position, continuation, clicks, last_clicks        (dcm: per position after a click)
                      continuation, impressions, clicks, last_clicks     (dbn: one per segment)
    summary: one row per segment: sessions, rows, iterations (0 for a closed form), last_change (the last
    iteration's largest change of a parameter; null for a closed form), converged, log_likelihood.
    qrels() turns a (query, doc) parameter into judgments, propensities() PBM's examination into propensities."""

    model: str
    group_by: tuple
    parameters: dict
    summary: object  # pyarrow.Table

    def table(self):
        """Every parameter in one long table, as `sqlmetrics clicks -o` writes it: model, the segments, parameter
        (its name), query, doc, position, previous_click (null where the parameter has none), value, impressions,
        clicks, last_clicks.
        Its columns have the same types whichever the model: a file's schema does not depend on it."""
        import pyarrow as pa

        keys = self.parameters["attractiveness"].schema
        types = {"model": pa.string(), **{g: keys.field(g).type for g in self.group_by}, "parameter": pa.string(),
                 "query": keys.field("query").type, "doc": keys.field("doc").type, "position": pa.int64(),
                 "previous_click": pa.int64(), "value": pa.float64(), "impressions": pa.int64(), "clicks": pa.int64(),
                 "last_clicks": pa.int64()}
        parts = []
        for name, t in self.parameters.items():
            given = {"model": self.model, "parameter": name, "value": t[name]}
            columns = {c: given.get(c, t[c] if c in t.column_names else None) for c in types}
            parts.append(pa.table({c: v if isinstance(v, pa.ChunkedArray) else pa.array([v] * t.num_rows, kind)
                                   for (c, kind), v in zip(types.items(), columns.values())},
                                  schema=pa.schema(types.items())))
        return pa.concat_tables(parts)

    def propensities(self):
        """PBM's examination as position-bias propensities normalised to position 1, per segment: a pyarrow Table of
        the segments, position, propensity (gamma_r / gamma_1), impressions and clicks. PBM's gamma and alpha are
        identified only as their product (docs/clicks.md): the ratio is what the log determines. A segment whose
        gamma_1 is 0 (position 1 never clicked) cannot be normalised: left out, with a SqlmetricsWarning."""
        if "examination" not in self.parameters:
            raise SqlmetricsError(f"propensities() reads a PBM's examination by position; model={self.model!r} has "
                                  f"none. Fit model='pbm', or estimate them from the log: "
                                  "sqlmetrics.propensities(log, method='pivot').")
        keys = ", ".join(_q(g) for g in self.group_by)
        partition = f"PARTITION BY {keys} " if keys else ""
        con = connect_embedded()
        try:
            con.register("sqlm_examination", self.parameters["examination"])
            table = con.sql(f"""
                SELECT {keys + ', ' if keys else ''}position, examination / sqlm_first AS propensity, impressions,
                       clicks
                FROM (SELECT *, FIRST(examination) OVER ({partition}ORDER BY position) AS sqlm_first
                      FROM sqlm_examination)
                WHERE sqlm_first > 0 ORDER BY {keys + ', ' if keys else ''}position""").to_arrow_table()
            lost = con.execute(f"SELECT DISTINCT {keys or 'NULL'} FROM sqlm_examination WHERE position = 1 AND "
                               "examination = 0").fetchall()
        finally:
            con.close()
        for values in lost:
            where = f" (segment {', '.join(f'{g}={v!r}' for g, v in zip(self.group_by, values))})" \
                if self.group_by else ""
            warn(f"propensities: the PBM's examination at position 1 is 0{where} (no click at position 1): its "
                 "propensities, relative to position 1, cannot be estimated and are left out.")
        return table

    def qrels(self, min_impressions: int = 1, parameter: str = "attractiveness", levels=None):
        """A parameter keyed by (query, doc) as graded judgments: a pyarrow Table of the segment columns (group_by=),
        query, doc and relevance, which evaluate(), compare() and report() read as qrels= (query and doc are found
        as query_id and doc_id, or mapped by the same columns= as a click log's run). A pair with fewer
        than min_impressions impressions behind its attractiveness is left out (unjudged).
        relevance is the fitted probability itself (a float in [0, 1]: nDCG's linear gain is then the chance that
        the document is clicked once examined); levels=[t1, t2, ...] (increasing) makes it an integer grade
        instead, the count of thresholds at or below the probability (0 .. len(levels)), for the measures that read
        grades against relevance_level (P, AP, RR: relevant at grade >= 1)."""
        keyed = [n for n, t in self.parameters.items() if {"query", "doc"} <= set(t.column_names)]
        if parameter not in keyed:
            raise SqlmetricsError(f"parameter={parameter!r}: the {self.model} fit has no such parameter keyed by "
                                  f"(query, doc); it has {', '.join(map(repr, keyed))}.")
        if isinstance(min_impressions, bool) or not isinstance(min_impressions, int) or min_impressions < 1:
            raise SqlmetricsError(f"min_impressions={min_impressions!r} must be a whole number of at least 1: the "
                                  "fewest impressions of a (query, doc) pair judged.")
        grade = _graded(levels, f"p.{_q(parameter)}")
        keys = "".join(f"p.{_q(g)}, " for g in self.group_by)
        same = " AND ".join(f"p.{_q(c)} IS NOT DISTINCT FROM a.{_q(c)}" for c in (*self.group_by, "query", "doc"))
        con = connect_embedded()
        try:
            con.register("sqlm_parameter", self.parameters[parameter])
            con.register("sqlm_attractiveness", self.parameters["attractiveness"])
            table = con.sql(f"""
                SELECT {keys}p.query, p.doc, {grade} AS relevance
                FROM sqlm_parameter p JOIN sqlm_attractiveness a ON {same}
                WHERE a.impressions >= {min_impressions} ORDER BY ALL""").to_arrow_table()
        finally:
            con.close()
        return table

    def score(self, log, columns: dict | None = None, *, memory_limit=None, threads=None,
              temp_directory=None) -> ClickScore:
        """This model judged on a held-out click log (same roles as fit_clicks() reads, and the fit's group_by
        columns): per segment and per segment and rank, the log-likelihood (total and per session), perplexity and
        CTR prediction error, and how many rows the fit has no parameter for (scored with 0.5). See score.py and
        docs/clicks.md ("Which model fits your log"). Works on the Arrow tables alone: the fit's connection is gone."""
        predict = MODELS[self.model].predict

        def judged(con, segments: tuple, label: str) -> ClickScore:
            tables = load_parameters(con, self, label)
            per_segment, per_rank = scored(con, predict(con, tables), tables)
            return ClickScore(self.model, self.group_by, _named(per_segment, self.group_by),
                              _named(per_rank, self.group_by))

        return on_log(log, columns, self.group_by, (memory_limit, threads, temp_directory), judged,
                      "held-out click log", "scored")

    def compare(self, runs, columns: dict | None = None, *, depth: int = 10, baseline=None, test: str = "student",
                max_p: float = 0.01, correction=None, seed: int = 42, n_resamples: int = 10000, pairing: str = "auto",
                memory_limit=None, threads=None, temp_directory=None):
        """The rankings compared on their click-model-based metrics (expected()'s expected_clicks and, for a model
        with satisfaction, satisfaction; higher is better, the mean over queries), per segment, with compare()'s
        significance tests and its options (test, max_p, correction, baseline, pairing, seed, n_resamples): a
        stats.Report, as compare() returns."""
        table = self.expected(runs, columns, depth=depth, memory_limit=memory_limit, threads=threads,
                              temp_directory=temp_directory)
        measures = [m for m in ("expected_clicks", "satisfaction") if m in table.column_names]
        lists: dict = {}
        for row in table.to_pylist():
            seg = segment_key(row[g] for g in self.group_by)
            lists.setdefault(seg, {}).setdefault(row["run"], {})[row["query_id"]] = [row[m] for m in measures]
        return analyse_lists(list(named_runs(runs)), {m: ("higher", "mean") for m in measures}, lists,
                             segment_names=self.group_by, test=test, max_p=max_p, correction=correction, seed=seed,
                             n_resamples=n_resamples, pairing=pairing, baseline=baseline,
                             options={"model": self.model},
                             resources={"memory_limit": memory_limit, "threads": threads,
                                        "temp_directory": temp_directory})

    def expected(self, runs, columns: dict | None = None, *, depth: int = 10, memory_limit=None, threads=None,
                 temp_directory=None):
        """Click-model-based metrics of rankings never shown (Chuklin, Serdyukov and de Rijke, SIGIR 2013), per query,
        as an Arrow table: run, the segment columns (each list predicted under every segment's model), query_id,
        documents, unseen_documents (scored with 0.5), expected_clicks (the sum of P(click) over the list) and, for a
        model with satisfaction (sdbn, dbn), satisfaction (P(the user ends satisfied)). runs: a run, a list of runs or
        {name: run}, anything evaluate() reads (query_id, doc_id and a rank or score; columns= maps run roles); each
        list ordered by its rank, else by score descending (trec_eval's order), and cut at depth (the page a user is
        shown). See ranking.py, docs/clicks.md."""
        named, depth = named_runs(runs), check_depth(depth)
        con = connect(memory_limit, threads, temp_directory)
        spills: list = []
        try:
            return per_query(con, self, MODELS[self.model].predict, named, columns, depth, spills)
        except duckdb.Error as e:
            raise SqlmetricsError(f"runs: cannot be predicted: {_first_line(e)}") from None
        finally:
            con.close()
            for folder in spills:
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)


def fit_clicks(log, model: str = "pbm", columns: dict | None = None, group_by=None, iterations: int | None = None,
               tolerance: float | None = None, *, memory_limit=None, threads=None, temp_directory=None) -> ClickFit:
    """Fit a click model to a click log by maximum likelihood, in SQL on DuckDB.

    log: one row per shown (session, position), anything the package reads (a CSV, TSV, Parquet or JSON Lines file, a
    DuckDB table 'file.duckdb:table', a pyarrow Table, a pandas or polars DataFrame, a dict of columns), with the
    roles session (one result page), query, doc, position (1..n within the session) and clicked (0/1), found by those
    names or mapped with columns={role: column}.
    model: 'cascade' or 'sdbn' (closed forms) or 'pbm', 'ubm', 'dcm' or 'dbn' (EM from every parameter at 0.5, at
    most `iterations` (100) simultaneous updates, stopping when the largest change of any parameter is below
    `tolerance` (1e-6); one not converged then is a SqlmetricsWarning naming the segment and the last change).
    group_by: a column or columns: one model per segment (per market, per device).
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them. See docs/clicks.md.
    """
    name, chosen = model_named(model)
    iterations, tolerance = _iteration_options(name, chosen.iterates, iterations, tolerance)
    segments = check_log_options("log", group_by, None, None)  # group_by= checked as a log's segments are

    def fitted(con, segments: tuple, label: str) -> ClickFit:
        tables, runs = chosen.fit(con, iterations, tolerance)
        return _collected(con, name, segments, tables, runs, chosen.log_likelihood(con, tables), tolerance)

    return on_log(log, columns, segments, (memory_limit, threads, temp_directory), fitted, "click log", "fitted")


def on_log(log, columns, group_by: tuple, resources: tuple, work: Callable, what: str, doing: str):
    """work(con, segments, label) on a connection of its own holding the log read and checked (sqlm_clicks,
    sqlm_segments); the connection closed and any spill removed after."""
    if isinstance(log, dict):
        log = _columns_table(log)
    con = connect(*resources)
    loaded = None
    try:
        loaded = load(con, log, "clicks", _roles(columns), what=what)
        _refuse_clashes(group_by, loaded.label)
        return work(con, checked_log(con, loaded, group_by), loaded.label)
    except duckdb.Error as e:  # a column of a type DuckDB cannot compare or group (a map, a union)
        raise SqlmetricsError(f"{loaded.label if loaded else what}: cannot be {doing}: {_first_line(e)}") from None
    finally:
        con.close()
        if loaded is not None and loaded.temporary:
            shutil.rmtree(loaded.temporary, ignore_errors=True)


def model_named(model) -> tuple:
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
                                  f"appl{'y' if len(given) > 1 else 'ies'} to EM (model='pbm', 'ubm', 'dcm' or "
                                  f"'dbn'); leave {'them' if len(given) > 1 else 'it'} out.")
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
    taken = {"model", *LONG, "attractiveness", "examination", "satisfaction", "continuation", *SUMMARY,
             "relevance", "propensity", "pairs"}  # the columns of ClickFit.qrels() and of propensities()
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
        order = ", ".join(_q(d[0]) for d in rest if d[0] in ("query", "doc", "position", "previous_click"))
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


def _graded(levels, value: str) -> str:
    """SQL of the grade from a probability: the probability itself, or the count of levels= at or below it."""
    if levels is None:
        return value
    ok = isinstance(levels, (list, tuple)) and levels and all(
        isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in levels)
    if not ok or any(b <= a for a, b in zip(levels, levels[1:])):
        raise SqlmetricsError(f"levels={levels!r} must be increasing thresholds, such as [0.1, 0.3, 0.6]: a "
                              "probability at or above the first is grade 1, the second grade 2, ...")
    return "(" + " + ".join(f"CAST({value} >= {float(t)!r} AS INTEGER)" for t in levels) + ")"


def _named(table, segments: tuple):
    """The segment columns (seg_1, ...; the summary's seg first) under the log's names."""
    table = table.drop_columns(["seg"]) if "seg" in table.column_names else table
    return table.rename_columns([*segments, *table.column_names[len(segments):]])
