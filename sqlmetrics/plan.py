"""Planning: the requested measures' templates bound to their parameters and resolved into what the
statement must compute — the shared prelude columns (row, window, query, collection scope), the ideal
ranking's aggregates, and one value expression per measure. Pure sqlglot work on the templates; it
depends on nothing but the measure calls and the relevance level, so it can run while the data loads.

Parameter placeholders (`:k`) are replaced on the parsed tree by literals or by the chosen option's SQL,
never by pasting text; the column names a template reads decide which shared columns are computed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

from .caches import Kept
from .catalogue import ABSENT, MeasureCall, shared_columns
from .deferred import exp, sqlglot
from .errors import SqlmetricsError

READ = "duckdb"  # the dialect templates are written in
LEVEL_COLUMNS = ("is_rel", "rel_so_far", "nonrel_so_far", "unjudged_rel", "num_rel", "num_nonrel")


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
    """Replace `:name` placeholders by the call's values; an absent value makes its comparison TRUE. `tree` is
    changed in place: the callers' are fresh from _parse (a copy at each transform copied every tree four more
    times)."""
    # A measure with another's body (body:) may leave some of its parameters out: those stay absent.
    values = {**dict.fromkeys(call.measure.absent_params, ABSENT), **call.values}
    params = {**call.measure.absent_params, **call.measure.params}

    def replace(node):
        if isinstance(node, exp.Placeholder) and node.name in values:
            value, param = values[node.name], params[node.name]
            if param.type == "gains":
                return _gain_case(value)
            if param.type == "choice":
                # Parenthesised: the option is spliced into a larger expression (`:gain / log2(...)`); a function
                # call (CASE and CAST too), a single term or a parenthesised option (`:compat`) needs none.
                option = _bind_placeholders(_parse(param.options[value]), call)
                return option if isinstance(option, (exp.Func, exp.Column, exp.Literal, exp.Paren)) \
                    else exp.Paren(this=option)
            if value is ABSENT:
                return exp.Null()
            if value == "max_relevance" or param.type == "grade" and value == "max":
                return exp.column("max_relevance")
            if param.type == "prob":
                # A double, as in trec_eval's C and the Python peers: 1 - 0.9 is then 0.09999999999999998 there as
                # here (a decimal literal would make it 0.1, and move a value on a printed digit's boundary).
                return exp.cast(exp.Literal.number(_number(value)), exp.DataType.build("DOUBLE"))
            return exp.Literal.number(_number(value))
        if isinstance(node, exp.Placeholder):  # a template bug, not the caller's
            raise RuntimeError(f"{call.measure.path.name}: placeholder :{node.name} is not a declared parameter")
        return node

    absent = {n for n, v in values.items() if v is ABSENT and params[n].type != "gains"}

    def drop_absent_comparisons(node):
        if isinstance(node, (exp.LTE, exp.GTE, exp.LT, exp.GT, exp.EQ)):
            if any(isinstance(side, exp.Placeholder) and side.name in absent for side in (node.left, node.right)):
                return exp.true()
        return node

    tree = tree.transform(drop_absent_comparisons, copy=False)
    return _simplify(tree.transform(replace, copy=False))


def _gain_case(pairs) -> exp.Expression:
    """A grade -> gain mapping as SQL: CASE WHEN relevance = 1 THEN 3 ... ELSE relevance END (no mapping:
    relevance itself)."""
    if pairs is ABSENT:
        return exp.column("relevance")
    case = exp.Case(default=exp.column("relevance"))
    for grade, gain in pairs:
        value = exp.Literal.number(_number(abs(gain)))
        case = case.when(exp.EQ(this=exp.column("relevance"), expression=exp.Literal.number(grade)),
                         value if gain >= 0 else exp.Neg(this=value))
    return exp.Paren(this=case)


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _simplify(tree: exp.Expression) -> exp.Expression:
    """Fold what binding an absent parameter leaves behind: `x AND TRUE`, `CASE WHEN TRUE`, COALESCE(NULL, x),
    and `:p IS NULL` once p is bound (TRUE when absent, FALSE when given). In place, as _bind_placeholders."""

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
            if first.this == exp.false():
                rest = node.args["ifs"][1:]
                return exp.Case(ifs=rest, default=node.args.get("default")) if rest else node.args.get("default")
        if isinstance(node, exp.Coalesce):
            args = [node.this, *node.expressions]
            while len(args) > 1 and isinstance(args[0], exp.Null):
                args.pop(0)
            if isinstance(args[0], exp.Literal) or len(args) == 1:
                return args[0]
        if isinstance(node, exp.Paren) and isinstance(node.this, (exp.Column, exp.Literal, exp.Boolean)):
            return node.this
        return node

    def bound_is_null(node):  # `:p IS NULL` once p is bound, folded first: transform() visits parents first
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) \
                and isinstance(node.this, (exp.Null, exp.Literal)):
            return exp.true() if isinstance(node.this, exp.Null) else exp.false()
        return node

    return tree.transform(bound_is_null, copy=False).transform(fold, copy=False)


@dataclass
class Plan:
    """What the prelude must compute for the requested measures."""

    row: dict = field(default_factory=dict)  # column name -> expression (row and window scope, judged_ranking)
    query: dict = field(default_factory=dict)  # column name -> expression (query_stats)
    ideal: dict = field(default_factory=dict)  # column name -> expression (query_stats, over ideal)
    # Extra orders of the ideal ranking (a gain mapping that reorders grades): rank column -> sort expression.
    ideal_orders: dict = field(default_factory=dict)
    # Running values down an ideal ranking, joined to each ranked row at its rank: ideal rank column (ideal_rnk,
    # or one of ideal_orders) -> {column -> window expression}.
    ideal_running: dict = field(default_factory=dict)
    ideal_suffix: dict = field(default_factory=dict)  # ideal ranking -> {name: window over its running values}
    collection: dict = field(default_factory=dict)
    ranking_reads_collection: bool = False
    values: list = field(default_factory=list)  # (output column, expression, empty value)
    preferences: set = field(default_factory=set)  # the output columns aggregated over preference rows
    positions: set = field(default_factory=set)  # the output columns aggregated over position rows
    position_row: dict = field(default_factory=dict)  # column name -> window expression over the position rows
    subtopics: set = field(default_factory=set)  # the output columns aggregated over subtopic rows (diversity)
    # The diversity measures' largest cutoff, or the depth nNRBP's ideal ranking must reach (_rank_biased_depth):
    # the positions their subtopic rows list, and the greedy ideal's length; and the alphas of the greedy ideal
    # rankings they read (their `ideal_gain` column).
    subtopic_depth: int = 0
    greedy_alphas: set = field(default_factory=set)
    recommendations: set = field(default_factory=set)  # the output columns aggregated over the run's items, once
    ratings: set = field(default_factory=set)  # the output columns aggregated over the run's rated pairs, once
    user_ratings: set = field(default_factory=set)  # ... over each list's (user's) rated pairs, one value per list
    verdicts: set = field(default_factory=set)  # the output columns aggregated over the query's judged statements
    embeddings: set = field(default_factory=set)  # the output columns aggregated over the query's generated questions
    nuggets: set = field(default_factory=set)  # ... over the topic's nuggets with the run's support of each
    items: set = field(default_factory=set)  # the output columns aggregated over each list's items (similarities)
    item_columns: set = field(default_factory=set)  # the columns those read (which similarities to compute)
    # The item measures' cutoffs (None: the whole list): the items below the largest are never compared.
    item_cutoffs: list = field(default_factory=list)
    overlap: set = field(default_factory=set)  # the output columns aggregated over overlap rows (Compat)
    aggregates: list = field(default_factory=list)  # (output column, aggregate kind)


def plan_measures(calls: list[MeasureCall], relevance_level: int) -> Plan:
    """The measures' templates bound and resolved into the prelude columns and value expressions: the
    sqlglot work of rendering, which depends on nothing but the calls and the relevance level. The same
    measures again (a notebook, compare(), a test) reuse the plan: it is read, never changed, by its users."""
    key = (tuple((c.text, str(c.measure.path), c.measure.body, c.params) for c in calls), relevance_level)
    return _PLANS.get(key, lambda: _plan(calls, relevance_level))


_PLANS = Kept()


def _plan(calls: list[MeasureCall], relevance_level: int) -> Plan:
    plan = Plan()
    columns = _SharedColumns(plan, relevance_level)
    local_names: dict[str, str] = {}  # a window/ideal section's SQL, bound -> its column name (one per distinct)
    for call, out in zip(calls, output_columns(calls)):
        # Aggregated over rows of their own kind (statement/ builds them): no shared columns to resolve.
        if call.measure.rows in ("preferences", "subtopics", "recommendations", "ratings", "items", "verdicts",
                                 "embeddings", "nuggets", "overlap"):
            _plan_own_rows(plan, call, out)
        else:
            _plan_ranked(plan, call, out, relevance_level, columns, local_names)
    plan.ranking_reads_collection = any(
        c.name in plan.collection for tree in plan.row.values() for c in tree.find_all(exp.Column))
    return plan


class _SharedColumns:
    """The shared columns (sql/_shared.sql) the templates read, added to the plan's buckets as they are met."""

    def __init__(self, plan: Plan, relevance_level: int):
        self.plan = plan
        self.relevance_level = relevance_level
        self.shared = shared_columns()

    def need(self, name: str, level: int) -> str:
        """The shared column `name` at relevance level `level`, computed once: its name in the plan."""
        plan, shared = self.plan, self.shared
        col = shared[name]
        target = _level_name(name, level, self.relevance_level) if name in LEVEL_COLUMNS else name
        bucket = {"row": plan.row, "window": plan.row, "query": plan.query, "collection": plan.collection}[col.scope]
        if target in bucket:
            return target
        bucket[target] = _parse(col.sql).transform(
            lambda n: exp.Literal.number(level) if isinstance(n, exp.Placeholder) and n.name == "level" else n,
            copy=False)
        return target

    def resolve(self, tree: exp.Expression, level: int, sections: dict) -> exp.Expression:
        """A template's columns renamed: its sections' to their plan columns, the shared ones' to theirs. In place
        (the callers' trees are _bind_placeholders')."""
        shared = self.shared

        def rename(node):
            if isinstance(node, exp.Column) and not node.table:
                if node.name in sections:
                    return exp.column(sections[node.name])
                if node.name in shared:
                    return exp.column(self.need(node.name, level))
            return node

        return tree.transform(rename, copy=False)


