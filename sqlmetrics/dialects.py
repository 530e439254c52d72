"""The warehouse side: the evaluation as one SQL statement for another engine (engines.py runs it there).

    render(["nDCG@10", "AP"], dialect="snowflake", qrels="db.s.qrels", run="db.s.run")  -> one SQL statement
    sqlmetrics sql -m nDCG@10 -m AP --dialect snowflake --qrels db.s.qrels --run db.s.run

The statement is the one evaluate() runs on DuckDB (render.render_duckdb), parsed by sqlglot and generated
for the target dialect. User-supplied names never become SQL text: the DuckDB statement is rendered with
fixed placeholder names, and the placeholders are replaced on the parsed tree by sqlglot identifier and
table nodes built from the caller's names. A few differences that sqlglot cannot know about are fixed on
the tree here, each for the dialects that need it (see `_portable`):

- doc ids (and query ids, run names) must compare as bytes: PostgreSQL gets COLLATE "C" (its databases
  often default to ICU or en_US collations), MySQL/MariaDB a cast to BINARY (their default collations are
  case-insensitive and pad trailing spaces), SQLite COLLATE BINARY (a NOCASE column would otherwise keep
  its collation through CAST), SQL Server Latin1_General_BIN2, Oracle NLSSORT(.., 'NLS_SORT=BINARY');
- ClickHouse must fill outer-join misses with NULL: sqlglot's Nullable(...) casts already make the joined
  judgment columns nullable, and SETTINGS join_use_nulls = 1 makes sure of it for every column;
- score_precision="float32" needs a 4-byte float type, which SQLite, BigQuery and Snowflake do not have;
- SQL Server's POWER returns the type of its first argument (POWER(0.8, 2) is 0.6 there): cast it to FLOAT;
- Oracle cannot compare CLOBs, which is what sqlglot makes of an unbounded VARCHAR.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect as _SqlglotDialect

from .errors import SqlmetricsError
from .names import parse_all
from .statement import (QRELS_ROLES, QUERY_SETS, SCORE_PRECISIONS, TIES, Options, Source, output_columns,
                        render_duckdb)

__all__ = ["DIALECTS", "render", "table_reference", "column_identifier", "add_sql_command", "cmd_sql"]


@dataclass(frozen=True)
class DialectInfo:
    name: str
    sqlglot: str  # the sqlglot dialect the SQL is generated in
    ids: str | None  # how ids are forced to byte order (see _binary_id), None: the engine already does
    float32: str | None  # the 4-byte float type name, None when the engine has none
    executed: bool  # verified on the real engine by tests/test_engines.py
    note: str = ""
    fold_case: bool = True  # unquoted names are case-folded as sqlglot's dialect says (Polars: never)


DIALECTS = {d.name: d for d in [
    DialectInfo("duckdb", "duckdb", None, "FLOAT", True),
    DialectInfo("sqlite", "sqlite", "collate_binary", None, True),
    DialectInfo("postgres", "postgres", "collate_c", "REAL", True),
    DialectInfo("mysql", "mysql", "binary", "FLOAT", True, "MySQL 8 and MariaDB 10.4+"),
    DialectInfo("clickhouse", "clickhouse", None, "Float32", True, "also chDB"),
    DialectInfo("spark", "spark", None, "FLOAT", True, "SparkSession.sql (pyspark 4 in the tests)"),
    DialectInfo("datafusion", "postgres", None, "REAL", True, "Apache DataFusion, through the postgres dialect"),
    DialectInfo("polars", "duckdb", None, "REAL", True, "polars.SQLContext, through the duckdb dialect",
                fold_case=False),
    DialectInfo("databricks", "databricks", None, "FLOAT", False),
    DialectInfo("bigquery", "bigquery", None, None, False),
    DialectInfo("snowflake", "snowflake", None, None, False),
    DialectInfo("trino", "trino", None, "REAL", False),
    DialectInfo("presto", "presto", None, "REAL", False),
    DialectInfo("athena", "athena", None, "REAL", False),
    DialectInfo("redshift", "redshift", None, "REAL", False),
    DialectInfo("tsql", "tsql", "collate_bin2", "REAL", False, "SQL Server, Azure SQL, Fabric"),
    DialectInfo("oracle", "oracle", "nlssort", "BINARY_FLOAT", False),
]}
ALIASES = {"postgresql": "postgres", "pg": "postgres", "mariadb": "mysql", "chdb": "clickhouse",
           "sqlserver": "tsql", "mssql": "tsql", "spark2": "spark", "sparksql": "spark", "pyspark": "spark"}

ID_ROLES = ("run_name", "query_id", "doc_id")
RUN_ROLES = ("run_name", "query_id", "doc_id", "score", "rank_position")

# Placeholder names the DuckDB statement is rendered with; replaced on the parsed tree, never pasted.
_HOLD = "sqlm_hold_"
_HOLD_TABLES = {"qrels": _HOLD + "qrels_table", "run": _HOLD + "run_table"}

# Reserved words of standard SQL and of the engines here that sqlglot's tokenizers only know as part of a
# longer keyword (ORDER BY) or not at all: a column named so must be quoted.
_RESERVED = set("""
ALL AND ANY ARRAY AS ASC AT BETWEEN BOTH BY CASE CAST CHECK COLLATE COLUMN CONSTRAINT CREATE CROSS CUBE
CURRENT CURRENT_CATALOG CURRENT_DATE CURRENT_ROLE CURRENT_SCHEMA CURRENT_TIME CURRENT_TIMESTAMP
CURRENT_USER DEFAULT DELETE DESC DISTINCT DO DROP ELSE END EXCEPT EXISTS FALSE FETCH FILTER FOR FOREIGN
FROM FULL GRANT GROUP GROUPING HAVING IN INNER INSERT INTERSECT INTERVAL INTO IS JOIN LATERAL LEADING
LEFT LEVEL LIKE LIMIT LOCALTIME LOCALTIMESTAMP NATURAL NOT NULL OF OFFSET OID ON ONLY OR ORDER OUTER
OVER PARTITION PRIMARY QUALIFY RANGE RANK REFERENCES RETURNING RIGHT ROLLUP ROW ROWID ROWNUM ROWS SELECT
SESSION_USER SET SOME SYSDATE SYSTEM_USER TABLE TABLESAMPLE THEN TO TOP TRAILING TRUE UID UNION UNIQUE
UNNEST UPDATE USER USING VALUE VALUES WHEN WHERE WINDOW WITH
""".split())


@lru_cache(maxsize=None)
def _keywords(dialect: str) -> frozenset:
    """The dialect's keywords, with the first word of multi-word ones (ORDER of ORDER BY), and _RESERVED."""
    keywords = _SqlglotDialect.get_or_raise(dialect).tokenizer_class.KEYWORDS
    return frozenset(_RESERVED | set(keywords) | {k.split(" ")[0] for k in keywords})


