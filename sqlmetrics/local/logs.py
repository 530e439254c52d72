"""Log mode (group_by=, or qrels=None with the judgments in the run): each run seen as a view keyed by its
segments, with its labels or relevance= as the relevance, checked and de-duplicated by the whole list key."""
from __future__ import annotations


import duckdb

from ..deferred import exp
from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..relevance import relevance_expression
from .readers import Loaded
from .readers.loaded import _first_line, _fresh


def _present(con, view: str) -> list:
    return [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]


def _resolve_column(name: str, present: list, label: str, what: str) -> str:
    if name in present:
        return name
    folded = [c for c in present if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise SqlmetricsError(f"{label}: {what}={name!r} is not a column (columns: {', '.join(present)}).")


def _log_view(con, loaded: Loaded, segs: tuple, label, relevance, order_role: str, duplicates: str) -> str:
    """A view of one run in log mode: seg_1.., query_id, doc_id, the order column and (labels) relevance;
    checked for repeats by the whole list key, and de-duplicated by it when a policy is given."""
    present = _present(con, loaded.view)
    c = loaded.columns
    items = [f"{_q(_resolve_column(g, present, loaded.label, 'group_by'))} AS seg_{i}"
             for i, g in enumerate(segs, 1)]
    items += [f"{_q(c[r])} AS {r}" for r in ("query_id", "doc_id", order_role)]
    if label is not None:
        col = _q(_resolve_column(label, present, loaded.label, "label"))
        number = f"TRY_CAST({col} AS DOUBLE)"
        bad = con.execute(f"SELECT MIN(line_no), COUNT(*) FROM {loaded.numbered} WHERE {col} IS NOT NULL AND "
                          f"({number} IS NULL OR NOT isfinite({number}) OR contains(CAST({col} AS VARCHAR), '_'))"
                          ).fetchall()[0]
        if bad[1]:
            raise SqlmetricsError(f"{loaded.at(bad[0])}: the label column {label!r} is not a "
                                  f"finite number there ({bad[1]} such {'row' if bad[1] == 1 else 'rows'}). Labels are grades; "
                                  "NULL means unjudged.")
        items.append(f"CAST({col} AS DOUBLE) AS relevance")
    elif relevance is not None:
        items.append(f"{_relevance_sql(con, loaded, relevance, present)} AS relevance")
    key = [f"seg_{i}" for i in range(1, len(segs) + 1)] + ["query_id", "doc_id"]
    base = f"(SELECT line_no, {', '.join(items)} FROM {loaded.numbered})"
    view = _fresh("log")
    if duplicates == "error":
        dup = con.execute(f"SELECT {', '.join(f'CAST({k} AS VARCHAR)' for k in key)} FROM {base} GROUP BY "
                          f"{', '.join(key)} HAVING COUNT(*) > 1 LIMIT 1").fetchall()
        if dup:
            where = " and ".join(f"{g}={v!r}" for g, v in zip(segs, dup[0]))
            raise SqlmetricsError(
                f"{loaded.label}: document {dup[0][-1]!r} appears more than once in the list of query "
                f"{dup[0][-2]!r}{' (' + where + ')' if where else ''}. Remove the repeat, or pass "
                "duplicates='max' (keep the best-placed row) or 'first' (keep the first line).")
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base}")
    else:
        best = ("rank_position ASC NULLS LAST, " if order_role == "rank_position" else "score DESC NULLS LAST, ") \
            if duplicates == "max" else ""
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {', '.join(key)} ORDER BY {best}line_no) = 1")
    return view


def _relevance_sql(con, loaded: Loaded, relevance, present: list) -> str:
    """relevance= over one log as DuckDB SQL, checked: it computes, and never gives NaN or infinity.

    Text columns (CSV and TSV are read as text, so that ids stay as written) are typed first: a column
    whose every value is a number is read as DOUBLE, one of true/false values as BOOLEAN."""
    tree, used = relevance_expression(relevance, present)
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {loaded.view})").fetchall())
    text = [c for c in used if types[c] == "VARCHAR"]
    if text:
        tests = [f"bool_and({_q(c)} IS NULL OR TRY_CAST({_q(c)} AS {t}) IS NOT NULL)" for c in text
                 for t in ("DOUBLE", "BOOLEAN")]
        typed = con.execute(f"SELECT {', '.join(tests)} FROM {loaded.view}").fetchall()[0]
        cast = {c: t for i, c in enumerate(text) for t, ok in zip(("DOUBLE", "BOOLEAN"), typed[2 * i:2 * i + 2])
                if ok and not (t == "BOOLEAN" and typed[2 * i])}
        tree = tree.transform(lambda node: exp.cast(node.copy(), cast[node.name])
                              if isinstance(node, exp.Column) and node.name in cast else node)
    expr = f"CAST(({tree.sql('duckdb')}) AS DOUBLE)"
    try:
        bad = con.execute(f"SELECT MIN(line_no) FILTER (WHERE NOT isfinite({expr})), COUNT(*) FILTER (WHERE NOT "
                          f"isfinite({expr})), COUNT(*) FILTER (WHERE {expr} IS NULL), COUNT(*) "
                          f"FROM {loaded.numbered}").fetchall()[0]
    except duckdb.Error as e:
        raise SqlmetricsError(f"relevance={relevance!r} cannot be computed over {loaded.label}: "
                              f"{_first_line(e)} (boolean columns: CAST(x AS INT), or a "
                              "{column: grade} mapping).") from None
    first, infinite, null, total = bad
    if infinite:
        value = con.execute(f"SELECT {expr} FROM {loaded.numbered} WHERE line_no = {first}").fetchall()[0][0]
        raise SqlmetricsError(
            f"{loaded.at(first)}: relevance={relevance!r} is {value} there ({infinite} such "
            f"{'row' if infinite == 1 else 'rows'}), not a grade: a division by zero? Guard it, e.g. "
            "CASE WHEN d > 0 THEN n / d ELSE 0 END, or NULLIF(d, 0) to leave those rows unjudged.")
    if null:
        warn(f"{loaded.label}: relevance={relevance!r} is NULL in {null} of {total} rows; those documents "
                      "are unjudged (no grade), as a NULL label is.")
    return expr
