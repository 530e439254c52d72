"""The position-based model (PBM; Richardson et al. 2007, Craswell et al. 2008; the book's section 3.4): a document
at position r is clicked when it is examined (gamma_r, by position alone) and attractive (alpha_qd), independently:
P(C = 1) = gamma_r * alpha_qd. Fitted by EM (the book's section 4.2), in the standard simultaneous update: every new
value from the previous iteration's,

    alpha_qd <- mean over the impressions of (q, d) of [c + (1 - c) (1 - gamma_r) alpha_qd / (1 - gamma_r alpha_qd)]
    gamma_r  <- mean over the impressions at r      of [c + (1 - c) gamma_r (1 - alpha_qd) / (1 - gamma_r alpha_qd)]

from every value at INITIAL, until the largest change of any parameter of a segment is below the tolerance (that
segment stops; the others go on) or the iterations run out.

The update reads only the counts per (segment, query, doc, position): the log is aggregated once (aggregate()), each
pair and position numbered, and every iteration is two GROUP BYs over that small table (step())."""
from __future__ import annotations

from .sql import FLOOR, binomial_ll, em

INITIAL = 0.5


def aggregate(con, rows: str = "sqlm_clicks", slot: tuple = ("position",)) -> None:
    """sqlm_counts(pair, slot, seg, n, k): impressions n and clicks k of each (query, doc) pair at each examination
    slot of a segment (its position; UBM's position and previous click, ubm.py), the pairs numbered in
    sqlm_pairs(pair, seg, query, doc) and the slots in sqlm_slots(slot, seg, *slot): the iterations join integers."""
    keys = ", ".join(slot)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_cells AS
        SELECT seg, query, doc, {keys}, COUNT(*) AS n, CAST(SUM(clicked) AS BIGINT) AS k
        FROM {rows} GROUP BY ALL""")
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_pairs AS
        SELECT ROW_NUMBER() OVER () AS pair, seg, query, doc FROM (SELECT DISTINCT seg, query, doc FROM sqlm_cells)""")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_slots AS
        SELECT ROW_NUMBER() OVER () AS slot, seg, {keys} FROM (SELECT DISTINCT seg, {keys} FROM sqlm_cells)""")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_counts AS
        SELECT p.pair, s.slot, c.seg, c.n, c.k FROM sqlm_cells c
        JOIN sqlm_pairs p ON p.seg = c.seg AND p.query = c.query AND p.doc = c.doc
        JOIN sqlm_slots s ON s.seg = c.seg{''.join(f' AND s.{k} = c.{k}' for k in slot)}""")
    con.execute("DROP TABLE sqlm_cells")
    for table, key, keys in (("sqlm_alpha", "pair", "sqlm_pairs"), ("sqlm_gamma", "slot", "sqlm_slots")):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT {key}, seg, {INITIAL}::DOUBLE AS value "
                    f"FROM {keys}")


def fit(con, iterations: int, tolerance: float, iterate=None) -> dict:
    """Iterate `iterate` (this module's step(); DCM's, dcm.py); {seg: (iterations run, the last iteration's largest
    change)} for every segment."""
    segments = [r[0] for r in con.execute("SELECT DISTINCT seg FROM sqlm_pairs ORDER BY seg").fetchall()]
    return em(segments, iterations, tolerance, lambda active: iterate(con, active) if iterate else
              step(con, active, len(active) == len(segments)))


def step(con, active: list, everyone: bool = False) -> dict:
    """One EM iteration of the segments in `active` (every segment when `everyone`; the others keep their values);
    {seg: largest change}.

    Each new value is a GROUP BY over the counts joined to the previous values: the expected examined-and-attractive
    counts given the previous values (the posteriors times n - k) plus the clicks, whose both are 1, over n. The
    previous value rides along in the group (ANY_VALUE), so the change needs no second join."""
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_active AS SELECT UNNEST(?::BIGINT[]) AS seg", [active])
    only_active = "" if everyone else "SEMI JOIN sqlm_active USING (seg)"
    denominator = f"GREATEST(1 - g.value * a.value, {FLOOR})"
    updates = {"sqlm_alpha": ("pair", "a", f"(c.n - c.k) * (1 - g.value) * a.value / {denominator}"),
               "sqlm_gamma": ("slot", "g", f"(c.n - c.k) * g.value * (1 - a.value) / {denominator}")}
    changes = {}
    for table, (key, alias, expected) in updates.items():
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {table}_next AS
            SELECT c.{key}, c.seg, SUM(c.k + {expected}) / SUM(c.n) AS value, ANY_VALUE({alias}.value) AS previous
            FROM sqlm_counts c {only_active} JOIN sqlm_alpha a USING (pair) JOIN sqlm_gamma g USING (slot)
            GROUP BY c.{key}, c.seg""")
        for seg, change in con.execute(f"SELECT seg, MAX(ABS(value - previous)) FROM {table}_next "
                                       "GROUP BY seg").fetchall():
            changes[seg] = max(change, changes.get(seg, 0.0))
    for table, (key, _, _) in updates.items():  # both from the previous values: then swap
        if not everyone:  # the segments that stopped keep their values
            con.execute(f"INSERT INTO {table}_next SELECT {key}, seg, value, value FROM {table} "
                        "ANTI JOIN sqlm_active USING (seg)")
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {table}_next RENAME TO {table}")
    return changes


def parameters(con, slot: tuple = ("position",)) -> dict:
    """The fitted values with the counts behind each: sqlm_attractiveness and sqlm_examination (keyed by the slot)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE sqlm_attractiveness AS
        SELECT p.seg, p.query, p.doc, a.value AS attractiveness, c.impressions, c.clicks
        FROM sqlm_pairs p JOIN sqlm_alpha a USING (pair)
        JOIN (SELECT pair, CAST(SUM(n) AS BIGINT) AS impressions, CAST(SUM(k) AS BIGINT) AS clicks
              FROM sqlm_counts GROUP BY pair) c USING (pair)""")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_examination AS
        SELECT s.seg, {''.join(f's.{k}, ' for k in slot)}g.value AS examination, c.impressions, c.clicks
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
