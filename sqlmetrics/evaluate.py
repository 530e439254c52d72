"""evaluate(): load inputs into DuckDB, check them, run the rendered statement, return Results."""
from __future__ import annotations

import os
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from . import inputs, validate
from .errors import SqlmetricsError, SqlmetricsWarning
from .names import parse_all
from .statement import (Options, Source, aggregate_sql, output_columns, plan_measures, render_duckdb,
                        segment_aggregate_sql)


@dataclass
class Results:
    """Evaluation results, keyed by the measure strings exactly as passed.

    aggregate: {measure: value}, or {run_name: {measure: value}} when several runs were evaluated.
    per_query: a pyarrow Table with `query_id` (and `run` for several runs, and the group_by columns)
    and one column per measure: one row per evaluated list.
    per_group: with group_by, a pyarrow Table with one row per (run and) segment: the segment columns, each
    measure's aggregate (mean, sum or geometric mean) over the segment's lists, and `num_lists`; else None.
    """

    aggregate: dict
    per_query: pa.Table
    measures: list
    per_group: pa.Table | None = field(default=None)


def _arrow(con, query: str, names: list):
    return con.sql(query).to_arrow_table().rename_columns(names)


def python_rows(con, query: str, names: list) -> tuple:
    """For evaluate(_fetch=python_rows): per_query and per_group as (column names, list of row tuples)
    instead of Arrow tables. The command line prints these, and never imports pyarrow (~0.15 s)."""
    return names, con.execute(query).fetchall()


class _Background(threading.Thread):
    """fn(*args) on a thread; result() waits for it and raises what it raised."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self._fn, self._args, self._value, self._error = fn, args, None, None
        self.start()

    def run(self):
        try:
            self._value = self._fn(*self._args)
        except BaseException as e:  # handed to the caller by result()
            self._error = e

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


def _is_run_dict(run) -> bool:
    """{run_name: run} rather than one ranx-style {query_id: {doc_id: score}} dict."""
    if not isinstance(run, dict) or not run:
        return False
    values = list(run.values())
    if all(isinstance(v, dict) for v in values):
        # A ranx run maps documents to numbers; a dict of runs maps queries to dicts one level deeper.
        return all(isinstance(inner, dict) for v in values for inner in v.values())
    return True


def _dedup(con, loaded: inputs.Loaded, policy: str) -> inputs.Loaded:
    if policy == "error":
        return loaded
    c = loaded.columns
    q, d = inputs._q(c["query_id"]), inputs._q(c["doc_id"])
    view = inputs._fresh("dedup")
    if policy == "max":
        aggs = [f"MAX({inputs._q(c['score'])}) AS {inputs._q(c['score'])}"] if "score" in c else []
        aggs += [f"MIN({inputs._q(c['rank_position'])}) AS {inputs._q(c['rank_position'])}"] if "rank_position" in c else []
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT {q}, {d}, {', '.join(aggs)} FROM {loaded.view} GROUP BY {q}, {d}")
    else:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {loaded.numbered} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {q}, {d} ORDER BY line_no) = 1")
    return inputs.Loaded(view, {r: c[r] for r in c}, loaded.label, loaded.row_word, inputs._numbered(view, 0))


def _warn_missing(con, qrels: inputs.Loaded, runs: list, queries: str) -> None:
    q_col = inputs._q(qrels.columns["query_id"])
    judged = f"SELECT DISTINCT CAST({q_col} AS VARCHAR) AS q FROM {qrels.view}"
    for name, loaded in runs:
        r_col = inputs._q(loaded.columns["query_id"])
        ranked = f"SELECT DISTINCT CAST({r_col} AS VARCHAR) AS q FROM {loaded.view}"
        label = loaded.label
        # One pass over each side: the queries on one side only.
        unmatched = con.execute(f"SELECT j.q, r.q FROM ({judged}) AS j FULL OUTER JOIN ({ranked}) AS r ON j.q = r.q "
                                "WHERE j.q IS NULL OR r.q IS NULL").fetchall()
        missing = sorted(j for j, r in unmatched if r is None)
        extra = sorted(r for j, r in unmatched if j is None)
        if missing and queries == "qrels":
            warnings.warn(f"{label} has no ranking for {len(missing)} qrels "
                          f"quer{'y' if len(missing) == 1 else 'ies'} ({_few(missing)}); they score 0 "
                          "(queries='intersection' averages only the queries in both).", SqlmetricsWarning, stacklevel=3)
        if extra:
            warnings.warn(f"{label} ranks {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments "
                          f"({_few(extra)}); they are not averaged.", SqlmetricsWarning, stacklevel=3)


def _few(ids: list) -> str:
    return ", ".join(map(repr, ids[:5])) + (", ..." if len(ids) > 5 else "")


def connect(memory_limit=None, threads=None, temp_directory=None):
    """An in-memory DuckDB connection; past memory_limit (e.g. "2GB") DuckDB spills to temp_directory."""
    config = {}
    for name, value in (("memory_limit", memory_limit), ("threads", threads), ("temp_directory", temp_directory)):
        if value is not None:
            config[name] = str(value) if name != "threads" else value
    try:
        return duckdb.connect(config=config)
    except (duckdb.Error, TypeError, ValueError) as e:
        raise SqlmetricsError(f"memory_limit/threads/temp_directory: {inputs._first_line(e)} "
                              "(e.g. memory_limit='2GB', threads=2, temp_directory='/tmp/spill').") from None


OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def _output_path(output) -> Path | None:
    if output is None:
        return None
    path = Path(output)
    fmt = OUTPUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SqlmetricsError(f"output={str(output)!r}: write .parquet or .csv.")
    if not path.parent.is_dir():
        raise SqlmetricsError(f"output={str(output)!r}: the folder {str(path.parent)!r} does not exist.")
    return path


def write_atomically(table: pa.Table, path: Path) -> None:
    """Write `table` to `path` through a temporary file in the same folder and os.replace: a reader sees the
    old file or the whole new one, and an error leaves no file (and no temporary) behind."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if OUTPUT_FORMATS[path.suffix.lower()] == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _present(con, view: str) -> list:
    return [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]


