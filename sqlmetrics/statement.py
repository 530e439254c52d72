"""The statement builder: measure templates + options -> ONE SQL statement (DuckDB dialect; `render()` in
dialects.py transpiles it to other engines, `evaluate()` runs it).

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
    list_values  one GROUP BY over lists x judged_ranking: every measure is one aggregate expression

The list key is run_key + segment columns (group_by, internally seg_1, ...) + query_id; templates never
name it. With segments and qrels, `lists` are the lists present (which judged queries a segment should
have seen is unknown). Labelled lists (Options.labels, no qrels): run_rows carries `relevance` (a label
column or a checked relevance expression, see logs.py) and comes first; judgments are its labelled rows,
and query_stats / ideal are keyed by the whole list key, so R and the ideal DCG come from the list itself.

Templates are parsed with sqlglot (DuckDB dialect); parameter placeholders (`:k`) are replaced on the
parsed tree by literals or by the chosen option's SQL, never by pasting text; the column names a
template reads decide which shared columns the prelude computes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import sqlglot
from sqlglot import exp

from .catalogue import ABSENT, shared_columns
from .errors import SqlmetricsError
from .names import MeasureCall

READ = "duckdb"
QRELS_ROLES = ("query_id", "doc_id", "relevance")
GMAP_FLOOR = 1e-5  # trec_eval gm_map: AP is floored at 1e-5 before the logarithm
LEVEL_COLUMNS = ("is_rel", "rel_so_far", "nonrel_so_far", "num_rel", "num_nonrel")
TIES = ("docid_desc", "docid_asc", "rank")
QUERY_SETS = ("qrels", "intersection")
SCORE_PRECISIONS = ("float64", "float32")


@dataclass
class Options:
    queries: str = "qrels"
    ties: str = "docid_desc"
    relevance_level: int = 1
    score_precision: str = "float64"
    run_key: tuple = ()  # list-key columns before query_id, e.g. ("run_name",)
    # Segment columns, part of the list key after run_key: each is (internal name, output name SQL); the
    # internal names (seg_1, ...) are what the run source maps, the output names are the result columns.
    group_by: tuple = ()
    labels: bool = False  # judgments come from the run rows (role `relevance`), keyed by the whole list key

    @property
    def segment_key(self) -> tuple:
        return tuple(internal for internal, _ in self.group_by)

    @property
    def list_key(self) -> tuple:
        return (*self.run_key, *self.segment_key, "query_id")

    def check(self):
        for name, value, allowed in (
            ("queries", self.queries, QUERY_SETS),
            ("ties", self.ties, TIES),
            ("score_precision", self.score_precision, SCORE_PRECISIONS),
        ):
            if value not in allowed:
                raise SqlmetricsError(f"{name}={value!r} is not valid: use one of {', '.join(map(repr, allowed))}.")
        if isinstance(self.relevance_level, bool) or not isinstance(self.relevance_level, int):
            raise SqlmetricsError(f"relevance_level={self.relevance_level!r} must be an integer grade (trec_eval -l).")


def column_name(text: str) -> str:
    """A portable column name for a measure string: `nDCG(gain='exp')@10` -> `ndcg_gain_exp_at_10`."""
    name = text.lower().replace("@", "_at_")
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    return name if name and not name[0].isdigit() else f"m_{name}"


def output_columns(calls: list[MeasureCall]) -> list[str]:
    """One distinct portable column name per requested measure, in order."""
    used, outs = set(), []
    for c in calls:
        out = column_name(c.text)
        while out in used:
            out += "_"
        used.add(out)
        outs.append(out)
    return outs


@lru_cache(maxsize=None)
def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=READ)


def _parse(sql: str) -> exp.Expression:
    """A fresh tree for a piece of template SQL (parsed once per process: parsing dominates rendering)."""
    return _parsed(sql).copy()


def _level_name(base: str, level: int, default_level: int) -> str:
    if level == default_level:
        return base
    return f"{base}_at_{level}" if level >= 0 else f"{base}_at_minus_{-level}"


def _bind_placeholders(tree: exp.Expression, call: MeasureCall) -> exp.Expression:
    """Replace `:name` placeholders by the call's values; an absent value makes its comparison TRUE."""
    values = call.values
    params = call.measure.params

    def replace(node):
        if isinstance(node, exp.Placeholder) and node.name in values:
            value, param = values[node.name], params[node.name]
            if param.type == "choice":
                # Parenthesised: the option is spliced into a larger expression (`:gain / log2(...)`).
                return exp.Paren(this=_bind_placeholders(_parse(param.options[value]), call))
            if value is ABSENT:
                return exp.Null()
            if value == "max_relevance":
                return exp.column("max_relevance")
            return exp.Literal.number(_number(value))
        if isinstance(node, exp.Placeholder):  # a template bug, not the caller's
            raise RuntimeError(f"{call.measure.path.name}: placeholder :{node.name} is not a declared parameter")
        return node

    absent = {n for n, v in values.items() if v is ABSENT}

    def drop_absent_comparisons(node):
        if isinstance(node, (exp.LTE, exp.GTE, exp.LT, exp.GT, exp.EQ)):
            if any(isinstance(side, exp.Placeholder) and side.name in absent for side in (node.left, node.right)):
                return exp.true()
        return node

    tree = tree.transform(drop_absent_comparisons)
    return _simplify(tree.transform(replace))


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _simplify(tree: exp.Expression) -> exp.Expression:
    """Fold what binding an absent parameter leaves behind: `x AND TRUE`, `CASE WHEN TRUE`, COALESCE(NULL, x)."""

    def fold(node):
        if isinstance(node, exp.And):
            if node.left == exp.true():
                return node.right
            if node.right == exp.true():
                return node.left
        if isinstance(node, exp.Case) and node.args.get("ifs"):
            first = node.args["ifs"][0]
            if first.this == exp.true():
                return first.args["true"]
        if isinstance(node, exp.Coalesce):
            args = [node.this, *node.expressions]
            while len(args) > 1 and isinstance(args[0], exp.Null):
                args.pop(0)
            if isinstance(args[0], exp.Literal) or len(args) == 1:
                return args[0]
        if isinstance(node, exp.Paren) and isinstance(node.this, (exp.Column, exp.Literal, exp.Boolean)):
            return node.this
        return node

    return tree.transform(fold)


