"""The dependent click model (DCM; Guo, Liu and Wang 2009; the book's section 3.7): the user reads from the top; a
document at position r is clicked when read and attractive (alpha_qd); after a click the user goes on to r + 1 with
probability lambda_r (the continuation), after a document left unclicked always. So with l the session's last
click, a session's likelihood is

    prod over r <= l of alpha^c (1 - alpha)^(1 - c)  *  prod over the clicks r < l of lambda_r
    * [(1 - lambda_l) + lambda_l prod over r > l of (1 - alpha_r)]          (the last factor only when l exists;
                                                                              a session without a click: all read)

The book's closed form (section 4.1) takes the last click as the end of the session (the bracket as 1 - lambda_l),
which is not the maximum of this likelihood: a user who went on after the last click and found nothing attractive
read the rows below it. The bracket ties lambda_l to every alpha below it, and those alphas to every other session's
lambdas: setting the gradient to 0 gives a system of polynomial equations over the whole log, not a ratio of counts
(we found no closed form; the tiny log of tests/test_clicks.py solves by hand only because it has one such bracket),
so the exact likelihood is fitted by EM. Latent: G, whether the user went on after the last click, and each row's
attractiveness A. Their posterior given the session, from the previous iteration's values:

    w = P(G = 1 | clicks) = lambda_l S / (1 - lambda_l + lambda_l S),   S = prod over r > l of (1 - alpha_r)
    P(A_r = 1 | clicks) = c_r above or at l (read); (1 - w) alpha_r below l (unread unless G; if G, read and not
                          clicked, so unattractive)

and the M-step the expected counts (the book's section 4.2 form: every impression of (q, d) counted):

    alpha_qd <- [clicks on (q, d) + sum over its rows below a last click of (1 - w) alpha_qd] / impressions of (q, d)
    lambda_r <- [clicks at r that are not the session's last + sum over the sessions whose last click is at r of w]
                / clicks at r

from every value at 0.5, each new value from the previous iteration's, until a segment's largest change is below the
tolerance. A position clicked only as the last row of its sessions has lambda_r unidentified (w = lambda_r there):
it stays at 0.5.

The log is aggregated once: per (q, d) its impressions and clicks, per clicked position its clicks and last clicks,
per session with a click its last click, and the rows below it (all that changes from one iteration to the next)."""
from __future__ import annotations

from . import pbm
from .sql import FLOOR, binomial_ll

INITIAL = pbm.INITIAL


def fit(con, iterations: int, tolerance: float) -> tuple:
    """({parameter: table}, {seg: (iterations run, last change)}): attractiveness and continuation."""
    aggregate(con)
    runs = pbm.fit(con, iterations, tolerance, step)
    return parameters(con), runs


