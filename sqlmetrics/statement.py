"""The statement builder: a plan (plan.py) + two sources + a shape -> ONE SQL statement, built as a sqlglot
tree (`dialects/` generates it for other engines, `local/` generates it for DuckDB and runs it). The
caller's names arrive as identifier and table nodes in the Sources; nothing here is text parsed back.

Shape of the statement (CTEs, in order):

    judgments    the qrels, columns renamed and cast              (query_id, doc_id, relevance)
    run_rows     the run(s), columns renamed and cast             (list key..., doc_id, score)
    [ideal]      judgments ranked by grade, for ideal-ranking measures (nDCG)
    query_stats  one row per judged query: R, N, ideal DCGs, ...
    [collection] one row: aggregates over all judgments (max grade)
    judged_run   each run row joined with its judgment once; only judged queries
    ranking      each list ordered once: rank and last row, the only pass over every run row
    list_ends    the judged rows, each list's first and last row; the list's length
    judged_ranking  the rows that can change a measure (judged ones, and each list's first row),
                 with running sums over them: an unjudged document adds nothing to any running value
    lists        the lists to average (queries="qrels": every run x every judged query)
    [position_*] for `rows: positions` templates: every list x positions 1..1000 with the judged rows there,
                 their windows, and position_values, one row per list (_position_ctes)
    [overlap_*]  for `rows: overlap` templates (Compat): every list's depths 1..D with how much its top and its
                 ideal ranking's top share (_overlap_ctes), aggregated in overlap_values, joined beside list_values
    list_values  one GROUP BY over lists x judged_ranking: every measure is one aggregate expression

With judgment groups (Shape.judgment_groups, qrels_format='qrels_jg'), the judgments carry
`judgment_group`, and everything from query_stats to the GROUP BY is keyed by it too: judged_run repeats
each run row once per group of its query, the GROUP BY (then named group_values) gives each measure per
list and group, and list_values is their mean over the groups (trec_eval's map_avgjg, P_avgjg_k, ...).

With subtopic qrels (Shape.subtopics, qrels_format='subtopics'), the judgments are each document's highest grade
over its subtopics (subtopic_judgments holds them all), and the diversity measures (`rows: subtopics`) are one
GROUP BY over each list's subtopic rows (_subtopic_ctes), joined beside the ranked values as the preference
measures' are.

The list key is run_key + segment columns (group_by, internally seg_1, ...) + query_id; templates never
name it. With segments and qrels, `lists` are the lists present (which judged queries a segment should
have seen is unknown). Labelled lists (Shape.labels, no qrels): run_rows carries `relevance` (a label
column or a checked relevance expression, see relevance.py) and comes first; judgments are its labelled
rows, and query_stats / ideal are keyed by the whole list key, so R and the ideal DCG come from the list.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from .errors import SqlmetricsError
from .options import BY_NAME, FORMAT_GROUPS
from .plan import READ, Plan, _number

GMAP_FLOOR = 1e-5  # trec_eval gm_map: AP is floored at 1e-5 before the logarithm


@dataclass
class Shape:
    """What shapes the statement beyond the measures: the evaluation options and the list key."""

    queries: str = "qrels"
    ties: str = "docid_desc"
    relevance_level: int = 1
    score_precision: str = "float64"
    run_key: tuple = ()  # list-key columns before query_id, e.g. ("run_name",)
    # Segment columns, part of the list key after run_key: each is (internal name, output name SQL); the
    # internal names (seg_1, ...) are what the run source maps, the output names are the result columns.
    group_by: tuple = ()
    labels: bool = False  # judgments come from the run rows (role `relevance`), keyed by the whole list key
    # Sums in a fixed order (DuckDB, where the local evaluation runs): see _in_fixed_order.
    fixed_order: bool = False
    # The runs to evaluate, when known (several runs evaluated locally): a run without rows still scores
    # every judged query 0. Otherwise, the runs are the run_key values present in the run rows.
    run_names: tuple = ()
    depth: int | None = None  # only each list's first `depth` documents count (trec_eval -M)
    judged_only: bool = False  # unjudged documents (and negative grades) leave the lists before ranking (-J)
    # How the judgments were read (options.qrels_format): 'qrels_jg' carries `judgment_group`, and every list
    # is evaluated once per judgment group of its query, its value the mean over those groups (trec_eval's
    # *_avgjg measures); 'prefs' and 'qrels_prefs' carry the groups (and subgroups) of preferences.
    qrels_format: str = "qrels"

    @property
    def judgment_groups(self) -> bool:
        return self.qrels_format == "qrels_jg"

    @property
    def subtopics(self) -> bool:
        return self.qrels_format == "subtopics"

    @property
    def segment_key(self) -> tuple:
        return tuple(internal for internal, _ in self.group_by)

    @property
    def list_key(self) -> tuple:
        return (*self.run_key, *self.segment_key, "query_id")

    @property
    def group_key(self) -> tuple:
        """What the measures are computed per: the list, and its judgment group when there are groups."""
        return (*self.list_key, "judgment_group") if self.judgment_groups else self.list_key

    def check(self):
        for name in ("queries", "ties", "relevance_level", "score_precision", "depth", "judged_only",
                     "qrels_format"):
            BY_NAME[name].check(getattr(self, name))


def check_subtopics(calls, qrels_format: str, has_qrels: bool) -> None:
    """The diversity measures (templates with `rows: subtopics`) read subtopic qrels, and only qrels hold them."""
    diversity = [c.text for c in calls if c.measure.rows == "subtopics"]
    if diversity and qrels_format != "subtopics":
        raise SqlmetricsError(f"{diversity[0]} is a diversity measure: it reads subtopic qrels, ndeval's `query "
                              "subtopic document grade` lines (or a table with a subtopic column). Pass them with "
                              "qrels_format='subtopics' (command line: -R subtopics).")
    if qrels_format == "subtopics" and not has_qrels:
        raise SqlmetricsError("qrels_format='subtopics' reads the subtopics from the qrels: pass qrels, not qrels=None.")


def _c(name: str, table: str | None = None) -> exp.Column:
    """One of the statement's own columns (run_name, query_id, rnk, ...), optionally qualified by a CTE."""
    return exp.column(name, table=table)