def _resolve_column(name: str, present: list, label: str, what: str) -> str:
    if name in present:
        return name
    folded = [c for c in present if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise SqlmetricsError(f"{label}: {what} {name!r} is not a column (columns: {', '.join(present)}).")


def _log_view(con, loaded: inputs.Loaded, segs: tuple, label, relevance, order_role: str, duplicates: str) -> str:
    """A view of one run in log mode: seg_1.., query_id, doc_id, the order column and (labels) relevance;
    checked for repeats by the whole list key, and de-duplicated by it when a policy is given."""
    from .logs import relevance_expression

    present = _present(con, loaded.view)
    c = loaded.columns
    items = [f"{inputs._q(_resolve_column(g, present, loaded.label, 'group_by'))} AS seg_{i}"
             for i, g in enumerate(segs, 1)]
    items += [f"{inputs._q(c[r])} AS {r}" for r in ("query_id", "doc_id", order_role)]
    if label is not None:
        col = inputs._q(_resolve_column(label, present, loaded.label, "label"))
        bad = con.execute(f"SELECT MIN(line_no), COUNT(*) FROM {loaded.numbered} WHERE {col} IS NOT NULL AND "
                          f"(TRY_CAST({col} AS DOUBLE) IS NULL OR isnan(TRY_CAST({col} AS DOUBLE)))").fetchall()[0]
        if bad[1]:
            raise SqlmetricsError(f"{loaded.label}, {loaded.row_word} {bad[0]}: the label column {label!r} is not a "
                                  f"number there ({bad[1]} such rows). Labels are grades; NULL means unjudged.")
        items.append(f"CAST({col} AS DOUBLE) AS relevance")
    elif relevance is not None:
        tree, _used = relevance_expression(relevance, present)
        expr = f"CAST(({tree.sql('duckdb')}) AS DOUBLE)"
        try:
            con.execute(f"SELECT COUNT({expr}) FROM {loaded.view}").fetchall()
        except duckdb.Error as e:
            raise SqlmetricsError(f"relevance={relevance!r} cannot be computed over {loaded.label}: "
                                  f"{inputs._first_line(e)} (boolean columns: CAST(x AS INT), or a "
                                  "{column: grade} mapping).") from None
        items.append(f"{expr} AS relevance")
    key = [f"seg_{i}" for i in range(1, len(segs) + 1)] + ["query_id", "doc_id"]
    base = f"(SELECT line_no, {', '.join(items)} FROM {loaded.numbered})"
    view = inputs._fresh("log")
    if duplicates == "error":
        dup = con.execute(f"SELECT {', '.join(f'CAST({k} AS VARCHAR)' for k in key)} FROM {base} GROUP BY "
                          f"{', '.join(key)} HAVING COUNT(*) > 1 LIMIT 1").fetchall()
        if dup:
            where = " and ".join(f"{g}={v!r}" for g, v in zip(segs, dup[0]))
            raise SqlmetricsError(
                f"{loaded.label}: document {dup[0][-1]!r} appears more than once in the list of query "
                f"{dup[0][-2]!r}{' (' + where + ')' if where else ''}. Remove the repeat, or pass "
                "duplicates='max' (keep the best-placed row) or 'first' (keep the first line).")
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base}")
    else:
        best = ("rank_position ASC NULLS LAST, " if order_role == "rank_position" else "score DESC NULLS LAST, ") \
            if duplicates == "max" else ""
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {', '.join(key)} ORDER BY {best}line_no) = 1")
    return view


