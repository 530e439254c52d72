"""render_clicks(): a click model's fit as a SQL script for another engine, over a click log that lives there.

    render_clicks("pbm", dialect="postgres", log="events.clicks", iterations=20)  -> [statement, ...]

The script is written once, in DuckDB's dialect, with placeholder names (sqlm_log, sqlm_t_*, sqlm_c_*, sqlm_o_*), parsed
by sqlglot, the caller's table and column names bound into the tree as identifiers (identifiers.py: never pasted as
text), and generated for the target dialect, as dialects.render() does for an evaluation.

Each model's statements compute what its Python fit computes (closed.py, pbm.py, ubm.py, dcm.py, dbn.py), with the
differences an engine without DuckDB's features needs: the segments, pairs and examination slots are numbered by
DENSE_RANK (NULL segment values rank together, as GROUP BY puts them: no NULL-safe join is needed); a product is
EXP(SUM(LN)) with its zeros counted (not every engine has PRODUCT); DBN iterates over each session's rows below its
last click, not over the distinct such suffixes (LIST is DuckDB's); and EM runs a fixed number of unrolled iterations
(a script has no loop, so no stopping rule)."""
from __future__ import annotations

import re
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from ..dialects.info import dialect_info
from ..dialects.portable import name_qualified_columns
from ..dialects.render import create_table
from ..errors import SqlmetricsError
from ..identifiers import column_identifier, table_reference
from ..options import check_log_options
from .fit import _refuse_clashes, _roles, model_named
from .log import ROLES
from .pbm import INITIAL
from .sql import FLOOR
from .ubm import SLOT as UBM_SLOT

DEFAULT_ITERATIONS = 20
# The created tables' columns (besides the segments'), bound as the dialect reads them.
OUTPUT_COLUMNS = ("query", "doc", "position", "previous_click", "attractiveness", "examination", "satisfaction",
                  "continuation", "impressions", "clicks", "last_clicks")


def render_clicks(model: str, dialect: str = "duckdb", log="clicks", columns: dict | None = None, group_by=None,
                  iterations: int | None = None, prefix: str = "clicks_") -> list:
    """A click model's fit as a SQL script for `dialect`: a list of statements that, run in order where the log
    table lives, create the parameter tables `{prefix}attractiveness` and, per model, `{prefix}examination` (pbm,
    ubm), `{prefix}satisfaction` (sdbn, dbn) and `{prefix}continuation` (dcm, dbn), with the columns and values of
    fit_clicks(...).parameters: the group_by columns first (under the log's names), then the key, the value and the
    counts behind it. Tables of those names are dropped first; the script's working tables (PBM's and UBM's
    {prefix}cells, {prefix}alpha_0/1, {prefix}gamma_0/1; DCM's and DBN's {prefix}rows and others) at its end.

    model: 'cascade' or 'sdbn' (the closed forms: a statement per table) or 'pbm', 'ubm', 'dcm' or 'dbn' (EM: the
    counts, every parameter at 0.5, then `iterations` simultaneous updates, unrolled; default 20). The script has no
    loop and no stopping rule (that is the Python fit's, tolerance=): a run of it equals fit_clicks(log, model,
    iterations=N, tolerance=1e-300), which runs all N.
    log: the log table (`schema.table`, or a tuple of parts); columns={role: column} maps the roles session,
    query, doc, position and clicked (by default named so: the script cannot look at the table to find other names).
    group_by: a column or columns: one model per segment; a NULL value is a segment of its own.
    prefix: the beginning of the created tables' names, possibly qualified ('analytics.clicks_').

    The script does not check the log: fit_clicks() refuses a bad log, the script fits it. The caller guarantees
    what fit_clicks() checks: one row per (session, position), the positions of a session 1..n, clicks 0 or 1 (never
    NULL), no NULL session, query or document, and one query and one segment per session."""
    name, chosen = model_named(model)
    iterations = _iterations(name, chosen.iterates, iterations)
    info = dialect_info(dialect)
    segments = list(check_log_options("log", group_by, None, None))
    _refuse_clashes(tuple(segments), "render_clicks")
    if not isinstance(prefix, str):
        raise SqlmetricsError(f"prefix={prefix!r} must be a string: the beginning of the created tables' names, "
                              "such as 'clicks_' or 'analytics.clicks_'.")
    mapped = {role: role for role in ROLES} | (_roles(columns) or {})
    script = SCRIPTS[name](len(segments), iterations)
    d, fold = info.sqlglot, info.fold_case
    # Each name bound once (identifiers.py parses what it binds), then copied into every statement.
    names = {f"sqlm_c_{role}": column for role, column in mapped.items()}
    names.update({f"sqlm_c_seg_{i}": column for i, column in enumerate(segments, 1)})
    names.update({f"sqlm_o_{column}": column for column in OUTPUT_COLUMNS})
    bound = {placeholder: column_identifier(column, d, fold) for placeholder, column in names.items()}
    tables = {"sqlm_log": _table(log, f"log={log!r}", info),
              **{f"sqlm_t_{t}": _table(prefix + t, f"prefix={prefix!r}", info) for t in _created(script)}}
    return [_generated(text, info, bound, tables) for text in script]