def _cols(names, table: str | None = None) -> list:
    return [_c(n, table) for n in names]


def _by(names) -> list:
    """ORDER BY the key columns (never NULL), ascending."""
    return [exp.Ordered(this=_c(n), nulls_first=False) for n in names]


def _type(name: str) -> exp.DataType:
    return exp.DataType.build(name, dialect=READ)  # as DuckDB reads it: VARCHAR is text of any length


def _ordered(expr, desc: bool, nulls_first: bool) -> exp.Ordered:
    return exp.Ordered(this=expr, desc=desc, nulls_first=nulls_first)


def _order_by(options: Shape) -> list:
    """The ranking order of a list: score (or position) and the tie rule."""
    score = exp.cast(_c("score"), _type("FLOAT"), copy=False) if options.score_precision == "float32" else _c("score")
    if options.ties == "rank":
        return [_ordered(_c("rank_position"), False, True), _ordered(_c("doc_id"), True, False)]
    if options.ties == "docid_asc":
        return [_ordered(score, True, False), _ordered(_c("doc_id"), False, True)]
    return [_ordered(score, True, False), _ordered(_c("doc_id"), True, False)]


def _window(func: exp.Expression, partition: list, order: list | None = None) -> exp.Window:
    return exp.Window(this=func, partition_by=[p.copy() for p in partition],
                      order=exp.Order(expressions=[o.copy() for o in order]) if order else None)


def _with_window(tree: exp.Expression, partition: list, order: list) -> exp.Expression:
    """Give every OVER (frame) of a section the list's partition and ranking order."""
    tree = tree.copy()
    for window in tree.find_all(exp.Window):
        window.set("partition_by", [p.copy() for p in partition])
        window.set("order", exp.Order(expressions=[o.copy() for o in order]))
    return tree


def _in_fixed_order(tree: exp.Expression, order: list) -> exp.Expression:
    """Every SUM and AVG of `tree` (outside windows) adds its rows in `order`, a total order within each
    group. Floating-point addition is not associative, and DuckDB's threads hand a group's rows to its
    aggregate in whatever order they finish: without this, the same run gave per-query values 1 ULP
    apart from one evaluation to the next. Windows already add in their ORDER BY."""
    tree = tree.copy()
    for agg in list(tree.find_all(exp.Sum, exp.Avg)):
        if agg.find_ancestor(exp.Window) is None and not isinstance(agg.this, exp.Order):
            agg.set("this", exp.Order(this=agg.this, expressions=[o.copy() for o in order]))
    return tree


def _and(*conditions) -> exp.Expression:
    return exp.and_(*conditions) if len(conditions) > 1 else conditions[0]


def _equal_on(left: str, right: str, columns, nullable=()) -> exp.Expression:
    """left.c = right.c for each column; IS NOT DISTINCT FROM for the `nullable` ones (segment values may be
    NULL, and a NULL segment is a segment of its own)."""
    # Parenthesised: some engines read `a IS NOT DISTINCT FROM b AND c = d` as `a IS NOT DISTINCT FROM (b AND ...)`.
    return _and(*(exp.paren(exp.NullSafeEQ(this=_c(c, left), expression=_c(c, right)), copy=False) if c in nullable
                  else exp.EQ(this=_c(c, left), expression=_c(c, right)) for c in columns))


