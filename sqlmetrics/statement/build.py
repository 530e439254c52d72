"""build_statement(): the stages composed into one statement, in the order its CTEs run (see the package's
docstring for the chain)."""
from __future__ import annotations

from ..deferred import exp
from ..errors import SqlmetricsError
from ..plan import Plan, _number
from .aggregate import final_select
from .overlap import overlap_values
from .positions import position_ctes
from .preferences import preference_values
from .nuggets import Nuggets, check_nuggets, nugget_values
from .rag import check_rag, embedding_values, verdict_values
from .ranked import ideal_ctes, input_ctes, query_stats_ctes, ranked_values, ranking_ctes
from .recommender import ITEM_FEATURE_COLUMNS, ITEM_HISTORY_COLUMNS, item_values, run_values
from .shape import Shape
from .sources import Embeddings, Source
from .subtopics import subtopic_values
from .trees import _c, _cols, _equal_on, _in_fixed_order


def build_statement(plan: Plan, qrels: Source | None, run: Source, options: Shape, per_query: bool,
                    history: Source | None = None, items: Source | None = None, verdicts: Source | None = None,
                    embeddings: Embeddings | None = None, nuggets: Nuggets | None = None) -> exp.Select:
    """The whole evaluation as one statement (a sqlglot tree; generate it for any dialect).

    qrels=None with options.labels: the judgments are the run's own `relevance` role (a label column or a
    relevance expression), and everything per query (R, the ideal ranking) is per list instead.
    history: the training interactions (query_id as the user, doc_id as the item), which the measures of the
    whole run's recommendations (rows: recommendations) read, and the similarities of items by co-occurrence
    and to a user's history (rows: items).
    items: the item features (doc_id as the item; vector, category, or dimension and value), which the
    similarities of items by their features read (rows: items).
    verdicts: the judged statements of a RAG pipeline (query_id, statement_of, verdict), which the RAG measures
    (rows: verdicts) read, one query's statements for each of its lists; embeddings: the question embeddings
    AnswerRelevancy (rows: embeddings) reads, alike. nuggets: the topics' nuggets and the runs' support of them, which
    the nugget measures (rows: nuggets) read, each list's (run, topic)'s.
    """
    qrels, run, history, items, verdicts, embeddings, nuggets = (
        None if s is None else s.bound() for s in (qrels, run, history, items, verdicts, embeddings, nuggets))
    _check(plan, options, qrels, history, items, verdicts, embeddings)
    check_nuggets(plan, options, nuggets)
    key = list(options.group_key)
    # The key the judgments are keyed by: the query (qrels) or the whole list (labels in the run); and the
    # judgment group, when there are groups.
    stats_key = key if options.labels else ["query_id", *(["judgment_group"] if options.judgment_groups else [])]

    def fixed(e, order):
        return _in_fixed_order(e, order) if options.fixed_order else e.copy()

    ctes = input_ctes(options, qrels, run, key)
    ideal, running_ctes = ideal_ctes(plan, stats_key)
    ctes += ideal + query_stats_ctes(plan, stats_key, fixed) + ranking_ctes(plan, options, key)
    if plan.positions:
        ctes += position_ctes(plan, options, key)
    grouped, list_values = ranked_values(plan, options, key, stats_key, running_ctes, fixed)
    ctes += grouped
    beside, joined = _other_rows(plan, options, key, fixed, history, items, verdicts, embeddings)
    ctes += beside
    if plan.nuggets:  # by (run, topic): the list's own run, or the one run the assignments were taken by
        ctes += nugget_values(plan, nuggets, fixed)
        joined.append(("nugget_values", plan.nuggets, [*options.run_key, "query_id"]))
    if joined:
        ctes.append(("ranked_values", list_values))
        list_values = _joined_beside(plan, options, key, joined)
    ctes.append(("list_values", list_values))
    recursive = bool(plan.preferences)  # pref_closure

    final = final_select(options, plan, list(options.list_key), per_query)
    for name, cte in ctes:
        final = final.with_(name, as_=cte, recursive=recursive, copy=False)
    return final


