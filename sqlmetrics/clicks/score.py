"""A fitted click model judged on a held-out log, as the field does (Dupret and Piwowarski 2008; Chuklin, Markov and de
Rijke, Click Models for Web Search, 2015, chapter 5, "Evaluation of click models"). Every model gives its predict()
(fit.Model): per row of the log, P(click | the session's clicks above) ("conditional") and P(click) ("marginal");
everything here is computed from those two columns alone, so a new model is scored by adding its predict():

- log-likelihood: the sum over rows of ln P(observed click | clicks above) (the conditional), and its mean per session;
- perplexity at rank r: 2^(-(1/|S_r|) sum_s [c log2 q + (1 - c) log2(1 - q)]), q the marginal, S_r the sessions with
  a row at r; the overall perplexity is the mean of the ranks' (the book's definition, every rank weighing alike);
- CTR prediction error: over the (query, doc, position) cells of the held-out log, the root mean square of the cell's
  observed click-through rate minus its mean marginal, each cell weighted by its impressions; per rank the same over
  the rank's cells.

A probability of 0 or 1 where the log shows the other outcome (Cascade's click below a first click) is floored at
sql.FLOOR inside the logarithm: a very large finite loss (ln 1e-300 = -690.8 per such row), never -inf or NaN."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..local.readers.loaded import _types
from .sql import observed_ll

# The columns of a score table after the model and the segments (position: null on a segment's row over all ranks).
SCORE = ("position", "sessions", "rows", "unseen_rows", "log_likelihood", "log_likelihood_per_session", "perplexity",
         "ctr_rmse")


@dataclass
class ClickScore:
    """A fitted model judged on a held-out log. segments: one row per segment of the held-out log (the fit's group_by
    columns first): sessions, rows, unseen_rows (rows whose (query, doc), or position for a model with examination,
    the fit has no parameter for: scored with 0.5, the EM's initial value), log_likelihood (the total),
    log_likelihood_per_session, perplexity (the mean over ranks) and ctr_rmse. ranks: the same per segment and
    position (sessions = rows there; log_likelihood_per_session the mean per row at that rank)."""

    model: str
    group_by: tuple
    segments: object  # pyarrow.Table
    ranks: object  # pyarrow.Table

    def table(self):
        """The segments' rows (position null) then the ranks', with the model first: what `sqlmetrics clicks
        --held-out -o` writes."""
        import pyarrow as pa

        segments = self.segments.add_column(len(self.group_by), "position",
                                            pa.nulls(self.segments.num_rows, pa.int64()))
        both = pa.concat_tables([segments, self.ranks.select(segments.column_names)])
        return both.add_column(0, "model", pa.array([self.model] * both.num_rows, pa.string()))


def load_parameters(con, fit, label: str) -> dict:
    """The fit's parameter tables as temp tables sqlm_<name> under the held-out log's segment numbers (sqlm_segments,
    from log.checked_log), the names and columns the fit's own connection had: what predict() reads. A held-out
    segment the fit does not have is an error naming it. Keys of another type than the log's (a CSV's text ids
    against a fit's integers) are matched as text."""
    seg_cols = [f"seg_{i}" for i in range(1, len(fit.group_by) + 1)]
    con.register("sqlm_fit_summary", fit.summary)
    match = " AND ".join(_same(con, f"s.{c}", f"f.{_q(g)}", "sqlm_segments", "sqlm_fit_summary", c, g)
                         for c, g in zip(seg_cols, fit.group_by)) or "true"
    missing = con.execute(f"SELECT {', '.join(seg_cols) or 'NULL'} FROM sqlm_segments s WHERE NOT EXISTS "
                          f"(SELECT 1 FROM sqlm_fit_summary f WHERE {match}) ORDER BY s.seg LIMIT 1").fetchall()
    if missing:
        named = ", ".join(f"{g}={v!r}" for g, v in zip(fit.group_by, missing[0]))
        fitted = "; ".join(", ".join(f"{g}={r[g]!r}" for g in fit.group_by) for r in fit.summary.to_pylist()[:5])
        raise SqlmetricsError(f"{label}: has the segment {named}, which the fit has no model for (it has {fitted}"
                              f"{', ...' if fit.summary.num_rows > 5 else ''}); score a log of the fit's segments.")
    as_text = _keys_as_text(con, fit)
    tables = {}
    for name, table in fit.parameters.items():
        con.register("sqlm_fit_parameter", table)
        keys = [k for k in ("query", "doc") if k in table.column_names]
        cast = ", ".join(f"CAST(p.{k} AS VARCHAR) AS {k}" for k in keys if as_text)
        replace = f" REPLACE ({cast})" if cast else ""
        excluded = f" EXCLUDE ({', '.join(_q(g) for g in fit.group_by)})" if fit.group_by else ""
        match = " AND ".join(_same(con, f"s.{c}", f"p.{_q(g)}", "sqlm_segments", "sqlm_fit_parameter", c, g)
                             for c, g in zip(seg_cols, fit.group_by)) or "true"
        con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_{name} AS SELECT s.seg, p.*{excluded}{replace} "
                    f"FROM sqlm_fit_parameter p JOIN sqlm_segments s ON {match}")
        con.unregister("sqlm_fit_parameter")
        tables[name] = f"sqlm_{name}"
    return tables


def _same(con, left: str, right: str, left_table: str, right_table: str, left_col: str, right_col: str) -> str:
    """SQL: two segment values equal (NULL too, a segment of its own), as text when their types differ."""
    if _types(con, left_table)[left_col] != _types(con, right_table)[right_col]:
        left, right = f"CAST({left} AS VARCHAR)", f"CAST({right} AS VARCHAR)"
    return f"{left} IS NOT DISTINCT FROM {right}"


