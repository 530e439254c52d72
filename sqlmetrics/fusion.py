"""The fused run as ONE SQL statement: runs (Sources) + a fusion method (sql/fusion/) + a normalisation ->
a sqlglot tree selecting (query_id, doc_id, score), which local/ runs on DuckDB and dialects/ generates for
other engines. CTEs, each only when the method or the normalisation reads one of its columns:

    fusion_input    every run's rows, with the run's index (and weight)          UNION ALL
    fusion_lists    + the list columns (rank, length, min, max, ...): windows over one run's list
    fusion_scores   the normalised score (sql/fusion/_shared.sql `norm`)
    fusion_docs     + the document columns (the score's position among the document's rows)
    fusion_queries  the query columns (candidates, rows), one row per query
    then one GROUP BY (query_id, doc_id) whose score is the method's aggregate expression.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import replace

from .catalogue import PARAM_TYPES
from .catalogue.fusion import DEFAULT_NORM, FusionMethod, fusion_columns, fusion_method, normalisation
from .deferred import exp, sqlglot
from .errors import SqlmetricsError
from .statement import READ, _in_fixed_order

_INPUT_ROLES = {"run_index": "INT", "query_id": "VARCHAR", "doc_id": "VARCHAR", "score": "DOUBLE"}


def fusion_settings(method, norm=DEFAULT_NORM, params: dict | None = None, n_runs: int = 0) -> tuple:
    """(FusionMethod, normalisation name, {param: value}) checked: an unknown name gets a did-you-mean, a
    missing or bad parameter names itself and what it takes."""
    m = fusion_method(method)
    norm = normalisation(norm)
    params = dict(params or {})
    for name in params:
        if name not in m.params:
            close = difflib.get_close_matches(name, list(m.params), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            takes = f"its parameters: {', '.join(m.params)}" if m.params else "it takes no parameter"
            raise SqlmetricsError(f"{m.name} has no parameter {name!r}.{hint} ({takes}.)")
    if n_runs < 2:
        raise SqlmetricsError(f"fusion combines two or more runs; {n_runs} given.")
    values = {}
    for p in m.params.values():
        if p.name not in params:
            if p.required:
                example = "weights=[0.3, 0.7]" if p.type == "weights" else f"{p.name}=..."
                raise SqlmetricsError(f"{m.name} needs the parameter {p.name!r} (e.g. {example}).")
            values[p.name] = p.default
            continue
        values[p.name] = _checked(m, p, params[p.name], n_runs)
    return m, norm, values


def _checked(m: FusionMethod, p, value, n_runs: int):
    def number(v):
        return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)

    if p.type == "weights":
        if not isinstance(value, (list, tuple)) or not all(number(w) for w in value):
            raise SqlmetricsError(f"{m.name}: weights= takes one number per run, e.g. [0.3, 0.7]; got {value!r}.")
        if len(value) != n_runs:
            raise SqlmetricsError(f"{m.name}: {len(value)} weights for {n_runs} runs; give one weight per run, "
                                  "in the runs' order.")
        return [float(w) for w in value]
    ok = number(value) and {"number": lambda v: v > 0, "fraction": lambda v: 0 <= v <= 1,
                            "prob": lambda v: 0 < v < 1, "cutoff": lambda v: v >= 1 and float(v).is_integer(),
                            "real": lambda v: True}[p.type](value)
    if not ok:
        raise SqlmetricsError(f"{m.name}: {p.name}={value!r} is not {PARAM_TYPES[p.type]}.")
    return value


def _names(tree: exp.Expression) -> set:
    return {c.name for c in tree.find_all(exp.Column)}


def _parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=READ)


def _over(sql: str, partition: list) -> exp.Expression:
    """A `list` or `doc` column: a window (its own ORDER BY kept) or an aggregate, over the partition."""
    tree = _parse(sql)
    keys = [exp.column(k) for k in partition]
    if isinstance(tree, exp.Window):
        tree.set("partition_by", keys)
        return tree
    return exp.Window(this=tree, partition_by=keys)


def _select(items: list, source: str) -> exp.Select:
    return exp.select(*items).from_(source)


def fusion_statement(runs: list, method: FusionMethod, norm: str, values: dict, fixed_order: bool = False) -> exp.Select:
    """SELECT query_id, doc_id, score: the runs fused (runs: Sources with query_id, doc_id, score roles)."""
    runs = [run.bound() for run in runs]
    scopes = fusion_columns()
    body = _parse(method.body).transform(lambda n: exp.convert(values[n.name]) if isinstance(n, exp.Placeholder) else n)
    body = body.transform(lambda n: exp.Literal.number(len(runs)) if isinstance(n, exp.Column) and n.name == "runs" else n)
    # A method of ranks alone (RRF, ISR, Borda, ...) reads no score: the normalisation would change nothing.
    norm_tree = _parse(scopes["norm"][norm]) if "score" in _names(body) else exp.column("score")
    read_by_body, read_by_norm = _names(body), _names(norm_tree)
    lists = [n for n in scopes["list"] if n in read_by_body | read_by_norm]
    docs = [n for n in scopes["doc"] if n in read_by_body]
    queries = [n for n in scopes["query"] if n in read_by_body]
    weighted = "weights" in values
    carried = ["run_index", "query_id", "doc_id", *(["weight"] if weighted else [])]

    parts = []
    for i, source in enumerate(runs):
        constants = {**source.constants, "run_index": i, **({"weight": values["weights"][i]} if weighted else {})}
        roles = {**_INPUT_ROLES, **({"weight": "DOUBLE"} if weighted else {})}
        parts.append(replace(source, constants=constants).select(roles))
    ctes = [("fusion_input", parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False))]
    last = "fusion_input"
    if lists:
        windows = [exp.alias_(_over(scopes["list"][n], ["run_index", "query_id"]), n) for n in lists]
        ctes.append(("fusion_lists", _select([exp.Star(), *windows], last)))
        last = "fusion_lists"
    keep = [n for n in lists if n in read_by_body]
    ctes.append(("fusion_scores", _select([*carried, *keep, exp.alias_(norm_tree, "score")], last)))
    last = "fusion_scores"
    if docs:
        windows = [exp.alias_(_over(scopes["doc"][n], ["query_id", "doc_id"]), n) for n in docs]
        ctes.append(("fusion_docs", _select([exp.Star(), *windows], last)))
        last = "fusion_docs"
    if fixed_order:  # sums in the runs' order: the same bits every time (statement/trees.py, _in_fixed_order)
        body = _in_fixed_order(body, [exp.Ordered(this=exp.column("run_index"), nulls_first=False)])
    # Aliased: `SELECT r.query_id` names its column `r.query_id` on ClickHouse.
    final = exp.select(exp.alias_(exp.column("query_id", "r"), "query_id"), exp.alias_(exp.column("doc_id", "r"), "doc_id"),
                       exp.alias_(exp.cast(body, "DOUBLE"), "score")).from_(exp.to_table(last).as_("r"))
    group = [exp.column("query_id", "r"), exp.column("doc_id", "r")]
    if queries:
        aggregates = [exp.alias_(_parse(scopes["query"][n]), n) for n in queries]
        ctes.append(("fusion_queries", exp.select("query_id", *aggregates).from_("fusion_input").group_by("query_id")))
        final = final.join(exp.to_table("fusion_queries").as_("q"),
                           on=exp.column("query_id", "r").eq(exp.column("query_id", "q")))
        group += [exp.column(n, "q") for n in queries]
    final = final.group_by(*group)
    for name, query in ctes:
        final = final.with_(name, as_=query, copy=False)  # built here: no copy (each would copy the whole tree)
    return final