def _warn_positions(con, view: str, key: list, label: str) -> None:
    """ties='rank': lists whose positions are not exactly 1..n are renumbered; say how many, never silently."""
    k = ", ".join(key)
    row = con.execute(
        "SELECT COUNT(*), SUM(CASE WHEN repeated THEN 1 ELSE 0 END), SUM(CASE WHEN gap THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN repeated OR gap THEN 1 ELSE 0 END) FROM ("
        "SELECT COUNT(DISTINCT rank_position) < COUNT(*) AS repeated, "
        "MIN(rank_position) <> 1 OR MAX(rank_position) <> COUNT(DISTINCT rank_position) AS gap "
        f"FROM {view} GROUP BY {k})").fetchall()[0]
    total, repeated, gaps, bad = row[0], row[1] or 0, row[2] or 0, row[3] or 0
    if bad:
        warnings.warn(
            f"{label}: {bad} of {total} lists have positions that are not 1..n ({gaps} with gaps or not starting "
            f"at 1, {repeated} with repeated positions); ties='rank' renumbers each list 1..n by position, then "
            "by document id descending (byte order), and cutoffs apply to the new numbers.",
            SqlmetricsWarning, stacklevel=3)


def evaluate(qrels, run, measures, *, queries="qrels", ties="docid_desc", relevance_level=1,
             score_precision="float64", columns=None, qrels_columns=None, duplicates="error",
             memory_limit=None, threads=None, temp_directory=None, engine=None, dialect=None,
             group_by=None, label=None, relevance=None, output=None, _fetch=_arrow) -> Results:
    """Evaluate one run, or {run_name: run}, against qrels; every measure in one SQL statement on DuckDB.

    columns / qrels_columns map roles (query_id, doc_id, score, rank_position / relevance) to the run's and
    the qrels' column names where they are not recognised by name. memory_limit ("2GB"), threads and
    temp_directory are DuckDB's: past the limit it spills to disk instead of failing.

    Logs: group_by=["date", "arm"] evaluates each (segment, query) list and adds Results.per_group;
    qrels=None with label="rating" (a column of the run) or relevance="2*purchased + clicked" / {"purchased":
    2, "clicked": 1} takes the judgments from the run itself, per list. output="results.parquet" (or .csv)
    writes per_query atomically.

    engine= (a DB-API connection, chdb session, DataFusion or Polars SQL context, SparkSession) runs the
    same SQL where the tables live: qrels and run are then table names there (see evaluate_on).
    """
    from .dialects import check_log_options

    segs = check_log_options(qrels, group_by, label, relevance)
    labels = qrels is None
    out_path = _output_path(output)
    if engine is not None:
        if duplicates != "error" or memory_limit or threads or temp_directory:
            raise SqlmetricsError("duplicates=, memory_limit=, threads= and temp_directory= are DuckDB's; with "
                                  "engine= the tables are evaluated where they live.")
        from .engines import evaluate_on

        res = evaluate_on(engine, measures, qrels=qrels, run=run, columns=columns, qrels_columns=qrels_columns,
                          dialect=dialect, queries=queries, ties=ties, relevance_level=relevance_level,
                          score_precision=score_precision, group_by=group_by, label=label, relevance=relevance)
        if out_path is not None:
            write_atomically(res.per_query, out_path)
        return res
    options = Options(queries=queries, ties=ties, relevance_level=relevance_level, score_precision=score_precision)
    options.check()
    calls = parse_all(measures, relevance_level)  # fails on a bad name before any data is read
    if duplicates not in validate.DUPLICATE_POLICIES:
        raise SqlmetricsError(f"duplicates={duplicates!r} is not valid: use one of 'error', 'max', 'first'.")
    multi = _is_run_dict(run)
    run_items = list(run.items()) if multi else [(None, run)]
    if multi and not run_items:
        raise SqlmetricsError("run: the dict of runs is empty.")
    texts = [c.text for c in calls]
    outs = output_columns(calls)
    for g in segs:
        if g in ("run", "query_id", "num_lists") or g in texts or g in outs:
            raise SqlmetricsError(f"group_by= {g!r}: that name is taken by a result column; rename the column.")
    log_mode = bool(segs) or labels
    order_role = "rank_position" if ties == "rank" else "score"

    # Binding the templates is pure Python (sqlglot); it runs while DuckDB, which releases the GIL, loads
    # and checks the inputs. On small inputs that is a tenth of the whole evaluation.
    planning = _Background(plan_measures, calls, relevance_level)
    con = connect(memory_limit, threads, temp_directory)
    try:
        if not labels:
            q = inputs.load(con, qrels, "qrels", qrels_columns)
            validate.check(con, q, "qrels")
        loaded_runs = []
        for name, item in run_items:
            loaded = inputs.load(con, item, "run", columns, None if name is None else str(name))
            if ties == "rank" and "rank_position" not in loaded.columns:
                raise SqlmetricsError(f"{loaded.label}: ties='rank' orders by a rank or position column, and it has none.")
            if ties != "rank" and "score" not in loaded.columns:
                raise SqlmetricsError(f"{loaded.label}: has no score column; map one, or pass ties='rank' to order by rank.")
            if log_mode:
                # Repeats are per list (segment + query), checked in _log_view; the rest of the checks here.
                validate.check(con, loaded, "run", "max")
                loaded_runs.append((name, loaded, _log_view(con, loaded, segs, label, relevance, order_role, duplicates)))
            else:
                validate.check(con, loaded, "run", duplicates)
                loaded_runs.append((name, _dedup(con, loaded, duplicates), None))
        if not labels:
            _warn_missing(con, q, [(n, lr) for n, lr, _ in loaded_runs], "intersection" if segs else queries)
        seg_cols = [f"seg_{i}" for i in range(1, len(segs) + 1)]
        if ties == "rank":
            for name, loaded, view in loaded_runs:
                if view is not None:
                    _warn_positions(con, view, [*seg_cols, "query_id"], loaded.label)
                else:
                    c = loaded.columns
                    pos = inputs._fresh("pos")
                    con.execute(f"CREATE TEMP VIEW {pos} AS SELECT {inputs._q(c['query_id'])} AS query_id, "
                                f"{inputs._q(c['rank_position'])} AS rank_position FROM {loaded.view}")
                    _warn_positions(con, pos, ["query_id"], loaded.label)

        if labels:
            for name, loaded, view in loaded_runs:
                key = ", ".join([*seg_cols, "query_id"])
                n = con.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {view} GROUP BY {key} "
                                "HAVING COUNT(relevance) = 0)").fetchall()[0][0]
                if n:
                    warnings.warn(f"{loaded.label}: {n} list{'s have' if n > 1 else ' has'} no labelled row (every "
                                  "label NULL); not averaged, like a query without judgments.",
                                  SqlmetricsWarning, stacklevel=2)
        run_roles = ["query_id", "doc_id", order_role]
        # One named run is evaluated as a plain run (no run_name in the list key, no scan for run names)
        # and its results are labelled afterwards: the same numbers, a cheaper statement.
        union = multi and len(loaded_runs) > 1
        if log_mode:
            roles = [*seg_cols, *run_roles, *(["relevance"] if labels else [])]
            options.group_by = tuple((f"seg_{i}", inputs._q(g)) for i, g in enumerate(segs, 1))
            options.labels = labels
            if union:
                options.run_key = ("run_name",)
                parts = [f"SELECT {inputs._lit(str(name))} AS run_name, {', '.join(roles)} FROM {view}"
                         for name, _, view in loaded_runs]
                run_view = inputs._fresh("runs")
                con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
                run_source = Source(run_view, {r: r for r in ["run_name", *roles]})
            else:
                run_source = Source(loaded_runs[0][2], {r: r for r in roles})
        elif union:
            options.run_key = ("run_name",)
            parts = []
            for name, loaded, _ in loaded_runs:
                cols = ", ".join(f"{inputs._q(loaded.columns[r])} AS {r}" for r in run_roles)
                parts.append(f"SELECT {inputs._lit(str(name))} AS run_name, {cols} FROM {loaded.view}")
            run_view = inputs._fresh("runs")
            con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
            run_source = Source(run_view, {r: r for r in ["run_name", *run_roles]})
        else:
            loaded = loaded_runs[0][1]
            run_source = Source(loaded.view, {r: loaded.columns[r] for r in run_roles})
        qrels_source = None if labels else Source(q.view, {r: q.columns[r] for r in inputs.QRELS_ROLES})
        sql = render_duckdb(calls, qrels_source, run_source, options, per_query=True, plan=planning.result())
        try:
            con.execute(f"CREATE TEMP TABLE per_list_result AS {sql}")
        except duckdb.Error as e:  # the inputs were checked, so this is ours, not the caller's
            raise RuntimeError(f"sqlmetrics generated SQL that DuckDB rejected: {e}\n{sql}") from e

        keys = ["run_name"] if union else []
        aggregates = [(out, c.measure.aggregate) for out, c in zip(outs, calls)]
        rows = con.execute(aggregate_sql("per_list_result", aggregates, keys)).fetchall()
        # One named run's results get its name as their first column.
        named = f"{inputs._lit(str(run_items[0][0]))} AS run_name, " if multi and not union else ""
        run_col = ["run"] if multi else []
        per_list = _fetch(con, f"SELECT {named}* FROM per_list_result", [*run_col, *segs, "query_id", *texts])
        per_group = None
        if segs:
            groups = [(inputs._q(g), inputs._q(g)) for g in segs]
            con.execute("CREATE TEMP TABLE per_group_result AS "
                        + segment_aggregate_sql("per_list_result", aggregates, keys, groups))
            per_group = _fetch(con, f"SELECT {named}* FROM per_group_result", [*run_col, *segs, *texts, "num_lists"])
        if multi and not union:
            rows = [(str(run_items[0][0]), *row) for row in rows]
    finally:
        con.close()

    if multi:
        aggregate = {row[0]: dict(zip(texts, row[1:])) for row in rows}
        for name, _ in run_items:  # a run with no judged query at all still gets its (empty) values
            aggregate.setdefault(str(name), {t: None for t in texts})
    else:
        aggregate = dict(zip(texts, rows[0])) if rows else {t: None for t in texts}
    if out_path is not None:
        write_atomically(per_list, out_path)
    return Results(aggregate=aggregate, per_query=per_list, measures=texts, per_group=per_group)
