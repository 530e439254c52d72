"""The user browsing model (UBM; Dupret and Piwowarski 2008; the book's section 3.6): a document at position r is
clicked when it is examined and attractive, independently, and examination depends on the position and on the
position r' of the session's previous click (r' = 0 when there is none above r):

    P(C_r = 1 | the clicks above r) = gamma_{r,r'} * alpha_qd

Given the observed clicks r' is known for every row, so the likelihood is PBM's with the examination keyed by
(position, previous_click) instead of the position alone, and so is the EM (the book's section 4.2), in the standard
simultaneous update, every new value from the previous iteration's:

    alpha_qd     <- mean over the impressions of (q, d)  of [c + (1 - c) (1 - g) alpha_qd / (1 - g alpha_qd)]
    gamma_{r,r'} <- mean over the impressions at (r, r') of [c + (1 - c) g (1 - alpha_qd) / (1 - g alpha_qd)]

with g = gamma_{r,r'} of the row's position and previous click, from every value at 0.5 (pbm.INITIAL), until the
largest change of a segment's parameters is below the tolerance.
The key r' is stored as `previous_click`, the previous click's position (0: none), not as the distance r - r'.
The log is aggregated once into counts per (segment, query, doc, position, previous_click) and pbm.py's iterations
run on them; the log-likelihood is pbm.log_likelihood() over those counts."""
from __future__ import annotations

from . import pbm

SLOT = ("position", "previous_click")
# Each row with the position of the session's last click above it (0: none).
_ROWS = """
    SELECT seg, session, query, doc, position, clicked,
           COALESCE(MAX(position) FILTER (WHERE clicked = 1) OVER (PARTITION BY seg, session ORDER BY position
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS previous_click
    FROM sqlm_clicks"""


def fit(con, iterations: int, tolerance: float) -> tuple:
    """({parameter: table}, {seg: (iterations run, last change)}): attractiveness and examination (position,
    previous_click)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_ubm_log AS {_ROWS}")
    pbm.aggregate(con, "sqlm_ubm_log", SLOT)
    con.execute("DROP TABLE sqlm_ubm_log")
    runs = pbm.fit(con, iterations, tolerance)
    return pbm.parameters(con, SLOT), runs


def predict(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal), one row per row of sqlm_clicks. conditional is
    gamma_{r,r'} alpha_qd with r' the session's previous click as observed; marginal is P(C_r = 1) over every
    history: with P_r(r') the probability that the last click above r is at r' (P_1(0) = 1),

        marginal_r = sum over r' of P_r(r') gamma_{r,r'} alpha_r,
        P_{r+1}(r') = P_r(r') (1 - gamma_{r,r'} alpha_r) for r' < r,   P_{r+1}(r) = marginal_r,

    one statement per position. A (query, doc) or (position, previous_click) the fit has no parameter for takes 0.5,
    the EM's initial value (as PyClick does)."""
    alpha, gamma = tables["attractiveness"], tables["examination"]
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_ubm_rows AS
        SELECT r.seg, r.session, r.position, r.previous_click, COALESCE(a.attractiveness, {pbm.INITIAL}) AS alpha
        FROM ({_ROWS}) r LEFT JOIN {alpha} a ON a.seg = r.seg AND a.query = r.query AND a.doc = r.doc""")
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_ubm_state AS SELECT DISTINCT seg, session, 0::BIGINT AS prev, "
                "1::DOUBLE AS p FROM sqlm_ubm_rows")
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_ubm_marginal AS SELECT seg, session, position, 0::DOUBLE AS "
                "marginal FROM sqlm_ubm_rows LIMIT 0")
    last = con.execute("SELECT MAX(position) FROM sqlm_ubm_rows").fetchone()[0] or 0
    for r in range(1, last + 1):
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE sqlm_ubm_step AS
            SELECT s.seg, s.session, s.prev, s.p, x.alpha * COALESCE(g.examination, {pbm.INITIAL}) AS click
            FROM sqlm_ubm_state s JOIN sqlm_ubm_rows x ON x.seg = s.seg AND x.session = s.session AND x.position = {r}
            LEFT JOIN {gamma} g ON g.seg = s.seg AND g.position = {r} AND g.previous_click = s.prev""")
        con.execute(f"INSERT INTO sqlm_ubm_marginal SELECT seg, session, {r}, SUM(p * click) FROM sqlm_ubm_step "
                    "GROUP BY seg, session")
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE sqlm_ubm_state AS
            SELECT seg, session, prev, p * (1 - click) AS p FROM sqlm_ubm_step
            UNION ALL SELECT seg, session, {r}, marginal FROM sqlm_ubm_marginal WHERE position = {r}""")
    return f"""
        SELECT x.seg, x.session, x.position, x.alpha * COALESCE(g.examination, {pbm.INITIAL}) AS conditional,
               m.marginal
        FROM sqlm_ubm_rows x JOIN sqlm_ubm_marginal m USING (seg, session, position)
        LEFT JOIN {gamma} g ON g.seg = x.seg AND g.position = x.position AND g.previous_click = x.previous_click"""
