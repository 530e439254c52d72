"""The nugget inputs (nuggets=, assignments=), loaded and checked; each run's name in the assignments; and, with no
qrels and runs, the stand-ins that make the nuggets' topics the lists of every run the assignments name."""
from __future__ import annotations

from pathlib import Path

from ..catalogue.templates import ASSIGNMENTS, IMPORTANCES
from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import NUGGET_ROLES
from ..statement import Nuggets
from .checks import empty
from .readers import Loaded, load
from .readers.loaded import _fresh, _numbered
from .runs import run_name
from .sources import _source


MAX_WEIGHT = 1e300  # a topic's weights summed stay finite


def load_nuggets(con, o, qrels_columns: dict, inputs: list) -> tuple[Loaded, Loaded]:
    """nuggets= and assignments=, checked: the topic found as the qrels' query is (columns=, a known name), the other
    columns by name or columns=."""
    if o.nuggets is None or o.assignments is None:
        raise SqlmetricsError(f"{'assignments=' if o.assignments is None else 'nuggets='} is missing: the nugget "
                              "measures read both nuggets= (the topics' nuggets) and assignments= (the runs' support "
                              "of them).")
    query = {"query_id": qrels_columns["query_id"]} if "query_id" in qrels_columns else {}
    mapped = {**{r: c for r, c in (o.columns or {}).items() if r in NUGGET_ROLES}, **query}
    n = load(con, o.nuggets, "nuggets", mapped)
    inputs.append(n)
    a = load(con, o.assignments, "assignments", mapped)
    inputs.append(a)
    _check_nuggets(con, n)
    _check_assignments(con, a, n)
    return n, a


def _first(con, loaded: Loaded, condition: str, shown: str):
    """(line, shown value) of the first row where `condition` holds, or None."""
    found = con.execute(f"SELECT line_no, {shown} FROM {loaded.numbered} WHERE {condition} ORDER BY line_no LIMIT 1"
                        ).fetchall()
    return found[0] if found else None


def _refuse_empty(con, loaded: Loaded, roles: tuple) -> None:
    for role in roles:
        found = _first(con, loaded, empty(_q(loaded.columns[role])), "NULL")
        if found:
            raise SqlmetricsError(f"{loaded.at(found[0])}: the {role} (column {loaded.columns[role]!r}) is empty. "
                                  "Every row needs one: fill it in or drop the row.")


def _refuse_label(con, loaded: Loaded, role: str, allowed: tuple) -> None:
    col = _q(loaded.columns[role])
    found = _first(con, loaded, f"{col} IS NULL OR CAST({col} AS VARCHAR) NOT IN ({', '.join(map(_lit, allowed))})",
                   f"CAST({col} AS VARCHAR)")
    if found:
        raise SqlmetricsError(f"{loaded.at(found[0])}: the {role} (column {loaded.columns[role]!r}) is "
                              f"{found[1]!r}; it is one of {', '.join(map(repr, allowed))}, written so (lower case, "
                              "no spaces). Fix the row.")


def _refuse_repeats(con, loaded: Loaded, roles: tuple, what: str) -> None:
    """Two rows with the same values of `roles`: both named."""
    key = ", ".join(f"CAST({_q(loaded.columns[r])} AS VARCHAR)" for r in roles)
    found = con.execute(f"SELECT line_no, first_no, {key} FROM (SELECT line_no, MIN(line_no) OVER (PARTITION BY {key}) "
                        f"AS first_no, * FROM {loaded.numbered}) WHERE line_no > first_no ORDER BY line_no LIMIT 1"
                        ).fetchall()
    if found:
        line, first, *values = found[0]
        named = ", ".join(f"{r} {v!r}" for r, v in zip(roles, values))
        raise SqlmetricsError(f"{loaded.label}, {loaded.lines(first, line)}: {what} twice ({named}). Keep one row.")


def _check_nuggets(con, n: Loaded) -> None:
    """Every nugget has a topic, an id unique in its topic, an importance, and a positive weight when weighted."""
    _refuse_empty(con, n, ("query_id", "nugget"))
    _refuse_label(con, n, "importance", IMPORTANCES)
    if "weight" in n.columns:
        w = f"TRY_CAST({_q(n.columns['weight'])} AS DOUBLE)"
        found = _first(con, n, f"{w} IS NULL OR NOT isfinite({w}) OR {w} <= 0 OR {w} > {MAX_WEIGHT!r}",
                       f"CAST({_q(n.columns['weight'])} AS VARCHAR)")
        if found:
            shown = n.missing_as.get(n.columns["weight"], "None") if found[1] is None else repr(found[1])
            raise SqlmetricsError(f"{n.at(found[0])}: the weight (column {n.columns['weight']!r}) is {shown}; a "
                                  "nugget's weight is a positive number up to 1e300 (their sum stays finite). Fix the row, or drop the column to "
                                  "weigh vital nuggets 1 and okay ones 0.5.")
    _refuse_repeats(con, n, ("query_id", "nugget"), "the same nugget of a topic")