def _table(name, given: str, info) -> exp.Table:
    """A table bound as the dialect reads it; a name that is none is an error naming the parameter that gave it."""
    try:
        return table_reference(name, info.sqlglot, info.fold_case)
    except SqlmetricsError as e:
        raise SqlmetricsError(f"{given}: {e}") from None


def _iterations(name: str, iterates: bool, iterations) -> int | None:
    if not iterates:
        if iterations is not None:
            raise SqlmetricsError(f"model={name!r} has closed-form estimates: iterations= applies to EM (model='pbm', "
                                  "'ubm', 'dcm' or 'dbn'); leave it out.")
        return None
    iterations = DEFAULT_ITERATIONS if iterations is None else iterations
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise SqlmetricsError(f"iterations={iterations!r} must be a whole number of at least 1: the EM iterations the "
                              f"script runs (default {DEFAULT_ITERATIONS}).")
    return iterations


def _created(script: list) -> list:
    """The tables a script's statements name (sqlm_t_NAME), each once: what the caller's prefix is bound to."""
    seen: dict = {}
    for text in script:
        for word in text.replace("(", " ").replace(")", " ").replace(",", " ").split():
            if word.startswith("sqlm_t_"):
                seen[word.split(".")[0][len("sqlm_t_"):]] = None
    return list(seen)


def _generated(text: str, info, names: dict, tables: dict) -> str:
    """One statement of the DuckDB source with the caller's names bound ({placeholder: bound identifier}: sqlm_c_*, the
    log's columns, sqlm_o_*, the output's; {placeholder: table}: sqlm_log and sqlm_t_*), generated for the dialect.
    CREATE TABLE ... AS is built as render()'s into= builds it (ClickHouse's table engine, SQL Server's SELECT ...
    INTO)."""
    create = re.match(r"CREATE TABLE (\w+) AS\s", text)
    if create:
        target, text = create.group(1), text[create.end():]

    def bind(node):
        if isinstance(node, exp.Table) and node.name in tables:
            bound = tables[node.name].copy()
            if node.alias:
                bound.set("alias", node.args["alias"].copy())
            return bound
        if isinstance(node, exp.Identifier) and node.name in names:
            return names[node.name].copy()
        return node

    tree = _parsed(text).copy().transform(bind, copy=False).transform(lambda node: _id_text(node, info), copy=False)
    name_qualified_columns(tree)  # ClickHouse names `SELECT c.x`'s column `c.x`
    if info.name == "clickhouse" and isinstance(tree, exp.Select):  # outer joins' misses NULL, as COALESCE expects
        tree.set("settings", [exp.EQ(this=exp.column("join_use_nulls"), expression=exp.Literal.number(1))])
    # The ORDER BYs number groups or read positions, never NULL where the order matters: the dialect's default NULL
    # order, spelled by no NULLS clause (which some engines do not take in a window).
    small = Dialect.get_or_raise(info.sqlglot).NULL_ORDERING == "nulls_are_small"
    for ordered in tree.find_all(exp.Ordered):
        ordered.set("nulls_first", small)
    if create:
        tree = create_table(tree, tables[target].copy(), info)
    return tree.sql(dialect=info.sqlglot, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)


def _id_text(node, info):
    """sqlm_id(x): an id (session, query, doc, segment) as the engine must compare it; sqlm_text(x): as it comes out.
    MySQL's and MariaDB's default collations equal 'a' and 'A' (and 'a '): there ids are bytes inside, text outside,
    as render() has them. Elsewhere both are x."""
    if isinstance(node, exp.Anonymous) and node.name in ("sqlm_id", "sqlm_text"):
        value = node.expressions[0]
        if info.ids != "binary":
            return value
        return exp.cast(value, exp.DataType.build("BINARY" if node.name == "sqlm_id" else "CHAR", dialect="mysql"))
    return node


@lru_cache(maxsize=256)
def _parsed(text: str) -> exp.Expression:
    """A statement of the DuckDB source, parsed once per process (the same text for every dialect): copy it."""
    return sqlglot.parse_one(text, read="duckdb")


# --- the scripts, in DuckDB's dialect. Every number is a DOUBLE where it is divided or iterated: an engine that reads
# 0.5 as a DECIMAL (PostgreSQL's NUMERIC) would otherwise iterate in decimals.