@dataclass(frozen=True)
class Source:
    """Where a table comes from and which of its columns play which role.

    `table` is a table node (possibly qualified: db.schema.table) and `columns` maps each role (query_id,
    doc_id, relevance | score, rank_position, run_name, seg_1, ...) to the source's column, an identifier
    node; a role may instead be a constant (`constants`) or a checked expression over the source's columns
    (`expressions`, relevance.py).
    """

    table: exp.Table
    columns: dict
    constants: dict = field(default_factory=dict)
    expressions: dict = field(default_factory=dict)
    # A run with one row per list: doc_id is an array of document ids in rank order and score, when mapped,
    # the array of their scores. Unnested WITH ORDINALITY: an element's position is its rank_position, and
    # without scores the score is minus the position, so that any order (score or rank) is the list's.
    lists: bool = False

    def select(self, roles: dict) -> exp.Select:
        """SELECT ... FROM the table, renaming and casting the roles: {role: SQL type}."""
        items = [exp.alias_(exp.cast(self.value(role), _type(sql_type), copy=False), role, copy=False)
                 for role, sql_type in roles.items()]
        select = exp.select(*items)
        if not self.lists:
            return select.from_(self.table.copy(), copy=False)
        return _unnested_from(select, self.table, self.columns["doc_id"])

    def value(self, role: str) -> exp.Expression:
        """The role's value in a row of the source (of the unnested source, for lists)."""
        if role in self.expressions:
            return exp.paren(self.expressions[role].copy())
        if role in self.constants:
            return exp.convert(self.constants[role])
        if not self.lists:
            return exp.Column(this=self.columns[role].copy())
        position = exp.column(LISTS[3], LISTS[1])
        if role == "doc_id":
            return exp.column(LISTS[2], LISTS[1])
        if role == "rank_position":
            return position
        if role == "score":
            if "score" not in self.columns:
                return exp.Neg(this=position)
            return exp.Bracket(this=exp.column(self.columns["score"].copy(), LISTS[0]), expressions=[position])
        return exp.column(self.columns[role].copy(), LISTS[0])


# The names a list source's rows are unnested under: the table, the array's rows, an element, its position.
LISTS = ("sqlm_lists", "sqlm_items", "sqlm_doc", "sqlm_pos")


@dataclass(frozen=True)
class Embeddings:
    """The question embeddings AnswerRelevancy reads (embeddings=): `source` maps query_id, generated (0: the
    question asked; 1..N: the questions generated from the answer) and noncommittal, and either embedding (an
    array) or dimension and value (one row per dimension). `form` says which, and how the cosine is computed:
    'function' (an array, DuckDB's list_cosine_similarity), 'unnest' (an array unnested WITH ORDINALITY, then
    sums as in the long form), or 'long'."""

    source: Source
    form: str


def _unnested_from(select: exp.Select, table: exp.Table, array: exp.Identifier) -> exp.Select:
    """select FROM table CROSS JOIN UNNEST(array) WITH ORDINALITY, under the LISTS names."""
    lists = exp.alias_(table.copy(), LISTS[0], table=True, copy=False)
    unnest = exp.Unnest(expressions=[exp.column(array.copy(), LISTS[0])],
                        alias=exp.TableAlias(this=exp.to_identifier(LISTS[1]), columns=[exp.to_identifier(LISTS[2])]),
                        offset=exp.to_identifier(LISTS[3]))
    return select.from_(lists, copy=False).join(unnest, join_type="CROSS", copy=False)