@dataclass
class _Plan:
    """What the prelude must compute for the requested measures."""

    row: dict = field(default_factory=dict)  # column name -> SQL (row and window scope, in judged_ranking)
    query: dict = field(default_factory=dict)  # column name -> SQL (query_stats)
    ideal: dict = field(default_factory=dict)  # column name -> SQL (query_stats, over ideal)
    collection: dict = field(default_factory=dict)
    ranking_reads_collection: bool = False
    values: list = field(default_factory=list)  # (output column, SQL, empty value)
    aggregates: list = field(default_factory=list)  # (output column, aggregate kind)


def plan_measures(calls: list[MeasureCall], relevance_level: int) -> _Plan:
    """The measures' templates bound and resolved into the prelude columns and value expressions: the
    sqlglot work of rendering, which depends on nothing but the calls and the relevance level."""
    options = Options(relevance_level=relevance_level)
    plan = _Plan()
    shared = shared_columns()
    local_names: dict[str, str] = {}  # rendered SQL of a window/ideal section -> its column name

    def need_shared(name: str, level: int) -> str:
        col = shared[name]
        target = _level_name(name, level, options.relevance_level) if name in LEVEL_COLUMNS else name
        bucket = {"row": plan.row, "window": plan.row, "query": plan.query, "collection": plan.collection}[col.scope]
        if target in bucket:
            return target
        sql = _parse(col.sql).transform(
            lambda n: exp.Literal.number(level) if isinstance(n, exp.Placeholder) and n.name == "level" else n
        ).sql(READ)
        bucket[target] = sql
        return target

    def resolve_columns(tree: exp.Expression, level: int, sections: dict) -> exp.Expression:
        def rename(node):
            if isinstance(node, exp.Column) and not node.table:
                if node.name in sections:
                    return exp.column(sections[node.name])
                if node.name in shared:
                    return exp.column(need_shared(node.name, level))
            return node

        return tree.transform(rename)

    for call, out in zip(calls, output_columns(calls)):
        m = call.measure
        level = call.values.get("rel", options.relevance_level)
        if "rel" in m.params and m.params["rel"].default != "relevance_level":
            level = options.relevance_level  # a gain threshold, not a relevance level: is_rel keeps the global one
        sections: dict[str, str] = {}
        for kind, defs in (("window", m.windows), ("ideal", m.ideals)):
            for local, sql in defs.items():
                tree = resolve_columns(_bind_placeholders(_parse(sql), call), level, {})
                rendered = tree.sql(READ)
                if rendered not in local_names:
                    local_names[rendered] = f"{local}_{len(local_names) + 1}"
                    (plan.row if kind == "window" else plan.ideal)[local_names[rendered]] = rendered
                sections[local] = local_names[rendered]
        body = resolve_columns(_bind_placeholders(_parse(m.body), call), level, sections)
        plan.values.append((out, body.sql(READ), m.empty))
        plan.aggregates.append((out, m.aggregate))
    plan.ranking_reads_collection = any(
        c.name in plan.collection for sql in plan.row.values() for c in _parse(sql).find_all(exp.Column)
    )
    return plan


