"""The position-based model (PBM; Richardson et al. 2007, Craswell et al. 2008; the book's section 3.4): a document
at position r is clicked when it is examined (gamma_r, by position alone) and attractive (alpha_qd), independently:
P(C = 1) = gamma_r * alpha_qd. Fitted by EM (the book's section 4.2), in the standard simultaneous update: every new
value from the previous iteration's,

    alpha_qd <- mean over the impressions of (q, d) of [c + (1 - c) (1 - gamma_r) alpha_qd / (1 - gamma_r alpha_qd)]
    gamma_r  <- mean over the impressions at r      of [c + (1 - c) gamma_r (1 - alpha_qd) / (1 - gamma_r alpha_qd)]

from every value at INITIAL, until the largest change of any parameter of a segment is below the tolerance (that
segment stops; the others go on) or the iterations run out.

The update reads only the counts per (segment, query, doc, position): the log is aggregated once (aggregate()), each
pair and position numbered, and every iteration is three statements over that small table (step())."""
from __future__ import annotations

from .sql import FLOOR, binomial_ll

INITIAL = 0.5


def aggregate(con) -> None:
    """sqlm_counts(pair, slot, seg, n, k): impressions n and clicks k of each (query, doc) pair at each position of a
    segment, the pairs numbered in sqlm_pairs(pair, seg, query, doc) and the positions in sqlm_slots(slot, seg,
    position): the iterations join integers."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_cells AS
        SELECT seg, query, doc, position, COUNT(*) AS n, CAST(SUM(clicked) AS BIGINT) AS k
        FROM sqlm_clicks GROUP BY ALL""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_pairs AS
        SELECT ROW_NUMBER() OVER () AS pair, seg, query, doc FROM (SELECT DISTINCT seg, query, doc FROM sqlm_cells)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_slots AS
        SELECT ROW_NUMBER() OVER () AS slot, seg, position FROM (SELECT DISTINCT seg, position FROM sqlm_cells)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_counts AS
        SELECT p.pair, s.slot, c.seg, c.n, c.k FROM sqlm_cells c
        JOIN sqlm_pairs p ON p.seg = c.seg AND p.query = c.query AND p.doc = c.doc
        JOIN sqlm_slots s ON s.seg = c.seg AND s.position = c.position""")
    con.execute("DROP TABLE sqlm_cells")
    for table, key, keys in (("sqlm_alpha", "pair", "sqlm_pairs"), ("sqlm_gamma", "slot", "sqlm_slots")):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT {key}, seg, {INITIAL}::DOUBLE AS value FROM {keys}")


def fit(con, iterations: int, tolerance: float) -> dict:
    """Iterate; {seg: (iterations run, the last iteration's largest change)} for every segment."""
    segments = [r[0] for r in con.execute("SELECT DISTINCT seg FROM sqlm_pairs ORDER BY seg").fetchall()]
    done = {seg: (0, None) for seg in segments}
    active = list(segments)
    for i in range(1, iterations + 1):
        changes = step(con, active)
        for seg, change in changes.items():
            done[seg] = (i, change)
        active = [seg for seg, change in changes.items() if not change < tolerance]
        if not active:
            break
    return done


def step(con, active: list) -> dict:
    """One EM iteration of the segments in `active` (the others keep their values); {seg: largest change}."""
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_active AS SELECT UNNEST(?::BIGINT[]) AS seg", [active])
    # Each cell's expected examined-and-attractive counts given the previous values (the posteriors times n - k),
    # with the clicks, whose both are 1.
    denominator = f"GREATEST(1 - g.value * a.value, {FLOOR})"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_posterior AS
        SELECT c.pair, c.slot, c.seg, c.n,
               c.k + (c.n - c.k) * (1 - g.value) * a.value / {denominator} AS attracted,
               c.k + (c.n - c.k) * g.value * (1 - a.value) / {denominator} AS examined
        FROM sqlm_counts c SEMI JOIN sqlm_active USING (seg)
        JOIN sqlm_alpha a USING (pair) JOIN sqlm_gamma g USING (slot)""")
    changes = {}
    for table, key, value in (("sqlm_alpha", "pair", "attracted"), ("sqlm_gamma", "slot", "examined")):
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {table}_next AS
            SELECT {key}, seg, SUM({value}) / SUM(n) AS value FROM sqlm_posterior GROUP BY {key}, seg""")
        for seg, change in con.execute(f"""
                SELECT n.seg, MAX(ABS(n.value - o.value)) FROM {table}_next n JOIN {table} o USING ({key})
                GROUP BY n.seg""").fetchall():
            changes[seg] = max(change, changes.get(seg, 0.0))
    for table, key in (("sqlm_alpha", "pair"), ("sqlm_gamma", "slot")):  # both from the previous values: then swap
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {table} AS
            SELECT o.{key}, o.seg, COALESCE(n.value, o.value) AS value FROM {table} o LEFT JOIN {table}_next n
            USING ({key})""")
        con.execute(f"DROP TABLE {table}_next")
    return changes


def parameters(con) -> dict:
    """The fitted values with the counts behind each: sqlm_attractiveness and sqlm_examination."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_attractiveness AS
        SELECT p.seg, p.query, p.doc, a.value AS attractiveness, c.impressions, c.clicks
        FROM sqlm_pairs p JOIN sqlm_alpha a USING (pair)
        JOIN (SELECT pair, CAST(SUM(n) AS BIGINT) AS impressions, CAST(SUM(k) AS BIGINT) AS clicks
              FROM sqlm_counts GROUP BY pair) c USING (pair)""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_examination AS
        SELECT s.seg, s.position, g.value AS examination, c.impressions, c.clicks
        FROM sqlm_slots s JOIN sqlm_gamma g USING (slot)
        JOIN (SELECT slot, CAST(SUM(n) AS BIGINT) AS impressions, CAST(SUM(k) AS BIGINT) AS clicks
              FROM sqlm_counts GROUP BY slot) c USING (slot)""")
    return {"attractiveness": "sqlm_attractiveness", "examination": "sqlm_examination"}


def log_likelihood(con, tables: dict) -> str:
    """SQL (seg, log_likelihood): sum over the rows of c ln(gamma alpha) + (1 - c) ln(1 - gamma alpha), by cell."""
    p = "g.value * a.value"
    return f"""
        SELECT c.seg, SUM({binomial_ll(p, 'c.k', 'c.n')}) AS log_likelihood
        FROM sqlm_counts c JOIN sqlm_alpha a USING (pair) JOIN sqlm_gamma g USING (slot) GROUP BY c.seg"""


def predict(con, tables: dict) -> str:
    """SQL (seg, session, position, conditional, marginal) per row of sqlm_clicks: PBM's clicks are independent, so
    both are gamma_r alpha_qd. An unseen (query, doc) or position takes 0.5, the EM's initial value, as PyClick does."""
    p = "COALESCE(g.examination, 0.5) * COALESCE(a.attractiveness, 0.5)"
    return f"""
        SELECT c.seg, c.session, c.position, {p} AS conditional, {p} AS marginal
        FROM sqlm_clicks c
        LEFT JOIN {tables['attractiveness']} a ON a.seg = c.seg AND a.query = c.query AND a.doc = c.doc
        LEFT JOIN {tables['examination']} g ON g.seg = c.seg AND g.position = c.position"""
