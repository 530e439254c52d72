"""Position-bias propensities from a click log, normalised to position 1 (theta_1 = 1), one set per segment: by
intervention harvesting (Agarwal, Zaitsev, Wang, Li, Najork and Joachims, "Estimating Position Bias without
Intrusive Interventions", WSDM 2019) or from a fitted PBM (ClickFit.propensities()).

Intervention harvesting reads the log's CTR of each (query, doc) at each position, ctr(q, d, k) = clicks /
impressions there. A pair shown at both k and k' (by different rankers, on different days: whatever moved it) is an
intervention between them; over the set S(k, k') of such pairs,

    c_k(k, k') = sum over S(k, k') of ctr(q, d, k)        c_k'(k, k') = sum over S(k, k') of ctr(q, d, k')

and under the position-based model theta_k' / theta_k = c_k'(k, k') / c_k(k, k') (Agarwal et al.'s estimator with
each (q, d, k)'s impressions weighted 1 / their count, as ultr-bias-toolkit 0.0.5 computes it).

- pivot p:   theta_r = [c_r(p, r) / c_p(p, r)] / [c_1(p, 1) / c_p(p, 1)]          (each position against the pivot)
- adjacent:  theta_r = product over k = 2..r of c_k(k - 1, k) / c_(k - 1)(k - 1, k)  (a chain down the positions)

A position no ratio reaches (no pair shared with the pivot, or a link of the chain missing, or a CTR sum of 0 under a
division) has no estimate: its row is absent and a SqlmetricsWarning names it, never a NaN or an infinity."""
from __future__ import annotations

from ..errors import SqlmetricsError, warn
from ..options import check_log_options
from .fit import fit_clicks, on_log

METHODS = ("pivot", "adjacent", "pbm")


def propensities(log, method: str = "pivot", columns: dict | None = None, group_by=None, pivot: int = 1,
                 iterations: int | None = None, tolerance: float | None = None, *, memory_limit=None, threads=None,
                 temp_directory=None):
    """Examination propensities by position, normalised to position 1 (theta_1 = 1), per segment: a pyarrow Table
    of the segment columns (group_by=), position, propensity and the evidence behind it.

    log, columns=, group_by= and DuckDB's resources as fit_clicks() takes them (a click log: session, query, doc,
    position, clicked).
    method: 'pivot' (each position's CTR against the pivot position's, `pivot=`, default 1, over the (query, doc)
    pairs shown at both), 'adjacent' (ratios of adjacent positions multiplied down the chain), both by intervention
    harvesting, with the column `pairs` (how many (query, doc) pairs the position's ratio reads); or 'pbm' (a PBM
    fitted by EM, iterations= and tolerance= as fit_clicks() takes them: gamma_r / gamma_1, with the position's
    impressions and clicks). A position that cannot be estimated is left out, with a SqlmetricsWarning naming it and
    why; an estimate of 0 (no click there among the pairs read) is kept, with a warning: pbm_ips() cannot divide
    by it. See docs/clicks.md."""
    name = method.lower() if isinstance(method, str) else method
    if name not in METHODS:
        raise SqlmetricsError(f"method={method!r} is not a propensity estimator; the estimators: "
                              f"{', '.join(METHODS)}.")
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    if name == "pbm":
        if pivot != 1:
            raise SqlmetricsError(f"pivot={pivot!r} applies to method='pivot'; leave it out with method='pbm'.")
        return fit_clicks(log, "pbm", columns, group_by, iterations, tolerance, **resources).propensities()
    if iterations is not None or tolerance is not None:
        raise SqlmetricsError(f"method={name!r} has no iterations: iterations= and tolerance= apply to "
                              "method='pbm'; leave them out.")
    if isinstance(pivot, bool) or not isinstance(pivot, int) or pivot < 1:
        raise SqlmetricsError(f"pivot={pivot!r} must be a position, a whole number from 1.")
    if name == "adjacent" and pivot != 1:
        raise SqlmetricsError(f"pivot={pivot!r} applies to method='pivot'; leave it out with method='adjacent'.")
    return on_log(log, columns, check_log_options("log", group_by, None, None), tuple(resources.values()),
                  lambda con, segments, label: _harvested(con, segments, name, pivot), "click log", "estimated")


