"""The ranked rows, the chain every statement has: the judgments and run rows, the ideal ranking and the
per-query statistics, one ranking pass over each list, the judged rows with running sums, the lists to
average, and the one GROUP BY (list_values, or group_values with judgment groups) in which every measure
over ranked rows is one aggregate expression."""
from __future__ import annotations

from ..deferred import exp
from ..options import FORMAT_GROUPS
from ..plan import Plan, _number
from .shape import Shape
from .sources import Source
from .trees import _and, _by, _c, _cols, _equal_on, _order_by, _ordered, _parse_ours, _window, _with_window


def _order_cols(options: Shape) -> list:
    """The run's column its lists are ordered by: the rank position, or the score."""
    return ["rank_position"] if options.ties == "rank" else ["score"]


def input_ctes(options: Shape, qrels: Source | None, run: Source, key: list) -> list:
    """judgments and run_rows: the inputs, columns renamed and cast (with subtopic qrels, subtopic_judgments too;
    with labels in the run, the judgments are its labelled rows)."""
    run_roles = {k: "VARCHAR" for k in options.run_key}
    # Segments keep their type (a date stays a DATE, a number sorts as one): the engine compares and groups them
    # as they are, and the results' segment columns are the run's.
    run_roles.update({k: None for k in options.segment_key})
    run_roles.update({"query_id": "VARCHAR", "doc_id": "VARCHAR"})
    run_roles[_order_cols(options)[0]] = "BIGINT" if options.ties == "rank" else "DOUBLE"
    if options.labels:
        run_roles["relevance"] = "DOUBLE"

    ctes = []
    run_rows = ("run_rows", run.select(run_roles))
    if options.labels:
        # A row without a label (NULL) is an unjudged document; a list with no labelled row is not averaged.
        labelled = exp.select(*_cols([*key, "doc_id", "relevance"])).from_("run_rows", copy=False) \
            .where(exp.not_(_c("relevance").is_(exp.null())), copy=False)
        ctes += [run_rows, ("judgments", labelled)]
    else:
        roles = {"query_id": "VARCHAR", "doc_id": "VARCHAR", "relevance": "DOUBLE"}
        roles.update({role: "VARCHAR" for role in FORMAT_GROUPS[options.qrels_format]})
        if options.subtopics:
            # Subtopic qrels: every other measure reads a document's highest grade over the query's subtopics.
            ctes.append(("subtopic_judgments", qrels.select(roles)))
            ctes.append(("judgments", _parse_ours("SELECT query_id, doc_id, MAX(relevance) AS relevance "
                                                  "FROM subtopic_judgments GROUP BY query_id, doc_id")))
        elif options.trec_grades:  # a negative grade counts nowhere; its document is ranked at -2 (_trec_grade)
            ctes.append(("qrels_rows", qrels.select(roles)))
            ctes.append(("judgments", _parse_ours(f"SELECT {', '.join(r for r in roles if r != 'relevance')}, CASE WHEN "
                                                  "relevance >= 0 THEN relevance END AS relevance FROM qrels_rows")))
        else:
            ctes.append(("judgments", qrels.select(roles)))
        ctes.append(run_rows)
    return ctes


def _trec_grade(options: Shape) -> exp.Expression:
    """A ranked document's grade, from its row of the judgments (LEFT JOINed): with trec_grades, trec_eval's -1 when
    there is none and -2 for a negative grade (there NULL, see input_ctes)."""
    grade = _c("relevance", "judgments")
    if not options.trec_grades:
        return grade
    return exp.alias_(exp.Case().when(_c("query_id", "judgments").is_(exp.null()), exp.Literal.number(-1))
                      .when(grade.copy().is_(exp.null()), exp.Literal.number(-2)).else_(grade), "relevance", copy=False)


