"""The evaluation as ONE SQL statement for another engine, over tables that live there.

    render(["nDCG@10", "AP"], dialect="snowflake", qrels="db.s.qrels", run="db.s.run")  -> one SQL statement
    sqlmetrics sql -m nDCG@10 -m AP --dialect snowflake --qrels db.s.qrels --run db.s.run

The statement is the tree evaluate() runs on DuckDB (statement.build_statement), generated for the target
dialect. User-supplied names never become SQL text: they enter the tree as identifier and table nodes
(identifiers.py), bound the way the engine reads them. What sqlglot cannot know about an engine is fixed
on the tree in portable.py.
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp

from ..catalogue import parse_all
from ..catalogue.fusion import DEFAULT_NORM
from ..errors import SqlmetricsError
from ..fusion import fusion_settings, fusion_statement
from ..identifiers import column_identifier, table_reference
from ..options import ITEM_ROLES, NUGGET_ROLES, RENDER, VERDICT_COLUMNS, check_log_options, resolve, role_columns, signature
from ..plan import output_columns, plan_measures
from ..relevance import relevance_expression
from ..statement import Embeddings, Nuggets, Shape, Source, build_statement, check_subtopics
from .info import DIALECTS, UNNEST_DIALECTS, DialectInfo, dialect_info

# The engines whose arrays the RAG embeddings and the item feature vectors are read as (UNNEST ... WITH
# ORDINALITY, counted from 1); elsewhere those tables are given in long form (dimension, value).
ARRAYS = ("ordinality",)
from .portable import portable, portable_fusion

def _clean(text) -> str:
    """Text for a `--` comment line: no line breaks or other control characters can end the comment."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))



def render(measures, dialect="duckdb", qrels="qrels", run="run", per_query=False, header=True, **options) -> str:
    """The whole evaluation as ONE SQL statement for `dialect`, over tables that live in that engine.

    qrels, run: table names, possibly qualified (`db.schema.table`, BigQuery `project.dataset.table`), or
    tuples of parts. per_query: one row per (run and) query instead of the aggregate. header: a comment
    block naming the measures, tables, columns and options. The options (sqlmetrics.options.OPTIONS) are
    evaluate()'s: columns= maps both tables wherever the role exists (mapping run_name evaluates every run
    of the table, one row per run), qrels_columns= overrides it for the qrels.

    group_by: segment columns of the run (["date", "arm"]): each list is keyed by them plus the query id,
    and the aggregate has one row per segment with `num_lists`. qrels=None with label= (a column of the
    run) or relevance= (an expression or {column: grade}, see relevance.py) reads the judgments from the
    run itself. into="schema.table" wraps the statement in CREATE TABLE ... AS (into_mode="append":
    INSERT INTO ... SELECT); ClickHouse tables get ENGINE = MergeTree ORDER BY tuple(), T-SQL is SELECT ... INTO,
    and polars (whose SQLContext has no INSERT) accepts only into_mode="create". into_mode="replace" is CREATE OR
    REPLACE TABLE, and "merge" one MERGE INTO keyed on the run, the segments (and the query, per query): a day's
    rows re-evaluated replace that day's; each is refused, naming the dialect, where it is not one statement.
    row_key="k" adds a column k, that key as one text, never NULL and different for any two keys (what a dbt
    incremental model's unique_key compares with =).
    """
    o = resolve(RENDER, options)
    info = dialect_info(dialect)
    tree, calls = _statement(measures, info, qrels, run, per_query, o)
    # A row's key, its first columns: the run, the segments and, per query, the query (what into_mode='merge' and
    # row_key match on); then the measures, and num_lists in a row per segment.
    key_columns = len(tree.expressions) - len(calls) - (0 if per_query or not o.group_by else 1)
    if o.row_key is not None:
        tree = _with_row_key(tree, key_columns, o.row_key, info)
    if o.into is not None:
        tree = _into(tree, o.into, o.into_mode, info, key_columns)
    # The tree was built for this call alone: generated in place, not copied first (a tenth of a render).
    sql = tree.sql(dialect=info.sqlglot, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)
    if not header:
        return sql
    run_map, qrels_map = role_columns(o.columns, o.qrels_columns, o.ties, o.list_run, o.qrels_format)
    outs = output_columns(calls)
    segs = list(check_log_options(qrels, o.group_by, o.label, o.relevance))  # group_by="date" is one column
    keys = (["run_name"] if "run_name" in run_map else []) + segs + (["query_id"] if per_query else [])
    d = info.sqlglot

    def source(table, mapping):
        cols = ", ".join(f"{role}={column_identifier(col, d, info.fold_case).sql(d)}" for role, col in mapping.items())
        return f"{table_reference(table, d, info.fold_case).sql(d)} ({cols})"

    judged = (f"-- qrels: {source(qrels, qrels_map)}" if qrels is not None else
              f"-- judgments: from the run, relevance = {_label_text(o.label, o.relevance, d)}, per list")
    lines = [
        f"-- sqlmetrics: ranked-retrieval evaluation, rendered for {info.name}",
        f"-- measures: {', '.join(f'{out} = {c.text}' for out, c in zip(outs, calls))}",
        judged,
        f"-- run: {source(run, run_map)}",
        f"-- options: queries={o.queries!r}, ties={o.ties!r}, relevance_level={o.relevance_level!r}, "
        f"score_precision={o.score_precision!r}",
        f"-- one row per {' and '.join(keys) if keys else 'evaluation'}: "
        f"{', '.join([*keys, *outs, *(['num_lists'] if segs and not per_query else []), *filter(None, [o.row_key])])}",
    ]
    if o.into is not None:
        lines.append(f"-- into: {table_reference(o.into, d, info.fold_case).sql(d)} ({o.into_mode})")
    return "\n".join(_clean(line) for line in lines) + "\n" + sql