def _is_keyword(name: str, dialect: str) -> bool:
    return name.upper() in _keywords(dialect)


def dialect_info(dialect: str) -> DialectInfo:
    key = str(dialect).lower()
    key = ALIASES.get(key, key)
    if key not in DIALECTS:
        raise SqlmetricsError(f"dialect={dialect!r} is not supported: use one of {', '.join(DIALECTS)}.")
    return DIALECTS[key]


# ----------------------------------------------------------------------------------------------------
# Binding names


def _bare_identifier(name: str, dialect: str, normalize: bool = True) -> exp.Identifier:
    """A name as the caller wrote it: unquoted when it can be typed unquoted (so the engine's usual case
    rules apply, as in hand-written SQL: `qrels` finds QRELS on Snowflake); a keyword is quoted after the
    engine's case folding (same meaning, valid syntax); anything else is quoted exactly."""
    if not isinstance(name, str) or not name:
        raise SqlmetricsError(f"a table or column name must be a non-empty string, got {name!r}.")
    if exp.SAFE_IDENTIFIER_RE.match(name):
        if _is_keyword(name, dialect):  # quoted, after the case folding the engine would have applied
            ident = exp.to_identifier(name, quoted=False)
            if normalize:
                ident = _SqlglotDialect.get_or_raise(dialect).normalize_identifier(ident)
            ident.set("quoted", True)
            return ident
        return exp.to_identifier(name, quoted=False)
    return exp.to_identifier(name, quoted=True)


