"""The position rows (templates with `rows: positions`, cwl_eval's C/W/L measures): every list's positions
1..1000 with the judged rows there, their windows, and one row of values per list (position_values)."""
from __future__ import annotations

from ..deferred import exp
from ..plan import Plan
from .shape import Shape
from .trees import _and, _c, _cols, _equal_on, _in_fixed_order, _ordered, _with_window


POSITION_DIGITS = 3  # rows: positions gives each list the positions 1..10^3 (cwl_eval's depth, 1000)


def position_ctes(plan: Plan, options: Shape, key: list) -> list:
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
