"""The dynamic Bayesian network model (DBN; Chapelle and Zhang, WWW 2009; Chuklin, Markov and de Rijke, Click Models
for Web Search, 2015, sections 3.8 and 4.2). The user examines position 1 (E_1 = 1); an examined document is clicked
when attractive (A_r ~ Bernoulli(alpha_qd)); a click satisfies with probability sigma_qd (S_r, only after a click);
an unsatisfied user goes on to the next position with probability gamma (one per segment), else leaves:

    C_r = E_r A_r,   P(S_r = 1 | C_r = 1) = sigma_qd,   P(E_{r+1} = 1 | E_r = 1, S_r = 0) = gamma,   E_{r+1} <= E_r.

EM (the book's section 4.2, in the standard simultaneous update: every new value from the previous iteration's)
takes as complete data every A_r, the S_r of the clicked rows and the continuation coin of the transitions where
the user could go on (E_r = 1, S_r = 0, r < n: the transition below the list's last position is not in the
model). The complete-data log-likelihood is a sum of Bernoulli terms of these, so its expectation under the posterior
given the clicks is maximised by expected counts over expected trials, and an EM step never lowers the likelihood
(Dempster, Laird and Rubin 1977); the fixed points are the likelihood's stationary points:

    alpha_qd <- sum over the impressions of (q, d) of P(A_r = 1 | C)        / impressions
    sigma_qd <- sum over the clicks on (q, d)      of P(S_r = 1 | C)        / clicks
    gamma    <- sum over r < n of P(E_{r+1} = 1 | C) / sum over r < n of P(E_r = 1, S_r = 0 | C)

(E_{r+1} = 1 implies E_r = 1 and S_r = 0: the numerator is the transition's joint). The posteriors, from the session's
last click l (l = 0 without one): every row at or above l was examined, its A_r is its click, and every click above l
was unsatisfied (the user went on); the uncertainty is below l. With e = gamma (1 - sigma_l) (1 when l = 0) the
chance the user went on past l, u_k = e gamma^(k-l-1) prod_{l<j<k} (1 - alpha_j) the chance of reading down to k
without a click, and w_k = u_k (1 - alpha_k) (1 - gamma if k < n, else 1) the chance that k is the last row read and
not clicked, the chance of no click below l is N = (1 - e) + sum_{k>l} w_k (N = 1 when l = n), and

    P(E_r = 1 | C) = sum_{k >= r} w_k / N for r > l,     P(A_r = 1 | C) = alpha_r (1 - P(E_r = 1 | C)) for r > l,
    P(S_l = 1 | C) = sigma_l / N,                        P(E_l = 1, S_l = 0 | C) = 1 - sigma_l / N.

A derivation on a tiny log (the fixed point by hand) is in tests/test_clicks_dbn.py; a numpy EM by brute-force
enumeration of every latent path is its oracle. A denominator that is 0 (gamma in a segment whose sessions all have
one position: no transition) keeps the previous value; it never enters the likelihood.

The update needs, per session, only its last click's (query, doc) and the (query, doc)s below it; the rows above
count the same every iteration. The log is aggregated once (aggregate()): those fixed counts per pair and per
segment, and the sessions' distinct suffixes (sqlm_dbn_shapes, with how many sessions share each; a head query shown
the same way is one shape) with their rows (sqlm_dbn_steps). An iteration is a window statement over the steps (the
running product of 1 - alpha down each suffix, then the sums of w from each row down), one for the satisfaction
posteriors, and three small updates (step()). Every parameter starts at INITIAL; predict() gives a (query, doc) or a
segment the fit has no value for INITIAL too, as PyClick does."""
from __future__ import annotations

from .sql import FLOOR, em, observed_ll

INITIAL = 0.5
_TABLES = (("sqlm_dbn_alpha", "pair"), ("sqlm_dbn_sigma", "pair"), ("sqlm_dbn_gamma", "seg"))