def _plan_own_rows(plan: Plan, call: MeasureCall, out: str) -> None:
    """A measure aggregated over rows of its own kind: its bound body, and what those rows must carry."""
    m = call.measure
    body = _bind_placeholders(_parse(m.body), call)
    plan.values.append((out, body, m.empty))
    plan.aggregates.append((out, m.aggregate))
    {"preferences": plan.preferences, "subtopics": plan.subtopics, "recommendations": plan.recommendations,
     "ratings": plan.ratings if m.aggregate == "once" else plan.user_ratings, "items": plan.items,
     "verdicts": plan.verdicts, "embeddings": plan.embeddings, "nuggets": plan.nuggets,
     "overlap": plan.overlap}[m.rows].add(out)
    if m.rows == "items":
        plan.item_columns.update(c.name for c in body.find_all(exp.Column))
        plan.item_cutoffs.append(call.values.get("k"))
    reads_ideal = any(c.name == "ideal_gain" for c in body.find_all(exp.Column))
    if reads_ideal:
        plan.greedy_alphas.add(call.values["alpha"])
    if m.rows == "subtopics":
        depth = call.values.get("k")
        if depth is None and reads_ideal:
            depth = _rank_biased_depth(call)
        if depth is not None:
            plan.subtopic_depth = max(plan.subtopic_depth, depth)