def _order_by(options: Options) -> str:
    score = "CAST(score AS FLOAT)" if options.score_precision == "float32" else "score"
    if options.ties == "rank":
        return "rank_position ASC NULLS FIRST, doc_id DESC NULLS LAST"
    if options.ties == "docid_asc":
        return f"{score} DESC NULLS LAST, doc_id ASC NULLS FIRST"
    return f"{score} DESC NULLS LAST, doc_id DESC NULLS LAST"


def _with_window(sql: str, partition: str, order: str) -> str:
    """Give every OVER (frame) of a section the list's partition and ranking order."""
    tree = _parse(sql)
    spec = _parse(f"SELECT ROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY {order})").find(exp.Window)
    for window in tree.find_all(exp.Window):
        window.set("partition_by", [p.copy() for p in spec.args["partition_by"]])
        window.set("order", spec.args["order"].copy())
    return tree.sql(READ)


def quote_identifier(name: str) -> str:
    """A column or table name as one quoted DuckDB identifier, whatever characters it holds."""
    return exp.to_identifier(name, quoted=True).sql(READ)


def sql_literal(value) -> str:
    """A Python value as a DuckDB literal, bound by sqlglot."""
    return exp.convert(value).sql(READ)


@dataclass(frozen=True)
class Source:
    """Where a table comes from and which of its columns play which role.

    `table` is a table reference (possibly qualified: db.schema.table) bound through sqlglot, and
    `columns` maps each role (query_id, doc_id, relevance | score, rank_position, run_name) to the
    source column, or to None when the role is a constant given in `constants`.
    """

    table: str
    columns: dict
    constants: dict = field(default_factory=dict)
    expressions: dict = field(default_factory=dict)  # role -> checked sqlglot expression (logs.relevance_expression)

    def select(self, roles: dict) -> str:
        """SELECT list that renames and casts the roles: {role: SQL type}."""
        items = []
        for role, sql_type in roles.items():
            if role in self.expressions:
                items.append(f"CAST(({self.expressions[role].sql(READ)}) AS {sql_type}) AS {role}")
            elif role in self.constants:
                value = sql_literal(self.constants[role])
                items.append(f"CAST({value} AS {sql_type}) AS {role}")
            else:
                items.append(f"CAST({quote_identifier(self.columns[role])} AS {sql_type}) AS {role}")
        return ", ".join(items)

    def table_sql(self) -> str:
        # Strictly a (qualified) name: exp.to_table would pass `a.b PIVOT (...)` or `a.read_csv('f')` through.
        from .dialects import table_reference  # here, not at the top: dialects imports this module

        return table_reference(self.table, READ).sql(READ)


