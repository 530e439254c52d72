"""The preference rows (templates with `rows: preferences`, trec_eval's prefs_* measures) and their values per
list (pref_values). The statement's one recursive CTE, pref_closure, is here."""
from __future__ import annotations

import re

from sqlglot import exp

from ..options import FORMAT_GROUPS
from ..plan import READ, Plan
from .shape import Shape
from .trees import _by, _cols, _join_on, _order_by, _parse_ours


# Preferences (templates with `rows: preferences`): trec_eval's form_prefs_counts, as CTEs. Every pair of a
# judgment group's documents whose levels differ within one of its subgroups is a preference; a group's
# preferences are closed under transitivity (a > b in one subgroup, b > c in another: a > c). The documents
# are ordered as trec_eval orders them: the retrieved ones by rank, then the others by document id. Each
# list's rows (pref_rows, one per preference of each group, or one for a group without any) carry the
# columns sql/_shared.sql lists. The closure is the statement's one recursive CTE: a path needs at most one
# step per subgroup (a consistent group never needs a subgroup twice), which also bounds it on bad input.
_PREFERENCES = [
    ("pref_judgments", "SELECT query_id, {jg} AS judgment_group, {jsg} AS judgment_subgroup, doc_id, relevance "
                       "FROM judgments"),
    ("pref_group_info", "SELECT query_id, judgment_group, COUNT(DISTINCT judgment_subgroup) AS subgroups, "
                        "MIN(relevance) AS lowest FROM pref_judgments GROUP BY query_id, judgment_group"),
    ("pref_steps", "SELECT a.query_id, a.judgment_group, a.doc_id AS better, b.doc_id AS worse FROM pref_judgments "
                   "AS a JOIN pref_judgments AS b ON a.query_id = b.query_id AND a.judgment_group = b.judgment_group "
                   "AND a.judgment_subgroup = b.judgment_subgroup AND a.relevance > b.relevance"),
    ("pref_closure", "SELECT query_id, judgment_group, better, worse, 1 AS hops FROM pref_steps UNION ALL "
                     "SELECT c.query_id, c.judgment_group, c.better, s.worse, c.hops + 1 AS hops FROM pref_closure AS c "
                     "JOIN pref_steps AS s ON s.query_id = c.query_id AND s.judgment_group = c.judgment_group "
                     "AND s.better = c.worse JOIN pref_group_info AS g ON g.query_id = c.query_id "
                     "AND g.judgment_group = c.judgment_group WHERE c.hops < g.subgroups"),
    ("pref_pairs", "SELECT DISTINCT query_id, judgment_group, better, worse FROM pref_closure"),
    ("pref_docs", "SELECT query_id, judgment_group, doc_id, MAX(relevance) AS level FROM pref_judgments "
                  "GROUP BY query_id, judgment_group, doc_id"),
    ("pref_run", "SELECT {k_r}, r.doc_id, r.{order_col} FROM run_rows AS r JOIN (SELECT DISTINCT query_id, doc_id "
                 "FROM pref_judgments) AS d ON d.query_id = r.query_id AND d.doc_id = r.doc_id"),
    ("pref_ranked", "SELECT {k}, doc_id, ROW_NUMBER() OVER (PARTITION BY {k} ORDER BY {order}) AS rnk FROM pref_run"),
    # The list's judged documents in trec_eval's order: retrieved by rank, then the rest by id.
    ("pref_order", "SELECT {k_l}, d.doc_id, CASE WHEN r.rnk IS NULL THEN 0 ELSE 1 END AS ret, ROW_NUMBER() OVER "
                   "(PARTITION BY {k_l} ORDER BY CASE WHEN r.rnk IS NULL THEN 1 ELSE 0 END, r.rnk, d.doc_id) AS ord "
                   "FROM lists AS l JOIN (SELECT DISTINCT query_id, doc_id FROM pref_judgments) AS d "
                   "ON d.query_id = l.query_id LEFT JOIN pref_ranked AS r ON {on_r_l} AND r.doc_id = d.doc_id"),
    # Relevant: level > 0; non-relevant: level 0 (with one subgroup, any level <= 0, as trec_eval's classes).
    # last_class: with one subgroup, the lowest level's class, whose first R documents prefs_avgjg_Rnonrel keeps;
    # zero_level: with several, a level-0 document, of which it keeps the first R.
    ("pref_group_docs", "SELECT {k_o}, d.judgment_group, d.doc_id, o.ret, o.ord, g.subgroups, "
                        "CASE WHEN d.level > 0 THEN 1 ELSE 0 END AS rel, "
                        "CASE WHEN d.level = 0 OR (d.level < 0 AND g.subgroups = 1) THEN 1 ELSE 0 END AS nonrel, "
                        "CASE WHEN g.subgroups = 1 AND d.level = g.lowest THEN 1 ELSE 0 END AS last_class, "
                        "CASE WHEN g.subgroups > 1 AND d.level = 0 THEN 1 ELSE 0 END AS zero_level "
                        "FROM pref_order AS o JOIN pref_docs AS d ON d.query_id = o.query_id AND d.doc_id = o.doc_id "
                        "JOIN pref_group_info AS g ON g.query_id = d.query_id AND g.judgment_group = d.judgment_group"),
    ("pref_group_ranks", "SELECT {k}, judgment_group, doc_id, ret, ord, subgroups, rel, nonrel, last_class, zero_level, "
                         "SUM(rel) OVER (PARTITION BY {k}, judgment_group) AS group_rel, "
                         "SUM(rel * ret) OVER (PARTITION BY {k}, judgment_group) AS group_rel_ret, "
                         "ROW_NUMBER() OVER (PARTITION BY {k}, judgment_group, last_class ORDER BY ord) AS class_rank, "
                         "SUM(ret) OVER (PARTITION BY {k}, judgment_group, last_class ORDER BY ord ROWS BETWEEN "
                         "UNBOUNDED PRECEDING AND CURRENT ROW) - ret AS ret_before, "
                         "ROW_NUMBER() OVER (PARTITION BY {k}, judgment_group, zero_level ORDER BY ord) AS zero_rank "
                         "FROM pref_group_docs"),
    ("pref_group_flags", "SELECT {k}, judgment_group, doc_id, ret, ord, subgroups, rel, nonrel, last_class, ret_before, "
                         "CASE WHEN last_class = 1 AND class_rank <= group_rel THEN 1 ELSE 0 END AS first_r, "
                         "CASE WHEN last_class = 1 AND class_rank <= group_rel_ret AND ret = 1 THEN 1 ELSE 0 END "
                         "AS first_r_ret, CASE WHEN zero_level = 1 AND zero_rank > group_rel THEN 0 ELSE 1 END AS kept "
                         "FROM pref_group_ranks"),
    # A preference is fulfilled when its better document is retrieved above the other (or the other is not).
    ("pref_edges", "SELECT {k_a}, a.judgment_group, a.ord AS a_ord, b.ord AS b_ord, "
                   "CASE WHEN a.ord < b.ord THEN a.ord ELSE b.ord END AS lo_ord, "
                   "CASE WHEN a.ord < b.ord THEN b.ord ELSE a.ord END AS hi_ord, "
                   "CASE WHEN a.ret = 1 AND (b.ret = 0 OR a.ord < b.ord) THEN 1 ELSE 0 END AS ful, "
                   "CASE WHEN a.ret = 1 AND b.ret = 1 THEN 1 ELSE 0 END AS both_ret, "
                   "CASE WHEN a.ret = 1 OR b.ret = 1 THEN 1 ELSE 0 END AS any_ret, a.kept * b.kept AS kept, "
                   "b.last_class AS b_last, b.first_r AS b_first_r, b.first_r_ret AS b_first_r_ret "
                   "FROM pref_pairs AS p JOIN pref_group_flags AS a ON a.query_id = p.query_id "
                   "AND a.judgment_group = p.judgment_group AND a.doc_id = p.better JOIN pref_group_flags AS b "
                   "ON {on_b_a} AND b.judgment_group = a.judgment_group AND b.doc_id = p.worse"),
    # How many of the list's groups prefer either document of a pair to the other (a GROUP BY: a window
    # over as many partitions as pairs costs DuckDB several times more).
    ("pref_pair_groups", "SELECT {k}, lo_ord, hi_ord, COUNT(*) AS n_groups FROM pref_edges GROUP BY {k}, lo_ord, hi_ord"),
    ("pref_edge_rows", "SELECT {k_e}, e.judgment_group, e.a_ord, e.b_ord, e.ful, e.ful * e.both_ret AS ful_ret, "
                       "e.both_ret, e.any_ret, e.kept, e.b_last, e.b_first_r, e.b_first_r_ret, "
                       "CAST(1 AS DOUBLE) / c.n_groups AS share FROM pref_edges AS e JOIN pref_pair_groups AS c "
                       "ON {on_c_e} AND c.lo_ord = e.lo_ord AND c.hi_ord = e.hi_ord"),
    ("pref_group_doc_stats", "SELECT {k}, judgment_group, MAX(subgroups) AS n_subgroups, COUNT(*) AS n_docs, "
                             "SUM(ret) AS n_ret_docs, SUM(rel) AS n_rel, SUM(nonrel) AS n_nonrel, "
                             "SUM(rel * ret) AS n_rel_ret, SUM(nonrel * ret) AS n_nonrel_ret, "
                             "SUM(first_r * ret_before) AS ec_extra, SUM(first_r_ret * ret_before) AS ec_extra_ret, "
                             "SUM(first_r_ret) AS n_first_r_ret FROM pref_group_flags GROUP BY {k}, judgment_group"),
    # (No alias is a column's name: ClickHouse would read the column inside other expressions as the alias.)
    ("pref_group_edge_stats", "SELECT {k}, judgment_group, COUNT(*) AS prefs, SUM(ful) AS n_ful, SUM(ful_ret) AS "
                              "n_ful_ret, SUM(both_ret) AS prefs_ret, SUM(any_ret) AS prefs_imp, "
                              "SUM(1 - b_last) AS ec_poss, SUM(CASE WHEN b_last = 0 OR b_first_r = 1 THEN ful ELSE 0 END) "
                              "AS ec_ful, SUM((1 - b_last) * both_ret) AS ec_poss_ret, SUM(CASE WHEN b_last = 0 OR "
                              "b_first_r_ret = 1 THEN ful_ret ELSE 0 END) AS ec_ful_ret, SUM(kept) AS pa_poss, "
                              "SUM(kept * ful) AS pa_ful, SUM(kept * both_ret) AS pa_poss_ret, SUM(kept * ful_ret) "
                              "AS pa_ful_ret FROM pref_edge_rows GROUP BY {k}, judgment_group"),
    ("pref_group_counts", "SELECT {k_d}, d.judgment_group, d.n_subgroups, d.n_docs, d.n_ret_docs, d.n_rel, d.n_nonrel, "
                          "d.n_rel_ret, d.n_nonrel_ret, d.ec_extra, d.ec_extra_ret, d.n_first_r_ret, "
                          + ", ".join(f"COALESCE(e.{c}, 0) AS {c}" for c in (
                              "prefs", "n_ful", "n_ful_ret", "prefs_ret", "prefs_imp", "ec_poss", "ec_ful", "ec_poss_ret",
                              "ec_ful_ret", "pa_poss", "pa_ful", "pa_poss_ret", "pa_ful_ret"))
                          + " FROM pref_group_doc_stats AS d LEFT JOIN pref_group_edge_stats AS e ON {on_e_d} "
                          "AND e.judgment_group = d.judgment_group"),
    # prefs_avgjg_Rnonrel's value per group (NULL where trec_eval divides 0 by 0): with R >= N, the counts
    # plus R - N imagined non-relevant documents under every relevant one; else the counts over the first R
    # non-relevant documents only, as trec_eval recalculates them (with one subgroup: every document of the
    # group against the first R of its lowest class, which counts pairs within that class too).
    ("pref_groups", "SELECT {k}, judgment_group, prefs, prefs_ret, prefs_imp, COUNT(*) OVER (PARTITION BY {k}) AS num_jgs, "
                    "CASE WHEN n_rel >= n_nonrel THEN CAST(n_ful + n_rel_ret * (n_rel - n_nonrel) AS DOUBLE) "
                    "/ NULLIF(prefs + n_rel * (n_rel - n_nonrel), 0) "
                    "WHEN n_subgroups = 1 THEN CAST(ec_ful + ec_extra AS DOUBLE) / NULLIF(ec_poss + n_docs * n_rel, 0) "
                    "ELSE CAST(pa_ful AS DOUBLE) / NULLIF(pa_poss, 0) END AS rn, "
                    "CASE WHEN n_rel_ret >= n_nonrel_ret THEN CAST(n_ful_ret + n_rel_ret * (n_rel_ret - n_nonrel_ret) AS "
                    "DOUBLE) / NULLIF(prefs_ret + n_rel * (n_rel_ret - n_nonrel_ret), 0) "
                    "WHEN n_subgroups = 1 THEN CAST(ec_ful_ret + ec_extra_ret AS DOUBLE) "
                    "/ NULLIF(ec_poss_ret + n_ret_docs * n_first_r_ret, 0) "
                    "ELSE CAST(pa_ful_ret AS DOUBLE) / NULLIF(pa_poss_ret, 0) END AS rn_ret FROM pref_group_counts"),
    # A group's own row (pref = 0, jg_first = 1), then one row per preference.
    ("pref_rows", "SELECT {k}, judgment_group, num_jgs, rn, rn_ret, prefs AS jg_prefs, prefs_ret AS jg_prefs_ret, "
                  "prefs_imp AS jg_prefs_imp, 0 AS pref, 1 AS jg_first, 0 AS a_ord, 0 AS b_ord, 0 AS ful, "
                  "0 AS ful_ret, 0 AS both_ret, 0 AS any_ret, CAST(0 AS DOUBLE) AS share FROM pref_groups UNION ALL "
                  "SELECT {k_g}, g.judgment_group, g.num_jgs, g.rn, g.rn_ret, g.prefs, g.prefs_ret, g.prefs_imp, "
                  "1, 0, e.a_ord, e.b_ord, e.ful, e.ful_ret, e.both_ret, e.any_ret, e.share FROM pref_groups AS g "
                  "JOIN pref_edge_rows AS e ON {on_e_g} AND e.judgment_group = g.judgment_group"),
]