# A greedy ideal ranking without a cutoff (nNRBP's: every judged document, weighed by beta^(rank - 1)) is followed
# down until what is left changes the measure by less than GREEDY_TAIL of its value. The gains g_r down a greedy
# ranking never rise (a document's gain only falls as others are placed), so past depth D the rest is at most
# g_(D+1) beta^D / (1 - beta) and the first D positions sum to at least g_(D+1) (1 - beta^D) / (1 - beta): the
# measure moves by at most beta^D / (1 - beta^D). Each position is two CTEs: GREEDY_MAX_DEPTH bounds the statement.
GREEDY_TAIL = 1e-10
GREEDY_MAX_DEPTH = 150


def _rank_biased_depth(call: MeasureCall) -> int:
    depth = _depth_for(call.values["beta"])
    if depth > GREEDY_MAX_DEPTH:
        raise SqlmetricsError(
            f"measure {call.text!r}, parameter 'beta': {call.values['beta']} weighs the ideal ranking {depth} "
            f"positions deep (to within {GREEDY_TAIL:g} of the value), and sqlmetrics follows the greedy ideal ranking "
            f"to {GREEDY_MAX_DEPTH}; give a beta up to {_deepest_beta():.2f}.")
    return depth


def _depth_for(beta: float) -> int:
    """The first depth D where beta^D / (1 - beta^D) is under GREEDY_TAIL."""
    return max(1, math.ceil(math.log(GREEDY_TAIL / (1 + GREEDY_TAIL)) / math.log(beta)))