def build_statement(plan: Plan, qrels: Source | None, run: Source, options: Shape, per_query: bool,
                    history: Source | None = None, items: Source | None = None, verdicts: Source | None = None,
                    embeddings: Embeddings | None = None) -> exp.Select:
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
    AnswerRelevancy (rows: embeddings) reads, alike.
    """
    options.check()
    _check_rag(plan, options, verdicts, embeddings)
    if (plan.recommendations or plan.item_columns & ITEM_HISTORY_COLUMNS) and history is None:
        raise SqlmetricsError("the measures of a run's recommendations (catalog coverage, novelty, serendipity, "
                              "diversity by co-occurrence, ...) read the training interactions: pass history= "
                              "(--history on the command line), a table of user and item read as qrels are.")
    if plan.item_columns & ITEM_FEATURE_COLUMNS and items is None:
        raise SqlmetricsError("similarity='features' compares items by their features: pass items= (--items on the "
                              "command line), a table of the item and a vector, a category, or dimension and value "
                              "columns; or take similarity='cooccurrence' (the training interactions, history=).")
    if (plan.recommendations or plan.ratings or plan.items) and options.judgment_groups:
        raise SqlmetricsError("the measures of a whole run (recommendations, ratings) take qrels_format='qrels', "
                              "not 'qrels_jg'.")
    if plan.ratings and options.ties == "rank":
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
    key = list(options.group_key)
    order = _order_by(options)
    # The key the judgments are keyed by: the query (qrels) or the whole list (labels in the run); and the
    # judgment group, when there are groups.
    stats_key = key if options.labels else ["query_id", *(["judgment_group"] if options.judgment_groups else [])]
    order_cols = ["rank_position"] if options.ties == "rank" else ["score"]

    run_roles = {k: "VARCHAR" for k in (*options.run_key, *options.segment_key)}
    run_roles.update({"query_id": "VARCHAR", "doc_id": "VARCHAR"})
    run_roles[order_cols[0]] = "BIGINT" if options.ties == "rank" else "DOUBLE"
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
        else:
            ctes.append(("judgments", qrels.select(roles)))
        ctes.append(run_rows)
    def fixed(e, order):
        return _in_fixed_order(e, order) if options.fixed_order else e.copy()

    # query_stats reads the ideal ranking when there is one (ideal_rnk orders it), else the judgments.
    stats_order = _by(["ideal_rnk" if plan.ideal else "doc_id"])
    stats = [exp.alias_(fixed(e, stats_order), name, copy=False) for name, e in plan.query.items()]
    if plan.ideal:
        ideal_order = [_ordered(_c("relevance"), True, False), _ordered(_c("doc_id"), True, False)]
        ideal_rnk = _window(exp.func("ROW_NUMBER"), _cols(stats_key), ideal_order)
        # A gain mapping may sort the grades otherwise: one more ranking of the same rows per such order.
        others = [exp.alias_(_window(exp.func("ROW_NUMBER"), _cols(stats_key),
                                     [_ordered(e.copy(), True, False), _ordered(_c("doc_id"), True, False)]), name,
                             copy=False) for name, e in plan.ideal_orders.items()]
        ctes.append(("ideal", exp.select(*_cols(stats_key), _c("relevance"),
                                         exp.alias_(ideal_rnk, "ideal_rnk", copy=False), *others)
                     .from_("judgments", copy=False)))
        stats += [exp.alias_(fixed(e, stats_order), name, copy=False) for name, e in plan.ideal.items()]
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
    ctes.append(("query_stats", exp.select(*_cols(stats_key), *stats)
                 .from_("ideal" if plan.ideal else "judgments", copy=False).group_by(*_cols(stats_key), copy=False)))
    if plan.collection:
        collection = [exp.alias_(e.copy(), n, copy=False) for n, e in plan.collection.items()]
        ctes.append(("collection", exp.select(*collection).from_("judgments", copy=False)))
    if options.labels:
        judged = exp.select(*_cols([*key, "doc_id", *order_cols, "relevance"])).from_("run_rows", copy=False)
    elif options.judgment_groups:
        # Each run row once per judgment group of its query (query_stats has one row per group), judged by
        # that group's judgments: an unjudged document still takes its place in every group's ranking.
        judged = exp.select(*_cols(options.list_key, "run_rows"), _c("judgment_group", "query_stats"),
                            *_cols(["doc_id", *order_cols], "run_rows"), _c("relevance", "judgments")) \
            .from_("run_rows", copy=False) \
            .join("query_stats", on=_equal_on("run_rows", "query_stats", ["query_id"]), copy=False) \
            .join("judgments", on=_and(_equal_on("run_rows", "judgments", ["query_id", "doc_id"]),
                                       _equal_on("query_stats", "judgments", ["judgment_group"])),
                  join_type="LEFT", copy=False)
    else:
        judged = exp.select(*_cols([*key, "doc_id", *order_cols], "run_rows"), _c("relevance", "judgments")) \
            .from_("run_rows", copy=False) \
            .join("judgments", on=_equal_on("run_rows", "judgments", ["query_id", "doc_id"]), join_type="LEFT",
                  copy=False) \
            .where(_c("query_id", "run_rows").isin(query=exp.select("query_id").from_("query_stats", copy=False)),
                   copy=False)
    if options.judged_only:
        grade = _c("relevance") if options.labels else _c("relevance", "judgments")
        judged = judged.where(exp.GTE(this=grade, expression=exp.Literal.number(0)), copy=False)
    ctes.append(("judged_run", judged))
    # The list's length is the last row's rank: LEAD over the same window marks that row without a second
    # pass (COUNT(*) OVER the partition costs DuckDB about 20% more than the ranking itself). ClickHouse's
    # LEAD gives 0 past the end where others give NULL, and MariaDB's takes no default: hence COALESCE.
    partition = _cols(key)
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
    if plan.positions:
        ctes += _position_ctes(plan, options, key)

    values = []
    for out, e, empty in plan.values:
        if out in plan.preferences or out in plan.subtopics or out in plan.recommendations or out in plan.ratings \
                or out in plan.items or out in plan.verdicts or out in plan.embeddings or out in plan.overlap:
            continue  # aggregated over pref_rows, subtopic_rows, item_rows, rec_items, rating_rows, verdict_rows,
            # embedding_rows or overlap_rows, below
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
    if options.judgment_groups:
        # The values per judgment group, then each list's value: their mean over the query's groups.
        ctes.append(("group_values", list_values))
        outer = list(options.list_key)
        means = [exp.alias_(fixed(exp.func("AVG", _c(out)), _by(["judgment_group"])), out, copy=False)
                 for out, _, _ in plan.values]
        list_values = exp.select(*_cols(outer), *means).from_("group_values", copy=False) \
            .group_by(*_cols(outer), copy=False)
    # The measures over other rows than the ranked ones: one GROUP BY over each list's rows of their kind
    # (preferences, subtopics), or over the whole run (recommendations, ratings), joined beside the ranked ones.
    joined = []  # (CTE, its measures' output columns, the columns it is joined on)
    if plan.preferences:
        ctes += _preference_ctes(options)
        pref_order = _by(["judgment_group", "a_ord", "b_ord"])  # unique within a list
        prefs = [exp.alias_(fixed(e, pref_order), out, copy=False) for out, e, _ in plan.values if out in plan.preferences]
        ctes.append(("pref_values", exp.select(*_cols(key), *prefs).from_("pref_rows", copy=False)
                     .group_by(*_cols(key), copy=False)))
        joined.append(("pref_values", plan.preferences, key))
    if plan.subtopics:
        ctes += _subtopic_ctes(options, plan)
        # Rows equal in these columns add the same value to every measure: the order is total where it matters.
        sub_order = _by(["row_kind", "rnk", "seen", "subtopic_rel"]) + [_ordered(_c("ideal_alpha"), False, True)]
        subs = [exp.alias_(fixed(e, sub_order), out, copy=False) for out, e, _ in plan.values if out in plan.subtopics]
        ctes.append(("subtopic_values", exp.select(*_cols(key), *subs).from_("subtopic_rows", copy=False)
                     .group_by(*_cols(key), copy=False)))
        joined.append(("subtopic_values", plan.subtopics, key))
    if plan.recommendations or plan.item_columns & ITEM_HISTORY_COLUMNS:
        ctes.append(("history_rows", history.select({"query_id": "VARCHAR", "doc_id": "VARCHAR"})))
    if plan.items:
        ctes += _item_ctes(options, plan, items)
        values = [exp.alias_(fixed(e, _by(["rnk"])), out, copy=False) for out, e, _ in plan.values if out in plan.items]
        ctes.append(("item_values", exp.select(*_cols(key), *values).from_("item_rows", copy=False)
                     .group_by(*_cols(key), copy=False)))
        joined.append(("item_values", plan.items, key))
    if plan.overlap:
        ctes += _overlap_ctes(options, key)
        overlaps = [exp.alias_(fixed(e, _by(["rnk"])), out, copy=False)
                    for out, e, _ in plan.values if out in plan.overlap]
        ctes.append(("overlap_values", exp.select(*_cols(key), *overlaps).from_("overlap_rows", copy=False)
                     .group_by(*_cols(key), copy=False)))
        joined.append(("overlap_values", plan.overlap, key))
    # The measures of the whole run: one value per run (and segment), over its items (rows: recommendations)
    # or its rated pairs (rows: ratings), on each of its lists.
    run_key = [*options.run_key, *options.segment_key]
    for outs, rows_ctes, rows, order in (
            (plan.recommendations, lambda: _recommendation_ctes(options), "rec_items", ["doc_id"]),
            (plan.ratings, lambda: _rating_ctes(options), "rating_rows", ["query_id", "doc_id"])):
        if not outs:
            continue
        ctes += rows_ctes()
        values = [exp.alias_(fixed(e, _by(order)), out, copy=False) for out, e, _ in plan.values if out in outs]
        run_values = exp.select(*_cols(run_key), *values).from_(rows, copy=False)
        ctes.append((f"{rows}_values", run_values.group_by(*_cols(run_key), copy=False) if run_key else run_values))
        joined.append((f"{rows}_values", outs, run_key))
    if plan.verdicts:
        ctes += _verdict_ctes(plan, verdicts, fixed)
        joined.append(("verdict_values", plan.verdicts, ["query_id"]))
    if plan.embeddings:
        ctes += _embedding_ctes(plan, embeddings, fixed)
        joined.append(("embedding_values", plan.embeddings, ["query_id"]))
    if joined:
        ctes.append(("ranked_values", list_values))
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
    ctes.append(("list_values", list_values))
    recursive = bool(plan.preferences)  # pref_closure

    final = _final(options, plan, list(options.list_key), per_query)
    for name, cte in ctes:
        final = final.with_(name, as_=cte, recursive=recursive, copy=False)
    return final


POSITION_DIGITS = 3  # rows: positions gives each list the positions 1..10^3 (cwl_eval's depth, 1000)


def _position_ctes(plan: Plan, options: Shape, key: list) -> list:
    """Templates with `rows: positions`: each list's positions 1..1000, judged or not, filled or not, with the
    judgment of the document there (NULL when none) and the list's length where a ranked row is, their windows,
    and their values (position_values, one row per list). The positions are 1 + the numbers written with
    POSITION_DIGITS digits, a digits table cross-joined with itself: not every engine has generate_series, nor
    column names on a VALUES alias."""
    digits = exp.union(*(exp.select(exp.alias_(exp.Literal.number(d), "d", copy=False)) for d in range(10)),
                       distinct=False)
    tables = [f"digit_{i}" for i in range(POSITION_DIGITS)]
    number = exp.Literal.number(1)
    for i, table in enumerate(tables):
        number = exp.Add(this=number, expression=exp.Mul(this=exp.Literal.number(10 ** i), expression=_c("d", table)))
    numbers = exp.select(exp.alias_(number, "rnk", copy=False)).from_(exp.to_table("position_digits").as_(tables[0]),
                                                                      copy=False)
    for table in tables[1:]:
        numbers = numbers.join(exp.to_table("position_digits").as_(table), join_type="CROSS", copy=False)
    rows = exp.select(*_cols(key, "lists"), _c("rnk", "position_numbers"), _c("relevance", "judged_ranking"),
                      _c("num_ret", "judged_ranking"), *_cols(plan.collection, "collection")) \
        .from_("lists", copy=False).join("position_numbers", join_type="CROSS", copy=False)
    if plan.collection:
        rows = rows.join("collection", join_type="CROSS", copy=False)
    at_position = exp.EQ(this=_c("rnk", "judged_ranking"), expression=_c("rnk", "position_numbers"))
    rows = rows.join("judged_ranking", on=_and(_equal_on("lists", "judged_ranking", key, options.segment_key),
                                               at_position), join_type="LEFT", copy=False)
    ctes = [("position_digits", digits), ("position_numbers", numbers), ("position_rows", rows)]
    # A window may read windows declared above it (INST's continuation reads the running gain): one CTE per
    # stage, each computing the windows that read none still pending (there is always one: the first declared).
    by_rank = [_ordered(_c("rnk"), False, True)]
    pending = dict(plan.position_row)
    while pending:
        ready = {name: e for name, e in pending.items() if not {c.name for c in e.find_all(exp.Column)} & set(pending)}
        windows = [exp.alias_(_with_window(e, _cols(key), by_rank), name, copy=False) for name, e in ready.items()]
        ctes.append((f"position_ranking_{len(ctes) - 2}",
                     exp.select(exp.Star(), *windows).from_(ctes[-1][0], copy=False)))
        pending = {name: e for name, e in pending.items() if name not in ready}
    values = [exp.alias_(_in_fixed_order(e, by_rank) if options.fixed_order else e.copy(), out, copy=False)
              for out, e, _ in plan.values if out in plan.positions]
    group = [*_cols(key), *_cols(plan.collection)]
    return ctes + [("position_values", exp.select(*_cols(key), *values).from_(ctes[-1][0], copy=False)
                    .group_by(*group, copy=False))]


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


def _lists(options: Shape, key: list) -> exp.Select:
    """The lists to average (with judgment groups: each list once per group of its query)."""
    groups = ["judgment_group"] if options.judgment_groups else []
    if options.labels:
        return exp.select(*_cols(key)).from_("query_stats", copy=False)  # every list of the log
    if (options.queries == "intersection" or options.group_by) and options.judged_only:
        # The lists present before judged_only emptied some of them: an emptied list scores 0 (trec_eval -J).
        return exp.select(*_cols(key)).distinct(copy=False).from_("run_rows", copy=False).where(
            _c("query_id").isin(query=exp.select("query_id").from_("query_stats", copy=False)), copy=False)
    if options.queries == "intersection" or options.group_by:
        # With segments, which judged queries a segment should have seen is unknown: the lists present.
        return exp.select(*_cols(key)).from_("judged_ranking", copy=False).where(
            exp.EQ(this=_c("rnk"), expression=exp.Literal.number(1)), copy=False)
    if options.run_key and options.run_names:
        runs = exp.values([(name,) for name in options.run_names], alias="runs", columns=list(options.run_key))
        return exp.select(*_cols(options.run_key, "runs"), *_cols(["query_id", *groups], "query_stats")) \
            .from_(runs, copy=False).join("query_stats", join_type="CROSS", copy=False)
    if options.run_key:
        runs = exp.select(*_cols(options.run_key)).distinct(copy=False).from_("run_rows", copy=False).subquery("runs")
        return exp.select(*_cols(options.run_key, "runs"), *_cols(["query_id", *groups], "query_stats")) \
            .from_(runs, copy=False).join("query_stats", join_type="CROSS", copy=False)
    return exp.select(*_cols(["query_id", *groups])).from_("query_stats", copy=False)


def _final(options: Shape, plan: Plan, key: list, per_query: bool) -> exp.Select:
    outs = [out for out, _, _ in plan.values]
    if per_query and not options.group_by:
        return exp.select("*").from_("list_values", copy=False).order_by(*_by(key), copy=False)
    if per_query:
        segments = [exp.alias_(_c(internal), alias.copy(), copy=False) for internal, alias in options.group_by]
        items = [*_cols(options.run_key), *segments, _c("query_id"), *_cols(outs)]
        return exp.select(*items).from_("list_values", copy=False).order_by(*_by(key), copy=False)
    if options.group_by:
        return aggregate_select("list_values", plan.aggregates, list(options.run_key), list(options.group_by))
    return aggregate_select("list_values", plan.aggregates, list(options.run_key))


def _aggregate_items(aggregates: list, order: list | None = None) -> list:
    """order: add each run's (segment's) per-list values in this order (_in_fixed_order)."""
    items = []
    floor = exp.Literal.number(f"{GMAP_FLOOR:.5f}")
    for col, kind in aggregates:
        if kind == "sum":
            value = exp.func("SUM", _c(col))
        elif kind == "once":  # the run's own value, the same on each of its lists
            value = exp.func("MAX", _c(col))
        elif kind == "geometric":
            floored = exp.Case(ifs=[exp.If(this=exp.GT(this=_c(col), expression=floor.copy()), true=_c(col))],
                               default=floor.copy())
            value = exp.func("EXP", exp.func("AVG", exp.func("LN", floored)))
        else:
            value = exp.func("AVG", _c(col))
        items.append(exp.alias_(_in_fixed_order(value, order) if order else value, col, copy=False))
    return items


def aggregate_select(table: str, aggregates: list, run_key: list, segments: list | None = None,
                     list_key: list | None = None) -> exp.Select:
    """Per-list values -> one row per run (and segment): mean, sum, or trec_eval's geometric mean (floored
    at 1e-5). segments: (column in `table`, output name identifier) pairs; with them, `num_lists` counts
    the lists of each segment. list_key: the columns identifying a list in `table`; given, the values are
    added in that order (_in_fixed_order)."""
    keys = [*run_key, *(internal for internal, _ in segments or ())]
    order = [exp.Ordered(this=exp.column(exp.to_identifier(c, quoted=True)), nulls_first=False)
             for c in list_key] if list_key else None
    items = [*_cols(run_key), *(exp.alias_(_c(internal), alias.copy(), copy=False) for internal, alias in segments or ()),
             *_aggregate_items(aggregates, order)]
    if segments:
        items.append(exp.alias_(exp.func("COUNT", exp.Star()), "num_lists", copy=False))
    select = exp.select(*items).from_(table, copy=False)
    return select.group_by(*_cols(keys), copy=False).order_by(*_by(keys), copy=False) if keys else select


def aggregate_sql(table: str, aggregates: list, run_key: list, list_key: list, segments: list | None = None) -> str:
    """aggregate_select as DuckDB SQL, for per-list results already computed (local/, engines/), the values
    added in list order so that the aggregates are the same on every run."""
    return aggregate_select(table, aggregates, run_key, segments, list_key).sql(READ)


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
    ("history_stats", "SELECT COUNT(*) AS hist_rows, COUNT(DISTINCT doc_id) AS hist_items FROM history_rows"),
    ("rec_items", "SELECT {c_k_}c.doc_id, c.item_recs, SUM(c.item_recs) OVER ({part}) AS num_recs, "
                  "ROW_NUMBER() OVER ({part_}ORDER BY c.item_recs, c.doc_id) AS exposure_rank, c.list_weight, "
                  "c.list_weight_sq, n.run_lists, h.hist_count, s.hist_rows, s.hist_items FROM rec_counts AS c "
                  "{join_n} LEFT JOIN history_items AS h ON h.doc_id = c.doc_id CROSS JOIN history_stats AS s"),
]


def _check_rag(plan: Plan, options: Shape, verdicts: Source | None, embeddings: Embeddings | None) -> None:
    if not plan.verdicts and not plan.embeddings:
        return
    if plan.verdicts and verdicts is None:
        raise SqlmetricsError("the RAG measures (Faithfulness, ContextRecall, ContextRelevancy) read judged statements: "
                              "pass verdicts= (--verdicts on the command line), a table of query_id, statement, "
                              "statement_of ('answer', 'reference' or 'context') and verdict (1 or 0).")
    if plan.embeddings and embeddings is None:
        raise SqlmetricsError("AnswerRelevancy reads question embeddings: pass embeddings= (--embeddings on the command "
                              "line), a table of query_id, generated (0: the question asked; 1, 2, ...: the questions "
                              "generated from the answer), embedding (a list of numbers; or dimension and value, one "
                              "row per dimension) and noncommittal (1 or 0).")
    if options.run_key or options.labels or options.judgment_groups:
        # The verdicts are one pipeline's answers, keyed by the query alone: two runs would share them.
        raise SqlmetricsError("the RAG measures read one pipeline's verdicts and embeddings, keyed by query: evaluate "
                              "one run at a time, with qrels (qrels_format='qrels' or 'subtopics').")


def _verdict_ctes(plan: Plan, verdicts: Source, fixed) -> list:
    """The judged statements (verdict_rows) and the RAG measures over each query's (verdict_values)."""
    rows = verdicts.select({"query_id": "VARCHAR", "statement_of": "VARCHAR", "verdict": "DOUBLE"})
    values = [exp.alias_(fixed(e, _by(["statement_of", "verdict"])), out, copy=False)
              for out, e, _ in plan.values if out in plan.verdicts]
    by_query = exp.select(_c("query_id"), *values).from_("verdict_rows", copy=False) \
        .group_by(_c("query_id"), copy=False)
    return [("verdict_rows", rows), ("verdict_values", by_query)]