render.__signature__ = signature(RENDER, "measures, dialect='duckdb', qrels='qrels', run='run', per_query=False, "
                                         "header=True")


def render_fusion(runs, method, norm=DEFAULT_NORM, dialect="duckdb", columns=None, **params) -> str:
    """The fused run (query_id, doc_id, score) as ONE SQL statement for `dialect`, over run tables that live
    in that engine (names as render() takes them, in the order weights= follows). columns= maps the roles
    query_id, doc_id and score where every run table names them otherwise."""
    info = dialect_info(dialect)
    tables = list(runs) if isinstance(runs, (list, tuple)) else [runs]
    method, norm, values = fusion_settings(method, norm, params, len(tables))
    d, fold = info.sqlglot, info.fold_case
    mapped = {r: (columns or {}).get(r, r) for r in ("query_id", "doc_id", "score")}
    sources = [Source(table_reference(t, d, fold), {r: column_identifier(c, d, fold) for r, c in mapped.items()})
               for t in tables]
    tree = portable_fusion(fusion_statement(sources, method, norm, values), info)
    return tree.sql(dialect=d, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)


# The dialects that write into_mode='merge' as one MERGE INTO (PostgreSQL from 15, DuckDB from 1.4; on Spark,
# tables that take MERGE: Delta Lake, Iceberg) and into_mode='replace' as CREATE OR REPLACE TABLE.
MERGE_DIALECTS = ("duckdb", "postgres", "spark", "databricks", "bigquery", "snowflake", "tsql", "oracle")
REPLACE_DIALECTS = ("duckdb", "spark", "databricks", "bigquery", "snowflake", "clickhouse")


def create_table(tree, into, info) -> exp.Expression:
    """CREATE TABLE into AS the statement, as the dialect writes one (into= with into_mode='create')."""
    return _into(tree, into, "create", info, 0)