def _only_identifiers(node: exp.Expression) -> bool:
    return all(not n.comments for n in node.walk()) and all(
        isinstance(n, (exp.Table, exp.Identifier, exp.Column)) for n in node.walk()
    )


def column_identifier(name, dialect: str, normalize: bool = True) -> exp.Identifier:
    """A column name: a bare name (see _bare_identifier), or one the caller quoted in the dialect's syntax."""
    if isinstance(name, exp.Identifier):
        return name.copy()
    if isinstance(name, str) and name[:1] in ('"', "`", "["):
        try:
            parsed = sqlglot.parse_one(name, read=dialect, into=exp.Column)
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
            parsed = None
        if isinstance(parsed, exp.Column) and not parsed.table and _only_identifiers(parsed) \
                and isinstance(parsed.this, exp.Identifier) and parsed.this.quoted:
            return parsed.this.copy()
    return _bare_identifier(name, dialect, normalize)


def table_reference(name, dialect: str, normalize: bool = True) -> exp.Table:
    """A table reference: `table`, `schema.table`, `catalog.schema.table` (BigQuery: project.dataset.table),
    as the dialect reads it, quoted parts allowed; or a tuple of parts. A string that is not exactly such a
    reference is split on dots and each part bound as an identifier (so `run; DROP TABLE x` is one quoted
    name), and more than three parts is an error."""
    if isinstance(name, exp.Table):
        return name.copy()
    if isinstance(name, (tuple, list)):
        parts = list(name)
        if not 1 <= len(parts) <= 3:
            raise SqlmetricsError(f"table {name!r}: give 1 to 3 parts (catalog, schema, table).")
        idents = [_bare_identifier(p, dialect, normalize) for p in parts]
    elif isinstance(name, str) and name.strip():
        idents = _parsed_table_parts(name, dialect, normalize)
        if idents is None:
            parts = name.split(".")
            if len(parts) > 3 or not all(parts):
                raise SqlmetricsError(
                    f"table {name!r} is not a table reference (catalog.schema.table); "
                    "pass the parts as a tuple, e.g. ('my db', 'schema', 'table').")
            idents = [_bare_identifier(p, dialect, normalize) for p in parts]
    else:
        raise SqlmetricsError(f"a table name must be a non-empty string or a tuple of parts, got {name!r}.")
    this, db, catalog = (idents[::-1] + [None, None])[:3]
    return exp.table_(this, db=db, catalog=catalog)


def _parsed_table_parts(name: str, dialect: str, normalize: bool = True):
    """The identifiers of `name` read as a table reference in `dialect`, or None when it is anything more
    (an alias, a comment, a function call, a clause; text left over after the name fails the parse)."""
    try:
        parsed = sqlglot.parse_one(name, read=dialect, into=exp.Table)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    if not isinstance(parsed, exp.Table) or not _only_identifiers(parsed):
        return None
    if not {k for k, v in parsed.args.items() if v} <= {"this", "db", "catalog"}:
        return None
    present = [k for k in ("catalog", "db", "this") if parsed.args.get(k) is not None]
    idents = [parsed.args[k] for k in present]
    if not all(isinstance(i, exp.Identifier) and i.name for i in idents):  # `a..b` has an empty schema
        return None
    # A part the caller quoted stays exactly as written; a bare one is bound like any bare name.
    return [i.copy() if i.quoted else _bare_identifier(i.name, dialect, normalize) for i in idents]


# ----------------------------------------------------------------------------------------------------
# Rendering


