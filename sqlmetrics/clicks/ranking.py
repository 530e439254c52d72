"""Click-model-based metrics of a ranking never shown (Chuklin, Serdyukov and de Rijke, SIGIR 2013): each list of a run
read as a result page nobody has clicked yet, and the fitted model's prediction of it, per query:

- expected_clicks = the sum over its positions of P(C_r = 1), the model's marginal (predict());
- satisfaction, for a model with a satisfaction parameter (SDBN; DBN later) = P(the user ends satisfied) = the sum over
  positions of P(C_r = 1) sigma_r: a user is satisfied at most once, at a click, with the clicked document's sigma.
  For SDBN that is 1 - prod_r (1 - alpha_r sigma_r) over the page.

Each list is cut at depth= (10 by default: the page a user is shown); without a cut, SDBN's satisfaction of a whole
list would not depend on its order. Per query, so that two rankers' values can be compared with a paired test
(ClickFit.compare()). A fit with segments (group_by=) predicts each list under every segment's model: one row per
run, segment and query. A (query, doc) the fit has no parameter for is predicted with 0.5, as in score.py, and
counted (unseen_documents)."""
from __future__ import annotations

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..local import checks
from ..local.readers import load
from .score import load_parameters, unseen

# The per-query table's own columns; a segment column of one of these names is refused.
COLUMNS = ("run", "query_id", "documents", "unseen_documents", "expected_clicks", "satisfaction")


def check_depth(depth) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise SqlmetricsError(f"depth={depth!r} must be a whole number of at least 1: the positions a user is shown "
                              "(a result page: 10 by default).")
    return depth


def per_query(con, fit, predict, runs: dict, columns: dict | None, depth: int, cleanup: list):
    """The table (Arrow): run, the fit's segment columns, query_id, documents, unseen_documents, expected_clicks and,
    for a model with satisfaction, satisfaction. cleanup: the loaded inputs' spill folders, for the caller to remove."""
    clash = [g for g in fit.group_by if g.lower() in COLUMNS]
    if clash:
        raise SqlmetricsError(f"the fit's segment column {clash[0]!r} is also a column of the per-query table "
                              f"({', '.join(COLUMNS)}); fit on a log whose column has another name.")
    _fit_segments(con, fit)
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_pages (session BIGINT, run VARCHAR, query_id VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_clicks (seg BIGINT, session BIGINT, query VARCHAR, doc VARCHAR, "
                "position BIGINT, clicked INTEGER)")
    for name, run in runs.items():
        cleanup.append(_lists_as_pages(con, name, run, columns, depth))
    tables = load_parameters(con, fit, "runs")  # ids compared as text: the lists' are VARCHAR here
    sigma = ""
    if "satisfaction" in tables:
        sigma = (f", SUM(p.marginal * COALESCE((SELECT s.satisfaction FROM {tables['satisfaction']} s WHERE "
                 "s.seg = c.seg AND s.query = c.query AND s.doc = c.doc), 0.5)) AS satisfaction")
    segs = "".join(f"g.seg_{i} AS {_q(name)}, " for i, name in enumerate(fit.group_by, 1))
    seg_keys = "".join(f", g.seg_{i}" for i in range(1, len(fit.group_by) + 1))
    return con.sql(f"""
        SELECT pg.run, {segs}pg.query_id, COUNT(*) AS documents,
               COUNT(*) FILTER (WHERE {unseen(tables)}) AS unseen_documents, SUM(p.marginal) AS expected_clicks{sigma}
        FROM sqlm_clicks c JOIN ({predict(con, tables)}) p USING (seg, session, position)
        JOIN sqlm_pages pg USING (session) JOIN sqlm_segments g USING (seg)
        GROUP BY pg.session, g.seg, pg.run, pg.query_id{seg_keys} ORDER BY pg.session, g.seg""").to_arrow_table()


def _fit_segments(con, fit) -> None:
    """sqlm_segments(seg, seg_1, ...): the fit's own segments, numbered."""
    if not fit.group_by:  # one model: DuckDB cannot read a table of no columns
        con.execute("CREATE OR REPLACE TEMP TABLE sqlm_segments AS SELECT 0::BIGINT AS seg")
        return
    con.register("sqlm_fit_segments", fit.summary.select(list(fit.group_by)))
    cols = "".join(f", {_q(g)} AS seg_{i}" for i, g in enumerate(fit.group_by, 1))
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_segments AS SELECT ROW_NUMBER() OVER () - 1 AS seg{cols} "
                "FROM sqlm_fit_segments")
    con.unregister("sqlm_fit_segments")


def _lists_as_pages(con, name: str, run, columns: dict | None, depth: int):
    """The run's lists appended to sqlm_clicks (clicked 0) under every segment, each list a session (numbered in
    sqlm_pages), its top `depth` documents at positions 1..depth in the run's order: by its rank column when it has
    one, else by score descending, then document id descending (trec_eval's order). Returns the loaded run's spill
    folder, or None."""
    loaded = load(con, run, "run", columns, name=name)
    order_role = "rank_position" if "rank_position" in loaded.columns else "score"  # the loader wants one
    if "run_name" in loaded.columns:
        tags = con.execute(f"SELECT COUNT(DISTINCT {_q(loaded.columns['run_name'])}) FROM {loaded.view}").fetchone()[0]
        if tags > 1:
            raise SqlmetricsError(f"{loaded.label}: holds {tags} runs (column {loaded.columns['run_name']!r}); pass "
                                  "each as its own input, {name: run}.")
    checks.check(con, loaded, "run", order_role=order_role)
    q, d, v = (_q(loaded.columns[r]) for r in ("query_id", "doc_id", order_role))
    order = f"TRY_CAST(r.{v} AS DOUBLE) {'ASC' if order_role == 'rank_position' else 'DESC'}, r.{d} DESC"
    first = con.execute("SELECT COALESCE(MAX(session), 0) FROM sqlm_pages").fetchone()[0]
    con.execute(f"INSERT INTO sqlm_pages SELECT {first} + ROW_NUMBER() OVER (ORDER BY query_id), ?, query_id "
                f"FROM (SELECT DISTINCT CAST({q} AS VARCHAR) AS query_id FROM {loaded.view})", [name])
    con.execute(f"""
        INSERT INTO sqlm_clicks
        SELECT g.seg, p.session, p.query_id, CAST(r.{d} AS VARCHAR),
               ROW_NUMBER() OVER (PARTITION BY g.seg, p.session ORDER BY {order}), 0
        FROM {loaded.view} r JOIN sqlm_pages p ON p.run = ? AND p.query_id = CAST(r.{q} AS VARCHAR)
        CROSS JOIN sqlm_segments g
        QUALIFY ROW_NUMBER() OVER (PARTITION BY g.seg, p.session ORDER BY {order}) <= {depth}""", [name])
    return loaded.temporary
