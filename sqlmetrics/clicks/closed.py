"""The click models with closed-form maximum-likelihood estimates, each one GROUP BY over sqlm_clicks: counts over
the log, as Chuklin, Markov and de Rijke, Click Models for Web Search (2015) give them in chapter 4 ("Parameter
estimation"): section 4.1, the MLE algorithm (its parts for DCM, whose lambda = 0 case is the cascade model, and
for SDBN), and the table of section 4.3 (formulas for click model parameters).

Each writes temp tables of its parameters (seg, query, doc, the value, the counts behind it) and returns
{parameter: table}; the log-likelihood is the one the estimates maximise (log_likelihood())."""
from __future__ import annotations

from .sql import binomial_ll

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