def render_duckdb(calls: list[MeasureCall], qrels: Source | None, run: Source, options: Options, per_query: bool,
                  plan: _Plan | None = None) -> str:
    """The whole evaluation as one DuckDB statement (other dialects transpile from it).

    qrels=None with options.labels: the judgments are the run's own `relevance` role (a label column or a
    relevance expression), and everything per query (R, the ideal ranking) is per list instead.
    """
    options.check()
    plan = plan or plan_measures(calls, options.relevance_level)
    key = list(options.list_key)
    key_sql = ", ".join(key)
    order = _order_by(options)
    # The key the judgments are keyed by: the query (qrels) or the whole list (labels in the run).
    stats_key = key if options.labels else ["query_id"]
    stats_key_sql = ", ".join(stats_key)

    run_roles = {k: "VARCHAR" for k in (*options.run_key, *options.segment_key)}
    run_roles.update({"query_id": "VARCHAR", "doc_id": "VARCHAR"})
    run_roles["rank_position" if options.ties == "rank" else "score"] = "BIGINT" if options.ties == "rank" else "DOUBLE"
    if options.labels:
        run_roles["relevance"] = "DOUBLE"
    order_cols = ["rank_position"] if options.ties == "rank" else ["score"]

    run_rows = ("run_rows", f"SELECT {run.select(run_roles)} FROM {run.table_sql()}")
    if options.labels:
        # A row without a label (NULL) is an unjudged document; a list with no labelled row is not averaged.
        ctes = [run_rows, ("judgments", f"SELECT {', '.join([*key, 'doc_id', 'relevance'])} FROM run_rows "
                                        "WHERE relevance IS NOT NULL")]
    else:
        ctes = [
            ("judgments", f"SELECT {qrels.select({'query_id': 'VARCHAR', 'doc_id': 'VARCHAR', 'relevance': 'DOUBLE'})} "
                          f"FROM {qrels.table_sql()}"),
            run_rows,
        ]
    stats = [f"{sql} AS {name}" for name, sql in plan.query.items()]
    if plan.ideal:
        ctes.append(("ideal", f"SELECT {stats_key_sql}, relevance, ROW_NUMBER() OVER (PARTITION BY {stats_key_sql} "
                              "ORDER BY relevance DESC NULLS LAST, doc_id DESC NULLS LAST) AS ideal_rnk FROM judgments"))
        stats += [f"{sql} AS {name}" for name, sql in plan.ideal.items()]
    ctes.append(("query_stats", f"SELECT {', '.join([*stats_key, *stats])} FROM {'ideal' if plan.ideal else 'judgments'} "
                                f"GROUP BY {stats_key_sql}"))
    if plan.collection:
        ctes.append(("collection", "SELECT " + ", ".join(f"{sql} AS {n}" for n, sql in plan.collection.items())
                     + " FROM judgments"))
    if options.labels:
        ctes.append(("judged_run", f"SELECT {', '.join([*key, 'doc_id', *order_cols, 'relevance'])} FROM run_rows"))
    else:
        ctes.append(("judged_run",
                     f"SELECT {', '.join('run_rows.' + c for c in key)}, run_rows.doc_id, "
                     f"{', '.join('run_rows.' + c for c in order_cols)}, judgments.relevance "
                     "FROM run_rows LEFT JOIN judgments "
                     "ON run_rows.query_id = judgments.query_id AND run_rows.doc_id = judgments.doc_id "
                     "WHERE run_rows.query_id IN (SELECT query_id FROM query_stats)"))
    # The list's length is the last row's rank: LEAD over the same window marks that row without a second
    # pass (COUNT(*) OVER the partition costs DuckDB about 20% more than the ranking itself). ClickHouse's
    # LEAD gives 0 past the end where others give NULL, and MariaDB's takes no default: hence COALESCE.
    over = f"OVER (PARTITION BY {key_sql} ORDER BY {order})"
    ctes.append(("ranking",
                 f"SELECT {key_sql}, relevance, ROW_NUMBER() {over} AS rnk, COALESCE(LEAD(1) {over}, 0) AS has_next "
                 "FROM judged_run"))
    # Running values only change at judged documents, so they are computed over those rows alone (a few
    # per list instead of the whole run); the first row stays so that every ranked list has a row, and
    # the last one only long enough to give the list's length.
    ctes.append(("list_ends",
                 f"SELECT {key_sql}, relevance, rnk, MAX(rnk) OVER (PARTITION BY {key_sql}) AS num_ret FROM ranking "
                 "WHERE relevance IS NOT NULL OR rnk = 1 OR has_next = 0"))
    judged_cols = [f"{_with_window(sql, key_sql, 'rnk ASC NULLS FIRST')} AS {name}" for name, sql in plan.row.items()]
    ctes.append(("judged_ranking",
                 f"SELECT {', '.join([key_sql, 'relevance', 'rnk', 'num_ret', *judged_cols])} FROM list_ends"
                 + (" CROSS JOIN collection" if plan.ranking_reads_collection else "")
                 + " WHERE relevance IS NOT NULL OR rnk = 1"))
    if options.labels:
        ctes.append(("lists", f"SELECT {key_sql} FROM query_stats"))  # every list of the log
    elif options.queries == "intersection" or options.group_by:
        # With segments, which judged queries a segment should have seen is unknown: the lists present.
        ctes.append(("lists", f"SELECT {key_sql} FROM judged_ranking WHERE rnk = 1"))
    elif options.run_key:
        run_key = ", ".join(options.run_key)
        ctes.append(("lists", f"SELECT {', '.join('runs.' + c for c in options.run_key)}, query_stats.query_id "
                              f"FROM (SELECT DISTINCT {run_key} FROM run_rows) AS runs CROSS JOIN query_stats"))
    else:
        ctes.append(("lists", "SELECT query_id FROM query_stats"))

    stat_cols = ["query_stats." + c for c in [*plan.query, *plan.ideal]]
    group = [f"lists.{c}" for c in key] + stat_cols + (["collection." + c for c in plan.collection])
    values = []
    for out, sql, empty in plan.values:
        values.append(f"COALESCE({sql}, {_number(empty)}) AS {out}" if empty is not None else f"{sql} AS {out}")
    join_on = " AND ".join(f"lists.{c} = judged_ranking.{c}" for c in key)
    stats_on = " AND ".join(f"lists.{c} = query_stats.{c}" for c in stats_key)
    ctes.append(("list_values",
                 f"SELECT {', '.join('lists.' + c for c in key)}, {', '.join(values)} "
                 f"FROM lists JOIN query_stats ON {stats_on} "
                 + ("CROSS JOIN collection " if plan.collection else "")
                 + f"LEFT JOIN judged_ranking ON {join_on} GROUP BY {', '.join(group)}"))
    if per_query and not options.group_by:
        final = f"SELECT * FROM list_values ORDER BY {key_sql}"
    elif per_query:
        outs = [out for out, _, _ in plan.values]
        items = [*options.run_key, *(f"{internal} AS {alias}" for internal, alias in options.group_by), "query_id", *outs]
        final = f"SELECT {', '.join(items)} FROM list_values ORDER BY {key_sql}"
    elif options.group_by:
        final = segment_aggregate_sql("list_values", plan.aggregates, list(options.run_key), list(options.group_by))
    else:
        final = aggregate_sql("list_values", plan.aggregates, list(options.run_key))
    with_sql = ",\n".join(f"{name} AS (\n{sql}\n)" for name, sql in ctes)
    return f"WITH {with_sql}\n{final}"


