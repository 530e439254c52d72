"""The AutoNuggetizer's scores (rows: nuggets): each topic's nuggets (nuggets=) with a run's support of each
(assignments=), one row per (run, topic, nugget) in nugget_rows, the measures over each (run, topic)'s in
nugget_values, joined beside the ranked values by (run_name,) query_id."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..deferred import exp
from ..errors import SqlmetricsError
from ..plan import Plan
from .shape import Shape
from .sources import Source
from .trees import _by, _c, _parse_ours, _type


@dataclass(frozen=True)
class Nuggets:
    """nuggets: query_id, nugget, importance ('vital' or 'okay') and, optionally, weight; assignments: query_id,
    run_name, nugget and assignment ('support', 'partial_support' or 'not_support'). run: the one run's name its
    assignments are taken by when the statement has no run_name in its list key; None when it has (each list's own)."""

    nuggets: Source
    assignments: Source
    run: str | None = None

    def bound(self) -> Nuggets:
        return replace(self, nuggets=self.nuggets.bound(), assignments=self.assignments.bound())


def check_nuggets(plan: Plan, options: Shape, nuggets: Nuggets | None) -> None:
    """The nugget measures need nuggets= and assignments=, and lists keyed by run and query alone."""
    if not plan.nuggets:
        return
    if nuggets is None:
        raise SqlmetricsError("the nugget measures (NuggetAll, NuggetVital, NuggetWeighted, NuggetRecall, ...) read "
                              "the topics' nuggets and the runs' support of them: pass nuggets= (query_id, nugget, "
                              "importance 'vital' or 'okay', optional weight) and assignments= (query_id, run, "
                              "nugget, assignment 'support', 'partial_support' or 'not_support').")
    if options.segment_key or options.labels or options.judgment_groups:
        raise SqlmetricsError("the nugget measures score each (run, topic): they take qrels (qrels_format='qrels'), "
                              "without group_by=.")
    if nuggets.run is None and not options.run_key:
        raise ValueError("a run's assignments need its name")  # a caller's bug: evaluate() and render() give it


# Every nugget of a topic, for every run the assignments name, with that run's assignment of it (none: not_support);
# the values as doubles, so that no engine averages them as decimals of a few digits.
_NUGGET_ROWS = (
    "SELECT r.run_name, n.query_id, n.nugget, CASE WHEN n.importance = 'vital' THEN 1 ELSE 0 END AS vital, "
    "CAST(COALESCE(n.weight, CASE WHEN n.importance = 'vital' THEN 1.0 ELSE 0.5 END) AS DOUBLE) AS weight, "
    "CAST(CASE a.assignment WHEN 'support' THEN 1.0 WHEN 'partial_support' THEN 0.5 ELSE 0.0 END AS DOUBLE) AS support, "
    "CAST(CASE a.assignment WHEN 'support' THEN 1.0 ELSE 0.0 END AS DOUBLE) AS strict_support, "
    "CAST(CASE WHEN a.assignment IN ('support', 'partial_support') THEN 1.0 ELSE 0.0 END AS DOUBLE) AS any_support "
    "FROM nugget_input AS n CROSS JOIN (SELECT DISTINCT run_name FROM assignment_input) AS r "
    "LEFT JOIN assignment_input AS a ON a.run_name = r.run_name AND a.query_id = n.query_id AND a.nugget = n.nugget")


def nugget_values(plan: Plan, nuggets: Nuggets, fixed) -> list:
    """The nuggets and assignments (nugget_input, assignment_input: one run's, when nuggets.run names it), a row per
    (run, topic, nugget) (nugget_rows) and the nugget measures over each (run, topic)'s (nugget_values)."""
    weight = {"weight": "DOUBLE"} if "weight" in nuggets.nuggets.columns else {}
    given = nuggets.nuggets.select({"query_id": "VARCHAR", "nugget": "VARCHAR", "importance": "VARCHAR", **weight})
    if not weight:  # no weight column: each nugget's importance weighs it
        given = given.select(exp.alias_(exp.cast(exp.Null(), _type("DOUBLE")), "weight"), copy=False)
    assigned = nuggets.assignments.select({"query_id": "VARCHAR", "run_name": "VARCHAR", "nugget": "VARCHAR",
                                           "assignment": "VARCHAR"})
    if nuggets.run is not None:
        assigned = assigned.where(exp.EQ(this=exp.cast(nuggets.assignments.value("run_name"), _type("VARCHAR")),
                                         expression=exp.convert(nuggets.run)), copy=False)
    values = [exp.alias_(fixed(e, _by(["nugget"])), out, copy=False)
              for out, e, _ in plan.values if out in plan.nuggets]
    by_topic = exp.select(_c("run_name"), _c("query_id"), *values).from_("nugget_rows", copy=False) \
        .group_by(_c("run_name"), _c("query_id"), copy=False)
    return [("nugget_input", given), ("assignment_input", assigned), ("nugget_rows", _parse_ours(_NUGGET_ROWS)),
            ("nugget_values", by_topic)]