def _check_assignments(con, a: Loaded, n: Loaded) -> None:
    """One known label per (topic, run, nugget), for a nugget of the nuggets table."""
    _refuse_empty(con, a, ("query_id", "run", "nugget"))
    _refuse_label(con, a, "assignment", ASSIGNMENTS)
    _refuse_repeats(con, a, ("query_id", "run", "nugget"), "one run's answer is assigned the same nugget")
    topic, nugget = (f"CAST({_q(a.columns[r])} AS VARCHAR)" for r in ("query_id", "nugget"))
    topics = f"SELECT CAST({_q(n.columns['query_id'])} AS VARCHAR) FROM {n.view}"
    found = _first(con, a, f"{topic} NOT IN ({topics})", topic)
    if found:
        raise SqlmetricsError(f"{a.at(found[0])}: topic {found[1]!r} has no nuggets in {n.label}; a topic without "
                              "nuggets cannot be scored. Add its nuggets, or drop its assignments.")
    pairs = f"SELECT CAST({_q(n.columns['query_id'])} AS VARCHAR), CAST({_q(n.columns['nugget'])} AS VARCHAR) " \
            f"FROM {n.view}"
    found = _first(con, a, f"({topic}, {nugget}) NOT IN ({pairs})", f"{topic} || ' / ' || {nugget}")
    if found:
        raise SqlmetricsError(f"{a.at(found[0])}: nugget {found[1]!r} (topic / nugget) is not in {n.label}. Assign "
                              "only the topic's nuggets: fix the nugget id, or add the nugget.")


def warn_without_nuggets(con, q: Loaded | None, n: Loaded) -> None:
    """The judged queries the nuggets table has no topic for: their nugget values are empty (NULL), left out of the
    mean; say so, as a run's missing queries are."""
    if q is None:
        return
    judged = f"SELECT DISTINCT CAST({_q(q.columns['query_id'])} AS VARCHAR) AS id FROM {q.view}"
    topics = f"SELECT CAST({_q(n.columns['query_id'])} AS VARCHAR) FROM {n.view}"
    missing = [r[0] for r in con.execute(f"SELECT id FROM ({judged}) WHERE id NOT IN ({topics}) ORDER BY id").fetchall()]
    if missing:
        warn(f"{n.label} has no nuggets for {len(missing)} judged quer{'y' if len(missing) == 1 else 'ies'} "
             f"({', '.join(map(repr, missing[:5]))}{', ...' if len(missing) > 5 else ''}): their nugget measures are "
             "empty (NULL), left out of the mean. Ids are compared exactly, case included.")


def assigned_runs(con, a: Loaded) -> list:
    """The run names the assignments hold, in order."""
    col = _q(a.columns["run"])
    return [r[0] for r in con.execute(f"SELECT DISTINCT CAST({col} AS VARCHAR) AS r FROM {a.view} ORDER BY r").fetchall()]


def runs_assigned(con, a: Loaded, runs: list, given) -> list:
    """Each run's name in the assignments: a named run's name (a dict's key, a run_name value); one unnamed run's, its
    file's stem, or, not a file, the assignments' only run. A run the assignments do not name is an error (a typo in a
    name would otherwise score 0)."""
    names = assigned_runs(con, a)
    out = []
    for name, _ in runs:
        if name is None and not isinstance(given, (str, Path)):
            if len(names) != 1:
                raise SqlmetricsError(f"{a.label} names {len(names)} runs ({', '.join(map(repr, names[:5]))}): name the "
                                      "run evaluated as they do, e.g. run={name: run}.")
            name = names[0]
        name = str(name) if name is not None else run_name(given, 0)
        if name not in names:
            raise SqlmetricsError(f"{a.label} has no rows of run {name!r} (its runs: {', '.join(map(repr, names[:8]))}"
                                  f"{', ...' if len(names) > 8 else ''}). Name the run as the assignments do (a dict's "
                                  "key; --name on the command line), or fix their run column.")
        out.append(name)
    return out


def nugget_source(n: Loaded, a: Loaded) -> Nuggets:
    """The statement's nugget inputs, before a run's name is given (Nuggets.run)."""
    roles = ("query_id", "nugget", "importance", *(["weight"] if "weight" in n.columns else []))
    assignments = {"query_id": a.columns["query_id"], "run_name": a.columns["run"], "nugget": a.columns["nugget"],
                   "assignment": a.columns["assignment"]}
    return Nuggets(_source(n.view, {r: n.columns[r] for r in roles}), _source(a.view, assignments))


def stand_ins(con, n: Loaded, a: Loaded) -> tuple[Loaded, list]:
    """With no qrels and runs: qrels judging each topic's nuggets, and for each run the assignments name a run listing
    them (ranked by nugget id), so that every topic of the nuggets is a list of every run."""
    topic, nugget = _q(n.columns["query_id"]), _q(n.columns["nugget"])
    qrels, run = _fresh("nugget_qrels"), _fresh("nugget_run")
    con.execute(f"CREATE TEMP VIEW {qrels} AS SELECT CAST({topic} AS VARCHAR) AS query_id, CAST({nugget} AS VARCHAR) "
                f"AS doc_id, 1 AS relevance FROM {n.view}")
    con.execute(f"CREATE TEMP VIEW {run} AS SELECT query_id, doc_id, -ROW_NUMBER() OVER (PARTITION BY query_id "
                f"ORDER BY doc_id) AS score FROM {qrels}")
    roles = {"query_id": "query_id", "doc_id": "doc_id"}
    q = Loaded(qrels, {**roles, "relevance": "relevance"}, f"the topics of {n.label}", "row", _numbered(qrels, 0))
    names = assigned_runs(con, a)
    if not names:
        raise SqlmetricsError(f"{a.label}: has no rows, so no run to score. Give each run's assignments.")
    runs = [(name, Loaded(run, {**roles, "score": "score"}, f"run {name!r} (the topics of {n.label})", "row",
                          _numbered(run, 0))) for name in names]
    return q, runs
