"""The differences between engines that sqlglot cannot know about, fixed on the statement's tree for the
dialects that need them:

- doc ids (and query ids, run names) must compare as bytes: PostgreSQL gets COLLATE "C" (its databases
  often default to ICU or en_US collations), MySQL/MariaDB a cast to BINARY (their default collations are
  case-insensitive and pad trailing spaces), SQLite COLLATE BINARY (a NOCASE column would otherwise keep
  its collation through CAST), SQL Server Latin1_General_BIN2, Oracle NLSSORT(.., 'NLS_SORT=BINARY');
- ClickHouse must fill outer-join misses with NULL: sqlglot's Nullable(...) casts already make the joined
  judgment columns nullable, and SETTINGS join_use_nulls = 1 makes sure of it for every column;
- score_precision="float32" needs a 4-byte float type, which SQLite, BigQuery and Snowflake do not have;
- SQL Server's POWER returns the type of its first argument (POWER(0.8, 2) is 0.6 there): cast it to FLOAT;
- Oracle cannot compare CLOBs, which is what sqlglot makes of an unbounded VARCHAR;
- a run of lists (list_run) is unnested WITH ORDINALITY, positions from 1: where they count from 0 (BigQuery,
  Spark, Databricks, Snowflake) the rank is the position + 1, and ClickHouse has ARRAY JOIN instead;
- MariaDB merges a plain CTE into the query that reads it, so the run joined with the judgments became a
  nested loop over their base tables' cast ids (every run row against every judgment: 28 s for 20k run rows);
  a LIMIT keeps the judgments a table of their own, which it indexes on the join's columns (0.1 s).
"""
from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect as _SqlglotDialect

from ..plan import output_columns
from ..statement import LISTS, Shape
from .info import DialectInfo

ID_ROLES = ("run_name", "query_id", "doc_id")
RUN_ROLES = ("run_name", "query_id", "doc_id", "score", "rank_position")


def _cte(tree: exp.Expression, name: str) -> exp.Select | None:
    """The statement's CTE of that name (they are all in its one WITH: a look there, not a walk of the tree)."""
    return next((cte.this for cte in tree.ctes if cte.alias == name), None)


def portable(tree: exp.Expression, info: DialectInfo, options: Shape, calls, per_query: bool) -> exp.Expression:
    """The dialect fixes sqlglot cannot know about (see the module docstring)."""
    name_qualified_columns(tree)
    if per_query and len(tree.expressions) == 1 and isinstance(tree.expressions[0], exp.Star):
        # Name the output columns: the reader sees what comes out, and MySQL can turn the keys into text.
        tree.set("expressions", [exp.column(c) for c in [*options.run_key, "query_id", *output_columns(calls)]])
    # Ids compare as bytes. Segment values keep their type (a date stays a date), so they are collated only where
    # that takes any type and the default comparison is not exact (MySQL's and SQL Server's collations equal 'a'
    # and 'A'): there they compare, and come back, as text. PostgreSQL's and SQLite's equality is exact already.
    exact = info.ids in ("binary", "collate_bin2")
    id_roles = {*ID_ROLES, "subtopic", *(options.segment_key if exact else ())}
    # subtopic_judgments: only with subtopic qrels; history_rows, catalogue_rows (the items= catalogue, counted by
    # CatalogCoverage), feature_vectors: only for the recommender measures
    # (an item feature's dimension is a name there); verdict_rows and embedding_long: only for the RAG measures (not
    # embedding_input, whose unnested `doc_id` is a number; an embedding's dimension is a number); nugget_input and
    # assignment_input: only for the nugget measures (a nugget's id is an id too)
    for cte_name in ("subtopic_judgments", "judgments", "run_rows", "history_rows", "catalogue_rows", "feature_vectors",
                     "verdict_rows", "embedding_long", "nugget_input", "assignment_input"):
        select = _cte(tree, cte_name)
        ids = id_roles | {"dimension"} if cte_name == "feature_vectors" else \
            id_roles | {"nugget"} if cte_name in ("nugget_input", "assignment_input") else id_roles
        for item in select.expressions if select is not None else ():
            if isinstance(item, exp.Alias) and item.alias in ids:
                item.set("this", _binary_id(item.this, info))
    _ordered_by_bytes(tree, info)
    if info.ids == "binary":
        _text_keys_out(tree, {*options.run_key, *options.segment_key, "query_id"})
    if info.name == "mysql":
        _materialized(tree, ("judgments",))
    # The final ORDER BY keys are never NULL: spell them as the dialect's default NULL order (no NULLS clause).
    small = _SqlglotDialect.get_or_raise(info.sqlglot).NULL_ORDERING == "nulls_are_small"
    for ordered in tree.args["order"].expressions if tree.args.get("order") else []:
        ordered.set("nulls_first", small)

    # 4-byte floats for score_precision="float32".
    if options.score_precision == "float32":
        for cast in list(tree.find_all(exp.Cast)):
            if cast.to.this == exp.DataType.Type.FLOAT:
                cast.set("to", exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=info.float32))

    tree = _types_and_functions(tree, info)
    _unnest_lists(tree, info)
    if info.name == "clickhouse":  # outer-join misses must be NULL, not 0 / ''
        tree.set("settings", [exp.EQ(this=exp.column("join_use_nulls"), expression=exp.Literal.number(1))])
    return tree