def aggregate(con) -> None:
    """The fixed counts and the suffixes the iterations read; every parameter at INITIAL."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_pairs AS
        SELECT ROW_NUMBER() OVER () AS pair, seg, query, doc FROM (SELECT DISTINCT seg, query, doc FROM sqlm_clicks)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_rows AS
        SELECT c.seg, c.session, c.position, p.pair, c.clicked,
               COALESCE(MAX(c.position) FILTER (WHERE c.clicked = 1) OVER (PARTITION BY c.seg, c.session), 0) AS last
        FROM sqlm_clicks c JOIN sqlm_dbn_pairs p USING (seg, query, doc)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_counts AS
        SELECT pair, seg, COUNT(*) AS impressions, CAST(SUM(clicked) AS BIGINT) AS clicks,
               COUNT(*) FILTER (WHERE position = last) AS last_clicks
        FROM sqlm_dbn_rows GROUP BY pair, seg""")
    # Per segment: the transitions above the last clicks (each certain: read, unsatisfied, went on), and the counts
    # the continuation's row shows.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_segments AS
        SELECT seg, COUNT(*) FILTER (WHERE position < last) AS above, COUNT(*) AS impressions,
               CAST(SUM(clicked) AS BIGINT) AS clicks, COUNT(*) FILTER (WHERE position = last) AS last_clicks
        FROM sqlm_dbn_rows GROUP BY seg""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_shapes AS
        SELECT ROW_NUMBER() OVER () AS shape, seg, last_pair, suffix, len(suffix) AS m, COUNT(*) AS weight FROM (
            SELECT seg, ANY_VALUE(pair) FILTER (WHERE position = last) AS last_pair,
                   COALESCE(LIST(pair ORDER BY position) FILTER (WHERE position > last), []) AS suffix
            FROM sqlm_dbn_rows GROUP BY seg, session)
        GROUP BY seg, last_pair, suffix""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_steps AS
        SELECT shape, seg, m, weight, last_pair, UNNEST(suffix) AS pair, UNNEST(range(1, m + 1)) AS k
        FROM sqlm_dbn_shapes""")
    con.execute("ALTER TABLE sqlm_dbn_shapes DROP COLUMN suffix")
    con.execute("DROP TABLE sqlm_dbn_rows")
    for table, key, where in (("sqlm_dbn_alpha", "pair", "true"), ("sqlm_dbn_sigma", "pair", "clicks > 0")):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT pair, seg, {INITIAL}::DOUBLE AS value "
                    f"FROM sqlm_dbn_counts WHERE {where}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_dbn_gamma AS SELECT seg, {INITIAL}::DOUBLE AS value "
                "FROM sqlm_dbn_segments")


def fit(con, iterations: int, tolerance: float) -> dict:
    """Iterate; {seg: (iterations run, the last iteration's largest change)} for every segment."""
    segments = [r[0] for r in con.execute("SELECT seg FROM sqlm_dbn_segments ORDER BY seg").fetchall()]
    return em(segments, iterations, tolerance, lambda active: step(con, active))


def step(con, active: list) -> dict:
    """One EM iteration of the segments in `active` (the others keep their values); {seg: largest change}."""
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_active AS SELECT UNNEST(?::BIGINT[]) AS seg", [active])
    _posteriors(con)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_alpha_next AS
        SELECT c.pair, c.seg, (c.clicks + COALESCE(x.attracted, 0)) / c.impressions AS value
        FROM sqlm_dbn_counts c SEMI JOIN sqlm_active USING (seg)
        LEFT JOIN (SELECT pair, SUM(weight * a * (1 - examined)) AS attracted FROM sqlm_dbn_post GROUP BY pair) x
        USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_sigma_next AS
        SELECT c.pair, c.seg, LEAST(COALESCE(x.satisfied, 0) / c.clicks, 1) AS value
        FROM sqlm_dbn_counts c SEMI JOIN sqlm_active USING (seg)
        LEFT JOIN (SELECT last_pair AS pair, SUM(weight * satisfied) AS satisfied FROM sqlm_dbn_last GROUP BY 1) x
        USING (pair) WHERE c.clicks > 0""")
    # gamma: the transitions r -> r+1 (r < n). Into a row below the last click: its P(E = 1); out of one (k < m): its
    # P(E = 1) again (unclicked, so unsatisfied); out of the last click when a row follows: P(S_l = 0).
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_gamma_next AS
        SELECT seg, CASE WHEN made_out > 0 THEN LEAST(made_in / made_out, 1) ELSE value END AS value FROM (
            SELECT s.seg, g.value, s.above + COALESCE(p.into, 0) AS made_in,
                   s.above + COALESCE(p.out, 0) + COALESCE(l.out, 0) AS made_out
            FROM sqlm_dbn_segments s SEMI JOIN sqlm_active USING (seg) JOIN sqlm_dbn_gamma g USING (seg)
            LEFT JOIN (SELECT seg, SUM(weight * examined) FILTER (WHERE clicked_above OR k > 1) AS into,
                              SUM(weight * examined) FILTER (WHERE k < m) AS out
                       FROM sqlm_dbn_post GROUP BY seg) p USING (seg)
            LEFT JOIN (SELECT seg, SUM(weight * (1 - satisfied)) AS out FROM sqlm_dbn_last WHERE m > 0 GROUP BY seg) l
            USING (seg))""")
    each = " UNION ALL ".join(f"SELECT n.seg, ABS(n.value - o.value) AS change FROM {table}_next n "
                              f"JOIN {table} o USING ({key})" for table, key in _TABLES)
    changes = dict(con.execute(f"SELECT seg, MAX(change) FROM ({each}) GROUP BY seg").fetchall())
    for table, key in _TABLES:  # every new value from the previous ones: swap only now
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {table} AS
            SELECT o.{key}, {'o.seg, ' if key != 'seg' else ''}COALESCE(n.value, o.value) AS value
            FROM {table} o LEFT JOIN {table}_next n USING ({key});
            DROP TABLE {table}_next""")
    return changes


def _posteriors(con) -> None:
    """sqlm_dbn_post: each step (a row below its session's last click) of the active segments with its P(E = 1 | C)
    (examined) and its suffix's chance of no click, N; sqlm_dbn_last: each shape's last click with P(S = 1 | C)."""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_post AS
        SELECT shape, k, m, pair, seg, weight, clicked_above, a,
               LEAST(SUM(w) OVER (PARTITION BY shape ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
                     / GREATEST(1 - e + SUM(w) OVER (PARTITION BY shape), {FLOOR}), 1) AS examined,
               1 - e + SUM(w) OVER (PARTITION BY shape) AS no_click
        FROM (
            SELECT *, e * power(g, k - 1) * before * (1 - a) * CASE WHEN k < m THEN 1 - g ELSE 1 END AS w
            FROM (
                SELECT t.shape, t.k, t.m, t.pair, t.seg, t.weight, t.last_pair IS NOT NULL AS clicked_above,
                       a.value AS a, g.value AS g,
                       CASE WHEN t.last_pair IS NULL THEN 1 ELSE g.value * (1 - s.value) END AS e,
                       COALESCE(product(1 - a.value) OVER (PARTITION BY t.shape ORDER BY t.k ROWS BETWEEN
                                                           UNBOUNDED PRECEDING AND 1 PRECEDING), 1) AS before
                FROM sqlm_dbn_steps t SEMI JOIN sqlm_active USING (seg) JOIN sqlm_dbn_alpha a USING (pair)
                JOIN sqlm_dbn_gamma g ON g.seg = t.seg LEFT JOIN sqlm_dbn_sigma s ON s.pair = t.last_pair))""")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_dbn_last AS
        SELECT h.seg, h.weight, h.last_pair, h.m,
               CASE WHEN h.m = 0 THEN s.value ELSE LEAST(s.value / GREATEST(p.no_click, {FLOOR}), 1) END AS satisfied
        FROM sqlm_dbn_shapes h SEMI JOIN sqlm_active USING (seg) JOIN sqlm_dbn_sigma s ON s.pair = h.last_pair
        LEFT JOIN sqlm_dbn_post p ON p.shape = h.shape AND p.k = 1""")


def parameters(con) -> dict:
    """The fitted values with the counts behind each: attractiveness (impressions, clicks), satisfaction (clicks,
    last_clicks) per (query, doc), continuation per segment (the segment's impressions, clicks and last clicks)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_attractiveness AS
        SELECT p.seg, p.query, p.doc, a.value AS attractiveness, c.impressions, c.clicks
        FROM sqlm_dbn_pairs p JOIN sqlm_dbn_alpha a USING (pair) JOIN sqlm_dbn_counts c USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_satisfaction AS
        SELECT p.seg, p.query, p.doc, s.value AS satisfaction, c.clicks, c.last_clicks
        FROM sqlm_dbn_pairs p JOIN sqlm_dbn_sigma s USING (pair) JOIN sqlm_dbn_counts c USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_continuation AS
        SELECT s.seg, g.value AS continuation, s.impressions, s.clicks, s.last_clicks
        FROM sqlm_dbn_segments s JOIN sqlm_dbn_gamma g USING (seg)""")
    return {"attractiveness": "sqlm_attractiveness", "satisfaction": "sqlm_satisfaction",
            "continuation": "sqlm_continuation"}


def predict(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal), one row per row of sqlm_clicks.

    conditional = P(C_r = 1 | the clicks above r) = alpha_r u_r / D_r, from the last click above r, l (0 without
    one): u_r = e gamma^(r-l-1) prod_{l<j<r} (1 - alpha_j), the chance of reading down to r without a click, e =
    gamma (1 - sigma_l) (1 when l = 0), and D_r = (1 - e) + (1 - gamma) sum_{l<k<r} u_k (1 - alpha_k) + u_r the
    chance of no click between l and r (left before l+1, left after an unclicked k, or reached r): a sum of
    nonnegative terms, so no cancellation. marginal = alpha_r gamma^(r-1) prod_{j<r} (1 - alpha_j sigma_j).
    A (query, doc) or segment without a fitted value takes INITIAL."""
    above = "PARTITION BY seg, session ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    since = "PARTITION BY seg, session, l ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""
        SELECT seg, session, position,
               a * u / GREATEST(1 - e + (1 - g) * COALESCE(SUM(u * (1 - a)) OVER ({since}), 0) + u, {FLOOR})
                   AS conditional, marginal
        FROM (
            SELECT *, CASE WHEN l = 0 THEN 1 ELSE g * (1 - s_l) END
                          * power(g, position - l - 1) * COALESCE(product(1 - a) OVER ({since}), 1) AS u,
                   CASE WHEN l = 0 THEN 1 ELSE g * (1 - s_l) END AS e
            FROM (
                SELECT *, COALESCE(MAX(position) FILTER (WHERE clicked = 1) OVER ({above}), 0) AS l,
                       LAST_VALUE(CASE WHEN clicked = 1 THEN s END IGNORE NULLS) OVER ({above}) AS s_l,
                       a * power(g, position - 1) * COALESCE(product(1 - a * s) OVER ({above}), 1) AS marginal
                FROM (
                    SELECT c.seg, c.session, c.position, c.clicked, COALESCE(a.attractiveness, {INITIAL}) AS a,
                           COALESCE(s.satisfaction, {INITIAL}) AS s, COALESCE(g.continuation, {INITIAL}) AS g
                    FROM sqlm_clicks c LEFT JOIN {tables['attractiveness']} a USING (seg, query, doc)
                    LEFT JOIN {tables['satisfaction']} s USING (seg, query, doc)
                    LEFT JOIN {tables['continuation']} g USING (seg))))"""


def log_likelihood(con, tables: dict) -> str:
    """SQL (seg, log_likelihood): the exact log-likelihood, the sum over the rows of ln P(C_r = c_r | the clicks above
    r) (the chain rule over the session); a probability floored at FLOOR inside the logarithm, never NaN."""
    return f"""
        SELECT seg, SUM({observed_ll('p.conditional', 'c.clicked')}) AS log_likelihood
        FROM sqlm_clicks c JOIN ({predict(con, tables)}) p USING (seg, session, position) GROUP BY seg"""