def _deepest_beta() -> float:
    """The largest beta (to 0.01) whose ideal ranking fits in GREEDY_MAX_DEPTH positions."""
    return max(b / 100 for b in range(1, 100) if _depth_for(b / 100) <= GREEDY_MAX_DEPTH)


def _plan_ranked(plan: Plan, call: MeasureCall, out: str, relevance_level: int, columns: _SharedColumns,
                 local_names: dict) -> None:
    """A measure over the ranked rows (or the position rows): its sections and body, their shared columns
    resolved at its relevance level."""
    m = call.measure
    level = call.values.get("rel", relevance_level)
    if "rel" in m.params and m.params["rel"].default != "relevance_level":
        level = relevance_level  # a gain threshold, not a relevance level: is_rel keeps the global one
    ideal_rnk = "ideal_rnk"
    if m.ideal_order:
        order = _bind_placeholders(_parse(m.ideal_order), call)
        if order != exp.column("relevance"):  # the shared ideal ranking sorts by relevance already
            ideal_rnk = local_names.setdefault("ORDER BY " + order.sql(READ), f"ideal_rnk_{len(local_names) + 1}")
            plan.ideal_orders[ideal_rnk] = order
    if m.ideal_running and not m.ideals or m.ideal_suffix and not m.ideal_running:  # a template bug
        raise RuntimeError(f"{m.path.name}: ideal_running sections need an ideal section, ideal_suffix ones an "
                           "ideal_running one")
    sections = _plan_sections(plan, call, level, ideal_rnk, columns, local_names)
    body = columns.resolve(_bind_placeholders(_parse(m.body), call), level, sections)
    plan.values.append((out, body, m.empty))
    plan.aggregates.append((out, m.aggregate))
    if m.rows == "positions":
        plan.positions.add(out)


def _plan_sections(plan: Plan, call: MeasureCall, level: int, ideal_rnk: str, columns: _SharedColumns,
                   local_names: dict) -> dict[str, str]:
    """A measure's window and ideal sections, each bound, resolved and added to the plan once per distinct SQL:
    {section name: its plan column}."""
    m = call.measure
    sections: dict[str, str] = {}
    for kind, defs in (("window", m.windows), ("ideal", m.ideals), ("ideal_running", m.ideal_running),
                       ("ideal_suffix", m.ideal_suffix)):
        for local, sql in defs.items():
            # A suffix reads the running values by their section names, a position window the windows above it.
            tree = columns.resolve(_bind_placeholders(_parse(sql), call), level,
                                   sections if kind == "ideal_suffix" or m.rows == "positions" else {})
            if kind in ("ideal", "ideal_running") and ideal_rnk != "ideal_rnk":
                tree = tree.transform(lambda n: exp.column(ideal_rnk) if n == exp.column("ideal_rnk") else n)
            # A running ideal value is ordered by its ranking, which its SQL does not show.
            rendered = tree.sql(READ) + (f" BY {ideal_rnk}" if kind.startswith("ideal_") else "")
            if m.rows == "positions":  # over the position rows, not the ranked ones: a column of its own
                rendered += " OVER POSITIONS"
            if rendered not in local_names:
                local_names[rendered] = f"{local}_{len(local_names) + 1}"
                bucket = plan.ideal_running.setdefault(ideal_rnk, {}) if kind == "ideal_running" else \
                    plan.ideal_suffix.setdefault(ideal_rnk, {}) if kind == "ideal_suffix" else \
                    plan.ideal if kind == "ideal" else \
                    plan.position_row if m.rows == "positions" else plan.row
                bucket[local_names[rendered]] = tree
            sections[local] = local_names[rendered]
    return sections