def portable_fusion(tree: exp.Expression, info: DialectInfo, inputs: tuple = ("fusion_input",)) -> exp.Expression:
    """render_fusion()'s statement (and render_pool()'s) with portable()'s fixes: ids compare and sort as bytes (the
    runs' rows, in the `inputs` CTEs, are grouped by document and ranked with doc_id breaking ties), and the types
    and functions."""
    name_qualified_columns(tree)
    for cte in filter(None, (_cte(tree, name) for name in inputs)):
        for select in cte.find_all(exp.Select):  # one per run, under UNION ALL
            for item in select.expressions:
                if isinstance(item, exp.Alias) and item.alias in ("query_id", "doc_id"):
                    item.set("this", _binary_id(item.this, info))
    _ordered_by_bytes(tree, info)
    if info.ids == "binary":
        _text_keys_out(tree, {"query_id", "doc_id"})
    return _types_and_functions(tree, info)


# MySQL's documented way to say "every row" in a LIMIT (the largest BIGINT UNSIGNED).
_EVERY_ROW = exp.Literal.number(18446744073709551615)


def _materialized(tree: exp.Expression, names: tuple) -> None:
    """MySQL/MariaDB: these CTEs are materialized, not merged into the queries that read them. A derived table
    with a LIMIT cannot be merged; one that holds every row changes nothing else."""
    for name in names:
        select = _cte(tree, name)
        if select is not None and not select.args.get("limit"):
            select.set("limit", exp.Limit(expression=_EVERY_ROW.copy()))


def _ordered_by_bytes(tree: exp.Expression, info: DialectInfo) -> None:
    """Oracle compares with NLSSORT where others cast or collate the ids themselves: in every ORDER BY doc_id."""
    if info.ids == "nlssort":
        for ordered in list(tree.find_all(exp.Ordered)):
            if isinstance(ordered.this, exp.Column) and ordered.this.name == "doc_id":
                ordered.set("this", exp.func("NLSSORT", ordered.this.copy(), exp.Literal.string("NLS_SORT=BINARY")))


def _types_and_functions(tree: exp.Expression, info: DialectInfo) -> exp.Expression:
    if info.name == "tsql":  # POWER's result has its first argument's type (POWER(0.8, 2) = 0.6)
        for power in list(tree.find_all(exp.Pow)):
            power.set("this", exp.cast(power.this.copy(), exp.DataType.build("DOUBLE")))
    if info.name == "oracle":  # an unbounded VARCHAR becomes a CLOB, which cannot be compared or sorted
        for cast in list(tree.find_all(exp.Cast)):
            if cast.to.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT) and not cast.to.expressions:
                cast.set("to", exp.DataType.build("VARCHAR(4000)"))
    if info.name == "polars":
        tree = tree.transform(_running_sum_before)
    return tree


def name_qualified_columns(tree: exp.Expression) -> None:
    """`SELECT lists.query_id` names its column `lists.query_id` on ClickHouse: alias every qualified column."""
    for select in tree.find_all(exp.Select):
        select.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column) and e.table
                                   and not isinstance(e.this, exp.Star) else e for e in select.expressions])