def _harvested(con, segments: tuple, method: str, pivot: int):
    """The estimates as Arrow (segments, position, propensity, pairs), after a warning per segment naming the
    positions left out and those estimated 0."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_ctr AS
        SELECT seg, query, doc, position, SUM(clicked) / COUNT(*) AS ctr FROM sqlm_clicks GROUP BY ALL""")
    last = con.execute("SELECT MAX(position) FROM sqlm_clicks").fetchone()[0]
    if method == "pivot" and pivot > last:
        raise SqlmetricsError(f"propensities: the pivot position {pivot} is never shown: the log's positions go to "
                              f"{last}. Give pivot= a position the log shows (1 is the usual pivot).")
    # The pivot against every position; or each position against the one above (position 1 against itself). Every
    # position 1..n of each segment gets a row (its sessions' positions are gap-free), with its ratio's sums.
    link = (f"a.position = {pivot}" if method == "pivot"
            else "(b.position = a.position + 1 OR a.position = 1 AND b.position = 1)")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_links AS
        SELECT p.seg, p.position, COALESCE(l.pairs, 0) AS pairs, l.c0, l.c1
        FROM (SELECT DISTINCT seg, position FROM sqlm_clicks) p
        LEFT JOIN (SELECT a.seg, b.position, COUNT(*) AS pairs, SUM(a.ctr) AS c0, SUM(b.ctr) AS c1
                   FROM sqlm_ctr a JOIN sqlm_ctr b USING (seg, query, doc)
                   WHERE {link}
                   GROUP BY a.seg, b.position) l USING (seg, position)""")
    ratio = "CASE WHEN c0 > 0 THEN c1 / c0 END"
    if method == "pivot":
        # theta_r / theta_p over theta_1 / theta_p (position 1's row is the first: FIRST keeps its NULL, so a
        # segment whose position 1 is not linked to the pivot has no estimate but theta_1).
        estimate = f"""
            SELECT seg, position, pairs, {ratio} / NULLIF(FIRST({ratio}) OVER (PARTITION BY seg ORDER BY position),
                                                           0) AS propensity
            FROM sqlm_links"""
    else:
        # A link k-1 -> k for k > 1 (position 1's own row is 1); the product down the chain stops at the first
        # undefined link: every position below it is unreachable.
        step = f"CASE WHEN position = 1 THEN 1.0 ELSE {ratio} END"
        estimate = f"""
            SELECT seg, position, pairs,
                   CASE WHEN BOOL_AND({step} IS NOT NULL) OVER w THEN PRODUCT({step}) OVER w END AS propensity
            FROM sqlm_links
            WINDOW w AS (PARTITION BY seg ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"""
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_propensities AS {estimate}")
    con.execute("UPDATE sqlm_propensities SET propensity = 1.0 WHERE position = 1")  # theta_1 = 1 by definition
    _warn_gaps(con, segments, method, pivot)
    seg_cols = "".join(f"s.seg_{i}, " for i in range(1, len(segments) + 1))
    table = con.sql(f"""
        SELECT {seg_cols}p.position, p.propensity, p.pairs FROM sqlm_propensities p JOIN sqlm_segments s USING (seg)
        WHERE p.propensity IS NOT NULL ORDER BY s.seg, p.position""").to_arrow_table()
    return table.rename_columns([*segments, *table.column_names[len(segments):]])


def _warn_gaps(con, segments: tuple, method: str, pivot: int) -> None:
    """One warning per segment with positions left out (and why), one per segment with estimates of 0."""
    seg_cols = ", ".join(f"s.seg_{i}" for i in range(1, len(segments) + 1))
    rows = con.execute(f"""
        SELECT p.seg, {seg_cols + ',' if seg_cols else ''}
               LIST(p.position ORDER BY p.position) FILTER (WHERE p.propensity IS NULL),
               LIST(p.position ORDER BY p.position) FILTER (WHERE p.propensity = 0),
               MAX(p.position)
        FROM sqlm_propensities p JOIN sqlm_segments s USING (seg) GROUP BY ALL ORDER BY p.seg""").fetchall()
    for row in rows:
        values, missing, zero, last = row[1:1 + len(segments)], row[-3], row[-2], row[-1]
        where = (f" (segment {', '.join(f'{g}={v!r}' for g, v in zip(segments, values))})" if segments else "")
        if missing:
            if method == "pivot" and pivot > last:
                why = f"the pivot position {pivot} is never shown (the positions go to {last})"
            elif method == "pivot":
                why = (f"no (query, doc) pair shown at both the pivot position {pivot} and each of them, or none of "
                       f"those clicked at the pivot{' or at position 1' if pivot != 1 else ''}")
            else:
                why = (f"the chain of adjacent positions breaks at {missing[0]}: no (query, doc) pair shown at both "
                       f"{missing[0] - 1} and {missing[0]}, or none of those clicked at {missing[0] - 1}")
            warn(f"propensities: position(s) {_listed(missing)}{where} cannot be estimated by method={method!r}: "
                 f"{why}. They are left out; a log where the same (query, doc) is shown at those positions by "
                 "different rankers (or days) gives them an estimate.")
        if zero:
            warn(f"propensities: position(s) {_listed(zero)}{where} are estimated 0 by method={method!r}: no click "
                 "there among the (query, doc) pairs read; pbm_ips() cannot weight a click by 1/0.")


def _listed(positions: list) -> str:
    shown = ", ".join(map(str, positions[:10]))
    return shown + (f" and {len(positions) - 10} more" if len(positions) > 10 else "")