def _role_columns(columns, qrels_columns, ties: str) -> tuple[dict, dict]:
    """{role: column name} for the run and for the qrels. `columns` maps both tables unless
    `qrels_columns` is given, which then maps the qrels alone; unmapped roles use the role's name."""
    for label, mapping, roles in (("columns", columns, RUN_ROLES + ("relevance",)),
                                  ("qrels_columns", qrels_columns, QRELS_ROLES)):
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            raise SqlmetricsError(f"{label}= must be a dict {{role: column}}, got {type(mapping).__name__}.")
        for role in mapping:
            if role not in roles:
                raise SqlmetricsError(f"{label}= names an unknown role {role!r}; the roles are {', '.join(roles)}.")
    columns = dict(columns or {})
    q_map = dict(columns if qrels_columns is None else qrels_columns)
    run = {r: columns.get(r, r) for r in ("query_id", "doc_id")}
    run["rank_position" if ties == "rank" else "score"] = columns.get(
        "rank_position" if ties == "rank" else "score", "rank_position" if ties == "rank" else "score")
    if "run_name" in columns:
        run = {"run_name": columns["run_name"], **run}
    qrels = {r: q_map.get(r, r) for r in QRELS_ROLES}
    return run, qrels


def _clean(text) -> str:
    """Text for a `--` comment line: no line breaks or other control characters can end the comment."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


INTO_MODES = ("create", "insert")


def render(measures, *, dialect="duckdb", qrels="qrels", run="run", columns=None, qrels_columns=None,
           per_query=False, queries="qrels", ties="docid_desc", relevance_level=1, score_precision="float64",
           header=True, group_by=None, label=None, relevance=None, into=None, into_mode="create") -> str:
    """The whole evaluation as ONE SQL statement for `dialect`, over tables that live in that engine.

    qrels, run: table names, possibly qualified (`db.schema.table`, BigQuery `project.dataset.table`), or
    tuples of parts. columns: {role: column} for the roles query_id, doc_id, relevance, score,
    rank_position and run_name (mapping run_name evaluates every run in the table at once, one row per
    run); it maps both tables unless qrels_columns maps the qrels separately. per_query: one row per
    (run and) query instead of the aggregate. The other options are evaluate()'s.

    group_by: segment columns of the run (["date", "arm"]): each list is keyed by them plus the query id,
    and the aggregate has one row per segment with `num_lists`. qrels=None with label= (a column of the
    run) or relevance= (an expression or {column: grade}, see sqlmetrics.logs) reads the judgments from the
    run itself. into="schema.table" wraps the statement in CREATE TABLE ... AS (into_mode="insert":
    INSERT INTO ... SELECT); ClickHouse tables get ENGINE = MergeTree ORDER BY tuple(), T-SQL is SELECT ... INTO,
    and polars (whose SQLContext has no INSERT) accepts only into_mode="create".
    """
    info = dialect_info(dialect)
    if into_mode not in INTO_MODES:
        raise SqlmetricsError(f"into_mode={into_mode!r} is not valid: use 'create' or 'insert'.")
    tree, calls = _statement(measures, info, qrels, run, columns, qrels_columns, per_query, queries, ties,
                             relevance_level, score_precision, group_by, label, relevance)
    if into is not None:
        tree = _into(tree, into, into_mode, info)
    sql = tree.sql(dialect=info.sqlglot, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    if not header:
        return sql
    run_map, qrels_map = _role_columns(columns, qrels_columns, ties)
    outs = output_columns(calls)
    segs = list(check_log_options(qrels, group_by, label, relevance))  # group_by="date" is one column
    keys = (["run_name"] if "run_name" in run_map else []) + segs + (["query_id"] if per_query else [])
    d = info.sqlglot

    def source(table, mapping):
        cols = ", ".join(f"{role}={column_identifier(col, d, info.fold_case).sql(d)}" for role, col in mapping.items())
        return f"{table_reference(table, d, info.fold_case).sql(d)} ({cols})"

    judged = (f"-- qrels: {source(qrels, qrels_map)}" if qrels is not None else
              f"-- judgments: from the run, relevance = {_label_text(label, relevance, d)}, per list")
    lines = [
        f"-- sqlmetrics: ranked-retrieval evaluation, rendered for {info.name}",
        f"-- measures: {', '.join(f'{o} = {c.text}' for o, c in zip(outs, calls))}",
        judged,
        f"-- run: {source(run, run_map)}",
        f"-- options: queries={queries!r}, ties={ties!r}, relevance_level={relevance_level!r}, "
        f"score_precision={score_precision!r}",
        f"-- one row per {' and '.join(keys) if keys else 'evaluation'}: "
        f"{', '.join([*keys, *outs, *(['num_lists'] if segs and not per_query else [])])}",
    ]
    if into is not None:
        lines.append(f"-- into: {table_reference(into, d, info.fold_case).sql(d)} ({into_mode})")
    return "\n".join(_clean(line) for line in lines) + "\n" + sql


def _into(tree, into, into_mode: str, info) -> exp.Expression:
    """The statement writing its rows to `into`: CREATE TABLE ... AS, or INSERT INTO ... SELECT."""
    if into_mode == "insert" and info.name == "polars":
        raise SqlmetricsError("into_mode='insert' is not available for polars: its SQLContext runs CREATE TABLE ... "
                              "AS but has no INSERT; use into_mode='create' (or concatenate the frames in Python).")
    target = table_reference(into, info.sqlglot, info.fold_case)
    if into_mode == "insert":
        return exp.Insert(this=target, expression=tree)
    properties = None
    if info.sqlglot == "clickhouse":
        # ClickHouse needs a table engine: MergeTree, unsorted (ORDER BY tuple() also admits Nullable columns).
        properties = exp.Properties(expressions=[
            exp.EngineProperty(this=exp.to_identifier("MergeTree")),
            exp.Order(expressions=[exp.Ordered(this=exp.Struct(), nulls_first=False)])])
    return exp.Create(this=target, kind="TABLE", expression=tree, properties=properties)


def _label_text(label, relevance, dialect) -> str:
    if label is not None:
        return column_identifier(label, dialect).sql(dialect)
    if isinstance(relevance, dict):
        return "highest of " + ", ".join(f"{c}={g}" for c, g in relevance.items())
    return str(relevance)


def check_log_options(qrels, group_by, label, relevance) -> tuple:
    """Validate group_by / label / relevance against each other; returns group_by as a tuple of names."""
    if group_by is None:
        segs = ()
    elif isinstance(group_by, str):
        segs = (group_by,)
    elif isinstance(group_by, (list, tuple)) and all(isinstance(g, str) and g for g in group_by):
        segs = tuple(group_by)
    else:
        raise SqlmetricsError(f"group_by= takes column names, e.g. ['date', 'arm']; got {group_by!r}.")
    if len(set(segs)) != len(segs):
        raise SqlmetricsError(f"group_by= names a column twice: {list(segs)!r}.")
    if label is not None and relevance is not None:
        raise SqlmetricsError("label= and relevance= both say where the judgment is: pass one of them.")
    if qrels is None and label is None and relevance is None:
        raise SqlmetricsError("qrels=None needs the judgment in the run: label='<column>' or relevance='<expression>'.")
    if qrels is not None and (label is not None or relevance is not None):
        raise SqlmetricsError("label= and relevance= read the judgment from the run itself: pass qrels=None "
                              "(with qrels, the judgments are the qrels').")
    if label is not None and (not isinstance(label, str) or not label):
        raise SqlmetricsError(f"label= takes the run's column holding the grade; got {label!r}.")
    return segs


def _statement(measures, info: DialectInfo, qrels, run, columns, qrels_columns, per_query, queries, ties,
               relevance_level, score_precision, group_by=None, label=None, relevance=None):
    from .logs import relevance_expression

    options = Options(queries=queries, ties=ties, relevance_level=relevance_level, score_precision=score_precision)
    options.check()
    segs = check_log_options(qrels, group_by, label, relevance)
    calls = parse_all(measures, relevance_level)
    if score_precision == "float32" and info.float32 is None:
        raise SqlmetricsError(f"score_precision='float32' cannot be expressed on {info.name}: it has no 4-byte "
                              "float type. Use score_precision='float64'.")
    run_map, qrels_map = _role_columns(columns, qrels_columns, ties)
    if "run_name" in run_map:
        options.run_key = ("run_name",)
    reserved = {"run_name", "query_id", "num_lists", *output_columns(calls)}
    for seg in segs:
        if seg in reserved or seg in run_map.values():
            raise SqlmetricsError(f"group_by= {seg!r}: a segment column cannot be a list-key role, a measure "
                                  "column or num_lists.")
    bound = {}  # placeholder column name -> identifier
    run_cols = {r: _HOLD + "run_" + r for r in run_map}
    for i, seg in enumerate(segs, 1):
        run_cols[f"seg_{i}"] = _HOLD + f"seg_{i}"
        bound[_HOLD + f"seg_{i}"] = column_identifier(seg, info.sqlglot, info.fold_case)
        bound[_HOLD + f"out_{i}"] = column_identifier(seg, info.sqlglot, info.fold_case)
    options.group_by = tuple((f"seg_{i}", _HOLD + f"out_{i}") for i in range(1, len(segs) + 1))
    expressions = {}
    if qrels is not None:
        hold_qrels = Source(_HOLD_TABLES["qrels"], {r: _HOLD + "qrels_" + r for r in qrels_map})
        for role, col in qrels_map.items():
            bound[_HOLD + "qrels_" + role] = column_identifier(col, info.sqlglot, info.fold_case)
    else:
        options.labels = True
        hold_qrels = None
        if label is not None:
            run_cols["relevance"] = _HOLD + "label"
            bound[_HOLD + "label"] = column_identifier(label, info.sqlglot, info.fold_case)
        else:
            tree, used = relevance_expression(relevance, None, info.sqlglot)
            holds = {}
            for i, name in enumerate(used):
                holds[name] = _HOLD + f"expr_{i}"
                bound[holds[name]] = column_identifier(name, info.sqlglot, info.fold_case)
            expressions["relevance"] = tree.transform(
                lambda n: exp.column(holds[n.name]) if isinstance(n, exp.Column) and n.name in holds else n)
    hold_run = Source(_HOLD_TABLES["run"], run_cols, expressions=expressions)
    for role, col in run_map.items():
        bound[_HOLD + "run_" + role] = column_identifier(col, info.sqlglot, info.fold_case)
    tables = {_HOLD_TABLES["run"]: table_reference(run, info.sqlglot, info.fold_case)}
    if qrels is not None:
        tables[_HOLD_TABLES["qrels"]] = table_reference(qrels, info.sqlglot, info.fold_case)

    duck = render_duckdb(calls, hold_qrels, hold_run, options, per_query)
    tree = sqlglot.parse_one(duck, read="duckdb")

    def bind(node):
        if isinstance(node, exp.Table) and node.name in tables and not node.args.get("db"):
            return tables[node.name].copy()
        if isinstance(node, exp.Column) and not node.table and node.name in bound:
            return exp.Column(this=bound[node.name].copy())
        if isinstance(node, exp.Alias) and node.alias in bound:
            node.set("alias", bound[node.alias].copy())
        return node

    tree = tree.transform(bind)
    leftover = [n for n in tree.find_all(exp.Identifier) if n.name.startswith(_HOLD)]
    if leftover:  # pragma: no cover - a renderer change that this module does not know about
        raise RuntimeError(f"unbound placeholder {leftover[0].name} in the rendered statement")
    return _portable(tree, info, options, calls, per_query), calls


def _cte(tree: exp.Expression, name: str) -> exp.Select | None:
    for cte in tree.find_all(exp.CTE):
        if cte.alias == name:
            return cte.this
    return None


def _portable(tree: exp.Expression, info: DialectInfo, options: Options, calls, per_query: bool) -> exp.Expression:
    """The dialect fixes sqlglot cannot know about (see the module docstring)."""
    # `SELECT lists.query_id` names its column `lists.query_id` on ClickHouse: alias every qualified column.
    for select in tree.find_all(exp.Select):
        select.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column) and e.table else e
                                   for e in select.expressions])
    if per_query and len(tree.expressions) == 1 and isinstance(tree.expressions[0], exp.Star):
        # Name the output columns: the reader sees what comes out, and MySQL can turn the keys into text.
        tree.set("expressions", [exp.column(c) for c in [*options.run_key, "query_id", *output_columns(calls)]])
    # Ids compare as bytes (segment values too: they are part of the list key).
    id_roles = {*ID_ROLES, *options.segment_key}
    for cte_name in ("judgments", "run_rows"):
        select = _cte(tree, cte_name)
        for item in select.expressions:
            if isinstance(item, exp.Alias) and item.alias in id_roles:
                item.set("this", _binary_id(item.this, info))
    if info.ids == "nlssort":
        for ordered in list(tree.find_all(exp.Ordered)):
            if isinstance(ordered.this, exp.Column) and ordered.this.name == "doc_id":
                ordered.set("this", exp.func("NLSSORT", ordered.this.copy(), exp.Literal.string("NLS_SORT=BINARY")))
    if info.ids == "binary":
        _text_keys_out(tree, options)
    # The final ORDER BY keys are never NULL: spell them as the dialect's default NULL order (no NULLS clause).
    small = _SqlglotDialect.get_or_raise(info.sqlglot).NULL_ORDERING == "nulls_are_small"
    for ordered in tree.args["order"].expressions if tree.args.get("order") else []:
        ordered.set("nulls_first", small)

    # 4-byte floats for score_precision="float32".
    if options.score_precision == "float32":
        for cast in list(tree.find_all(exp.Cast)):
            if cast.to.this == exp.DataType.Type.FLOAT:
                cast.set("to", exp.DataType(this=exp.DataType.Type.USERDEFINED, kind=info.float32))

    if info.name == "tsql":  # POWER's result has its first argument's type (POWER(0.8, 2) = 0.6)
        for power in list(tree.find_all(exp.Pow)):
            power.set("this", exp.cast(power.this.copy(), exp.DataType.build("DOUBLE")))
    if info.name == "oracle":  # an unbounded VARCHAR becomes a CLOB, which cannot be compared or sorted
        for cast in list(tree.find_all(exp.Cast)):
            if cast.to.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT) and not cast.to.expressions:
                cast.set("to", exp.DataType.build("VARCHAR(4000)"))
    if info.name == "polars":
        tree = tree.transform(_running_sum_before)
    if info.name == "clickhouse":  # outer-join misses must be NULL, not 0 / ''
        tree.set("settings", [exp.EQ(this=exp.column("join_use_nulls"), expression=exp.Literal.number(1))])
    return tree


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
        if isinstance(node, exp.Cast):
            node.set("to", exp.DataType.build("NVARCHAR(MAX)", dialect="tsql"))
        return exp.Collate(this=node, expression=exp.var("Latin1_General_BIN2"))
    if info.ids == "binary":
        return exp.cast(node, exp.DataType.build("BINARY", dialect="mysql"))
    return node


def _text_keys_out(tree: exp.Expression, options: Options) -> None:
    """MySQL: ids travel as binary strings; the final SELECT turns its key columns back into text."""
    keys = {*options.run_key, *options.segment_key, "query_id"}
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


# ----------------------------------------------------------------------------------------------------
# Command line: `sqlmetrics sql`


def add_sql_command(subparsers, parents=()):
    """Add `sqlmetrics sql` to the CLI's subparsers; its handler is cmd_sql(args) -> (text, output)."""
    p = subparsers.add_parser(
        "sql", parents=list(parents), help="print the evaluation as one SQL statement for a warehouse",
        description="Print the whole evaluation as ONE SQL statement for another engine, over tables that live "
                    "there. Names are bound as identifiers, never pasted: qualified tables (db.schema.table, "
                    "BigQuery project.dataset.table) and mapped columns come out quoted where they must.")
    p.add_argument("-m", "--measure", action="append", required=True, metavar="MEASURE",
                   help="a measure in any spelling (nDCG@10, map, P_10, ...); repeatable or comma-separated")
    p.add_argument("--dialect", default="duckdb", metavar="DIALECT",
                   help=f"the engine's SQL: {', '.join(DIALECTS)} (default duckdb)")
    p.add_argument("--qrels", default="qrels", metavar="TABLE", help="the qrels table (default qrels)")
    p.add_argument("--run", default="run", metavar="TABLE", help="the run table (default run)")
    p.add_argument("-q", "--per-query", action="store_true", help="one row per query (and run) instead of the means")
    p.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help="the column playing a role (query_id, doc_id, relevance, score, rank_position, run_name) "
                        "in both tables; run_name evaluates every run in the run table; repeatable")
    p.add_argument("--qrels-column", action="append", metavar="ROLE=NAME",
                   help="the qrels' own column for a role, when it differs from --column; repeatable")
    p.add_argument("--queries", choices=QUERY_SETS, default="qrels",
                   help="every judged query (default; missing ones score 0) or only queries in both")
    p.add_argument("--ties", choices=TIES, default="docid_desc",
                   help="order within equal scores: doc id descending (trec_eval, default), ascending, or the "
                        "run's rank_position column")
    p.add_argument("-l", "--relevance-level", type=int, default=1, metavar="N", help="grades >= N are relevant")
    p.add_argument("--score-precision", choices=SCORE_PRECISIONS, default="float64")
    p.add_argument("--no-header", action="store_true", help="leave out the comment block naming measures and options")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    g = p.add_argument_group("logs (--qrels none: the judgments are in the run table)")
    g.add_argument("--group-by", action="append", metavar="COLUMN", help="a segment column; repeatable")
    g.add_argument("--label", metavar="COLUMN", help="the run's column holding each document's grade")
    g.add_argument("--relevance", metavar="EXPR", help="a grade from the run's columns, e.g. '2*purchased + clicked'")
    g.add_argument("--into", metavar="TABLE", help="write the results to TABLE (CREATE TABLE ... AS)")
    g.add_argument("--into-mode", choices=INTO_MODES, default="create", help="create the table, or insert into it")
    p.set_defaults(func=cmd_sql)
    return p