def _keys_as_text(con, fit) -> bool:
    """Whether the log's query or doc has another type than the fit's: then both are compared as text, the log's
    here (sqlm_clicks), the fit's as load_parameters() copies them."""
    con.register("sqlm_fit_keys", fit.parameters["attractiveness"].select(["query", "doc"]).slice(0, 0))
    fitted, logged = _types(con, "sqlm_fit_keys"), _types(con, "sqlm_clicks")
    con.unregister("sqlm_fit_keys")
    if all(fitted[k] == logged[k] for k in ("query", "doc")):
        return False
    kind = "VIEW" if con.execute("SELECT COUNT(*) FROM duckdb_views() WHERE view_name = 'sqlm_clicks'").fetchone()[0] \
        else "TABLE"  # a checked log's view; expected()'s table of lists
    con.execute(f"ALTER {kind} sqlm_clicks RENAME TO sqlm_clicks_as_given")
    con.execute("CREATE TEMP VIEW sqlm_clicks AS SELECT * REPLACE (CAST(query AS VARCHAR) AS query, "
                "CAST(doc AS VARCHAR) AS doc) FROM sqlm_clicks_as_given")
    return True


def scored(con, predict: str, tables: dict) -> tuple:
    """(per segment, per segment and rank) as Arrow, the segments by number (seg) and by their columns (seg_1, ...),
    from the predictions (SQL of predict()) of every row of sqlm_clicks."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_scored AS
        SELECT c.seg, c.session, c.query, c.doc, c.position, c.clicked, p.conditional, p.marginal,
               {unseen(tables)} AS unseen,
               {observed_ll('p.conditional', 'c.clicked')} AS ll,
               {observed_ll('p.marginal', 'c.clicked', 'log2')} AS bits
        FROM sqlm_clicks c JOIN ({predict}) p USING (seg, session, position)""")
    rows, predicted = con.execute("SELECT (SELECT COUNT(*) FROM sqlm_clicks), COUNT(*) FROM sqlm_scored").fetchone()
    if rows != predicted:  # a bug of a model's predict(): it gives one row per row of the log
        raise AssertionError(f"predict() gave {predicted} rows for {rows}")
    # Each cell's squared CTR error times its impressions: summed per rank and per segment, over the impressions.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_cells AS
        SELECT seg, position, COUNT(*) AS n, COUNT(*) * POW(AVG(clicked) - AVG(marginal), 2) AS squared
        FROM sqlm_scored GROUP BY seg, query, doc, position""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_ranks AS
        SELECT r.*, sqrt(e.squared / r.rows) AS ctr_rmse FROM (
            SELECT seg, position, COUNT(*) AS sessions, COUNT(*) AS rows, COUNT(*) FILTER (WHERE unseen) AS unseen_rows,
                   SUM(ll) AS log_likelihood, AVG(ll) AS log_likelihood_per_session, POW(2, -AVG(bits)) AS perplexity
            FROM sqlm_scored GROUP BY seg, position) r
        JOIN (SELECT seg, position, SUM(squared) AS squared FROM sqlm_cells GROUP BY ALL) e USING (seg, position)""")
    seg_cols = "".join(f"s.seg_{i}, " for i in range(1, _segment_columns(con) + 1))
    ranks = con.sql(f"SELECT s.seg, {seg_cols}r.* EXCLUDE (seg) FROM sqlm_ranks r JOIN sqlm_segments s USING (seg) "
                    "ORDER BY s.seg, r.position").to_arrow_table()
    segments = con.sql(f"""
        SELECT s.seg, {seg_cols}COUNT(DISTINCT c.session) AS sessions, COUNT(*) AS rows,
               COUNT(*) FILTER (WHERE c.unseen) AS unseen_rows, SUM(c.ll) AS log_likelihood,
               SUM(c.ll) / COUNT(DISTINCT c.session) AS log_likelihood_per_session,
               ANY_VALUE(r.perplexity) AS perplexity, ANY_VALUE(r.ctr_rmse) AS ctr_rmse
        FROM sqlm_scored c JOIN sqlm_segments s USING (seg)
        JOIN (SELECT seg, AVG(perplexity) AS perplexity, sqrt(SUM(squared) / SUM(n)) AS ctr_rmse
              FROM sqlm_ranks JOIN (SELECT seg, position, SUM(squared) AS squared, SUM(n) AS n FROM sqlm_cells
                                    GROUP BY ALL) USING (seg, position) GROUP BY seg) r USING (seg)
        GROUP BY ALL ORDER BY s.seg""").to_arrow_table()
    return segments, ranks


def unseen(tables: dict) -> str:
    """SQL: the row's (query, doc) has no attractiveness, or its position no examination (a model with one): the
    parameters every impression reads. A pair never clicked in training and so without SDBN's satisfaction is not
    counted: it has an attractiveness (usually 0) and its satisfaction matters only at a click."""
    out = (f"NOT EXISTS (SELECT 1 FROM {tables['attractiveness']} a WHERE a.seg = c.seg AND a.query = c.query "
           "AND a.doc = c.doc)")
    if "examination" in tables:
        out += (f" OR NOT EXISTS (SELECT 1 FROM {tables['examination']} g WHERE g.seg = c.seg "
                "AND g.position = c.position)")
    return out


def _segment_columns(con) -> int:
    return sum(c.startswith("seg_") for c in _types(con, "sqlm_segments"))