def _check(plan: Plan, options: Shape, qrels, history, items, verdicts, embeddings) -> None:
    """Refuse the options and inputs the measures cannot be computed with, naming what to pass instead."""
    options.check()
    check_rag(plan, options, verdicts, embeddings)
    if (plan.recommendations or plan.item_columns & ITEM_HISTORY_COLUMNS) and history is None:
        raise SqlmetricsError("the measures of a run's recommendations (catalog coverage, novelty, serendipity, "
                              "diversity by co-occurrence, ...) read the training interactions: pass history=, a table "
                              "of user and item read as qrels are.")
    if plan.item_columns & ITEM_FEATURE_COLUMNS and items is None:
        raise SqlmetricsError("similarity='features' compares items by their features: pass items=, a table of the "
                              "item and a vector, a category, or dimension and value columns; or take similarity='cooccurrence' (the training interactions, history=).")
    if (plan.recommendations or plan.ratings or plan.user_ratings or plan.items) and options.judgment_groups:
        raise SqlmetricsError("the measures of a whole run (recommendations, ratings) take qrels_format='qrels', "
                              "not 'qrels_jg'.")
    if (plan.ratings or plan.user_ratings) and options.ties == "rank":
        raise SqlmetricsError("the rating measures (RMSE, AUC, ...) compare the run's scores with the grades: "
                              "they take ties='docid_desc' or 'docid_asc' (scores), not ties='rank'.")
    if options.judgment_groups and (options.labels or qrels is None):
        raise ValueError("judgment groups come from qrels")  # a caller's bug: evaluate() refuses it first
    if options.subtopics and (options.labels or qrels is None):
        raise ValueError("subtopics come from qrels")  # a caller's bug: evaluate() and render() refuse it first
    if plan.overlap and options.judgment_groups:
        raise SqlmetricsError("Compat compares each list with its ideal ranking: it takes qrels_format='qrels', not "
                              "'qrels_jg'.")
    if plan.preferences and options.judgment_groups:
        raise SqlmetricsError("the prefs_* measures compare preferences (qrels_format='qrels', 'prefs' or 'qrels_prefs'), "
                              "not qrels_format='qrels_jg'.")


def _other_rows(plan: Plan, options: Shape, key: list, fixed, history, items, verdicts, embeddings) -> tuple:
    """The measures over other rows than the ranked ones: one GROUP BY over each list's rows of their kind
    (preferences, subtopics, items, overlap), over the whole run (recommendations, ratings), or over the list's
    query (verdicts, embeddings). (Their CTEs, [(values CTE, its measures' output columns, the columns it is
    joined on)])."""
    ctes, joined = [], []
    if plan.preferences:
        ctes += preference_values(plan, options, key, fixed)
        joined.append(("pref_values", plan.preferences, key))
    if plan.subtopics:
        ctes += subtopic_values(plan, options, key, fixed)
        joined.append(("subtopic_values", plan.subtopics, key))
    if plan.recommendations or plan.item_columns & ITEM_HISTORY_COLUMNS:
        ctes.append(("history_rows", history.select({"query_id": "VARCHAR", "doc_id": "VARCHAR"})))
    if plan.items:
        ctes += item_values(plan, options, items, key, fixed)
        joined.append(("item_values", plan.items, key))
    if plan.overlap:
        ctes += overlap_values(plan, options, key, fixed)
        joined.append(("overlap_values", plan.overlap, key))
    if plan.recommendations and items is not None:  # the item features list the catalogue (CatalogCoverage)
        ctes.append(("catalogue_rows", items.select({"doc_id": "VARCHAR"})))
    run_ctes, run_joined = run_values(plan, options, fixed, catalogue=plan.recommendations and items is not None)
    ctes += run_ctes
    joined += run_joined
    if plan.verdicts:
        ctes += verdict_values(plan, verdicts, fixed)
        joined.append(("verdict_values", plan.verdicts, ["query_id"]))
    if plan.embeddings:
        ctes += embedding_values(plan, embeddings, fixed)
        joined.append(("embedding_values", plan.embeddings, ["query_id"]))
    return ctes, joined


def _joined_beside(plan: Plan, options: Shape, key: list, joined: list) -> exp.Select:
    """Each list's values: the ranked ones (ranked_values) and, joined beside them, the other rows' (joined)."""
    source = {out: cte for cte, outs, _ in joined for out in outs}
    items = []
    for out, _, empty in plan.values:
        value = _c(out, source.get(out, "ranked_values"))
        if out in source and empty is not None:
            value = exp.func("COALESCE", value, exp.Literal.number(_number(empty)))
        items.append(exp.alias_(value, out, copy=False))
    list_values = exp.select(*_cols(key, "ranked_values"), *items).from_("ranked_values", copy=False)
    for cte, _, on in joined:
        list_values = list_values.join(cte, on=_equal_on("ranked_values", cte, on, options.segment_key),
                                       join_type="LEFT", copy=False) if on else \
            list_values.join(cte, join_type="CROSS", copy=False)
    return list_values
