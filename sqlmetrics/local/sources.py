"""The relations the statement reads, as statement.Source: the run (one; each of several runs and of the fused ones
in turn; several logs as one UNION ALL with run_name), and any relation of ours."""
from __future__ import annotations

from ..catalogue.fusion import DEFAULT_NORM
from ..deferred import exp
from ..errors import SqlmetricsError
from ..fusion import fusion_settings, fusion_statement
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..statement import READ, Source
from .job import _Job
from .readers.loaded import _fresh


def _source(view: str, columns: dict) -> Source:
    """A relation of ours (its name is generated) whose columns are the caller's: by name, quoted as written
    when the statement is built (Source.bound)."""
    return Source(view, dict(columns))


def _fused_runs(con, fuse, checked: list, job: _Job, multi: bool) -> list:
    """[(name, a SELECT of the fused run)] for evaluate(fuse={name: {method, norm, params}}): each fuses the
    checked runs, in the order given, and is one more run of the statement."""
    if not fuse:
        return []
    if not isinstance(fuse, dict) or not all(isinstance(v, dict) for v in fuse.values()):
        raise SqlmetricsError("fuse= takes {name: {'method': ..., 'norm': ..., **params}}, e.g. {'rrf': {'k': 60}}.")
    if not multi or job.log_mode or job.order_role != "score":
        raise SqlmetricsError("fuse= fuses the scores of named runs: pass {name: run, ...} (not logs, not ties='rank').")
    taken = {str(name) for name, _, _ in checked}
    sources = [_source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "score")})
               for _, loaded, _ in checked]
    out = []
    for name, spec in fuse.items():
        if str(name) in taken:
            raise SqlmetricsError(f"fuse=: {name!r} is already the name of a run; name the fused run otherwise.")
        spec = dict(spec)
        settings = fusion_settings(spec.pop("method", name), spec.pop("norm", DEFAULT_NORM), spec, len(sources))
        # Fused once, into a table of this connection: checked, then read by the statement as any run.
        table = _fresh("fused")
        con.execute(f"CREATE TEMP TABLE {table} AS {fusion_statement(sources, *settings, fixed_order=True).sql(READ)}")
        sql = f"SELECT query_id, doc_id, score FROM {table}"
        refuse_overflow(con, sql, f"fuse= {name!r}")
        out.append((str(name), sql))
    return out


def refuse_overflow(con, fused_sql: str, what: str) -> None:
    """Refuse a fused run whose score overflows a double (finite scores near 1e308, summed): ranked, every such
    document would tie at infinity. The first one is named."""
    row = con.execute(f"SELECT query_id, doc_id FROM ({fused_sql}) WHERE NOT isfinite(score) "
                      "ORDER BY query_id, doc_id LIMIT 1").fetchall()
    if row:
        raise SqlmetricsError(f"{what}: the fused score of document {row[0][1]!r} for query {row[0][0]!r} overflows "
                              "a double (the runs' scores are too large to add up). Normalise them (norm='min-max', "
                              "the default; --norm) or scale them down.")


def _types(con, checked: list, column: str) -> int:
    """How many types the runs' views give `column`."""
    return len({str(con.sql(f"SELECT {column} FROM {view}").types[0]) for _, _, view in checked})


def _run_source(con, checked: list, job: _Job, union: bool) -> Source:
    """The run relation the statement reads: one run as it is, or several logs (union) as one UNION ALL with
    run_name. Several runs that are not logs (and fused runs) each get a statement of their own: _each_run_source."""
    options, segs = job.shape, job.segments
    run_roles = ["query_id", "doc_id", job.order_role]
    seg_cols = [f"seg_{i}" for i in range(1, len(segs) + 1)]
    if job.log_mode:
        roles = [*seg_cols, *run_roles, *(["relevance"] if job.labels else [])]
        options.group_by = tuple((f"seg_{i}", exp.to_identifier(g, quoted=True)) for i, g in enumerate(segs, 1))
        options.labels = job.labels
        if not union:
            return _source(checked[0][2], {r: r for r in roles})
        options.run_key = ("run_name",)
        # A segment the runs hold in different types (a date in one, text in another) is compared as text.
        cols = [f"CAST({r} AS VARCHAR) AS {r}" if r in seg_cols and _types(con, checked, r) > 1 else r for r in roles]
        parts = [f"SELECT {_lit(str(name))} AS run_name, {', '.join(cols)} FROM {view}" for name, _, view in checked]
        run_view = _fresh("runs")
        con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
        return _source(run_view, {r: r for r in ["run_name", *roles]})
    loaded = checked[0][1]
    return _source(loaded.view, {r: loaded.columns[r] for r in run_roles})


def _each_run_source(con, checked: list, job: _Job, fused: list):
    """(name, Source) of each run and fused run in turn, for one statement per run (evaluate.py's _compute_each):
    one view, replaced for each run, with the run's roles renamed (query_id, doc_id, and score or
    rank_position); the statement casts them. It is then the same text for every run, built once. Yields each
    run's source just before its statement runs."""
    run_roles = ["query_id", "doc_id", job.order_role]
    view = _fresh("each_run")
    for name, loaded, _ in checked:
        cols = ", ".join(f"{_q(loaded.columns[r])} AS {r}" for r in run_roles)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {cols} FROM {loaded.view}")
        yield str(name), _source(view, {r: r for r in run_roles})
    for name, sql in fused:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT query_id, doc_id, score FROM ({sql})")
        yield name, _source(view, {r: r for r in run_roles})