def _aggregate_items(aggregates: list) -> list:
    items = []
    for col, kind in aggregates:
        if kind == "sum":
            items.append(f"SUM({col}) AS {col}")
        elif kind == "geometric":
            floor = f"{GMAP_FLOOR:.5f}"
            items.append(f"EXP(AVG(LN(CASE WHEN {col} > {floor} THEN {col} ELSE {floor} END))) AS {col}")
        else:
            items.append(f"AVG({col}) AS {col}")
    return items


def segment_aggregate_sql(table: str, aggregates: list, run_key: list, segments: list) -> str:
    """Per-list values -> one row per (run and) segment, with the number of lists averaged (`num_lists`).

    segments: (column in `table`, output name SQL) pairs."""
    keys = [*run_key, *(internal for internal, _ in segments)]
    select = [*run_key, *(f"{internal} AS {alias}" for internal, alias in segments), *_aggregate_items(aggregates),
              "COUNT(*) AS num_lists"]
    return f"SELECT {', '.join(select)} FROM {table} GROUP BY {', '.join(keys)} ORDER BY {', '.join(keys)}"


def aggregate_sql(table: str, aggregates: list, group: list) -> str:
    """Per-list values -> one row per run: mean, sum, or trec_eval's geometric mean (floored at 1e-5)."""
    select = ", ".join([*group, *_aggregate_items(aggregates)])
    return f"SELECT {select} FROM {table}" + (f" GROUP BY {', '.join(group)} ORDER BY {', '.join(group)}" if group else "")
