"""The click models with closed-form maximum-likelihood estimates, each one GROUP BY over sqlm_clicks: counts over
the log, as Chuklin, Markov and de Rijke, Click Models for Web Search (2015) give them in chapter 4 ("Parameter
estimation"): section 4.1, the MLE algorithm (its parts for DCM, whose lambda = 0 case is the cascade model, and
for SDBN), and the table of section 4.3 (formulas for click model parameters).

Each writes temp tables of its parameters (seg, query, doc, the value, the counts behind it) and returns
{parameter: table}; the log-likelihood is the one the estimates maximise (log_likelihood())."""
from __future__ import annotations

from .sql import FLOOR, binomial_ll

# Positions down to the first (Cascade) or last (SDBN) click of each session; all of a session without a click.
_STOP = "SELECT seg, session, {which}(position) FILTER (WHERE clicked = 1) AS stop FROM sqlm_clicks GROUP BY ALL"


def cascade(con) -> dict:
    """Cascade (Craswell et al. 2008): the user reads down the list, clicks the first attractive document and
    stops (the book's section 3.5). Section 4.1: alpha_qd = (clicks on d) / (sessions of q where d is shown at or
    above the first click, or in a session without one): the rows below the first click were never examined."""
    _attractiveness(con, "MIN")
    return {"attractiveness": "sqlm_attractiveness"}


def sdbn(con) -> dict:
    """Simplified DBN (the book's DBN with continuation gamma = 1): the user reads on until a click satisfies, so the
    last click is the satisfied one. Section 4.1 ("MLE for SDBN"): alpha_qd = clicks / impressions at or above the
    session's last click (every position of a session without a click: no click, no satisfaction, all read);
    sigma_qd = (sessions where d is the last click) / (sessions where d is clicked)."""
    _attractiveness(con, "MAX")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_satisfaction AS
        SELECT c.seg, c.query, c.doc, COUNT(*) FILTER (WHERE c.position = s.stop) / COUNT(*) AS satisfaction,
               COUNT(*) AS clicks, COUNT(*) FILTER (WHERE c.position = s.stop) AS last_clicks
        FROM sqlm_clicks c JOIN ({_STOP.format(which='MAX')}) s USING (seg, session)
        WHERE c.clicked = 1 GROUP BY c.seg, c.query, c.doc""")
    return {"attractiveness": "sqlm_attractiveness", "satisfaction": "sqlm_satisfaction"}


def _attractiveness(con, which: str) -> None:
    """alpha per (segment, query, doc) over the rows at or above each session's first (MIN) or last (MAX) click. A pair
    never shown there has no estimate, and no row."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_attractiveness AS
        SELECT c.seg, c.query, c.doc, SUM(c.clicked) / COUNT(*) AS attractiveness, COUNT(*) AS impressions,
               CAST(SUM(c.clicked) AS BIGINT) AS clicks
        FROM sqlm_clicks c JOIN ({_STOP.format(which=which)}) s USING (seg, session)
        WHERE s.stop IS NULL OR c.position <= s.stop GROUP BY c.seg, c.query, c.doc""")


def log_likelihood(con, tables: dict) -> str:
    """SQL (seg, log_likelihood): the likelihood the closed forms maximise. Each counted row is a Bernoulli(alpha)
    click and, in SDBN, each click a Bernoulli(sigma) last click; the rows below the first (Cascade) or last (SDBN)
    click, where the user has stopped, are not in it. 0 * ln 0 is 0: never NaN at alpha or sigma 0 or 1."""
    parts = [f"SELECT seg, {binomial_ll('attractiveness', 'clicks', 'impressions')} AS ll FROM sqlm_attractiveness"]
    if "satisfaction" in tables:
        parts.append(f"SELECT seg, {binomial_ll('satisfaction', 'last_clicks', 'clicks')} AS ll FROM sqlm_satisfaction")
    return f"SELECT seg, SUM(ll) AS log_likelihood FROM ({' UNION ALL '.join(parts)}) GROUP BY seg"


def predict_cascade(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal) per row of sqlm_clicks under Cascade: the reader stops at
    the first click, so conditional = alpha when no click is above, else 0; marginal = alpha_r prod_{i<r} (1 - alpha_i).
    It is SDBN's prediction with every satisfaction 1."""
    return _predict_reading(tables, "1.0")


def predict_sdbn(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal) per row of sqlm_clicks under SDBN (DBN with continuation 1):
    the reader examines position 1; after a click at j goes on with 1 - sigma_j; after a position without a click goes
    on surely, and each such position tells (Bayes) that the reader may have left already. With e = P(examining the
    position below the last click above) (1 - sigma_j, or 1 without a click above) and P = prod (1 - alpha_i) over the
    positions between that click and r, P(E_r | clicks above) = e P / (e P + 1 - e), and conditional = alpha_r times
    it. marginal = alpha_r P(E_r), P(E_r) = prod_{i<r} (1 - alpha_i sigma_i)."""
    return _predict_reading(tables, "COALESCE(s.satisfaction, 0.5)",
                            f"LEFT JOIN {tables['satisfaction']} s ON s.seg = c.seg AND s.query = c.query "
                            "AND s.doc = c.doc")


def _predict_reading(tables: dict, sigma: str, join: str = "") -> str:
    """Cascade's and SDBN's prediction: a reader going down the list who leaves after a click with probability sigma.
    An unseen (query, doc) takes alpha (and sigma) 0.5, the EM's initial value, as PyClick does. A history the model
    gives probability 0 (a click below Cascade's first, or a skipped alpha = 1) has conditional 0, never 0/0."""
    before = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""
        WITH p AS (
            SELECT c.seg, c.session, c.position, c.clicked, COALESCE(a.attractiveness, 0.5) AS alpha, {sigma} AS sigma
            FROM sqlm_clicks c LEFT JOIN {tables['attractiveness']} a
            ON a.seg = c.seg AND a.query = c.query AND a.doc = c.doc {join}),
        w AS (
            SELECT *, COALESCE(SUM(clicked) OVER above, 0) AS clicks_above,
                   COALESCE(LAST_VALUE(CASE WHEN clicked = 1 THEN 1 - sigma END IGNORE NULLS) OVER above, 1.0)
                       AS reading,
                   COALESCE(PRODUCT(1 - alpha * sigma) OVER above, 1.0) AS examined
            FROM p WINDOW above AS (PARTITION BY seg, session ORDER BY position {before})),
        v AS (
            SELECT *, COALESCE(PRODUCT(1 - alpha) OVER (PARTITION BY seg, session, clicks_above ORDER BY position
                                                         {before}), 1.0) AS skipped
            FROM w)
        SELECT seg, session, position,
               alpha * reading * skipped / GREATEST(reading * skipped + 1 - reading, {FLOOR}) AS conditional,
               alpha * examined AS marginal
        FROM v"""
