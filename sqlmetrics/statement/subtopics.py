"""The subtopic rows (templates with `rows: subtopics`, ndeval's diversity measures), the greedy ideal ranking
(greedy_*), and their values per list (subtopic_values)."""
from __future__ import annotations

from ..deferred import exp
from ..plan import Plan, _number
from .shape import Shape
from .trees import _by, _c, _cols, _ordered, _parse_ours


# Subtopics (templates with `rows: subtopics`, the diversity measures of ndeval): each list's subtopic rows
# (subtopic_rows) carry the columns sql/_shared.sql lists. A judgment is relevant to its subtopic when its grade
# reaches the relevance level (ndeval's judgments are binary). Three kinds of rows:
#   run       one per ranked document and subtopic it is relevant to, with `seen`, how many documents above it
#             are relevant to that subtopic;
#   ideal     one per position of each greedy ideal ranking the measures read (one per alpha), with the gain
#             of its document there;
#   position  one per position 1..depth (the measures' largest cutoff): normalisers are sums over positions.
# The greedy ideal ranking is ndeval's: at each position, the document whose relevant subtopics still gain
# most, each subtopic gaining (1 - alpha)^(documents placed above relevant to it); ties go to the greatest
# document id. A document's gain is a sum over its subtopics, added in subtopic order: in whatever order threads
# hand the rows over, (1 - alpha)^c terms (alpha = 0.3) sum to values a bit apart, and two documents that tie
# in one evaluation would not in the next, so the ideal ranking, and the measure, changed from run to run. It is
# iterative: two plain CTEs per position, each reading the one before once. No recursion:
# SQLite and MySQL allow neither aggregates nor windows in a recursive term. (Spark's analyzer gives up on
# a statement three levels per position deep at 20 positions.) A greedy CTE's rows are the query's
# (document, subtopic) relevant pairs: `cnt`, the documents placed so far relevant to the pair's subtopic;
# `pos`, where the pair's document was placed (0: not yet); `gain`, its gain there; `gain_now`, what it would
# gain next; `pick`, the next document to place, `best_s`, the best document of the pair's subtopic (the pick
# is relevant to it when they are the same), `any_open`, whether a document is left to place. No alias is a
# column's name in its own SELECT (ClickHouse would read the column as the alias).
_SUBTOPICS = [
    ("subtopic_relevant", "SELECT DISTINCT query_id, subtopic, doc_id FROM subtopic_judgments "
                          "WHERE relevance >= {level}"),
    ("subtopic_stats", "SELECT query_id, subtopic, COUNT(*) AS subtopic_rel FROM subtopic_relevant "
                       "GROUP BY query_id, subtopic"),
    ("subtopic_query", "SELECT query_id, COUNT(*) AS subtopics FROM subtopic_stats GROUP BY query_id"),
    ("subtopic_hits", "SELECT {k_r}, r.rnk, s.subtopic, ROW_NUMBER() OVER (PARTITION BY {k_r}, s.subtopic "
                      "ORDER BY r.rnk) - 1 AS seen FROM ranking AS r JOIN subtopic_relevant AS s "
                      "ON s.query_id = r.query_id AND s.doc_id = r.doc_id{depth}"),
]
_GREEDY_START = ("SELECT s.query_id, CAST(a.alpha AS DOUBLE) AS alpha, s.doc_id, s.subtopic, 0 AS c1, 0 AS p1, "
                 "CAST(0 AS DOUBLE) AS g1, CAST(COUNT(*) OVER (PARTITION BY s.query_id, a.alpha, s.doc_id) AS DOUBLE) "
                 "AS gn FROM subtopic_relevant AS s CROSS JOIN ({alphas}) AS a")
# Place the pick (at position {step}); what each document would gain next.
_GREEDY_PLACE = (
    "SELECT query_id, alpha, doc_id, subtopic, "
    "CASE WHEN any_open = 1 AND pick = best_s THEN cnt + 1 ELSE cnt END AS c1, "
    "CASE WHEN any_open = 1 AND doc_id = pick THEN {step} ELSE pos END AS p1, "
    "CASE WHEN any_open = 1 AND doc_id = pick THEN gain_now ELSE gain END AS g1, "
    "SUM(POWER(1 - alpha, CASE WHEN any_open = 1 AND pick = best_s THEN cnt + 1 ELSE cnt END)) "
    "OVER (PARTITION BY query_id, alpha, doc_id ORDER BY subtopic ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED "
    "FOLLOWING) AS gn FROM {previous}")
