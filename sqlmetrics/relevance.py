"""Logs in the warehouse: relevance from behaviour, bound through sqlglot, never pasted as text.

    relevance="2*purchased + clicked"            an expression over the log's columns
    relevance={"purchased": 2, "clicked": 1}     the highest grade whose column is true / non-zero, else 0

The expression is parsed with sqlglot and every node is checked against an allowlist: column references
(bare names of the log's columns), numeric and string literals, TRUE/FALSE/NULL, arithmetic, comparisons,
IN/BETWEEN/IS over those, boolean logic, CASE, IF, CAST, COALESCE, NULLIF and a few scalar functions
(ABS, LN, EXP, POWER, SQRT, FLOOR, CEIL, ROUND, LEAST, GREATEST, SIGN). Anything else — a subquery,
a second statement, a comment, an aggregate or window function, a qualified or unknown column, `*`,
a parameter — is a SqlmetricsError naming the offending part. The checked tree is what the renderer
uses: its column references are rebound to the source's columns, so nothing of the text is pasted.
"""
from __future__ import annotations

import functools

from .deferred import exp, sqlglot
from .errors import SqlmetricsError

__all__ = ["relevance_expression", "ALLOWED_FUNCTIONS"]

ALLOWED_FUNCTIONS = ("ABS", "LN", "EXP", "POWER", "SQRT", "FLOOR", "CEIL", "ROUND", "LEAST", "GREATEST",
                     "SIGN", "COALESCE", "NULLIF", "IF", "CAST")


@functools.cache
def _allowed_nodes() -> tuple:
    """The node types an expression may hold (built on first use: sqlglot is imported only then)."""
    return (
        exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Neg,
        exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv,
        exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.NullSafeEQ,
        exp.NullSafeNEQ, exp.And, exp.Or, exp.Not,
        exp.Case, exp.If, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam, exp.Coalesce, exp.Nullif,
        exp.Abs, exp.Ln, exp.Exp, exp.Pow, exp.Sqrt, exp.Floor, exp.Ceil, exp.Round, exp.Least, exp.Greatest,
        exp.Sign,
    )


def _describe(node: exp.Expression) -> str:
    try:
        text = node.sql("duckdb")
    except Exception:  # noqa: BLE001 - only for the message
        text = type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _resolve(name: str, columns) -> str:
    """The log's column for a bare name: exact, else the one case-insensitive match."""
    if columns is None:
        return name
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise SqlmetricsError(f"relevance=: {name!r} is not a column of the log (columns: {', '.join(columns)}).")


def relevance_expression(spec, columns=None, dialect: str = "duckdb") -> tuple[exp.Expression, list]:
    """Validate relevance= and return (expression tree, the log columns it reads).

    Column nodes in the tree are bare, unquoted-or-quoted names of the log's columns (resolved against
    `columns` when given; render() for a warehouse cannot know them, and leaves the check to the engine).
    """
    if isinstance(spec, dict):
        return _mapping(spec, columns)
    if not isinstance(spec, str) or not spec.strip():
        raise SqlmetricsError("relevance= must be a SQL expression over the log's columns (e.g. "
                              "'2*purchased + clicked') or a mapping such as {'purchased': 2, 'clicked': 1}.")
    try:
        parsed = [s for s in sqlglot.parse(spec, read=dialect) if s is not None]
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as e:
        raise SqlmetricsError(f"relevance={spec!r} is not a SQL expression: {str(e).splitlines()[0]}") from None
    if len(parsed) != 1:
        raise SqlmetricsError(f"relevance={spec!r}: one expression only (found {len(parsed)} statements; no ';').")
    tree = parsed[0]
    for node in tree.walk():
        if node.comments:
            raise SqlmetricsError(f"relevance={spec!r}: comments are not allowed in the expression.")
        if not isinstance(node, _allowed_nodes()):
            kind = "an aggregate function" if isinstance(node, exp.AggFunc) else \
                "a window function" if isinstance(node, exp.Window) else \
                "a subquery" if isinstance(node, (exp.Subquery, exp.Select, exp.Query)) else \
                "a statement" if isinstance(node, (exp.DDL, exp.DML, exp.Command)) else \
                f"a function ({type(node).__name__})" if isinstance(node, exp.Func) else type(node).__name__
            raise SqlmetricsError(
                f"relevance={spec!r}: {_describe(node)!r} is {kind}, which is not allowed; use the log's columns, "
                "numbers, arithmetic, comparisons, AND/OR/NOT, CASE, CAST, COALESCE and "
                f"{', '.join(f for f in ALLOWED_FUNCTIONS if f not in ('COALESCE', 'CAST'))}.")
        if isinstance(node, exp.Column) and (node.table or node.args.get("db") or node.args.get("catalog")):
            raise SqlmetricsError(f"relevance={spec!r}: {_describe(node)!r}: name a column of the log without "
                                  "a table or schema.")
        if isinstance(node, exp.Literal) and not node.is_string:
            try:
                float(node.this)
            except ValueError:
                raise SqlmetricsError(f"relevance={spec!r}: {node.this!r} is not a number.") from None
        if isinstance(node, exp.In) and (node.args.get("query") or node.args.get("unnest") or node.args.get("field")):
            raise SqlmetricsError(f"relevance={spec!r}: {_describe(node)!r}: IN takes a list of values only.")
    used = []

    def bind(node):
        if isinstance(node, exp.Column):
            name = _resolve(node.name, columns)
            if name not in used:
                used.append(name)
            return exp.column(exp.to_identifier(name, quoted=True))
        return node

    tree = tree.transform(bind)
    if not used:
        raise SqlmetricsError(f"relevance={spec!r}: the expression reads no column of the log.")
    return tree, used


def _mapping(spec: dict, columns) -> tuple[exp.Expression, list]:
    """{column: grade}: the highest grade whose column is true or non-zero; 0 when none is."""
    if not spec:
        raise SqlmetricsError("relevance= mapping is empty: give {column: grade}, e.g. {'purchased': 2, 'clicked': 1}.")
    items = []
    for col, grade in spec.items():
        if not isinstance(col, str) or not col:
            raise SqlmetricsError(f"relevance= mapping: keys are column names, got {col!r}.")
        if isinstance(grade, bool) or not isinstance(grade, (int, float)) or grade != grade:
            raise SqlmetricsError(f"relevance= mapping: the grade of {col!r} must be a number, got {grade!r}.")
        items.append((_resolve(col, columns), grade))
    items.sort(key=lambda item: -item[1])
    case = exp.Case()
    for col, grade in items:
        # CAST(.. AS INT) reads booleans (TRUE = 1) and integer flags alike, on every engine.
        flag = exp.cast(exp.column(exp.to_identifier(col, quoted=True)), exp.DataType.build("INT"))
        case = case.when(exp.NEQ(this=exp.func("COALESCE", flag, exp.Literal.number(0)), expression=exp.Literal.number(0)),
                         exp.Literal.number(grade))
    case = case.else_(exp.Literal.number(0))
    return case, [c for c, _ in items]
