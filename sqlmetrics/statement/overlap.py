"""The overlap rows (templates with `rows: overlap`, ir_measures' Compat) and their values per list
(overlap_values)."""
from __future__ import annotations

from ..deferred import exp
from ..plan import Plan
from .shape import Shape
from .trees import _by, _cols, _join_on, _parse_ours


# Overlap rows (rows: overlap, ir_measures' Compat): how much a list's top i and its ideal ranking's top i have in
# common, for each depth i from 1 to D = max(the list's length, its relevant documents). The ideal ranking is the
# list's own: the relevant judgments by grade, equal grades in the list's order, the unretrieved ones last (the
# ideal ranking consistent with the qrels that agrees most with the list). A relevant retrieved document is in
# both tops from depth max(its rank, its ideal rank) on: overlap_events counts the documents entering at each
# depth, overlap_rows runs their sum down the depths. The depths are the list's ranks, and past its end the ideal
# ranks up to the relevant count: no table of numbers, and no limit on D.
_OVERLAP = [
    ("overlap_judged", "SELECT {k_l}, j.doc_id, j.relevance, r.rnk FROM lists AS l JOIN judgments AS j "
                       "ON {on_j_l} AND j.relevance >= {level} LEFT JOIN ranking AS r ON {on_r_l} "
                       "AND r.doc_id = j.doc_id{depth_r}"),
    ("overlap_ideal", "SELECT {k}, rnk, ROW_NUMBER() OVER (PARTITION BY {k} ORDER BY relevance DESC, "
                      "CASE WHEN rnk IS NULL THEN 1 ELSE 0 END, rnk, doc_id) AS irnk FROM overlap_judged"),
    ("overlap_events", "SELECT {k}, CASE WHEN rnk > irnk THEN rnk ELSE irnk END AS at_depth, COUNT(*) AS events "
                       "FROM overlap_ideal WHERE NOT rnk IS NULL "
                       "GROUP BY {k}, CASE WHEN rnk > irnk THEN rnk ELSE irnk END"),
    ("overlap_sizes", "SELECT {k_l}, COALESCE(n.list_len, 0) AS list_len, COALESCE(c.rel_count, 0) AS rel_count "
                      "FROM lists AS l LEFT JOIN (SELECT {k}, MAX(num_ret) AS list_len FROM judged_ranking "
                      "GROUP BY {k}) AS n ON {on_n_l} LEFT JOIN (SELECT {k}, COUNT(*) AS rel_count FROM overlap_ideal "
                      "GROUP BY {k}) AS c ON {on_c_l}"),
    ("overlap_depths", "SELECT {k}, rnk AS at_depth FROM ranking{depth_where} UNION ALL SELECT {k_i}, i.irnk FROM "
                       "overlap_ideal AS i JOIN overlap_sizes AS s ON {on_s_i} WHERE i.irnk > s.list_len"),
    ("overlap_rows", "SELECT {k_d}, d.at_depth AS rnk, s.rel_count AS num_rel, SUM(COALESCE(e.events, 0)) OVER "
                     "(PARTITION BY {k_d} ORDER BY d.at_depth ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
                     "AS overlap_count "
                     "FROM overlap_depths AS d JOIN overlap_sizes AS s ON {on_s_d} LEFT JOIN overlap_events AS e "
                     "ON {on_e_d} AND e.at_depth = d.at_depth"),
]


def _overlap_ctes(options: Shape, key: list) -> list:
    """The CTEs computing each list's overlap rows (overlap_rows), after `lists`."""
    on = lambda a, b, columns=key: _join_on(a, b, columns, options.segment_key)  # noqa: E731
    fill = {"k": ", ".join(key), **{f"k_{t}": ", ".join(f"{t}.{c}" for c in key) for t in "lid"},
            "on_j_l": on("j", "l", key if options.labels else ["query_id"]), "on_r_l": on("r", "l"),
            "on_n_l": on("n", "l"), "on_c_l": on("c", "l"), "on_s_i": on("s", "i"), "on_s_d": on("s", "d"),
            "on_e_d": on("e", "d"), "level": options.relevance_level,
            "depth_r": "" if options.depth is None else f" AND r.rnk <= {options.depth}",
            "depth_where": "" if options.depth is None else f" WHERE rnk <= {options.depth}"}
    return [(name, _parse_ours(sql.format(**fill))) for name, sql in _OVERLAP]


def overlap_values(plan: Plan, options: Shape, key: list, fixed) -> list:
    """The overlap rows and one GROUP BY over each list's (overlap_values)."""
    ctes = _overlap_ctes(options, key)
    overlaps = [exp.alias_(fixed(e, _by(["rnk"])), out, copy=False)
                for out, e, _ in plan.values if out in plan.overlap]
    ctes.append(("overlap_values", exp.select(*_cols(key), *overlaps).from_("overlap_rows", copy=False)
                 .group_by(*_cols(key), copy=False)))
    return ctes
