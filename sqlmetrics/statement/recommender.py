"""A recommender's rows: the measures of the whole run (rows: recommendations, over its recommended items;
rows: ratings, over its rated pairs), one value per run (and segment), and the item similarities of each list
(rows: items, item_values)."""
from __future__ import annotations

from ..deferred import exp
from ..errors import SqlmetricsError
from ..plan import Plan
from .shape import Shape
from .sources import LISTS, Source, _unnested_from
from .trees import _by, _cols, _join_on, _parse_ours, _type


# The run's recommended items (rows: recommendations, sql/_shared.sql lists their columns): every row of the
# run, whichever lists are evaluated, counted per item, beside the item's counts in the training interactions.
# list_weight and list_weight_sq (sums of 1/sqrt(len) and 1/len over the lists recommending the item) give the
# lists' pairwise cosine similarities without pairing the lists: (w^2 - w_sq) / 2 is the item's share of them.
_RECOMMENDATIONS = [
    ("rec_lists", "SELECT {k_}query_id, COUNT(*) AS list_len FROM run_rows GROUP BY {k_}query_id"),
    ("rec_counts", "SELECT {r_k_}r.doc_id, COUNT(*) AS item_recs, "
                   "SUM(1 / SQRT(CAST(l.list_len AS DOUBLE))) AS list_weight, "
                   "SUM(1 / CAST(l.list_len AS DOUBLE)) AS list_weight_sq "
                   "FROM run_rows AS r JOIN rec_lists AS l ON {on_l_r} GROUP BY {r_k_}r.doc_id"),
    ("rec_run_lists", "SELECT {k_}COUNT(*) AS run_lists FROM rec_lists{group_k}"),
    ("history_items", "SELECT doc_id, COUNT(*) AS hist_count FROM history_rows GROUP BY doc_id"),
    ("history_stats", "SELECT COUNT(*) AS hist_rows, COUNT(DISTINCT doc_id) AS hist_items, {catalogue} AS "
                      "catalogue_items FROM history_rows"),
    ("rec_items", "SELECT {c_k_}c.doc_id, c.item_recs, SUM(c.item_recs) OVER ({part}) AS num_recs, "
                  "ROW_NUMBER() OVER ({part_}ORDER BY c.item_recs, c.doc_id) AS exposure_rank, c.list_weight, "
                  "c.list_weight_sq, n.run_lists, h.hist_count, s.hist_rows, s.hist_items, s.catalogue_items, "
                  "{in_catalogue} AS in_catalogue FROM rec_counts AS c "
                  "{join_n} LEFT JOIN history_items AS h ON h.doc_id = c.doc_id CROSS JOIN history_stats AS s"
                  "{join_catalogue}"),
]
# With items= the catalogue's own items, to tell a recommended item outside it (CatalogCoverage counts none such).
_CATALOGUE_IDS = ("catalogue_ids", "SELECT DISTINCT doc_id FROM catalogue_rows")


def _recommendation_ctes(options: Shape, catalogue: bool) -> list:
    """The CTEs computing the run's recommended items (rec_items), keyed by the run and segment. catalogue: the
    item features (items=, CTE catalogue_rows) list the catalogue; else the training interactions' items are it."""
    run_key = [*options.run_key, *options.segment_key]
    on = lambda a, b, columns: _join_on(a, b, columns, options.segment_key)  # noqa: E731
    partition = f"PARTITION BY {', '.join(f'c.{c}' for c in run_key)}" if run_key else ""
    fill = {"k_": "".join(f"{c}, " for c in run_key), "c_k_": "".join(f"c.{c}, " for c in run_key),
            "r_k_": "".join(f"r.{c}, " for c in run_key), "on_l_r": on("l", "r", [*run_key, "query_id"]),
            "group_k": f" GROUP BY {', '.join(run_key)}" if run_key else "",
            "join_n": f"JOIN rec_run_lists AS n ON {on('n', 'c', run_key)}" if run_key else
                      "CROSS JOIN rec_run_lists AS n",
            "part": partition, "part_": partition + " " if partition else "",
            "catalogue": "(SELECT COUNT(DISTINCT doc_id) FROM catalogue_rows)" if catalogue else "COUNT(DISTINCT doc_id)",
            # Without items= the catalogue is the training items and any other the run recommends: all are in it.
            "in_catalogue": "CASE WHEN k.doc_id IS NULL THEN 0 ELSE 1 END" if catalogue else "1",
            "join_catalogue": " LEFT JOIN catalogue_ids AS k ON k.doc_id = c.doc_id" if catalogue else ""}
    ctes = [_CATALOGUE_IDS] if catalogue else []
    return [(name, _parse_ours(sql.format(**fill))) for name, sql in [*ctes, *_RECOMMENDATIONS]]