def _into(tree, into, into_mode: str, info, keys: int) -> exp.Expression:
    """The statement writing its rows to `into`: CREATE TABLE ... AS (OR REPLACE), INSERT INTO ... SELECT, or
    MERGE INTO on the rows' first `keys` columns."""
    if into_mode in ("replace", "merge") and info.name not in (REPLACE_DIALECTS if into_mode == "replace" else
                                                                  MERGE_DIALECTS):
        able = REPLACE_DIALECTS if into_mode == "replace" else MERGE_DIALECTS
        raise SqlmetricsError(f"into_mode={into_mode!r} is not one statement on {info.name} (it has no "
                              f"{'CREATE OR REPLACE TABLE' if into_mode == 'replace' else 'MERGE INTO'}); render it "
                              f"for {', '.join(able)}, or write with into_mode='create' or 'append' after dropping or "
                              "deleting the old rows yourself.")
    if into_mode == "append" and info.name == "polars":
        raise SqlmetricsError("into_mode='append' is not available for polars: its SQLContext runs CREATE TABLE ... "
                              "AS but has no INSERT; use into_mode='create' (or concatenate the frames in Python).")
    target = table_reference(into, info.sqlglot, info.fold_case)
    if into_mode == "append":
        return exp.Insert(this=target, expression=tree)
    if into_mode == "merge":
        return _merge(tree, target, keys, info)
    properties = None
    if info.sqlglot == "clickhouse":
        # ClickHouse needs a table engine: MergeTree, unsorted (ORDER BY tuple() also admits Nullable columns).
        properties = exp.Properties(expressions=[
            exp.EngineProperty(this=exp.to_identifier("MergeTree")),
            exp.Order(expressions=[exp.Ordered(this=exp.Struct(), nulls_first=False)])])
    return exp.Create(this=target, kind="TABLE", expression=tree, properties=properties,
                      replace=into_mode == "replace")


def _merge(tree: exp.Select, target: exp.Table, keys: int, info) -> exp.Merge:
    """MERGE INTO target USING (the statement) ON its key columns (a NULL segment matches a NULL one): a row with
    a key already in the table replaces it, the others are added; rows of other keys stay as they were. So a day
    re-evaluated replaces that day's rows and nothing else."""
    names = [c.args["alias"] if isinstance(c, exp.Alias) else c.this for c in tree.expressions]
    if not keys:
        raise SqlmetricsError("into_mode='merge' replaces the rows with the same key (run_name, the group_by "
                              "segments, and query_id with per_query): these rows have none. Use into_mode='replace', "
                              "or give group_by or per_query.")
    tree.set("order", None)  # a derived table's rows have no order (and SQL Server refuses one)
    ctes = tree.args.get("with_") if info.name == "tsql" else None
    if ctes is not None:  # SQL Server takes common table expressions before MERGE, not inside its USING
        tree.set("with_", None)
    new, old = "sqlm_new", "sqlm_old"

    def column(name, table):
        return exp.Column(this=name.copy(), table=exp.to_identifier(table))

    on = exp.and_(*(exp.paren(exp.NullSafeEQ(this=column(n, old), expression=column(n, new)), copy=False)
                    for n in names[:keys]), copy=False)
    update = exp.Update(expressions=[exp.EQ(this=exp.Column(this=n.copy()), expression=column(n, new))
                                     for n in names[keys:]])
    insert = exp.Insert(this=exp.Tuple(expressions=[exp.Column(this=n.copy()) for n in names]),
                        expression=exp.Tuple(expressions=[column(n, new) for n in names]))
    merge = exp.Merge(this=exp.alias_(target, old, table=True), using=tree.subquery(new, copy=False),
                      on=on, whens=exp.Whens(expressions=[exp.When(matched=True, then=update),
                                                          exp.When(matched=False, then=insert)]))
    if ctes is not None:
        merge.set("with_", ctes)
    return merge


def _with_row_key(tree: exp.Select, keys: int, name, info) -> exp.Select:
    """The rows with one more column, `name`: their key (the first `keys` columns) as one text, never NULL, that
    differs for any two keys. Each key value is tagged, 'n' for NULL, 'v' before the value's text with its '|'
    doubled, and the tagged values are joined by '|'. A separator is always followed by a tag, never by another
    '|', so a key's text splits back into its values one way only: NULL and 'NULL', ('a|', 'b') and ('a', '|b')
    are different keys."""
    if not isinstance(name, str) or not name.strip():
        raise SqlmetricsError(f"row_key={name!r}: give the name of the key column, e.g. row_key='sqlmetrics_key'.")
    if not keys:
        raise SqlmetricsError("row_key= is the rows' key (run_name, the group_by segments, and query_id with "
                              "per_query): these rows have none. Give group_by or per_query.")
    if name.lower() in (c.alias_or_name.lower() for c in tree.expressions):
        raise SqlmetricsError(f"row_key={name!r} is the name of another column of the results; name the key "
                              "column otherwise.")

    def tagged(value: exp.Expression) -> exp.Expression:
        text = exp.func("REPLACE", exp.cast(value.copy(), "text"), exp.Literal.string("|"), exp.Literal.string("||"))
        return exp.case().when(exp.Is(this=value.copy(), expression=exp.null()), exp.Literal.string("n")) \
            .else_(exp.DPipe(this=exp.Literal.string("v"), expression=text))

    key = None
    for column in tree.expressions[:keys]:
        part = tagged(column.unalias())
        key = part if key is None else exp.DPipe(this=exp.DPipe(this=key, expression=exp.Literal.string("|")),
                                                 expression=part)
    return tree.select(exp.alias_(key, column_identifier(name, info.sqlglot, info.fold_case)), copy=False)