def aggregate(con) -> None:
    """sqlm_pairs(pair, seg, query, doc, n, k, n_read, k_read): every impression and click of each (query, doc), and
    those at or above the session's last click (every row of a session without one); sqlm_slots(slot, seg, position,
    clicks, last_clicks) for every clicked position; sqlm_ends(sid, seg, slot): each session with a click, the slot of
    its last; sqlm_below(sid, seg, pair): the rows below it. sqlm_alpha and sqlm_lambda start at 0.5."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_dcm_log AS
        SELECT c.seg, c.session, c.query, c.doc, c.position, c.clicked, l.last,
               l.last IS NULL OR c.position <= l.last AS read
        FROM sqlm_clicks c JOIN (SELECT seg, session, MAX(position) FILTER (WHERE clicked = 1) AS last
                                 FROM sqlm_clicks GROUP BY ALL) l USING (seg, session)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_pairs AS
        SELECT ROW_NUMBER() OVER () AS pair, * FROM (
            SELECT seg, query, doc, COUNT(*) AS n, CAST(SUM(clicked) AS BIGINT) AS k,
                   COUNT(*) FILTER (WHERE read) AS n_read
            FROM sqlm_dcm_log GROUP BY seg, query, doc)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_slots AS
        SELECT ROW_NUMBER() OVER () AS slot, * FROM (
            SELECT seg, position, COUNT(*) AS clicks, COUNT(*) FILTER (WHERE position = last) AS last_clicks
            FROM sqlm_dcm_log WHERE clicked = 1 GROUP BY seg, position)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_ends AS
        SELECT ROW_NUMBER() OVER () AS sid, e.seg, e.session, s.slot
        FROM (SELECT DISTINCT seg, session, last FROM sqlm_dcm_log WHERE last IS NOT NULL) e
        JOIN sqlm_slots s ON s.seg = e.seg AND s.position = e.last""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_below AS
        SELECT e.sid, e.seg, p.pair FROM sqlm_dcm_log c JOIN sqlm_ends e USING (seg, session)
        JOIN sqlm_pairs p USING (seg, query, doc) WHERE NOT c.read""")
    con.execute("ALTER TABLE sqlm_ends DROP COLUMN session")
    con.execute("DROP TABLE sqlm_dcm_log")
    for table, key, keys in (("sqlm_alpha", "pair", "sqlm_pairs"), ("sqlm_lambda", "slot", "sqlm_slots")):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT {key}, seg, {INITIAL}::DOUBLE AS value "
                    f"FROM {keys}")


def _went_on() -> str:
    """SQL (sid, seg, slot, lam, stay, went): per session with a click, lambda at its last click, S = prod below it of
    (1 - alpha) (1 for none) and w = P(went on after it | clicks)."""
    return f"""
        SELECT e.sid, e.seg, e.slot, l.value AS lam, COALESCE(b.stay, 1) AS stay,
               l.value * COALESCE(b.stay, 1) / GREATEST(1 - l.value + l.value * COALESCE(b.stay, 1), {FLOOR}) AS went
        FROM sqlm_ends e JOIN sqlm_lambda l USING (slot)
        LEFT JOIN (SELECT sid, PRODUCT(1 - a.value) AS stay FROM sqlm_below JOIN sqlm_alpha a USING (pair)
                   GROUP BY sid) b USING (sid)"""


def step(con, active: list) -> dict:
    """One EM iteration of the segments in `active` (the others keep their values); {seg: largest change}."""
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_active AS SELECT UNNEST(?::BIGINT[]) AS seg", [active])
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_went AS SELECT * FROM ({_went_on()}) SEMI JOIN sqlm_active "
                "USING (seg)")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_alpha_next AS
        SELECT p.pair, p.seg, (p.k + COALESCE(u.unread, 0)) / p.n AS value
        FROM sqlm_pairs p SEMI JOIN sqlm_active USING (seg)
        LEFT JOIN (SELECT b.pair, SUM((1 - w.went) * a.value) AS unread FROM sqlm_below b
                   JOIN sqlm_went w USING (sid) JOIN sqlm_alpha a USING (pair) GROUP BY b.pair) u USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_lambda_next AS
        SELECT s.slot, s.seg, (s.clicks - s.last_clicks + COALESCE(w.went, 0)) / s.clicks AS value
        FROM sqlm_slots s SEMI JOIN sqlm_active USING (seg)
        LEFT JOIN (SELECT slot, SUM(went) AS went FROM sqlm_went GROUP BY slot) w USING (slot)""")
    changes = {}
    for table, key in (("sqlm_alpha", "pair"), ("sqlm_lambda", "slot")):  # both from the previous values: then swap
        for seg, change in con.execute(f"""
                SELECT n.seg, MAX(ABS(n.value - o.value)) FROM {table}_next n JOIN {table} o USING ({key})
                GROUP BY n.seg""").fetchall():
            changes[seg] = max(change, changes.get(seg, 0.0))
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {table} AS
            SELECT o.{key}, o.seg, COALESCE(n.value, o.value) AS value FROM {table} o LEFT JOIN {table}_next n
            USING ({key})""")
        con.execute(f"DROP TABLE {table}_next")
    return changes