# The cosine of each generated question's embedding with the question asked's (rows: embeddings), from one row per
# dimension: sums of products joined on the dimension, over the two norms.
_EMBEDDINGS_LONG = [
    ("embedding_norms", "SELECT query_id, generated, SQRT(SUM(value * value)) AS norm, "
                        "MAX(noncommittal) AS noncommittal FROM embedding_long GROUP BY query_id, generated"),
    ("embedding_dots", "SELECT g.query_id, g.generated, SUM(g.value * o.value) AS dot FROM embedding_long AS g "
                       "JOIN embedding_long AS o ON o.query_id = g.query_id AND o.dimension = g.dimension "
                       "AND o.generated = 0 WHERE g.generated <> 0 GROUP BY g.query_id, g.generated"),
    ("embedding_rows", "SELECT d.query_id, d.generated, n.noncommittal, d.dot / NULLIF(n.norm * o.norm, 0) AS cosine "
                       "FROM embedding_dots AS d JOIN embedding_norms AS n ON n.query_id = d.query_id "
                       "AND n.generated = d.generated JOIN embedding_norms AS o ON o.query_id = d.query_id "
                       "AND o.generated = 0"),
]
# The same with DuckDB's vector function, over one row per question.
_EMBEDDINGS_FUNCTION = (
    "SELECT g.query_id, g.generated, g.noncommittal, LIST_COSINE_SIMILARITY(g.embedding, o.embedding) AS cosine "
    "FROM embedding_input AS g JOIN embedding_input AS o ON o.query_id = g.query_id AND o.generated = 0 "
    "WHERE g.generated <> 0")