_ROLES = set(RUN_ROLES) | set(QRELS_ROLES)


def _pairs(values, option: str) -> dict | None:
    """ROLE=NAME pairs (NAME=ROLE is accepted too, when only the right side is a role)."""
    if not values:
        return None
    out = {}
    for pair in values:
        left, eq, right = (s.strip() for s in pair.partition("="))
        if not eq or not left or not right:
            raise SqlmetricsError(f"{option} takes ROLE=NAME, such as {option} query_id=qid; got {pair!r}.")
        if left not in _ROLES and right in _ROLES:
            left, right = right, left
        out[left] = right
    return out


def cmd_sql(args):
    from .cli import _measure_list

    logs = {"group_by": args.group_by, "label": args.label, "relevance": args.relevance, "into": args.into}
    sql = render(_measure_list(args.measure), dialect=args.dialect,
                 qrels=None if args.qrels.lower() == "none" else args.qrels, run=args.run,
                 **{k: v for k, v in logs.items() if v}, **({"into_mode": args.into_mode} if args.into else {}),
                 columns=_pairs(args.column, "--column"), qrels_columns=_pairs(args.qrels_column, "--qrels-column"),
                 per_query=args.per_query, queries=args.queries, ties=args.ties,
                 relevance_level=args.relevance_level, score_precision=args.score_precision,
                 header=not args.no_header)
    return sql + ";\n", getattr(args, "output", None)