def _segs(n: int, table: str = "", alias: bool = False) -> str:
    """The segment columns (seg_1, ...), each followed by a comma; alias: as the log's names (the output's)."""
    dot = f"{table}." if table else ""
    if alias:
        return "".join(f"sqlm_text({dot}sqlm_seg_{i}) AS sqlm_c_seg_{i}, " for i in range(1, n + 1))
    return "".join(f"{dot}sqlm_seg_{i}, " for i in range(1, n + 1))


def _rows(n: int, window: str = "") -> str:
    """The log's rows under the script's names, the click as an integer (a boolean column counts); window: a column
    more, computed over those names."""
    rows = (f"SELECT {''.join(f'sqlm_id(sqlm_c_seg_{i}) AS sqlm_seg_{i}, ' for i in range(1, n + 1))}"
            "sqlm_id(sqlm_c_session) AS sqlm_session, sqlm_id(sqlm_c_query) AS sqlm_query, sqlm_id(sqlm_c_doc) AS "
            "sqlm_doc, sqlm_c_position AS sqlm_position, CAST(sqlm_c_clicked AS INTEGER) AS sqlm_clicked FROM sqlm_log")
    return f"SELECT *, {window} FROM ({rows}) l" if window else rows


def _drop(*tables: str) -> list:
    return [f"DROP TABLE IF EXISTS sqlm_t_{t}" for t in tables]


def _closed(n: int, which: str, satisfaction: bool) -> list:
    """Cascade (which = MIN: down to the first click) or SDBN (MAX: the last), closed.py's estimates: alpha = clicks /
    rows at or above the session's stopping click (every row of a session without one); SDBN's sigma = last clicks /
    clicks."""
    stop = f"{which}(CASE WHEN sqlm_clicked = 1 THEN sqlm_position END) OVER (PARTITION BY sqlm_session) AS sqlm_stop"
    script = _drop("attractiveness", *(["satisfaction"] if satisfaction else []))
    script.append(f"""CREATE TABLE sqlm_t_attractiveness AS
        SELECT {_segs(n, alias=True)}sqlm_text(sqlm_query) AS sqlm_o_query, sqlm_text(sqlm_doc) AS sqlm_o_doc,
               CAST(SUM(sqlm_clicked) AS DOUBLE) / COUNT(*) AS sqlm_o_attractiveness, COUNT(*) AS sqlm_o_impressions,
               CAST(SUM(sqlm_clicked) AS BIGINT) AS sqlm_o_clicks
        FROM ({_rows(n, stop)}) r
        WHERE sqlm_stop IS NULL OR sqlm_position <= sqlm_stop
        GROUP BY {_segs(n)}sqlm_query, sqlm_doc""")
    if satisfaction:
        last = "CASE WHEN sqlm_position = sqlm_stop THEN 1 ELSE 0 END"
        script.append(f"""CREATE TABLE sqlm_t_satisfaction AS
            SELECT {_segs(n, alias=True)}sqlm_text(sqlm_query) AS sqlm_o_query, sqlm_text(sqlm_doc) AS sqlm_o_doc,
                   CAST(SUM({last}) AS DOUBLE) / COUNT(*) AS sqlm_o_satisfaction, COUNT(*) AS sqlm_o_clicks,
                   CAST(SUM({last}) AS BIGINT) AS sqlm_o_last_clicks
            FROM ({_rows(n, stop)}) r
            WHERE sqlm_clicked = 1
            GROUP BY {_segs(n)}sqlm_query, sqlm_doc""")
    return script