def _embedding_ctes(plan: Plan, embeddings: Embeddings, fixed) -> list:
    """The generated questions' cosines with the question asked (embedding_rows: query_id, generated, noncommittal,
    cosine) and AnswerRelevancy over each query's (embedding_values)."""
    roles = {"query_id": "VARCHAR", "generated": "BIGINT", "noncommittal": "DOUBLE"}
    source = embeddings.source
    if embeddings.form == "function":
        ctes = [("embedding_input", source.select({**roles, "embedding": "DOUBLE[]"})),
                ("embedding_rows", _parse_ours(_EMBEDDINGS_FUNCTION))]
    else:
        if embeddings.form == "unnest":  # an array's elements: Source's list unnesting, doc_id the element
            lists = Source(source.table, {**source.columns, "doc_id": source.columns["embedding"]},
                           source.constants, lists=True)
            ctes = [("embedding_input", lists.select({**roles, "rank_position": "BIGINT", "doc_id": "DOUBLE"})),
                    ("embedding_long", _parse_ours("SELECT query_id, generated, noncommittal, rank_position AS "
                                                   "dimension, doc_id AS value FROM embedding_input"))]
        else:
            ctes = [("embedding_long", source.select({**roles, "dimension": "BIGINT", "value": "DOUBLE"}))]
        ctes += [(name, _parse_ours(sql)) for name, sql in _EMBEDDINGS_LONG]
    values = [exp.alias_(fixed(e, _by(["generated"])), out, copy=False)
              for out, e, _ in plan.values if out in plan.embeddings]
    by_query = exp.select(_c("query_id"), *values).from_("embedding_rows", copy=False) \
        .group_by(_c("query_id"), copy=False)
    return [*ctes, ("embedding_values", by_query)]