def _label_text(label, relevance, dialect) -> str:
    if label is not None:
        return column_identifier(label, dialect).sql(dialect)
    if isinstance(relevance, dict):
        return "highest of " + ", ".join(f"{c}={g}" for c, g in relevance.items())
    return str(relevance)


def _statement(measures, info: DialectInfo, qrels, run, per_query: bool, o):
    options = Shape(queries=o.queries, ties=o.ties, relevance_level=o.relevance_level,
                    score_precision=o.score_precision, depth=o.depth,
                    judged_only=o.judged_only, qrels_format=o.qrels_format)
    if o.qrels_format not in ("qrels", "subtopics"):
        raise SqlmetricsError(f"qrels_format={o.qrels_format!r} is evaluated locally only (evaluate(), sqlmetrics "
                              "eval); rendered SQL reads qrels_format='qrels' or 'subtopics'.")
    label, relevance = o.label, o.relevance
    segs = check_log_options(qrels, o.group_by, label, relevance)
    calls = parse_all(measures, o.relevance_level, o.compat)
    check_subtopics(calls, o.qrels_format, qrels is not None)
    own = [c.text for c in calls if c.judged_only]
    if own and not o.judged_only:
        raise SqlmetricsError(f"{own[0]}: a rendered statement drops unjudged documents for all its measures or for "
                              "none. Render the judged-only measures in a statement of their own with "
                              "judged_only=True (--judged-only), or evaluate them with evaluate() on DuckDB, which "
                              "computes them beside the others.")
    if o.score_precision == "float32" and info.float32 is None:
        raise SqlmetricsError(f"score_precision='float32' cannot be expressed on {info.name}: it has no 4-byte "
                              "float type. Use score_precision='float64'.")
    run_map, qrels_map = role_columns(o.columns, o.qrels_columns, o.ties, o.list_run, o.qrels_format)
    if "run_name" in run_map:
        options.run_key = ("run_name",)
    reserved = {"run_name", "query_id", "num_lists", *output_columns(calls)}
    for seg in segs:
        if seg in reserved or seg in run_map.values():
            raise SqlmetricsError(f"group_by= {seg!r}: a segment column cannot be a list-key role, a measure "
                                  "column or num_lists.")
    d, fold = info.sqlglot, info.fold_case
    run_cols = {r: column_identifier(col, d, fold) for r, col in run_map.items()}
    for i, seg in enumerate(segs, 1):
        run_cols[f"seg_{i}"] = column_identifier(seg, d, fold)
    options.group_by = tuple((f"seg_{i}", column_identifier(seg, d, fold)) for i, seg in enumerate(segs, 1))
    expressions = {}
    qrels_source = None
    if qrels is not None:
        qrels_source = Source(table_reference(qrels, d, fold),
                              {r: column_identifier(col, d, fold) for r, col in qrels_map.items()})
    else:
        options.labels = True
        if label is not None:
            run_cols["relevance"] = column_identifier(label, d, fold)
        else:
            tree, used = relevance_expression(relevance, None, d)
            bound = {name: column_identifier(name, d, fold) for name in used}
            expressions["relevance"] = tree.transform(
                lambda n: exp.Column(this=bound[n.name].copy()) if isinstance(n, exp.Column) and n.name in bound else n)
    if o.list_run and not info.unnest:
        raise SqlmetricsError(f"list_run: {info.name} has no array type, or no way to unnest one with each element's "
                              "position (a run with one row per query and a list of document ids); store the run "
                              f"there with one row per document instead, or render list_run for "
                              f"{', '.join(UNNEST_DIALECTS)}.")
    run_source = Source(table_reference(run, d, fold), run_cols, expressions=expressions, lists=o.list_run)
    history = None
    if o.history is not None:  # the training interactions: a table with the qrels' user and item columns
        history = Source(table_reference(o.history, d, fold),
                         {r: column_identifier(qrels_map[r], d, fold) for r in ("query_id", "doc_id")})
    verdicts = None
    if o.verdicts is not None:  # the judged statements: a table with the qrels' query column and fixed names
        verdicts = Source(table_reference(o.verdicts, d, fold),
                          {"query_id": column_identifier(qrels_map["query_id"], d, fold),
                           **{r: column_identifier(r, d, fold) for r in VERDICT_COLUMNS}})
    embeddings = None
    if o.embeddings is not None:  # an array column where the engine has arrays (and UNNEST), the long form elsewhere
        form = "function" if info.name == "duckdb" else "unnest" if info.unnest in ARRAYS else "long"
        vector = ("embedding",) if form != "long" else ("dimension", "value")
        embeddings = Embeddings(Source(table_reference(o.embeddings, d, fold),
                                       {"query_id": column_identifier(qrels_map["query_id"], d, fold),
                                        **{r: column_identifier(r, d, fold)
                                           for r in ("generated", "noncommittal", *vector)}}),
                                form)
    nuggets = None
    if o.nuggets is not None and o.assignments is not None:
        # The topics' nuggets and the runs' assignments: the qrels' query column, the others by their role's name or
        # columns=; a weight column only when columns= maps it (else vital 1, okay 0.5). A run's assignments are its
        # run_name's, or, one run, its table's name's.
        named = {**{r: r for r in NUGGET_ROLES if r != "weight"}, **{r: c for r, c in (o.columns or {}).items()
                                                                       if r in NUGGET_ROLES}}
        col = {r: column_identifier(c, d, fold) for r, c in {**named, "query_id": qrels_map["query_id"]}.items()}
        nuggets = Nuggets(Source(table_reference(o.nuggets, d, fold),
                                 {r: col[r] for r in ("query_id", "nugget", "importance", "weight") if r in col}),
                          Source(table_reference(o.assignments, d, fold),
                                 {"query_id": col["query_id"].copy(), "run_name": col["run"], "nugget": col["nugget"].copy(),
                                  "assignment": col["assignment"]}),
                          None if options.run_key else run_source.table.name)
    items = None
    if o.items is not None:  # the item features: the qrels' item column, and the long form unless columns= says
        features = {r: c for r, c in (o.columns or {}).items() if r in ITEM_ROLES} or \
            {"dimension": "dimension", "value": "value"}
        if "vector" in features and info.unnest not in ARRAYS:
            raise SqlmetricsError(f"items= with a vector column: {info.name} has no UNNEST ... WITH ORDINALITY; give the "
                                  "item features in long form there (columns dimension and value), or render for "
                                  f"{', '.join(n for n, i in DIALECTS.items() if i.unnest in ARRAYS)}.")
        items = Source(table_reference(o.items, d, fold),
                       {r: column_identifier(c, d, fold) for r, c in {"doc_id": qrels_map["doc_id"], **features}.items()})
    plan = plan_measures(calls, o.relevance_level)
    _check_greedy_depth(plan, info, calls)
    tree = build_statement(plan, qrels_source, run_source, options, per_query,
                           history=history, items=items, verdicts=verdicts, embeddings=embeddings, nuggets=nuggets)
    return portable(tree, info, options, calls, per_query), calls


def _check_greedy_depth(plan, info: DialectInfo, calls: list) -> None:
    """An engine that cannot take the statement's greedy ideal ranking is told so before it is sent one."""
    if plan.greedy_alphas and info.greedy_depth and plan.subtopic_depth > info.greedy_depth:
        asked = ", ".join(c.text for c in calls if c.measure.rows == "subtopics")
        raise SqlmetricsError(f"the greedy ideal ranking of {asked} is {plan.subtopic_depth} positions deep (two CTEs "
                              f"each), and {info.name} takes {info.greedy_depth}: ask for a smaller cutoff (nNRBP: a "
                              "smaller beta; 0.3 takes 20 positions), or evaluate them locally or on another engine.")