def _unnest_lists(tree: exp.Expression, info: DialectInfo) -> None:
    """A run of lists, as the engine unnests one (DialectInfo.unnest). The statement's CROSS JOIN UNNEST(docs)
    WITH ORDINALITY AS sqlm_items(sqlm_doc, sqlm_pos) numbers from 1, and reads a score as scores[sqlm_pos]."""
    join = next((j for j in tree.find_all(exp.Join) if isinstance(j.this, exp.Unnest)
                 and j.this.args.get("offset") and j.this.args["offset"].name == LISTS[3]), None)
    if join is None or info.unnest == "ordinality":
        return
    select = join.parent_select
    if info.unnest == "offset":
        # sqlglot writes WITH OFFSET / posexplode / FLATTEN's index, which count from 0, as do these engines'
        # array[i]: the score's subscript stays the position, the rank is the position + 1.
        for column in list(select.find_all(exp.Column)):
            subscript = isinstance(column.parent, exp.Bracket) and column.arg_key == "expressions"
            if column.name == LISTS[3] and not subscript:
                column.replace(exp.paren(exp.Add(this=column.copy(), expression=exp.Literal.number(1))))
    elif info.unnest == "array_join":
        # ClickHouse zips the arrays of one ARRAY JOIN: the documents and their positions, from 1 as its arrays.
        docs = join.this.expressions[0]
        join.replace(exp.Join(this=exp.alias_(docs.copy(), LISTS[2]), kind="ARRAY", expressions=[
            exp.alias_(exp.func("arrayEnumerate", docs.copy()), LISTS[3])]))
        for column in select.find_all(exp.Column):
            if column.table == LISTS[1]:
                column.set("table", None)


def _running_sum_before(node: exp.Expression) -> exp.Expression:
    """Polars has no `ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING` frame: the sum of the rows above
    is the running sum through the current row minus the current row (0 instead of NULL on the first row,
    which every template reads through COALESCE(.., 0))."""
    if not (isinstance(node, exp.Window) and isinstance(node.this, exp.Sum)):
        return node
    spec = node.args.get("spec")
    if not (spec and spec.args.get("kind") == "ROWS" and spec.args.get("start") == "UNBOUNDED"
            and spec.args.get("end_side") == "PRECEDING" and spec.args.get("end") == exp.Literal.number(1)):
        return node
    through = node.copy()
    through.set("spec", exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW"))
    return exp.paren(exp.Sub(this=through, expression=exp.func("COALESCE", node.this.this.copy(), exp.Literal.number(0))))


def _binary_id(node: exp.Expression, info: DialectInfo) -> exp.Expression:
    if info.ids == "collate_c":
        return exp.Collate(this=node, expression=exp.to_identifier("C", quoted=True))
    if info.ids == "collate_binary":
        return exp.Collate(this=node, expression=exp.var("BINARY"))
    if info.ids == "collate_bin2":
        text = exp.DataType.build("NVARCHAR(MAX)", dialect="tsql")
        if isinstance(node, exp.Cast):
            node.set("to", text)
        else:  # a segment, of any type
            node = exp.cast(node, text)
        return exp.Collate(this=node, expression=exp.var("Latin1_General_BIN2"))
    if info.ids == "binary":
        return exp.cast(node, exp.DataType.build("BINARY", dialect="mysql"))
    return node


def _text_keys_out(tree: exp.Expression, keys: set) -> None:
    """MySQL: ids travel as binary strings; the final SELECT turns its key columns back into text."""
    source = tree.args["from_"].this if tree.args.get("from_") else None
    table = source.alias_or_name if isinstance(source, exp.Table) else None
    new = []
    for item in tree.expressions:
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.this.name in keys:
            new.append(exp.alias_(exp.cast(exp.column(item.this.name, table=table),
                                           exp.DataType.build("CHAR", dialect="mysql")), item.args["alias"].copy()))
        elif isinstance(item, exp.Column) and item.name in keys:
            new.append(exp.alias_(exp.cast(exp.column(item.name, table=table), exp.DataType.build("CHAR", dialect="mysql")),
                                  item.name))
        else:
            new.append(item)
    tree.set("expressions", new)
    for ordered in tree.args["order"].expressions if tree.args.get("order") else []:
        if isinstance(ordered.this, exp.Column) and ordered.this.name in keys and not ordered.this.table:
            ordered.set("this", exp.column(ordered.this.name, table=table))
    group = tree.args.get("group")
    if group:
        group.set("expressions", [exp.column(e.name, table=table) if isinstance(e, exp.Column) and e.name in keys
                                  else e for e in group.expressions])