def _preference_ctes(options: Shape) -> list:
    """The CTEs computing each list's preference rows (pref_rows), after `lists`."""
    key = list(options.list_key)
    on = lambda a, b: _join_on(a, b, key, options.segment_key)  # noqa: E731

    groups = FORMAT_GROUPS[options.qrels_format]
    fill = {"k": ", ".join(key), **{f"k_{t}": ", ".join(f"{t}.{c}" for c in key) for t in "rloadge"},
            "on_r_l": on("r", "l"), "on_b_a": on("b", "a"), "on_e_d": on("e", "d"), "on_e_g": on("e", "g"),
            "on_c_e": on("c", "e"),
            "jg": "judgment_group" if "judgment_group" in groups else "''",
            "jsg": "judgment_subgroup" if "judgment_subgroup" in groups else "''",
            "order_col": "rank_position" if options.ties == "rank" else "score",
            "order": ", ".join(o.sql(READ) for o in _order_by(options))}
    ctes = [(name, sql.format(**fill)) for name, sql in _PREFERENCES]
    if options.labels:  # the judgments are each list's own labelled rows: keyed by the list, not the query
        ctes = [(name, _judgments_by_list(sql, key, on)) for name, sql in ctes]
    return [(name, _parse_ours(sql)) for name, sql in ctes]


def _judgments_by_list(sql: str, key: list, on) -> str:
    """A preference CTE with the judgments keyed by the whole list key instead of query_id."""
    sql = re.sub(r"\b(\w+)\.query_id = (\w+)\.query_id\b", lambda m: on(m.group(1), m.group(2)), sql)
    sql = re.sub(r"\b(SELECT|SELECT DISTINCT|GROUP BY) (?:(\w+)\.)?query_id,",
                 lambda m: f"{m.group(1)} " + ", ".join(f"{m.group(2)}.{c}" if m.group(2) else c for c in key) + ",", sql)
    return sql


def preference_values(plan: Plan, options: Shape, key: list, fixed) -> list:
    """The preference rows and one GROUP BY over each list's (pref_values)."""
    ctes = _preference_ctes(options)
    pref_order = _by(["judgment_group", "a_ord", "b_ord"])  # unique within a list
    prefs = [exp.alias_(fixed(e, pref_order), out, copy=False) for out, e, _ in plan.values if out in plan.preferences]
    ctes.append(("pref_values", exp.select(*_cols(key), *prefs).from_("pref_rows", copy=False)
                 .group_by(*_cols(key), copy=False)))
    return ctes