# The run's rated pairs (rows: ratings, sql/_shared.sql lists their columns): each run row with a grade, its
# score the prediction, as Recommenders' merge_rating_true_pred pairs them; with windows over the run and the
# user. A rank among tied scores is their mean rank, as ROC areas count a tied pair 1/2.
_RATINGS = [
    ("rated_pairs", "SELECT {r_k_}r.query_id, r.doc_id, r.score AS prediction, j.relevance AS rating, "
                    "CASE WHEN j.relevance >= {level} THEN 1 ELSE 0 END AS is_pos FROM run_rows AS r "
                    "JOIN judgments AS j ON {on_j_r}"),
    ("rating_rows", "SELECT {k_}query_id, doc_id, prediction, rating, is_pos, "
                    "AVG(rating) OVER ({part}) AS mean_rating, AVG(rating - prediction) OVER ({part}) AS mean_error, "
                    "COUNT(*) OVER ({part}) AS num_pairs, SUM(is_pos) OVER ({part}) AS num_pos, "
                    "RANK() OVER ({part_}ORDER BY prediction) + CAST(COUNT(*) OVER ({part_k_}prediction) - 1 AS DOUBLE)"
                    " / 2 AS score_rank, COUNT(*) OVER ({part_k_}query_id) AS user_pairs, "
                    "SUM(is_pos) OVER ({part_k_}query_id) AS user_pos, RANK() OVER ({part_k_}query_id ORDER BY "
                    "prediction) + CAST(COUNT(*) OVER ({part_k_}query_id, prediction) - 1 AS DOUBLE) / 2 "
                    "AS user_score_rank FROM rated_pairs"),
]


def _rating_ctes(options: Shape) -> list:
    """The CTEs computing the run's rated pairs (rating_rows), keyed by the run and segment. With labels in the
    run (no qrels), a pair is a run row with a label."""
    run_key = [*options.run_key, *options.segment_key]
    pair = [*options.list_key, "doc_id"] if options.labels else ["query_id", "doc_id"]
    on = _join_on("j", "r", pair, options.segment_key)
    partition = f"PARTITION BY {', '.join(run_key)}" if run_key else ""
    fill = {"k_": "".join(f"{c}, " for c in run_key), "r_k_": "".join(f"r.{c}, " for c in run_key),
            "on_j_r": on, "level": options.relevance_level, "part": partition,
            "part_": partition + " " if partition else "", "part_k_": f"PARTITION BY {''.join(f'{c}, ' for c in run_key)}"}
    return [(name, _parse_ours(sql.format(**fill))) for name, sql in _RATINGS]


def run_values(plan: Plan, options: Shape, fixed, catalogue: bool = False) -> tuple[list, list]:
    """The measures of the whole run: one value per run (and segment), over its items (rows: recommendations)
    or its rated pairs (rows: ratings), on each of its lists; and those of each user's rated pairs (rows: ratings
    under a mean), one value per list. (The CTEs, [(values CTE, its measures' output columns, the columns it is
    joined on)])."""
    ctes, joined = [], []
    run_key = [*options.run_key, *options.segment_key]
    if plan.recommendations:
        ctes += _recommendation_ctes(options, catalogue)
    if plan.ratings or plan.user_ratings:
        ctes += _rating_ctes(options)
    # (the values' CTE, its measures, their rows, the order their sums add in, the key of a value: the run, or
    # the list's user)
    for name, outs, rows, order, by in (
            ("rec_items_values", plan.recommendations, "rec_items", ["doc_id"], run_key),
            ("rating_rows_values", plan.ratings, "rating_rows", ["query_id", "doc_id"], run_key),
            ("user_rating_values", plan.user_ratings, "rating_rows", ["doc_id"], [*run_key, "query_id"])):
        if not outs:
            continue
        values = [exp.alias_(fixed(e, _by(order)), out, copy=False) for out, e, _ in plan.values if out in outs]
        grouped = exp.select(*_cols(by), *values).from_(rows, copy=False)
        ctes.append((name, grouped.group_by(*_cols(by), copy=False) if by else grouped))
        joined.append((name, outs, by))
    return ctes, joined


