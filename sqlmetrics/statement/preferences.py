"""The preference rows (templates with `rows: preferences`, trec_eval's prefs_* measures) and their values per
list (pref_values). The statement's one recursive CTE, pref_closure, is here."""
from __future__ import annotations

import re

from ..deferred import exp
from ..options import FORMAT_GROUPS
from ..plan import READ, Plan
from .shape import Shape
from .trees import _by, _cols, _join_on, _order_by, _parse_ours


_VARIANTS = ("t", "e")  # trec_eval's non-relevant documents for prefs_avgjg_Rnonrel, and the exact ones


def _each(sql: str) -> str:
    """A select list once per variant: `@` is the variant's suffix."""
    return ", ".join(sql.replace("@", v) for v in _VARIANTS)


def _rnonrel(v: str, name: str) -> str:
    """prefs_avgjg_Rnonrel(_ret)'s value per group for one variant: `name` and `name`_ret."""
    return (f"CASE WHEN n_rel >= n_nonrel_{v} THEN CAST(n_ful + n_rel_ret * (n_rel - n_nonrel_{v}) AS DOUBLE) "
            f"/ NULLIF(prefs + n_rel * (n_rel - n_nonrel_{v}), 0) "
            f"WHEN n_subgroups = 1 THEN CAST(ec_ful_{v} + ec_extra_{v} AS DOUBLE) "
            f"/ NULLIF(ec_poss_{v} + n_docs * n_first_r_{v}, 0) "
            f"ELSE CAST(pa_ful_{v} AS DOUBLE) / NULLIF(pa_poss_{v}, 0) END AS {name}, "
            f"CASE WHEN n_rel_ret >= n_nonrel_ret_{v} THEN CAST(n_ful_ret + n_rel_ret * (n_rel_ret - n_nonrel_ret_{v}) "
            f"AS DOUBLE) / NULLIF(prefs_ret + n_rel * (n_rel_ret - n_nonrel_ret_{v}), 0) "
            f"WHEN n_subgroups = 1 THEN CAST(ec_ful_ret_{v} + ec_extra_ret_{v} AS DOUBLE) "
            f"/ NULLIF(ec_poss_ret_{v} + n_ret_docs * n_first_r_ret_{v}, 0) "
            f"ELSE CAST(pa_ful_ret_{v} AS DOUBLE) / NULLIF(pa_poss_ret_{v}, 0) END AS {name}_ret")


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
    # Relevant: level > 0. Non-relevant, two ways (each prefs_avgjg_Rnonrel value is computed both ways, its
    # `nonrel` parameter picks one). Exact (columns ending in _e): every level <= 0; with R < N a group keeps
    # its first R non-relevant documents. trec_eval's (form_prefs_counts, m_prefs_avgjg_Rnonrel.c): with one
    # subgroup, level <= 0 too, but only the lowest level's class (last_class) is cut to its first R; with
    # several, only level 0 is non-relevant (zero_level), negative levels being neither.
    ("pref_group_docs", "SELECT {k_o}, d.judgment_group, d.doc_id, o.ret, o.ord, g.subgroups, "
                        "CASE WHEN d.level > 0 THEN 1 ELSE 0 END AS rel, "
                        "CASE WHEN d.level = 0 OR (d.level < 0 AND g.subgroups = 1) THEN 1 ELSE 0 END AS nonrel, "
                        "CASE WHEN d.level <= 0 THEN 1 ELSE 0 END AS nonrel_e, "
                        "CASE WHEN g.subgroups = 1 AND d.level = g.lowest THEN 1 ELSE 0 END AS last_class, "
                        "CASE WHEN g.subgroups > 1 AND d.level = 0 THEN 1 ELSE 0 END AS zero_level "
                        "FROM pref_order AS o JOIN pref_docs AS d ON d.query_id = o.query_id AND d.doc_id = o.doc_id "
                        "JOIN pref_group_info AS g ON g.query_id = d.query_id AND g.judgment_group = d.judgment_group"),
    # ret_before: the group's retrieved documents ranked above this one (of any level).
    ("pref_group_ranks", "SELECT {k}, judgment_group, doc_id, ret, ord, subgroups, rel, nonrel, nonrel_e, last_class, "
                         "zero_level, SUM(rel) OVER (PARTITION BY {k}, judgment_group) AS group_rel, "
                         "SUM(rel * ret) OVER (PARTITION BY {k}, judgment_group) AS group_rel_ret, "
                         "SUM(ret) OVER (PARTITION BY {k}, judgment_group ORDER BY ord ROWS BETWEEN "
                         "UNBOUNDED PRECEDING AND CURRENT ROW) - ret AS ret_before, "
                         "ROW_NUMBER() OVER (PARTITION BY {k}, judgment_group, last_class ORDER BY ord) AS class_rank, "
                         "ROW_NUMBER() OVER (PARTITION BY {k}, judgment_group, zero_level ORDER BY ord) AS zero_rank, "
                         "ROW_NUMBER() OVER (PARTITION BY {k}, judgment_group, nonrel_e ORDER BY ord) AS nonrel_rank "
                         "FROM pref_group_docs"),
    # last: the class cut to R (one subgroup); first_r(_ret): its kept documents (of the retrieved ones, as many
    # as the retrieved relevant); kept: 0 for a non-relevant document past the first R (several subgroups).
    # trec_eval keeps the first R of the lowest class even when it holds fewer (it reads past its array there:
    # an undefined value); we keep the class.
    ("pref_group_flags", "SELECT {k}, judgment_group, doc_id, ret, ord, subgroups, rel, nonrel, nonrel_e, ret_before, "
                         "last_class AS last_t, "
                         "CASE WHEN last_class = 1 AND class_rank <= group_rel THEN 1 ELSE 0 END AS first_r_t, "
                         "CASE WHEN last_class = 1 AND class_rank <= group_rel_ret AND ret = 1 THEN 1 ELSE 0 END "
                         "AS first_r_ret_t, CASE WHEN zero_level = 1 AND zero_rank > group_rel THEN 0 ELSE 1 END "
                         "AS kept_t, CASE WHEN subgroups = 1 THEN nonrel_e ELSE 0 END AS last_e, "
                         "CASE WHEN subgroups = 1 AND nonrel_e = 1 AND nonrel_rank <= group_rel THEN 1 ELSE 0 END "
                         "AS first_r_e, CASE WHEN subgroups = 1 AND nonrel_e = 1 AND nonrel_rank <= group_rel_ret "
                         "AND ret = 1 THEN 1 ELSE 0 END AS first_r_ret_e, CASE WHEN subgroups > 1 AND nonrel_e = 1 "
                         "AND nonrel_rank > group_rel THEN 0 ELSE 1 END AS kept_e FROM pref_group_ranks"),
    # A preference is fulfilled when its better document is retrieved above the other (or the other is not).
    ("pref_edges", "SELECT {k_a}, a.judgment_group, a.ord AS a_ord, b.ord AS b_ord, "
                   "CASE WHEN a.ord < b.ord THEN a.ord ELSE b.ord END AS lo_ord, "
                   "CASE WHEN a.ord < b.ord THEN b.ord ELSE a.ord END AS hi_ord, "
                   "CASE WHEN a.ret = 1 AND (b.ret = 0 OR a.ord < b.ord) THEN 1 ELSE 0 END AS ful, "
                   "CASE WHEN a.ret = 1 AND b.ret = 1 THEN 1 ELSE 0 END AS both_ret, "
                   "CASE WHEN a.ret = 1 OR b.ret = 1 THEN 1 ELSE 0 END AS any_ret, "
                   + _each("a.kept_@ * b.kept_@ AS kept_@, b.last_@ AS b_last_@") +
                   " FROM pref_pairs AS p JOIN pref_group_flags AS a ON a.query_id = p.query_id "
                   "AND a.judgment_group = p.judgment_group AND a.doc_id = p.better JOIN pref_group_flags AS b "
                   "ON {on_b_a} AND b.judgment_group = a.judgment_group AND b.doc_id = p.worse"),
    # How many of the list's groups prefer either document of a pair to the other (a GROUP BY: a window
    # over as many partitions as pairs costs DuckDB several times more).
    ("pref_pair_groups", "SELECT {k}, lo_ord, hi_ord, COUNT(*) AS n_groups FROM pref_edges GROUP BY {k}, lo_ord, hi_ord"),
    ("pref_edge_rows", "SELECT {k_e}, e.judgment_group, e.a_ord, e.b_ord, e.ful, e.ful * e.both_ret AS ful_ret, "
                       "e.both_ret, e.any_ret, " + _each("e.kept_@, e.b_last_@") + ", "
                       "CAST(1 AS DOUBLE) / c.n_groups AS share FROM pref_edges AS e JOIN pref_pair_groups AS c "
                       "ON {on_c_e} AND c.lo_ord = e.lo_ord AND c.hi_ord = e.hi_ord"),
    # ec_extra: the fulfilled pairs of every document of the group against each kept one (the group's retrieved
    # documents above it), which trec_eval's recalculation counts beside the preferences outside the cut class.
    ("pref_group_doc_stats", "SELECT {k}, judgment_group, MAX(subgroups) AS n_subgroups, COUNT(*) AS n_docs, "
                             "SUM(ret) AS n_ret_docs, SUM(rel) AS n_rel, SUM(rel * ret) AS n_rel_ret, "
                             "SUM(nonrel) AS n_nonrel_t, SUM(nonrel * ret) AS n_nonrel_ret_t, "
                             "SUM(nonrel_e) AS n_nonrel_e, SUM(nonrel_e * ret) AS n_nonrel_ret_e, "
                             + _each("SUM(first_r_@ * ret_before) AS ec_extra_@, SUM(first_r_ret_@ * ret_before) AS "
                                     "ec_extra_ret_@, SUM(first_r_@) AS n_first_r_@, SUM(first_r_ret_@) AS n_first_r_ret_@")
                             + " FROM pref_group_flags GROUP BY {k}, judgment_group"),
    # (No alias is a column's name: ClickHouse would read the column inside other expressions as the alias.)
    ("pref_group_edge_stats", "SELECT {k}, judgment_group, COUNT(*) AS prefs, SUM(ful) AS n_ful, SUM(ful_ret) AS "
                              "n_ful_ret, SUM(both_ret) AS prefs_ret, SUM(any_ret) AS prefs_imp, "
                              + _each("SUM(1 - b_last_@) AS ec_poss_@, SUM((1 - b_last_@) * ful) AS ec_ful_@, "
                                      "SUM((1 - b_last_@) * both_ret) AS ec_poss_ret_@, SUM((1 - b_last_@) * ful_ret) "
                                      "AS ec_ful_ret_@, SUM(kept_@) AS pa_poss_@, SUM(kept_@ * ful) AS pa_ful_@, "
                                      "SUM(kept_@ * both_ret) AS pa_poss_ret_@, SUM(kept_@ * ful_ret) AS pa_ful_ret_@")
                              + " FROM pref_edge_rows GROUP BY {k}, judgment_group"),
    ("pref_group_counts", "SELECT {k_d}, d.judgment_group, d.n_subgroups, d.n_docs, d.n_ret_docs, d.n_rel, d.n_rel_ret, "
                          + _each("d.n_nonrel_@, d.n_nonrel_ret_@, d.ec_extra_@, d.ec_extra_ret_@, d.n_first_r_@, "
                                  "d.n_first_r_ret_@") + ", "
                          + ", ".join(f"COALESCE(e.{c}, 0) AS {c}" for c in (
                              "prefs", "n_ful", "n_ful_ret", "prefs_ret", "prefs_imp", *(f"{c}_{v}" for v in _VARIANTS
                              for c in ("ec_poss", "ec_ful", "ec_poss_ret", "ec_ful_ret", "pa_poss", "pa_ful",
                                        "pa_poss_ret", "pa_ful_ret"))))
                          + " FROM pref_group_doc_stats AS d LEFT JOIN pref_group_edge_stats AS e ON {on_e_d} "
                          "AND e.judgment_group = d.judgment_group"),
    # prefs_avgjg_Rnonrel's value per group (NULL where trec_eval divides 0 by 0), exact (rn, rn_ret) and
    # trec_eval's (rn_trec, rn_trec_ret): with R >= N, the counts plus R - N imagined non-relevant documents
    # under every relevant one; else the counts over the first R non-relevant documents only, as trec_eval
    # recalculates them (with one subgroup: the preferences outside the cut class, and every document of the
    # group against each kept one, which counts pairs within that class too).
    ("pref_groups", "SELECT {k}, judgment_group, prefs, prefs_ret, prefs_imp, COUNT(*) OVER (PARTITION BY {k}) AS num_jgs, "
                    + ", ".join(_rnonrel(v, name) for v, name in zip(_VARIANTS, ("rn_trec", "rn")))
                    + " FROM pref_group_counts"),
    # A group's own row (pref = 0, jg_first = 1), then one row per preference.
    ("pref_rows", "SELECT {k}, judgment_group, num_jgs, rn, rn_ret, rn_trec, rn_trec_ret, prefs AS jg_prefs, "
                  "prefs_ret AS jg_prefs_ret, prefs_imp AS jg_prefs_imp, 0 AS pref, 1 AS jg_first, 0 AS a_ord, "
                  "0 AS b_ord, 0 AS ful, 0 AS ful_ret, 0 AS both_ret, 0 AS any_ret, CAST(0 AS DOUBLE) AS share "
                  "FROM pref_groups UNION ALL SELECT {k_g}, g.judgment_group, g.num_jgs, g.rn, g.rn_ret, g.rn_trec, "
                  "g.rn_trec_ret, g.prefs, g.prefs_ret, g.prefs_imp, 1, 0, e.a_ord, e.b_ord, e.ful, e.ful_ret, "
                  "e.both_ret, e.any_ret, e.share FROM pref_groups AS g "
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
