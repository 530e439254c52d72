"""A click log read and checked once: one row per shown (session, position) with the query, the document and
whether it was clicked. Readers (local.readers.load, kind 'clicks') give the view; here its values are typed and
every problem is named by its row, and what is left is one view the models read (each model reads it once or
twice, into the counts it iterates over: a log of 100M rows is never copied whole):

    sqlm_clicks(seg, session, query, doc, position BIGINT, clicked INTEGER)   seg: the segment's number, 0.. ;
    sqlm_segments(seg, seg_1, seg_2, ...)   the group_by columns' values, each segment's; checked_log() returns
                                            their names as the log spells them

A session is one result page of one query in one segment: its positions are 1..n, each once."""
from __future__ import annotations

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..local.logs import _resolve_column
from ..local.readers import Loaded
from ..local.readers.loaded import _types

ROLES = ("session", "query", "doc", "position", "clicked")
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "UHUGEINT", "FLOAT", "DOUBLE")
MAX_POSITION = 1_000_000_000  # a position past this is a timestamp or an id, not a rank


def checked_log(con, loaded: Loaded, group_by: tuple) -> tuple:
    """Type the log as the view sqlm_clicks (and the table sqlm_segments), or raise the SqlmetricsError of its first
    problem; the segment columns' names as the log spells them (group_by= may differ in case). The segments keep numbered names
    inside (seg_1, ...): a log's column may be called anything, `seg` too.

    The log is read once here: one GROUP BY session checks every value and every session. Row numbers, which a log of
    100M rows would pay for in a sort, are computed only to name the rows of a problem found."""
    types = _types(con, loaded.view)
    segments = [_resolve_column(name, list(types), loaded.label, "group_by") for name in group_by]
    seg_cols = [f"seg_{i}" for i in range(1, len(segments) + 1)]
    for view, numbered in (("sqlm_typed", False), ("sqlm_typed_lines", True)):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS {_typed(loaded, types, segments, numbered)}")
    _refuse_bad_rows(con, loaded, segments, seg_cols)
    # Segments by number: every later join is on an integer, and a NULL segment value is one segment of its own.
    seg_list = ", ".join(seg_cols)
    con.execute("CREATE OR REPLACE TEMP TABLE sqlm_segments AS " + (
        f"SELECT ROW_NUMBER() OVER (ORDER BY {seg_list}) - 1 AS seg, * FROM (SELECT DISTINCT {seg_list} "
        "FROM sqlm_sessions)" if seg_cols else "SELECT 0 AS seg"))
    same = " AND ".join(f"t.{c} IS NOT DISTINCT FROM s.{c}" for c in seg_cols)
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW sqlm_clicks AS
        SELECT s.seg, {''.join(f't.{c}, ' for c in seg_cols)}t.session, t.query, t.doc,
               CAST(t.position AS BIGINT) AS position, CAST(t.clicked AS INTEGER) AS clicked
        FROM sqlm_typed t {f'JOIN sqlm_segments s ON {same}' if seg_cols else 'CROSS JOIN sqlm_segments s'}""")
    con.execute("DROP TABLE sqlm_sessions")
    con.execute("DROP VIEW sqlm_typed_lines")
    return tuple(segments)


def _typed(loaded: Loaded, types: dict, segments: list, numbered: bool) -> str:
    """SQL of the log's rows typed (numbered: line_no first): the segments, session, query, doc, position (a DOUBLE,
    NULL where it is no number), clicked (1, 0 or NULL), and the position and click as given (for the error naming a
    bad one)."""
    c = {role: _q(loaded.columns[role]) for role in ROLES}
    seg_items = "".join(f"{_q(s)} AS seg_{i}, " for i, s in enumerate(segments, 1))
    position, clicked = (types[loaded.columns[role]] for role in ("position", "clicked"))
    return (f"SELECT {'line_no, ' if numbered else ''}{seg_items}{c['session']} AS session, {c['query']} AS query, "
            f"{c['doc']} AS doc, {_number(c['position'], position)} AS position, {c['position']} AS position_as_given, "
            f"{_click(c['clicked'], clicked)} AS clicked, {c['clicked']} AS clicked_as_given "
            f"FROM {loaded.numbered if numbered else loaded.view}")


def _number(column: str, kind: str) -> str:
    """SQL: the value as a DOUBLE, NULL where it is none (text that is no number, a date)."""
    if kind in _NUMERIC or kind.startswith("DECIMAL"):
        return f"CAST({column} AS DOUBLE)"
    return f"TRY_CAST(CAST({column} AS VARCHAR) AS DOUBLE)"


def _click(column: str, kind: str) -> str:
    """SQL: 1 or 0 for a click or none (a number, a boolean, or text such as '1' and 'true'); NULL for anything else,
    which the checks refuse. Text too, as CSV and JSON Lines are read as text."""
    if kind == "BOOLEAN":
        return f"CAST({column} AS INTEGER)"
    text = f"lower(trim(CAST({column} AS VARCHAR)))"
    number = _number(column, kind)
    return (f"CASE WHEN {number} IN (0, 1) THEN CAST({number} AS INTEGER) WHEN {text} = 'true' THEN 1 "
            f"WHEN {text} = 'false' THEN 0 END")


# A session's positions seen as bits (position p sets bit p - 1): each position once is as many bits as rows. Exact
# for positions up to 64; a session reaching past them is checked by counting its (session, position) pairs.
_BITS = 64


def _refuse_bad_rows(con, loaded: Loaded, segments: list, seg_cols: list) -> None:
    """One GROUP BY session (sqlm_sessions) finds every problem; the rows are located (sqlm_typed_lines) only for the
    one named. In this order: no row at all; a row without a session, query or document; a position that is no whole
    number from 1; a click that is neither 0 nor 1 (NULL included); a session with two queries or in two segments
    (its id is not one result page's); a position shown twice (named as a repeat, before the gap it also makes); a
    position missing."""
    c = loaded.columns
    problems = {
        "session": ("session IS NULL", f"has no session (NULL in column {c['session']!r}); every row belongs to "
                                       "one session (one result page)"),
        "query": ("query IS NULL", f"has no query (NULL in column {c['query']!r})"),
        "doc": ("doc IS NULL", f"has no document (NULL in column {c['doc']!r})"),
        "position": (f"position IS NULL OR NOT isfinite(position) OR position <> floor(position) OR position < 1 "
                     f"OR position > {MAX_POSITION}",
                     f"has the position {{value}} (column {c['position']!r}); a position is a whole number 1, 2, ... "
                     "within its session"),
        "clicked": ("clicked IS NULL", f"has the click {{value}} (column {c['clicked']!r}); a click is 0 or 1 "
                                       "(or true/false): give every shown document one"),
    }
    # A segment column's values differ within a session when its least and greatest differ, or some are NULL.
    mixed_segments = " OR ".join(f"MIN({s}) IS DISTINCT FROM MAX({s}) OR COUNT({s}) NOT IN (0, COUNT(*))"
                                 for s in seg_cols) or "false"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_sessions AS
        SELECT session, {''.join(f'COUNT(*) FILTER (WHERE {where}) AS bad_{role}, '
                                 for role, (where, _) in problems.items())}
               MIN(query) <> MAX(query) AS queries, {mixed_segments} AS segments,
               {''.join(f'ANY_VALUE({s}) AS {s}, ' for s in seg_cols)}COUNT(*) AS shown, MAX(position) AS last_position,
               bit_count(BIT_OR(CASE WHEN position BETWEEN 1 AND {_BITS} AND position = floor(position)
                                     THEN CAST(1 AS UBIGINT) << CAST(position - 1 AS BIGINT) END))
                 + COUNT(*) FILTER (WHERE position > {_BITS}) AS distinct_positions
        FROM sqlm_typed GROUP BY session""")
    totals = con.execute("SELECT COUNT(*), " + ", ".join(f"SUM(bad_{role})" for role in problems) + f"""
        , COUNT(*) FILTER (WHERE queries OR segments), COUNT(*) FILTER (WHERE last_position > {_BITS}),
        COUNT(*) FILTER (WHERE distinct_positions < shown), COUNT(*) FILTER (WHERE last_position > shown)
        FROM sqlm_sessions""").fetchone()
    if not totals[0]:
        raise SqlmetricsError(f"{loaded.label}: has no rows; a click log has one row per shown document (session, "
                              "query, doc, position, clicked).")
    for (role, (where, says)), bad in zip(problems.items(), totals[1:]):
        if not bad:
            continue
        given = f"{role}_as_given" if role in ("position", "clicked") else "NULL"
        first, value = con.execute(f"SELECT line_no, {given} FROM sqlm_typed_lines WHERE {where} ORDER BY line_no "
                                   "LIMIT 1").fetchone()
        more = f" ({bad} such rows)" if bad > 1 else ""
        shown = repr(value) if value is not None else loaded.missing_as.get(loaded.columns[role], "NULL")
        raise SqlmetricsError(f"{loaded.at(first)}: {says.format(value=shown)}{more}.")
    mixed, past, repeats, gaps = totals[1 + len(problems):]
    if mixed:
        _name_mixed_session(con, loaded, segments)
    if past:  # positions past the bits may repeat unseen: count those sessions' pairs
        con.execute(f"""
            UPDATE sqlm_sessions SET distinct_positions = d.n FROM (
                SELECT session, COUNT(DISTINCT position) AS n FROM sqlm_typed
                WHERE session IN (SELECT session FROM sqlm_sessions WHERE last_position > {_BITS}) GROUP BY session) d
            WHERE sqlm_sessions.session = d.session""")
        repeats = con.execute("SELECT COUNT(*) FILTER (WHERE distinct_positions < shown) FROM sqlm_sessions"
                              ).fetchone()[0]
    if repeats:
        session, position, first, second = con.execute("""
            SELECT session, position, MIN(line_no), MAX(line_no) FROM sqlm_typed_lines
            WHERE session IN (SELECT session FROM sqlm_sessions WHERE distinct_positions < shown)
            GROUP BY session, position HAVING COUNT(*) > 1 ORDER BY MIN(line_no) LIMIT 1""").fetchone()
        raise SqlmetricsError(f"{loaded.at(first, second)}: session {session!r} shows position {int(position)} twice "
                              "(a duplicate row); each (session, position) is one row. Remove the repeat.")
    # Without repeats, positions from 1 are 1..n exactly when the largest is the count.
    if gaps:
        session, missing, line = con.execute("""
            SELECT session, missing, line_no FROM (
                SELECT session, line_no, position,
                       COALESCE(LAG(position) OVER (PARTITION BY session ORDER BY position), 0) + 1 AS missing
                FROM sqlm_typed_lines
                WHERE session IN (SELECT session FROM sqlm_sessions WHERE last_position > shown))
            WHERE position > missing ORDER BY line_no LIMIT 1""").fetchone()
        raise SqlmetricsError(f"{loaded.at(line)}: session {session!r} has no position {int(missing)} (a gap); a "
                              "session's positions are 1, 2, ... n, each shown once. Give the missing row, or number "
                              "the positions again from 1.")


def _name_mixed_session(con, loaded: Loaded, segments: list) -> None:
    """The first session (by its first row) with two queries, or in two segments: the session id is not a result
    page's."""
    session, queries = con.execute("""
        SELECT t.session, ANY_VALUE(s.queries) FROM sqlm_typed_lines t JOIN sqlm_sessions s USING (session)
        WHERE s.queries OR s.segments GROUP BY t.session ORDER BY MIN(t.line_no) LIMIT 1""").fetchone()
    if queries:
        shown = [r[0] for r in con.execute("SELECT DISTINCT query FROM sqlm_typed WHERE session = ? ORDER BY 1 "
                                           "LIMIT 2", [session]).fetchall()]
        raise SqlmetricsError(f"{loaded.label}: session {session!r} has more than one query ({shown[0]!r}, "
                              f"{shown[1]!r}); a session is one result page of one query. Give each page its own "
                              f"session id (column {loaded.columns['session']!r}).")
    raise SqlmetricsError(f"{loaded.label}: session {session!r} is in more than one segment of group_by="
                          f"{segments!r}; a session's rows share their segment. Give each page its own session id, "
                          "or group by a column that is the same on all of a session's rows.")