# Item similarities (templates with `rows: items`, sql/_shared.sql lists their columns): one row per ranked item
# of each list, with the summed cosine similarity of the item to the items ranked above it in the list, and its
# mean cosine similarity to the user's training items. An item's vector is its features (items=, space
# `feature`) or the users who had it in training (history=, space `cooc`: cosine of co-occurrence counts, as
# Recommenders' item_cooccurrence_count). Vectors are rows (item, dimension, value); a pair with an item without
# a vector (or a zero vector) has similarity 0. Only the pairs the lists need are compared.
ITEM_SPACES = ("feature", "cooc")
ITEM_FEATURE_COLUMNS = {"feature_sim_above", "feature_hist_sim"}
ITEM_HISTORY_COLUMNS = {"cooc_sim_above", "cooc_hist_sim", "feature_hist_sim"}
_ITEM_VECTORS = {"cooc": "SELECT DISTINCT doc_id, query_id AS dimension, CAST(1 AS DOUBLE) AS value FROM history_rows"}
_ITEM_BASE = ("item_base", "SELECT {k}, doc_id, rnk, CASE WHEN relevance >= {level} THEN 1 ELSE 0 END AS is_rel "
                          "FROM ranking{depth}")
_ITEM_LIST_PAIRS = ("item_list_pairs", "SELECT {k_b}, b.rnk, a.doc_id AS item_a, b.doc_id AS item_b FROM item_base AS a "
                                       "JOIN item_base AS b ON {on_a_b} AND a.rnk < b.rnk")
_ITEM_HISTORY_PAIRS = ("item_history_pairs", "SELECT {k_i}, i.rnk, i.doc_id AS item_a, h.doc_id AS item_b "
                                             "FROM item_base AS i JOIN history_rows AS h ON h.query_id = i.query_id")
_ITEM_SPACE = [
    ("{s}_norms", "SELECT doc_id, SQRT(SUM(value * value)) AS norm FROM {s}_vectors GROUP BY doc_id"),
    ("{s}_sims", "SELECT p.item_a, p.item_b, SUM(va.value * vb.value) / NULLIF(MAX(na.norm) * MAX(nb.norm), 0) AS sim "
                 "FROM item_pairs AS p JOIN {s}_vectors AS va ON va.doc_id = p.item_a JOIN {s}_vectors AS vb "
                 "ON vb.doc_id = p.item_b AND vb.dimension = va.dimension JOIN {s}_norms AS na ON na.doc_id = p.item_a "
                 "JOIN {s}_norms AS nb ON nb.doc_id = p.item_b GROUP BY p.item_a, p.item_b"),
]
# Each list item's similarities to the items above it (summed) and to the user's history (their mean).
_ITEM_ROLLUP = "SELECT {k}, p.rnk, {values} FROM {pairs} AS p {joins} GROUP BY {k}, p.rnk"
_ITEM_ROWS = "SELECT {k_i}, i.rnk, i.is_rel{columns} FROM item_base AS i{joins}"


def _item_vectors(items: Source) -> exp.Select:
    """The item features as rows (doc_id, dimension, value): a vector's elements by position, a category as
    one dimension of value 1, or the long form as it is."""
    roles = set(items.columns)
    forms = [form for form in ({"vector"}, {"category"}, {"dimension", "value"}) if form <= roles]
    if len(forms) != 1 or roles - {"doc_id", *forms[0]}:
        found = sorted(roles - {"doc_id"})
        choose = (f" Name the one to use: columns={{{found[0]!r}: '<its column>'}} (--column {found[0]}=<its column>)."
                  if len(forms) > 1 else "")
        raise SqlmetricsError(f"items= has the item features as {', '.join(found) or 'nothing'}: give one list column "
                              "of numbers (vector), one category column, or the long form (dimension, value), besides "
                              f"the item.{choose}")

    def select(doc_id, dimension, value) -> exp.Select:
        return exp.select(*(exp.alias_(exp.cast(e, _type(t), copy=False), name, copy=False) for e, t, name in
                            ((doc_id, "VARCHAR", "doc_id"), (dimension, "VARCHAR", "dimension"), (value, "DOUBLE", "value"))))

    if forms[0] == {"vector"}:  # an element's position is its dimension
        doc_id = exp.column(items.columns["doc_id"].copy(), LISTS[0])
        return _unnested_from(select(doc_id, exp.column(LISTS[3], LISTS[1]), exp.column(LISTS[2], LISTS[1])),
                              items.table, items.columns["vector"])
    dimension, value = (items.value("category"), exp.Literal.number(1)) if forms[0] == {"category"} else \
        (items.value("dimension"), items.value("value"))
    return select(items.value("doc_id"), dimension, value).from_(items.table.copy(), copy=False)