def ideal_ctes(plan: Plan, stats_key: list) -> tuple[list, dict]:
    """The ideal ranking (judgments ranked by grade) when a measure reads one, and the running values down it:
    (its CTEs, {ideal rank column: the CTE holding its running values})."""
    if not plan.ideal:
        return [], {}
    ideal_order = [_ordered(_c("relevance"), True, False), _ordered(_c("doc_id"), True, False)]
    ideal_rnk = _window(exp.func("ROW_NUMBER"), _cols(stats_key), ideal_order)
    # A gain mapping may sort the grades otherwise: one more ranking of the same rows per such order.
    others = [exp.alias_(_window(exp.func("ROW_NUMBER"), _cols(stats_key),
                                 [_ordered(e.copy(), True, False), _ordered(_c("doc_id"), True, False)]), name,
                         copy=False) for name, e in plan.ideal_orders.items()]
    ctes = [("ideal", exp.select(*_cols(stats_key), _c("relevance"), exp.alias_(ideal_rnk, "ideal_rnk", copy=False),
                                 *others).from_("judgments", copy=False))]
    # Running values down an ideal ranking, one row per ideal position, read by each ranked row at its rank: one
    # CTE per ideal ranking that has some, then (ideal_suffix sections) windows over those running values.
    running_ctes = {}
    for i, (rank, sections) in enumerate(plan.ideal_running.items(), start=1):
        by_rank = [_ordered(_c(rank), False, True)]
        running = [exp.alias_(_with_window(e, _cols(stats_key), by_rank), name, copy=False)
                   for name, e in sections.items()]
        running_ctes[rank] = f"ideal_running_{i}"
        ctes.append((running_ctes[rank], exp.select(*_cols(stats_key), _c(rank), *running).from_("ideal", copy=False)))
        if rank in plan.ideal_suffix:
            suffix = [exp.alias_(_with_window(e, _cols(stats_key), by_rank), name, copy=False)
                      for name, e in plan.ideal_suffix[rank].items()]
            ctes.append((f"ideal_suffix_{i}", exp.select(exp.Star(), *suffix).from_(running_ctes[rank], copy=False)))
            running_ctes[rank] = f"ideal_suffix_{i}"
    return ctes, running_ctes


def query_stats_ctes(plan: Plan, stats_key: list, fixed) -> list:
    """query_stats, one row per judged query (R, N, ideal DCGs, ...), and collection, one row of aggregates over
    all judgments, when a measure reads one."""
    # query_stats reads the ideal ranking when there is one (ideal_rnk orders it), else the judgments.
    stats_order = _by(["ideal_rnk" if plan.ideal else "doc_id"])
    stats = [exp.alias_(fixed(e, stats_order), name, copy=False) for name, e in plan.query.items()]
    stats += [exp.alias_(fixed(e, stats_order), name, copy=False) for name, e in plan.ideal.items()]
    ctes = [("query_stats", exp.select(*_cols(stats_key), *stats)
             .from_("ideal" if plan.ideal else "judgments", copy=False).group_by(*_cols(stats_key), copy=False))]
    if plan.collection:
        collection = [exp.alias_(e.copy(), n, copy=False) for n, e in plan.collection.items()]
        ctes.append(("collection", exp.select(*collection).from_("judgments", copy=False)))
    return ctes


def _judged_run(options: Shape, key: list) -> exp.Select:
    """Each run row joined with its judgment once; only judged queries."""
    order_cols = _order_cols(options)
    if options.labels:
        judged = exp.select(*_cols([*key, "doc_id", *order_cols, "relevance"])).from_("run_rows", copy=False)
    elif options.judgment_groups:
        # Each run row once per judgment group of its query (query_stats has one row per group), judged by
        # that group's judgments: an unjudged document still takes its place in every group's ranking.
        judged = exp.select(*_cols(options.list_key, "run_rows"), _c("judgment_group", "query_stats"),
                            *_cols(["doc_id", *order_cols], "run_rows"),
                            _trec_grade(options)) \
            .from_("run_rows", copy=False) \
            .join("query_stats", on=_equal_on("run_rows", "query_stats", ["query_id"]), copy=False) \
            .join("judgments", on=_and(_equal_on("run_rows", "judgments", ["query_id", "doc_id"]),
                                       _equal_on("query_stats", "judgments", ["judgment_group"])),
                  join_type="LEFT", copy=False)
    else:
        judged = exp.select(*_cols([*key, "doc_id", *order_cols], "run_rows"),
                            _trec_grade(options)) \
            .from_("run_rows", copy=False) \
            .join("judgments", on=_equal_on("run_rows", "judgments", ["query_id", "doc_id"]), join_type="LEFT",
                  copy=False) \
            .where(_c("query_id", "run_rows").isin(query=exp.select("query_id").from_("query_stats", copy=False)),
                   copy=False)
    if options.judged_only and options.depth is not None:
        # trec_eval cuts each list at the depth first, then drops its unjudged documents (form_res_rels.c): the
        # cut counts every ranked document, so it is a rank over the whole list, before the judged ones are kept.
        names = [s.alias_or_name for s in judged.selects]
        ranked = exp.select(*_cols(names), exp.alias_(_window(exp.func("ROW_NUMBER"), _cols(key), _order_by(options)),
                                                      "full_rnk", copy=False)).from_(judged.subquery("whole", copy=False),
                                                                                     copy=False)
        return exp.select(*_cols(names)).from_(ranked.subquery("cut", copy=False), copy=False).where(
            exp.and_(exp.LTE(this=_c("full_rnk"), expression=exp.Literal.number(options.depth)),
                     exp.GTE(this=_c("relevance"), expression=exp.Literal.number(0))), copy=False)
    if options.judged_only:
        grade = _c("relevance") if options.labels else _c("relevance", "judgments")
        judged = judged.where(exp.GTE(this=grade, expression=exp.Literal.number(0)), copy=False)
    return judged