def _em(n: int, iterations: int, slot: tuple, rows: str) -> list:
    """PBM's EM (pbm.py), or UBM's (slot: position and previous click): the log counted once per (segment, query,
    doc, slot) into `cells`, each cell with its pair's and slot's number; alpha and gamma at 0.5; `iterations`
    simultaneous updates, each two GROUP BYs over the cells joined to the previous values (alpha_i, gamma_i: two
    tables each, written in turn); then the parameter tables with their counts."""
    work = ["cells", "alpha_0", "alpha_1", "gamma_0", "gamma_1"]
    keys = ", ".join(f"sqlm_{k}" for k in slot)
    script = _drop("attractiveness", "examination", *work)
    script.append(f"""CREATE TABLE sqlm_t_cells AS
        SELECT *, DENSE_RANK() OVER (ORDER BY {_segs(n)}sqlm_query, sqlm_doc) AS sqlm_pair,
               DENSE_RANK() OVER (ORDER BY {_segs(n)}{keys}) AS sqlm_slot
        FROM (SELECT {_segs(n)}sqlm_query, sqlm_doc, {keys}, COUNT(*) AS sqlm_n,
                     CAST(SUM(sqlm_clicked) AS BIGINT) AS sqlm_k
              FROM ({rows}) r GROUP BY {_segs(n)}sqlm_query, sqlm_doc, {keys}) c""")
    for table, key in (("alpha", "sqlm_pair"), ("gamma", "sqlm_slot")):
        script.append(f"CREATE TABLE sqlm_t_{table}_0 AS SELECT DISTINCT {key}, CAST({INITIAL} AS DOUBLE) AS "
                      "sqlm_value FROM sqlm_t_cells")
    denominator = f"GREATEST(1 - g.sqlm_value * a.sqlm_value, CAST({FLOOR} AS DOUBLE))"
    updates = {"alpha": ("sqlm_pair", f"(c.sqlm_n - c.sqlm_k) * (1 - g.sqlm_value) * a.sqlm_value / {denominator}"),
               "gamma": ("sqlm_slot", f"(c.sqlm_n - c.sqlm_k) * g.sqlm_value * (1 - a.sqlm_value) / {denominator}")}
    for i in range(1, iterations + 1):
        old, new = (i - 1) % 2, i % 2
        script += _drop(f"alpha_{new}", f"gamma_{new}")
        for table, (key, expected) in updates.items():
            script.append(f"""CREATE TABLE sqlm_t_{table}_{new} AS
                SELECT c.{key}, CAST(SUM(c.sqlm_k + {expected}) AS DOUBLE) / SUM(c.sqlm_n) AS sqlm_value
                FROM sqlm_t_cells c JOIN sqlm_t_alpha_{old} a ON a.sqlm_pair = c.sqlm_pair
                JOIN sqlm_t_gamma_{old} g ON g.sqlm_slot = c.sqlm_slot
                GROUP BY c.{key}""")
    last = iterations % 2
    out_keys = ", ".join(f"c.sqlm_{k} AS sqlm_o_{k}" for k in slot)
    counts = "CAST(SUM(c.sqlm_n) AS BIGINT) AS sqlm_o_impressions, CAST(SUM(c.sqlm_k) AS BIGINT) AS sqlm_o_clicks"
    group = f"{_segs(n, 'c')}"
    script.append(f"""CREATE TABLE sqlm_t_attractiveness AS
        SELECT {_segs(n, 'c', alias=True)}sqlm_text(c.sqlm_query) AS sqlm_o_query, sqlm_text(c.sqlm_doc) AS sqlm_o_doc,
               MIN(a.sqlm_value) AS sqlm_o_attractiveness, {counts}
        FROM sqlm_t_cells c JOIN sqlm_t_alpha_{last} a ON a.sqlm_pair = c.sqlm_pair
        GROUP BY c.sqlm_pair, {group}c.sqlm_query, c.sqlm_doc""")
    script.append(f"""CREATE TABLE sqlm_t_examination AS
        SELECT {_segs(n, 'c', alias=True)}{out_keys}, MIN(g.sqlm_value) AS sqlm_o_examination, {counts}
        FROM sqlm_t_cells c JOIN sqlm_t_gamma_{last} g ON g.sqlm_slot = c.sqlm_slot
        GROUP BY c.sqlm_slot, {group}{', '.join(f'c.sqlm_{k}' for k in slot)}""")
    return script + _drop(*work)