def _item_ctes(options: Shape, plan: Plan, items: Source | None) -> list:
    """The CTEs computing each list's item rows (item_rows), after `ranking`: the similarities its measures read.
    Only the items down to the largest cutoff are compared, and the pairs within a list (n(n-1)/2 of n items)
    only for a measure that reads them: IntraListDiversity@10 reads 45 a list, Serendipity none."""
    key = list(options.list_key)
    on = lambda a, b: _join_on(a, b, key, options.segment_key)  # noqa: E731
    spaces = [s for s in ITEM_SPACES if plan.item_columns & {f"{s}_sim_above", f"{s}_hist_sim"}]
    above = bool(plan.item_columns & {f"{s}_sim_above" for s in spaces})
    history = bool(plan.item_columns & {f"{s}_hist_sim" for s in spaces})
    deepest_item = None if None in plan.item_cutoffs else max(plan.item_cutoffs)  # None: some measure reads all
    depths = [d for d in (options.depth, deepest_item) if d is not None]
    fill = {"k": ", ".join(key), "k_b": ", ".join(f"b.{c}" for c in key), "k_i": ", ".join(f"i.{c}" for c in key),
            "on_a_b": on("a", "b"), "level": options.relevance_level,
            "depth": f" WHERE rnk <= {min(depths)}" if depths else ""}
    pairs = [_ITEM_BASE, *([_ITEM_LIST_PAIRS] if above else []), *([_ITEM_HISTORY_PAIRS] if history else [])]
    ctes = [(name, sql.format(**fill)) for name, sql in pairs]
    ctes.append(("item_pairs", " UNION ".join(f"SELECT DISTINCT item_a, item_b FROM {name}" for name, _ in pairs[1:])))
    for s in spaces:
        ctes.append((f"{s}_vectors", _ITEM_VECTORS[s] if s in _ITEM_VECTORS else _item_vectors(items)))
        ctes += [(name.format(s=s), sql.format(s=s)) for name, sql in _ITEM_SPACE]
    joins = " ".join(f"LEFT JOIN {s}_sims AS {s} ON {s}.item_a = p.item_a AND {s}.item_b = p.item_b" for s in spaces)

    def rollup(pairs, aggregate, suffix):
        values = ", ".join(f"{aggregate}(COALESCE({s}.sim, 0)) AS {s}_{suffix}" for s in spaces)
        return _ITEM_ROLLUP.format(k=", ".join(f"p.{c}" for c in key), values=values, pairs=pairs, joins=joins)

    columns, joined = "", ""
    if above:
        ctes.append(("item_above", rollup("item_list_pairs", "SUM", "sim_above")))
        columns += "".join(f", COALESCE(a.{s}_sim_above, 0) AS {s}_sim_above" for s in spaces)
        joined += f" LEFT JOIN item_above AS a ON {on('a', 'i')} AND a.rnk = i.rnk"
    if history:  # NULL for a user without training items
        ctes.append(("item_history", rollup("item_history_pairs", "AVG", "hist_sim")))
        columns += "".join(f", h.{s}_hist_sim" for s in spaces)
        joined += f" LEFT JOIN item_history AS h ON {on('h', 'i')} AND h.rnk = i.rnk"
    ctes.append(("item_rows", _ITEM_ROWS.format(columns=columns, joins=joined, **fill)))
    return [(name, sql if isinstance(sql, exp.Expression) else _parse_ours(sql)) for name, sql in ctes]


def item_values(plan: Plan, options: Shape, items: Source | None, key: list, fixed) -> list:
    """The item rows and one GROUP BY over each list's (item_values)."""
    ctes = _item_ctes(options, plan, items)
    values = [exp.alias_(fixed(e, _by(["rnk"])), out, copy=False) for out, e, _ in plan.values if out in plan.items]
    ctes.append(("item_values", exp.select(*_cols(key), *values).from_("item_rows", copy=False)
                 .group_by(*_cols(key), copy=False)))
    return ctes