# Choose the next document.
_GREEDY_PICK = (
    "SELECT query_id, alpha, doc_id, subtopic, c1 AS cnt, p1 AS pos, g1 AS gain, gn AS gain_now, "
    "FIRST_VALUE(doc_id) OVER (PARTITION BY query_id, alpha ORDER BY CASE WHEN p1 = 0 THEN 1 ELSE 0 END DESC, "
    "gn DESC, doc_id DESC) AS pick, FIRST_VALUE(doc_id) OVER (PARTITION BY query_id, alpha, subtopic ORDER BY "
    "CASE WHEN p1 = 0 THEN 1 ELSE 0 END DESC, gn DESC, doc_id DESC) AS best_s, "
    "MAX(CASE WHEN p1 = 0 THEN 1 ELSE 0 END) OVER (PARTITION BY query_id, alpha) AS any_open FROM ({placed}) AS u")
_SUBTOPIC_ROWS = [
    ("subtopic_parts",
     "SELECT {k_h}, 'run' AS row_kind, h.rnk, h.seen, t.subtopic_rel, CAST(NULL AS DOUBLE) AS ideal_alpha, "
     "CAST(0 AS DOUBLE) AS ideal_gain FROM subtopic_hits AS h JOIN subtopic_stats AS t "
     "ON t.query_id = h.query_id AND t.subtopic = h.subtopic"
     "{ideal}{positions}"),
    ("subtopic_rows", "SELECT {k_u}, u.row_kind, u.rnk, u.seen, u.subtopic_rel, u.ideal_alpha, u.ideal_gain, "
                      "COALESCE(q.subtopics, 0) AS subtopics FROM subtopic_parts AS u "
                      "LEFT JOIN subtopic_query AS q ON q.query_id = u.query_id"),
]
_IDEAL_PART = (" UNION ALL SELECT {k_l}, 'ideal', i.p1, 0, 0, i.alpha, i.g1 FROM lists AS l "
               "JOIN (SELECT DISTINCT query_id, alpha, p1, g1 FROM greedy_placed WHERE p1 > 0) AS i "
               "ON i.query_id = l.query_id")
_POSITIONS_PART = (" UNION ALL SELECT {k_l}, 'position', p.pos, 0, 0, CAST(NULL AS DOUBLE), CAST(0 AS DOUBLE) "
                   "FROM lists AS l CROSS JOIN ({positions}) AS p")


def _subtopic_ctes(options: Shape, plan: Plan) -> list:
    """The CTEs computing each list's subtopic rows (subtopic_rows), after `lists`."""
    key = list(options.list_key)
    fill = {**{f"k_{t}": ", ".join(f"{t}.{c}" for c in key) for t in "rhlu"}, "level": options.relevance_level,
            "depth": "" if options.depth is None else f" WHERE r.rnk <= {options.depth}"}
    ctes = [(name, sql.format(**fill)) for name, sql in _SUBTOPICS]
    ideal = positions = ""
    if plan.greedy_alphas:
        alphas = " UNION ALL ".join(f"SELECT {_number(a)} AS alpha" for a in sorted(plan.greedy_alphas))
        # greedy_i has placed i documents and picked the next; greedy_placed places the last one.
        ctes.append(("greedy_0", _GREEDY_PICK.format(placed=_GREEDY_START.format(alphas=alphas))))
        for step in range(1, plan.subtopic_depth):
            placed = _GREEDY_PLACE.format(step=step, previous=f"greedy_{step - 1}")
            ctes.append((f"greedy_{step}", _GREEDY_PICK.format(placed=placed)))
        last = plan.subtopic_depth
        ctes.append(("greedy_placed", _GREEDY_PLACE.format(step=last, previous=f"greedy_{last - 1}")))
        ideal = _IDEAL_PART.format(**fill)
    if plan.subtopic_depth:
        numbers = " UNION ALL ".join(f"SELECT {i} AS pos" for i in range(1, plan.subtopic_depth + 1))
        positions = _POSITIONS_PART.format(positions=numbers, **fill)
    ctes += [(name, sql.format(ideal=ideal, positions=positions, **fill)) for name, sql in _SUBTOPIC_ROWS]
    return [(name, _parse_ours(sql)) for name, sql in ctes]


def subtopic_values(plan: Plan, options: Shape, key: list, fixed) -> list:
    """The subtopic rows and one GROUP BY over each list's (subtopic_values)."""
    ctes = _subtopic_ctes(options, plan)
    # Rows equal in these columns add the same value to every measure: the order is total where it matters.
    sub_order = _by(["row_kind", "rnk", "seen", "subtopic_rel"]) + [_ordered(_c("ideal_alpha"), False, True)]
    subs = [exp.alias_(fixed(e, sub_order), out, copy=False) for out, e, _ in plan.values if out in plan.subtopics]
    ctes.append(("subtopic_values", exp.select(*_cols(key), *subs).from_("subtopic_rows", copy=False)
                 .group_by(*_cols(key), copy=False)))
    return ctes