def _dcm(n: int, iterations: int) -> list:
    """DCM's EM (dcm.py): the log's rows copied once with their pair's and position's numbers and the session's last
    click, into the pairs (impressions, clicks), the clicked positions (clicks, last clicks), each session's end (the
    slot of its last click) and the rows below it; alpha and lambda at 0.5; `iterations` simultaneous updates, each
    alpha and lambda from w = P(went on after the last click | clicks) of the previous values."""
    work = ["rows", "pairs", "slots", "ends", "below", "alpha_0", "alpha_1", "lambda_0", "lambda_1"]
    last = "MAX(CASE WHEN sqlm_clicked = 1 THEN sqlm_position END) OVER (PARTITION BY sqlm_session) AS sqlm_last"
    script = _drop("attractiveness", "continuation", *work)
    script.append(f"""CREATE TABLE sqlm_t_rows AS
        SELECT *, DENSE_RANK() OVER (ORDER BY {_segs(n)}sqlm_query, sqlm_doc) AS sqlm_pair,
               DENSE_RANK() OVER (ORDER BY {_segs(n)}sqlm_position) AS sqlm_slot
        FROM ({_rows(n, last)}) r""")
    script.append(f"""CREATE TABLE sqlm_t_pairs AS
        SELECT sqlm_pair, {_segs(n)}sqlm_query, sqlm_doc, COUNT(*) AS sqlm_n,
               CAST(SUM(sqlm_clicked) AS BIGINT) AS sqlm_k
        FROM sqlm_t_rows GROUP BY sqlm_pair, {_segs(n)}sqlm_query, sqlm_doc""")
    script.append(f"""CREATE TABLE sqlm_t_slots AS
        SELECT sqlm_slot, {_segs(n)}sqlm_position, COUNT(*) AS sqlm_clicks,
               CAST(SUM(CASE WHEN sqlm_position = sqlm_last THEN 1 ELSE 0 END) AS BIGINT) AS sqlm_last_clicks
        FROM sqlm_t_rows WHERE sqlm_clicked = 1 GROUP BY sqlm_slot, {_segs(n)}sqlm_position""")
    script.append("CREATE TABLE sqlm_t_ends AS SELECT sqlm_session, sqlm_slot FROM sqlm_t_rows "
                  "WHERE sqlm_position = sqlm_last")
    script.append("CREATE TABLE sqlm_t_below AS SELECT sqlm_session, sqlm_pair FROM sqlm_t_rows "
                  "WHERE sqlm_position > sqlm_last")
    for table, (key, keys) in (("alpha", ("sqlm_pair", "pairs")), ("lambda", ("sqlm_slot", "slots"))):
        script.append(f"CREATE TABLE sqlm_t_{table}_0 AS SELECT {key}, CAST({INITIAL} AS DOUBLE) AS sqlm_value "
                      f"FROM sqlm_t_{keys}")
    for i in range(1, iterations + 1):
        old, new = (i - 1) % 2, i % 2
        went = _went_on(old)
        script += _drop(f"alpha_{new}", f"lambda_{new}")
        script.append(f"""CREATE TABLE sqlm_t_alpha_{new} AS
            SELECT p.sqlm_pair, CAST(p.sqlm_k + COALESCE(u.sqlm_unread, 0) AS DOUBLE) / p.sqlm_n AS sqlm_value
            FROM sqlm_t_pairs p LEFT JOIN (
                SELECT b.sqlm_pair, SUM((1 - w.sqlm_went) * a.sqlm_value) AS sqlm_unread
                FROM sqlm_t_below b JOIN ({went}) w ON w.sqlm_session = b.sqlm_session
                JOIN sqlm_t_alpha_{old} a ON a.sqlm_pair = b.sqlm_pair GROUP BY b.sqlm_pair) u
            ON u.sqlm_pair = p.sqlm_pair""")
        script.append(f"""CREATE TABLE sqlm_t_lambda_{new} AS
            SELECT s.sqlm_slot,
                   CAST(s.sqlm_clicks - s.sqlm_last_clicks + COALESCE(w.sqlm_went, 0) AS DOUBLE) / s.sqlm_clicks
                       AS sqlm_value
            FROM sqlm_t_slots s LEFT JOIN (SELECT sqlm_slot, SUM(sqlm_went) AS sqlm_went FROM ({went}) e
                                           GROUP BY sqlm_slot) w ON w.sqlm_slot = s.sqlm_slot""")
    final = iterations % 2
    script.append(f"""CREATE TABLE sqlm_t_attractiveness AS
        SELECT {_segs(n, 'p', alias=True)}sqlm_text(p.sqlm_query) AS sqlm_o_query, sqlm_text(p.sqlm_doc) AS sqlm_o_doc,
               a.sqlm_value AS sqlm_o_attractiveness, p.sqlm_n AS sqlm_o_impressions, p.sqlm_k AS sqlm_o_clicks
        FROM sqlm_t_pairs p JOIN sqlm_t_alpha_{final} a ON a.sqlm_pair = p.sqlm_pair""")
    script.append(f"""CREATE TABLE sqlm_t_continuation AS
        SELECT {_segs(n, 's', alias=True)}s.sqlm_position AS sqlm_o_position, l.sqlm_value AS sqlm_o_continuation,
               s.sqlm_clicks AS sqlm_o_clicks, s.sqlm_last_clicks AS sqlm_o_last_clicks
        FROM sqlm_t_slots s JOIN sqlm_t_lambda_{final} l ON l.sqlm_slot = s.sqlm_slot""")
    return script + _drop(*work)