def ranking_ctes(plan: Plan, options: Shape, key: list) -> list:
    """judged_run, then ranking (each list ordered once: the only pass over every run row), list_ends and
    judged_ranking (the rows that can change a measure, with running sums over them), and lists."""
    ctes = [("judged_run", _judged_run(options, key))]
    # The list's length is the last row's rank: LEAD over the same window marks that row without a second
    # pass (COUNT(*) OVER the partition costs DuckDB about 20% more than the ranking itself). ClickHouse's
    # LEAD gives 0 past the end where others give NULL, and MariaDB's takes no default: hence COALESCE.
    partition = _cols(key)
    order = _order_by(options)
    ctes.append(("ranking", exp.select(
        *_cols([*key, "relevance", *(["doc_id"] if plan.subtopics or plan.items or plan.overlap else [])]),
        exp.alias_(_window(exp.func("ROW_NUMBER"), partition, order), "rnk", copy=False),
        exp.alias_(exp.func("COALESCE", _window(exp.func("LEAD", exp.Literal.number(1)), partition, order),
                            exp.Literal.number(0)), "has_next", copy=False)).from_("judged_run", copy=False)))
    # Running values only change at judged documents, so they are computed over those rows alone (a few
    # per list instead of the whole run); the first row stays so that every ranked list has a row, and
    # the last one only long enough to give the list's length.
    judged_row = exp.not_(_c("relevance").is_(exp.null()))
    first_row = exp.EQ(this=_c("rnk"), expression=exp.Literal.number(1))
    last_row = exp.EQ(this=_c("has_next"), expression=exp.Literal.number(0))
    kept = exp.or_(judged_row, first_row, last_row)
    if options.depth is not None:  # the list ends at `depth`: that row is its last
        at_depth = exp.LTE(this=_c("rnk"), expression=exp.Literal.number(options.depth))
        kept = exp.and_(exp.paren(exp.or_(kept, exp.EQ(this=_c("rnk"), expression=exp.Literal.number(options.depth)))),
                        at_depth)
    ctes.append(("list_ends", exp.select(
        *_cols([*key, "relevance", "rnk"]),
        exp.alias_(_window(exp.func("MAX", _c("rnk")), partition), "num_ret", copy=False))
        .from_("ranking", copy=False).where(kept, copy=False)))
    by_rank = [_ordered(_c("rnk"), False, True)]
    running = [exp.alias_(_with_window(e, partition, by_rank), name, copy=False) for name, e in plan.row.items()]
    judged_ranking = exp.select(*_cols([*key, "relevance", "rnk", "num_ret"]), *running).from_("list_ends", copy=False)
    if plan.ranking_reads_collection:
        judged_ranking = judged_ranking.join("collection", join_type="CROSS", copy=False)
    ctes.append(("judged_ranking", judged_ranking.where(exp.or_(judged_row.copy(), first_row.copy()), copy=False)))
    ctes.append(("lists", _lists(options, key)))
    return ctes