def parameters(con) -> dict:
    """The fitted values with the counts behind each: sqlm_attractiveness (every impression and click of the pair)
    and sqlm_continuation (per clicked position: its clicks, and how many were a session's last)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_attractiveness AS
        SELECT p.seg, p.query, p.doc, a.value AS attractiveness, p.n AS impressions, p.k AS clicks
        FROM sqlm_pairs p JOIN sqlm_alpha a USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_continuation AS
        SELECT s.seg, s.position, l.value AS continuation, s.clicks, s.last_clicks
        FROM sqlm_slots s JOIN sqlm_lambda l USING (slot)""")
    return {"attractiveness": "sqlm_attractiveness", "continuation": "sqlm_continuation"}


def log_likelihood(con, tables: dict) -> str:
    """SQL (seg, log_likelihood): the exact likelihood of the module docstring: the rows read as Bernoulli(alpha) (by
    pair: k ln alpha + (n_read - k) ln(1 - alpha)), each click not the session's last ln lambda_r, and each session's
    ln[(1 - lambda_l) + lambda_l S]. 0 ln 0 = 0: never NaN at 0 or 1."""
    return f"""
        SELECT seg, SUM(ll) AS log_likelihood FROM (
            SELECT p.seg, {binomial_ll('a.value', 'p.k', 'p.n_read')} AS ll
            FROM sqlm_pairs p JOIN sqlm_alpha a USING (pair)
            UNION ALL
            SELECT s.seg, CASE WHEN s.clicks > s.last_clicks THEN (s.clicks - s.last_clicks) *
                                    ln(GREATEST(l.value, {FLOOR})) ELSE 0 END
            FROM sqlm_slots s JOIN sqlm_lambda l USING (slot)
            UNION ALL
            SELECT seg, ln(GREATEST(1 - lam + lam * stay, {FLOOR})) FROM ({_went_on()}))
        GROUP BY seg"""


def predict(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal), one row per row of sqlm_clicks:

        marginal_r    = alpha_r prod over j < r of (1 - alpha_j + alpha_j lambda_j)   (read r: every row above was
                        left unclicked, or clicked and gone on from)
        conditional_r = alpha_r without a click above r; with the last click above at l,
                        alpha_r lambda_l S / (1 - lambda_l + lambda_l S), S = prod over l < j < r of (1 - alpha_j)

    (the second: P(r read | no click between l and r)). A (query, doc) or position the fit has no parameter for takes
    0.5, the EM's initial value (as PyClick does)."""
    alpha, lam = tables["attractiveness"], tables["continuation"]
    before = "ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""
        WITH r AS (
            SELECT c.seg, c.session, c.position, c.clicked, COALESCE(a.attractiveness, {INITIAL}) AS alpha,
                   COALESCE(l.continuation, {INITIAL}) AS lam
            FROM sqlm_clicks c LEFT JOIN {alpha} a ON a.seg = c.seg AND a.query = c.query AND a.doc = c.doc
            LEFT JOIN {lam} l ON l.seg = c.seg AND l.position = c.position),
        w AS (
            SELECT *, COALESCE(SUM(clicked) OVER (PARTITION BY seg, session {before}), 0) AS above,
                   LAST_VALUE(CASE WHEN clicked = 1 THEN lam END IGNORE NULLS)
                       OVER (PARTITION BY seg, session {before}) AS lam_last,
                   COALESCE(PRODUCT(1 - alpha + alpha * lam) OVER (PARTITION BY seg, session {before}), 1) AS read
            FROM r),
        s AS (  -- the rows since the last click above: those of the same count of clicks above
            SELECT *, COALESCE(PRODUCT(1 - alpha) OVER (PARTITION BY seg, session, above {before}), 1) AS stay FROM w)
        SELECT seg, session, position,
               CASE WHEN above = 0 THEN alpha
                    ELSE alpha * lam_last * stay / GREATEST(1 - lam_last + lam_last * stay, {FLOOR}) END AS conditional,
               alpha * read AS marginal
        FROM s"""