def _went_on(old: int) -> str:
    """Per session with a click: its last click's slot and w = lambda S / (1 - lambda + lambda S), S the product
    below it of (1 - alpha) (1 for none), from the previous values (dcm.py's _went_on). The product is EXP(SUM(LN))
    with its zeros counted (an alpha of 1 below makes it 0; LN never sees a 0, which PostgreSQL refuses even in a
    branch not taken): not every engine has PRODUCT."""
    stay = "COALESCE(b.sqlm_stay, 1)"
    return f"""
        SELECT e.sqlm_session, e.sqlm_slot,
               l.sqlm_value * {stay} / GREATEST(1 - l.sqlm_value + l.sqlm_value * {stay}, CAST({FLOOR} AS DOUBLE))
                   AS sqlm_went
        FROM sqlm_t_ends e JOIN sqlm_t_lambda_{old} l ON l.sqlm_slot = e.sqlm_slot
        LEFT JOIN (SELECT d.sqlm_session,
                          CASE WHEN SUM(CASE WHEN a.sqlm_value >= 1 THEN 1 ELSE 0 END) > 0 THEN 0
                               ELSE EXP(SUM(LN(CASE WHEN a.sqlm_value < 1 THEN 1 - a.sqlm_value ELSE 1 END)))
                          END AS sqlm_stay
                   FROM sqlm_t_below d JOIN sqlm_t_alpha_{old} a ON a.sqlm_pair = d.sqlm_pair
                   GROUP BY d.sqlm_session) b ON b.sqlm_session = e.sqlm_session"""


