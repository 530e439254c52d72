"""The statement's small sqlglot builders, shared by its stages: its own columns, orders, windows, join
conditions, and its CTEs written as SQL text. The names are the package's own (underscored: not its API)."""
from __future__ import annotations

import functools

from ..deferred import exp, sqlglot
from ..plan import READ
from .shape import Shape


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


def _join_on(a: str, b: str, columns, nullable) -> str:
    """a.c = b.c for each column, as text; IS NOT DISTINCT FROM for the nullable ones (segments: a NULL segment
    is a segment of its own), parenthesised: some engines read `x IS NOT DISTINCT FROM y AND ...` as
    `x ... (y AND ...)`."""
    return " AND ".join(f"({a}.{c} IS NOT DISTINCT FROM {b}.{c})" if c in nullable else f"{a}.{c} = {b}.{c}"
                        for c in columns)


def _parse_ours(sql: str) -> exp.Select:
    """A CTE of the statement's own (its names are ours, never the caller's). Its ascending sort keys are never
    NULL where it matters: they take NULLS FIRST, which engines that cannot say NULLS LAST (MySQL) need no
    clause for, as the rest of the statement does. A fresh tree each call, the caller's to change."""
    return _parsed_ours(sql).copy()


@functools.lru_cache(maxsize=1024)
def _parsed_ours(sql: str) -> exp.Select:
    # Parsed once per text: the same few texts come back on every evaluation, and a copy costs a third of a parse.
    tree = sqlglot.parse_one(sql, read=READ)
    for ordered in tree.find_all(exp.Ordered):
        if not ordered.args.get("desc"):
            ordered.set("nulls_first", True)
    return tree