def _lists(options: Shape, key: list) -> exp.Select:
    """The lists to average (with judgment groups: each list once per group of its query)."""
    groups = ["judgment_group"] if options.judgment_groups else []
    if options.labels:
        return exp.select(*_cols(key)).from_("query_stats", copy=False)  # every list of the log
    if (options.queries == "intersection" or options.group_by) and (options.judged_only or options.depth == 0):
        # The lists present before judged_only (or depth 0) emptied some of them: an emptied list scores as an
        # empty ranking (trec_eval -J, -M0).
        return exp.select(*_cols(key)).distinct(copy=False).from_("run_rows", copy=False).where(
            _c("query_id").isin(query=exp.select("query_id").from_("query_stats", copy=False)), copy=False)
    if options.queries == "intersection" or options.group_by:
        # With segments, which judged queries a segment should have seen is unknown: the lists present.
        return exp.select(*_cols(key)).from_("judged_ranking", copy=False).where(
            exp.EQ(this=_c("rnk"), expression=exp.Literal.number(1)), copy=False)
    if options.run_key:
        runs = exp.select(*_cols(options.run_key)).distinct(copy=False).from_("run_rows", copy=False).subquery("runs")
        return exp.select(*_cols(options.run_key, "runs"), *_cols(["query_id", *groups], "query_stats")) \
            .from_(runs, copy=False).join("query_stats", join_type="CROSS", copy=False)
    return exp.select(*_cols(["query_id", *groups])).from_("query_stats", copy=False)


def ranked_values(plan: Plan, options: Shape, key: list, stats_key: list, running_ctes: dict, fixed) -> tuple:
    """The one GROUP BY over lists x judged_ranking, every measure one aggregate expression: (the CTEs before
    it, the SELECT). With judgment groups it is group_values, one row per list and group, and the SELECT is
    each list's mean over its groups."""
    values = []
    # Aggregated over pref_rows, subtopic_rows, rec_items, rating_rows, item_rows, verdict_rows, embedding_rows,
    # nugget_rows or overlap_rows, and joined beside these values (build.py)
    own_rows = (plan.preferences | plan.subtopics | plan.recommendations | plan.ratings | plan.user_ratings | plan.items
                | plan.verdicts | plan.embeddings | plan.nuggets | plan.overlap)
    for out, e, empty in plan.values:
        if out in own_rows:
            continue
        if out in plan.positions:  # aggregated over the position rows (position_values), one row per list
            values.append(exp.alias_(_c(out, "position_values"), out, copy=False))
            continue
        e = fixed(e, [_ordered(_c("rnk", "judged_ranking"), False, True)])
        value = exp.func("COALESCE", e, exp.Literal.number(_number(empty))) if empty is not None else e
        values.append(exp.alias_(value, out, copy=False))
    group = [*_cols(key, "lists"), *_cols([*plan.query, *plan.ideal], "query_stats"),
             *_cols(plan.collection, "collection")]
    positions = [out for out, _, _ in plan.values if out in plan.positions]
    group += _cols(positions, "position_values")
    list_values = exp.select(*_cols(key, "lists"), *values).from_("lists", copy=False) \
        .join("query_stats", on=_equal_on("lists", "query_stats", stats_key, options.segment_key), copy=False)
    if plan.collection:
        list_values = list_values.join("collection", join_type="CROSS", copy=False)
    list_values = list_values.join("judged_ranking", on=_equal_on("lists", "judged_ranking", key, options.segment_key),
                                   join_type="LEFT", copy=False)
    if plan.positions:
        list_values = list_values.join("position_values", on=_equal_on("lists", "position_values", key,
                                                                         options.segment_key), copy=False)
    for rank, cte in running_ctes.items():
        at_rank = exp.EQ(this=_c(rank, cte), expression=_c("rnk", "judged_ranking"))
        list_values = list_values.join(cte, on=_and(_equal_on("judged_ranking", cte, stats_key, options.segment_key),
                                                    at_rank), join_type="LEFT", copy=False)
    list_values = list_values.group_by(*group, copy=False)
    if not options.judgment_groups:
        return [], list_values
    # The values per judgment group, then each list's value: their mean over the query's groups.
    outer = list(options.list_key)
    means = [exp.alias_(fixed(exp.func("AVG", _c(out)), _by(["judgment_group"])), out, copy=False)
             for out, _, _ in plan.values]
    return [("group_values", list_values)], exp.select(*_cols(outer), *means).from_("group_values", copy=False) \
        .group_by(*_cols(outer), copy=False)