def _dbn(n: int, iterations: int) -> list:
    """DBN's EM (dbn.py), per session where dbn.py groups the sessions' equal suffixes (the same sums, in another
    order): the log's rows copied once with their pair, segment, the session's last click l (0: none) and its pair;
    the fixed counts per pair and per segment; the rows below l (steps, k = 1..m); every parameter at 0.5; then
    `iterations` simultaneous updates, each from the posteriors of the previous values (post: each step's P(E = 1 |
    C), ends: each last click's P(S = 1 | C))."""
    work = ["rows", "counts", "segments", "steps", "post", "ends", "alpha_0", "alpha_1", "sigma_0", "sigma_1",
            "gamma_0", "gamma_1"]
    script = _drop("attractiveness", "satisfaction", "continuation", *work)
    seg = f"DENSE_RANK() OVER (ORDER BY {_segs(n).rstrip(', ')})" if n else "1"
    last = ("COALESCE(MAX(CASE WHEN sqlm_clicked = 1 THEN sqlm_position END) OVER (PARTITION BY sqlm_session), 0) "
            "AS sqlm_last, MAX(sqlm_position) OVER (PARTITION BY sqlm_session) AS sqlm_length")
    script.append(f"""CREATE TABLE sqlm_t_rows AS
        SELECT *, MAX(CASE WHEN sqlm_position = sqlm_last THEN sqlm_pair END) OVER (PARTITION BY sqlm_session)
                      AS sqlm_last_pair
        FROM (SELECT *, DENSE_RANK() OVER (ORDER BY {_segs(n)}sqlm_query, sqlm_doc) AS sqlm_pair, {seg} AS sqlm_seg
              FROM ({_rows(n, last)}) r) p""")
    is_last = "CASE WHEN sqlm_position = sqlm_last THEN 1 ELSE 0 END"
    counts = (f"COUNT(*) AS sqlm_impressions, CAST(SUM(sqlm_clicked) AS BIGINT) AS sqlm_clicks, "
              f"CAST(SUM({is_last}) AS BIGINT) AS sqlm_last_clicks")
    script.append(f"""CREATE TABLE sqlm_t_counts AS
        SELECT sqlm_pair, sqlm_seg, {_segs(n)}sqlm_query, sqlm_doc, {counts}
        FROM sqlm_t_rows GROUP BY sqlm_pair, sqlm_seg, {_segs(n)}sqlm_query, sqlm_doc""")
    script.append(f"""CREATE TABLE sqlm_t_segments AS
        SELECT sqlm_seg, {_segs(n)}SUM(CASE WHEN sqlm_position < sqlm_last THEN 1 ELSE 0 END) AS sqlm_above, {counts}
        FROM sqlm_t_rows GROUP BY sqlm_seg{''.join(f', sqlm_seg_{i}' for i in range(1, n + 1))}""")
    script.append("""CREATE TABLE sqlm_t_steps AS
        SELECT sqlm_session, sqlm_seg, sqlm_pair, sqlm_last_pair, sqlm_position - sqlm_last AS sqlm_k,
               sqlm_length - sqlm_last AS sqlm_m
        FROM sqlm_t_rows WHERE sqlm_position > sqlm_last""")
    script.append("""CREATE TABLE sqlm_t_ends AS
        SELECT DISTINCT sqlm_session, sqlm_seg, sqlm_last_pair, sqlm_length - sqlm_last AS sqlm_m
        FROM sqlm_t_rows WHERE sqlm_last > 0""")
    for table, key, source, where in (("alpha", "sqlm_pair", "counts", ""),
                                      ("sigma", "sqlm_pair", "counts", " WHERE sqlm_clicks > 0"),
                                      ("gamma", "sqlm_seg", "segments", "")):
        script.append(f"CREATE TABLE sqlm_t_{table}_0 AS SELECT {key}, CAST({INITIAL} AS DOUBLE) AS sqlm_value "
                      f"FROM sqlm_t_{source}{where}")
    floor = f"CAST({FLOOR} AS DOUBLE)"
    for i in range(1, iterations + 1):
        old, new = (i - 1) % 2, i % 2
        script += _drop("post", "ends_post", f"alpha_{new}", f"sigma_{new}", f"gamma_{new}")
        script.append(_dbn_posteriors(old))
        script.append(f"""CREATE TABLE sqlm_t_ends_post AS
            SELECT h.sqlm_seg, h.sqlm_last_pair, h.sqlm_m,
                   CASE WHEN h.sqlm_m = 0 THEN s.sqlm_value
                        ELSE LEAST(s.sqlm_value / GREATEST(p.sqlm_no_click, {floor}), 1) END AS sqlm_satisfied
            FROM sqlm_t_ends h JOIN sqlm_t_sigma_{old} s ON s.sqlm_pair = h.sqlm_last_pair
            LEFT JOIN sqlm_t_post p ON p.sqlm_session = h.sqlm_session AND p.sqlm_k = 1""")
        script.append(f"""CREATE TABLE sqlm_t_alpha_{new} AS
            SELECT c.sqlm_pair, CAST(c.sqlm_clicks + COALESCE(x.sqlm_attracted, 0) AS DOUBLE) / c.sqlm_impressions
                       AS sqlm_value
            FROM sqlm_t_counts c LEFT JOIN (
                SELECT sqlm_pair, SUM(sqlm_a * (1 - sqlm_examined)) AS sqlm_attracted FROM sqlm_t_post
                GROUP BY sqlm_pair) x ON x.sqlm_pair = c.sqlm_pair""")
        script.append(f"""CREATE TABLE sqlm_t_sigma_{new} AS
            SELECT c.sqlm_pair, LEAST(CAST(COALESCE(x.sqlm_satisfied, 0) AS DOUBLE) / c.sqlm_clicks, 1) AS sqlm_value
            FROM sqlm_t_counts c LEFT JOIN (
                SELECT sqlm_last_pair, SUM(sqlm_satisfied) AS sqlm_satisfied FROM sqlm_t_ends_post
                GROUP BY sqlm_last_pair) x ON x.sqlm_last_pair = c.sqlm_pair
            WHERE c.sqlm_clicks > 0""")
        # gamma: the transitions r -> r+1 (r < n), as dbn.py counts them.
        script.append(f"""CREATE TABLE sqlm_t_gamma_{new} AS
            SELECT sqlm_seg, CASE WHEN sqlm_made_out > 0 THEN LEAST(sqlm_made_in / sqlm_made_out, 1) ELSE sqlm_value
                             END AS sqlm_value
            FROM (
                SELECT s.sqlm_seg, g.sqlm_value,
                       CAST(s.sqlm_above + COALESCE(p.sqlm_into, 0) AS DOUBLE) AS sqlm_made_in,
                       CAST(s.sqlm_above + COALESCE(p.sqlm_out, 0) + COALESCE(l.sqlm_out, 0) AS DOUBLE) AS sqlm_made_out
                FROM sqlm_t_segments s JOIN sqlm_t_gamma_{old} g ON g.sqlm_seg = s.sqlm_seg
                LEFT JOIN (SELECT sqlm_seg,
                                  SUM(CASE WHEN sqlm_last_pair IS NOT NULL OR sqlm_k > 1 THEN sqlm_examined END)
                                      AS sqlm_into,
                                  SUM(CASE WHEN sqlm_k < sqlm_m THEN sqlm_examined END) AS sqlm_out
                           FROM sqlm_t_post GROUP BY sqlm_seg) p ON p.sqlm_seg = s.sqlm_seg
                LEFT JOIN (SELECT sqlm_seg, SUM(1 - sqlm_satisfied) AS sqlm_out FROM sqlm_t_ends_post
                           WHERE sqlm_m > 0 GROUP BY sqlm_seg) l ON l.sqlm_seg = s.sqlm_seg) t""")
    final = iterations % 2
    script.append(f"""CREATE TABLE sqlm_t_attractiveness AS
        SELECT {_segs(n, 'c', alias=True)}sqlm_text(c.sqlm_query) AS sqlm_o_query, sqlm_text(c.sqlm_doc) AS sqlm_o_doc,
               a.sqlm_value AS sqlm_o_attractiveness, c.sqlm_impressions AS sqlm_o_impressions,
               c.sqlm_clicks AS sqlm_o_clicks
        FROM sqlm_t_counts c JOIN sqlm_t_alpha_{final} a ON a.sqlm_pair = c.sqlm_pair""")
    script.append(f"""CREATE TABLE sqlm_t_satisfaction AS
        SELECT {_segs(n, 'c', alias=True)}sqlm_text(c.sqlm_query) AS sqlm_o_query, sqlm_text(c.sqlm_doc) AS sqlm_o_doc,
               s.sqlm_value AS sqlm_o_satisfaction, c.sqlm_clicks AS sqlm_o_clicks,
               c.sqlm_last_clicks AS sqlm_o_last_clicks
        FROM sqlm_t_counts c JOIN sqlm_t_sigma_{final} s ON s.sqlm_pair = c.sqlm_pair""")
    script.append(f"""CREATE TABLE sqlm_t_continuation AS
        SELECT {_segs(n, 's', alias=True)}g.sqlm_value AS sqlm_o_continuation, s.sqlm_impressions AS sqlm_o_impressions,
               s.sqlm_clicks AS sqlm_o_clicks, s.sqlm_last_clicks AS sqlm_o_last_clicks
        FROM sqlm_t_segments s JOIN sqlm_t_gamma_{final} g ON g.sqlm_seg = s.sqlm_seg""")
    return script + _drop(*work, "ends_post")