def _join_on(a: str, b: str, columns, nullable) -> str:
    """a.c = b.c for each column, as text; IS NOT DISTINCT FROM for the nullable ones (segments: a NULL segment
    is a segment of its own), parenthesised: some engines read `x IS NOT DISTINCT FROM y AND ...` as
    `x ... (y AND ...)`."""
    return " AND ".join(f"({a}.{c} IS NOT DISTINCT FROM {b}.{c})" if c in nullable else f"{a}.{c} = {b}.{c}"
                        for c in columns)


def _recommendation_ctes(options: Shape) -> list:
    """The CTEs computing the run's recommended items (rec_items), keyed by the run and segment."""
    run_key = [*options.run_key, *options.segment_key]
    on = lambda a, b, columns: _join_on(a, b, columns, options.segment_key)  # noqa: E731
    partition = f"PARTITION BY {', '.join(f'c.{c}' for c in run_key)}" if run_key else ""
    fill = {"k_": "".join(f"{c}, " for c in run_key), "c_k_": "".join(f"c.{c}, " for c in run_key),
            "r_k_": "".join(f"r.{c}, " for c in run_key), "on_l_r": on("l", "r", [*run_key, "query_id"]),
            "group_k": f" GROUP BY {', '.join(run_key)}" if run_key else "",
            "join_n": f"JOIN rec_run_lists AS n ON {on('n', 'c', run_key)}" if run_key else
                      "CROSS JOIN rec_run_lists AS n",
            "part": partition, "part_": partition + " " if partition else ""}
    return [(name, _parse_ours(sql.format(**fill))) for name, sql in _RECOMMENDATIONS]


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


def _parse_ours(sql: str) -> exp.Select:
    """A CTE of the statement's own (its names are ours, never the caller's). Its ascending sort keys are never
    NULL where it matters: they take NULLS FIRST, which engines that cannot say NULLS LAST (MySQL) need no
    clause for, as the rest of the statement does."""
    tree = sqlglot.parse_one(sql, read=READ)
    for ordered in tree.find_all(exp.Ordered):
        if not ordered.args.get("desc"):
            ordered.set("nulls_first", True)
    return tree


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
# document id. It is iterative: two plain CTEs per position, each reading the one before once. No recursion:
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
    "OVER (PARTITION BY query_id, alpha, doc_id) AS gn FROM {previous}")
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
        raise SqlmetricsError(f"items= has the item features as {', '.join(sorted(roles - {'doc_id'})) or 'nothing'}: "
                              "give one list column of numbers (vector), one category column, or the long form "
                              "(dimension, value), besides the item.")

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
