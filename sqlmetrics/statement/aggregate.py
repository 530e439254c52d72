"""Per-list values -> the statement's final SELECT: the per-list rows as they are (per_query), or one row per
run (and segment), each measure under its aggregate (mean, sum, trec_eval's floored geometric mean, once)."""
from __future__ import annotations

from ..caches import Kept, Stored
from ..catalogue.templates import built_from
from ..deferred import exp
from ..plan import READ, Plan
from .shape import Shape
from .trees import _by, _c, _cols, _in_fixed_order

GMAP_FLOOR = 1e-5  # trec_eval gm_map: AP is floored at 1e-5 before the logarithm


def final_select(options: Shape, plan: Plan, key: list, per_query: bool) -> exp.Select:
    """The SELECT over list_values the CTEs lead to: its rows in list order (per_query), or their aggregates."""
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
    added in list order so that the aggregates are the same on every run. The same arguments again (every
    evaluation of the same measures) are the same text: generated once, kept in this process and on disk."""
    key = repr((table, aggregates, run_key, list_key, segments))
    return _AGGREGATES.get(key, lambda: _STORED_AGGREGATES.get(
        key, lambda: aggregate_select(table, aggregates, run_key, segments, list_key).sql(READ)))


_AGGREGATES = Kept()
_STORED_AGGREGATES = Stored("aggregates", built_from)