def _dbn_posteriors(old: int) -> str:
    """post: each step with a = alpha, its P(E = 1 | C) (examined) and its session's chance of no click below l,
    N (dbn.py's _posteriors). The running product of (1 - alpha) above each step is EXP(SUM(LN)) over the window with
    its zeros counted, as in DCM."""
    floor = f"CAST({FLOOR} AS DOUBLE)"
    above = "PARTITION BY t.sqlm_session ORDER BY t.sqlm_k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""CREATE TABLE sqlm_t_post AS
        SELECT sqlm_session, sqlm_k, sqlm_m, sqlm_pair, sqlm_seg, sqlm_last_pair, sqlm_a,
               LEAST(SUM(sqlm_w) OVER (PARTITION BY sqlm_session ORDER BY sqlm_k
                                       ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
                     / GREATEST(1 - sqlm_e + SUM(sqlm_w) OVER (PARTITION BY sqlm_session), {floor}), 1)
                   AS sqlm_examined,
               1 - sqlm_e + SUM(sqlm_w) OVER (PARTITION BY sqlm_session) AS sqlm_no_click
        FROM (
            SELECT *, sqlm_e * POWER(sqlm_g, sqlm_k - 1) * sqlm_before * (1 - sqlm_a)
                          * CASE WHEN sqlm_k < sqlm_m THEN 1 - sqlm_g ELSE 1 END AS sqlm_w
            FROM (
                SELECT t.sqlm_session, t.sqlm_k, t.sqlm_m, t.sqlm_pair, t.sqlm_seg, t.sqlm_last_pair,
                       a.sqlm_value AS sqlm_a, g.sqlm_value AS sqlm_g,
                       CASE WHEN t.sqlm_last_pair IS NULL THEN 1 ELSE g.sqlm_value * (1 - s.sqlm_value) END AS sqlm_e,
                       CASE WHEN SUM(CASE WHEN a.sqlm_value >= 1 THEN 1 ELSE 0 END) OVER ({above}) > 0 THEN 0
                            ELSE COALESCE(EXP(SUM(LN(CASE WHEN a.sqlm_value < 1 THEN 1 - a.sqlm_value ELSE 1 END))
                                              OVER ({above})), 1) END AS sqlm_before
                FROM sqlm_t_steps t JOIN sqlm_t_alpha_{old} a ON a.sqlm_pair = t.sqlm_pair
                JOIN sqlm_t_gamma_{old} g ON g.sqlm_seg = t.sqlm_seg
                LEFT JOIN sqlm_t_sigma_{old} s ON s.sqlm_pair = t.sqlm_last_pair) x) y"""


# UBM's rows: each with the position of the session's last click above it (0: none), as ubm.py's _ROWS.
_PREVIOUS = ("COALESCE(MAX(CASE WHEN sqlm_clicked = 1 THEN sqlm_position END) OVER (PARTITION BY sqlm_session "
             "ORDER BY sqlm_position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS sqlm_previous_click")
SCRIPTS = {
    "cascade": lambda n, iterations: _closed(n, "MIN", False),
    "sdbn": lambda n, iterations: _closed(n, "MAX", True),
    "pbm": lambda n, iterations: _em(n, iterations, ("position",), _rows(n)),
    "ubm": lambda n, iterations: _em(n, iterations, UBM_SLOT, _rows(n, _PREVIOUS)),
    "dcm": _dcm,
    "dbn": _dbn,
}
