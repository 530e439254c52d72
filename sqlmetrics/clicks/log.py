"""A click log read and checked once: one row per shown (session, position) with the query, the document and
whether it was clicked. Readers (local.readers.load, kind 'clicks') give the view; here its values are typed and
every problem is named by its row, and what is left is one table the models read:

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
    """Type the log into sqlm_clicks (and sqlm_segments), or raise the SqlmetricsError of its first problem; the
    segment columns' names as the log spells them (group_by= may differ in case). The segments keep numbered names
    inside (seg_1, ...): a log's column may be called anything, `seg` too."""
    types = _types(con, loaded.view)
    c = {role: _q(loaded.columns[role]) for role in ROLES}
    segments = [_resolve_column(name, list(types), loaded.label, "group_by") for name in group_by]
    seg_items = "".join(f"{_q(s)} AS seg_{i}, " for i, s in enumerate(segments, 1))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_typed AS
        SELECT line_no, {seg_items}{c['session']} AS session, {c['query']} AS query, {c['doc']} AS doc,
               {_number(c['position'], types[loaded.columns['position']])} AS position,
               {c['position']} AS position_as_given,
               {_click(c['clicked'], types[loaded.columns['clicked']])} AS clicked,
               {c['clicked']} AS clicked_as_given
        FROM {loaded.numbered}""")
    _refuse_bad_values(con, loaded)
    seg_cols = [f"seg_{i}" for i in range(1, len(segments) + 1)]
    _refuse_mixed_sessions(con, loaded, segments, seg_cols)
    _refuse_repeats_and_gaps(con, loaded)
    # Segments by number: every later join is on an integer, and a NULL segment value is one segment of its own.
    number = f"DENSE_RANK() OVER (ORDER BY {', '.join(seg_cols)}) - 1" if seg_cols else "0"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_clicks AS
        SELECT {number} AS seg, {''.join(s + ', ' for s in seg_cols)}session, query, doc,
               CAST(position AS BIGINT) AS position, CAST(clicked AS INTEGER) AS clicked
        FROM sqlm_typed""")
    con.execute(f"CREATE OR REPLACE TEMP TABLE sqlm_segments AS SELECT DISTINCT seg{''.join(', ' + c for c in seg_cols)} "
                "FROM sqlm_clicks")
    con.execute("DROP TABLE sqlm_typed")
    con.execute("DROP TABLE sqlm_sessions")
    return tuple(segments)


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


def _refuse_bad_values(con, loaded: Loaded) -> None:
    """No row at all; a row without a session, query or document; a position that is no whole number from 1; a
    click that is neither 0 nor 1 (NULL included)."""
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
    counts = con.execute("SELECT COUNT(*), " + ", ".join(f"MIN(line_no) FILTER (WHERE {where})"
                                                          for where, _ in problems.values()) + " FROM sqlm_typed"
                         ).fetchone()
    if not counts[0]:
        raise SqlmetricsError(f"{loaded.label}: has no rows; a click log has one row per shown document (session, "
                              "query, doc, position, clicked).")
    for (role, (where, says)), first in zip(problems.items(), counts[1:]):
        if first is None:
            continue
        bad = con.execute(f"SELECT COUNT(*) FROM sqlm_typed WHERE {where}").fetchone()[0]
        given = f"{role}_as_given" if role in ("position", "clicked") else "NULL"
        value = con.execute(f"SELECT {given} FROM sqlm_typed WHERE line_no = {first}").fetchone()[0]
        more = f" ({bad} such rows)" if bad > 1 else ""
        shown = repr(value) if value is not None else loaded.missing_as.get(loaded.columns[role], "NULL")
        raise SqlmetricsError(f"{loaded.at(first)}: {says.format(value=shown)}{more}.")


def _refuse_mixed_sessions(con, loaded: Loaded, segments: list, seg_cols: list) -> None:
    """A session with two queries, or in two segments: the session id is not a result page's. Each session's counts
    are kept (sqlm_sessions) for the gap check."""
    segs = f"COUNT(DISTINCT ({', '.join(seg_cols)},))" if seg_cols else "1"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE sqlm_sessions AS
        SELECT session, COUNT(DISTINCT query) AS queries, {segs} AS segments, MIN(line_no) AS first_line,
               COUNT(*) AS shown, MAX(position) AS last_position
        FROM sqlm_typed GROUP BY session""")
    found = con.execute("SELECT session, queries FROM sqlm_sessions WHERE queries > 1 OR segments > 1 "
                        "ORDER BY first_line LIMIT 1").fetchall()
    if not found:
        return
    session, queries = found[0]
    if queries > 1:
        shown = [r[0] for r in con.execute("SELECT DISTINCT query FROM sqlm_typed WHERE session = ? ORDER BY 1 "
                                           "LIMIT 2", [session]).fetchall()]
        raise SqlmetricsError(f"{loaded.label}: session {session!r} has more than one query ({shown[0]!r}, "
                              f"{shown[1]!r}); a session is one result page of one query. Give each page its own "
                              f"session id (column {loaded.columns['session']!r}).")
    raise SqlmetricsError(f"{loaded.label}: session {session!r} is in more than one segment of group_by="
                          f"{segments!r}; a session's rows share their segment. Give each page its own session id, "
                          "or group by a column that is the same on all of a session's rows.")


def _refuse_repeats_and_gaps(con, loaded: Loaded) -> None:
    """Each session's positions are 1..n, each once: a repeated position is named as a repeat (before the gap it
    would also make), then the first position a session lacks. Located row by row only when the counts show one."""
    rows, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT (session, position)) FROM sqlm_typed").fetchone()
    if rows > distinct:
        session, position, first, second = con.execute("""
            SELECT session, position, MIN(line_no), MAX(line_no) FROM sqlm_typed GROUP BY session, position
            HAVING COUNT(*) > 1 ORDER BY MIN(line_no) LIMIT 1""").fetchone()
        raise SqlmetricsError(f"{loaded.at(first, second)}: session {session!r} shows position {int(position)} twice "
                              "(a duplicate row); each (session, position) is one row. Remove the repeat.")
    # Without repeats, positions from 1 are 1..n exactly when the largest is the count.
    if con.execute("SELECT COUNT(*) FROM sqlm_sessions WHERE last_position > shown").fetchone()[0]:
        session, missing, line = con.execute("""
            SELECT session, missing, line_no FROM (
                SELECT session, line_no, position,
                       COALESCE(LAG(position) OVER (PARTITION BY session ORDER BY position), 0) + 1 AS missing
                FROM sqlm_typed WHERE session IN (SELECT session FROM sqlm_sessions WHERE last_position > shown))
            WHERE position > missing ORDER BY line_no LIMIT 1""").fetchone()
        raise SqlmetricsError(f"{loaded.at(line)}: session {session!r} has no position {int(missing)} (a gap); a "
                              "session's positions are 1, 2, ... n, each shown once. Give the missing row, or number "
                              "the positions again from 1.")
