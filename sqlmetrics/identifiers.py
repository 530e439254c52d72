"""Names from the caller bound as SQL identifiers and table references, never pasted as text: a bare
name stays bare where the engine would read it so (its case rules apply), a keyword or any other
character gets quoted, and a qualified table name is split into its parts.
"""
from __future__ import annotations

from functools import lru_cache

from .deferred import dialect_module, exp, sqlglot
from .errors import SqlmetricsError

READ = "duckdb"


def quote_identifier(name: str) -> str:
    """A column or table name as one quoted DuckDB identifier, whatever characters it holds: sqlglot's
    spelling (tests/test_identifiers.py checks it is), without loading sqlglot's DuckDB dialect, which costs
    a small evaluation a tenth of its time."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value) -> str:
    """A Python value as a DuckDB literal, as sqlglot binds it: strings, whole numbers, booleans and None
    spelled here as sqlglot spells them (tests/test_identifiers.py), anything else by sqlglot."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if type(value) is int:
        return str(value)
    return exp.convert(value).sql(READ)


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
    keywords = dialect_module.Dialect.get_or_raise(dialect).tokenizer_class.KEYWORDS
    return frozenset(_RESERVED | set(keywords) | {k.split(" ")[0] for k in keywords})


def _is_keyword(name: str, dialect: str) -> bool:
    return name.upper() in _keywords(dialect)


def _bare_identifier(name: str, dialect: str, normalize: bool = True) -> exp.Identifier:
    """A name as the caller wrote it: unquoted when it can be typed unquoted (so the engine's usual case
    rules apply, as in hand-written SQL: `qrels` finds QRELS on Snowflake); a keyword is quoted after the
    engine's case folding (same meaning, valid syntax); anything else is quoted exactly."""
    if not isinstance(name, str) or not name:
        raise SqlmetricsError(f"a table or column name must be a non-empty string, got {name!r}.")
    if exp.SAFE_IDENTIFIER_RE.fullmatch(name):  # not match(): its $ matches before a last line break too
        if _is_keyword(name, dialect):  # quoted, after the case folding the engine would have applied
            ident = exp.to_identifier(name, quoted=False)
            if normalize:
                ident = dialect_module.Dialect.get_or_raise(dialect).normalize_identifier(ident)
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
