"""The runs: loaded (one, {name: run}, or a table whose run_name column holds several), checked, de-duplicated by
the duplicates= policy, and what the caller should know about them warned of."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import Settings
from . import checks
from .databases import DATABASE_FILES
from .job import _Job
from .logs import _log_view
from .readers import Loaded, load
from .readers.loaded import _fresh, _numbered


def _is_run_dict(run) -> bool:
    """{run_name: run} rather than one ranx-style {query_id: {doc_id: score}} dict."""
    if not isinstance(run, dict) or not run:
        return False
    values = list(run.values())
    if all(isinstance(v, dict) for v in values):
        # A ranx run maps documents to numbers; a dict of runs maps queries to dicts one level deeper. An empty
        # list says neither: the others decide, and {"q1": {}} is one run whose list for q1 is empty.
        inner = [x for v in values for x in v.values()]
        return bool(inner) and all(isinstance(x, dict) for x in inner)
    return True


def _named_ranx(run):
    """A ranx Run that has a name is that named run, {name: run}: its results are labelled with the name."""
    if type(run).__module__.startswith("ranx") and isinstance(getattr(run, "name", None), str):
        return {run.name: run}
    return run


def _load_runs(con, run, columns: dict, inputs: list, glob: bool, step) -> list:
    """[(name or None, Loaded)]: one run, {name: run}, or a run table whose run_name column (mapped in
    columns=) holds several runs, split into one relation per name."""
    multi = _is_run_dict(run)
    items = list(run.items()) if multi else [(None, run)]
    if multi and not items:
        raise SqlmetricsError("run: the dict of runs is empty.")
    texts: dict = {}
    for name, _ in items:  # names become text in the results: 1 and '1' would be one run's column twice
        if str(name) in texts:
            raise SqlmetricsError(f"run: the runs {texts[str(name)]!r} and {name!r} are both named {str(name)!r} in "
                                  "the results; give them names that differ as text.")
        texts[str(name)] = name
    loaded = []
    for name, item in items:
        step("reading run" if name is None else f"reading run {str(name)!r}")
        loaded.append((name, load(con, item, "run", columns, None if name is None else str(name), glob=glob)))
        inputs.append(loaded[-1][1])  # for the caller to clean up after, whatever fails later
    if "run_name" not in columns:
        return loaded
    if multi:
        raise SqlmetricsError("columns= maps run_name, and the runs are a dict of runs too: name the runs one way "
                              "(a run_name column in one table, or {name: run}).")
    whole = loaded[0][1]
    if "run_name" not in whole.columns:  # TREC text: fixed columns, its tag not read as a role
        raise SqlmetricsError(f"{whole.label}: columns= maps run_name to {columns['run_name']!r}, which this input "
                              "does not have as a column: TREC text has fixed columns and holds one run per file. "
                              "Pass each run's file ({name: file}), or a CSV, Parquet or table with a run name "
                              "column.")
    col = _q(whole.columns["run_name"])
    nulls = con.execute(f"SELECT MIN(line_no) FROM {whole.numbered} WHERE {checks.empty(col)}"
                        ).fetchall()[0][0]
    if nulls is not None:
        raise SqlmetricsError(f"{whole.at(nulls)}: the run name column "
                              f"{whole.columns['run_name']!r} is empty there. Every row needs its run's name.")
    names = [r[0] for r in con.execute(f"SELECT DISTINCT CAST({col} AS VARCHAR) AS n FROM {whole.view} "
                                       "ORDER BY n").fetchall()]
    out = []
    roles = {r: c for r, c in whole.columns.items() if r != "run_name"}
    for name in names:
        where = f"CAST({col} AS VARCHAR) = {_lit(name)}"
        view = _fresh("named")
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {whole.view} WHERE {where}")
        numbered = f"(SELECT * FROM {whole.numbered} WHERE {where})"
        out.append((name, dataclasses.replace(whole, view=view, columns=roles, label=f"run {name!r} of {whole.label}",
                                              numbered=numbered)))
    return out


def _check_runs(con, runs: list, job: _Job, o: Settings, step) -> list:
    """[(name, Loaded, log view or None)]: each run checked, de-duplicated by the policy, and in log mode
    seen as a view keyed by its segments."""
    checked = []
    float32 = o.score_precision == "float32"
    for name, loaded in runs:
        step("checking run" if name is None else f"checking run {str(name)!r}")
        if job.order_role not in loaded.columns:
            raise SqlmetricsError(
                f"{loaded.label}: ties='rank' orders by a rank or position column, and it has none."
                if o.ties == "rank" else
                f"{loaded.label}: has no score column; map one, or pass ties='rank' to order by rank.")
        if job.log_mode:
            # Repeats are per list (segment + query), checked in _log_view; the rest of the checks here.
            step.rows += checks.check(con, loaded, "run", "max", job.order_role, float32, empty_run=o.empty_run)
            view = _log_view(con, loaded, job.segments, o.label, o.relevance, job.order_role, o.duplicates)
            checked.append((name, loaded, view))
        else:
            step.rows += checks.check(con, loaded, "run", o.duplicates, job.order_role, float32,
                                      empty_run=o.empty_run)
            checked.append((name, _dedup(con, loaded, o.duplicates), None))
    return checked


def _dedup(con, loaded: Loaded, policy: str) -> Loaded:
    if policy == "error":
        return loaded
    c = loaded.columns
    q, d = _q(c["query_id"]), _q(c["doc_id"])
    view = _fresh("dedup")
    if policy == "max":
        aggs = [f"MAX({_q(c['score'])}) AS {_q(c['score'])}"] if "score" in c else []
        aggs += [f"MIN({_q(c['rank_position'])}) AS {_q(c['rank_position'])}"] if "rank_position" in c else []
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT {q}, {d}, {', '.join(aggs)} FROM {loaded.view} GROUP BY {q}, {d}")
    else:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {loaded.numbered} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {q}, {d} ORDER BY line_no) = 1")
    return Loaded(view, {r: c[r] for r in c}, loaded.label, loaded.row_word, _numbered(view, 0))


def _warn(con, q: Loaded | None, checked: list, job: _Job, o: Settings) -> None:
    """What the caller should know about the data: missing queries, renumbered positions, unlabelled lists,
    grades above a measure's largest grade."""
    if q is not None:
        _warn_missing(con, q, [(n, lr) for n, lr, _ in checked], "intersection" if job.segments else o.queries)
        _warn_grades_above(con, q, job.calls)
    seg_cols = [f"seg_{i}" for i in range(1, len(job.segments) + 1)]
    if o.ties == "rank":
        _check_positions(con, checked, seg_cols)
    if job.labels:
        _warn_unlabelled(con, checked, seg_cols)


def _warn_missing(con, qrels: Loaded, runs: list, queries: str) -> None:
    q_col = _q(qrels.columns["query_id"])
    judged = f"SELECT DISTINCT CAST({q_col} AS VARCHAR) AS q FROM {qrels.view}"
    for name, loaded in runs:
        r_col = _q(loaded.columns["query_id"])
        ranked = f"SELECT DISTINCT CAST({r_col} AS VARCHAR) AS q FROM {loaded.view}"
        label = loaded.label
        # One pass over each side: the queries on one side only.
        unmatched = con.execute(f"SELECT j.q, r.q FROM ({judged}) AS j FULL OUTER JOIN ({ranked}) AS r ON j.q = r.q "
                                "WHERE j.q IS NULL OR r.q IS NULL").fetchall()
        missing = sorted(j for j, r in unmatched if r is None)
        extra = sorted(r for j, r in unmatched if j is None)
        if missing and queries == "qrels":
            warn(f"{label} has no ranking for {len(missing)} qrels "
                          f"quer{'y' if len(missing) == 1 else 'ies'} ({_few(missing)}); they score 0 "
                          "(queries='intersection' averages only the queries in both).")
        if missing and queries == "intersection" and \
                len(missing) == con.execute(f"SELECT COUNT(*) FROM ({judged})").fetchall()[0][0]:
            warn(f"{label} ranks no judged query: with queries='intersection' there is nothing to average, "
                          "and every measure is empty (NULL).")
        if extra:
            warn(f"{label} ranks {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments "
                          f"({_few(extra)}); they are not averaged.")


def _warn_grades_above(con, q: Loaded, calls: list) -> None:
    """A measure whose largest grade is a number (ERR's gmax = 4) counts any grade above it as that number."""
    capped = [(c, p.name, c.values[p.name]) for c in calls for p in c.measure.params.values()
              if p.type == "grade" and isinstance(c.values[p.name], (int, float))]
    if not capped:
        return
    top = con.execute(f"SELECT MAX(TRY_CAST({_q(q.columns['relevance'])} AS DOUBLE)) FROM {q.view}").fetchall()[0][0]
    def shown(v):
        return int(v) if float(v).is_integer() else v
    for call, name, value in capped:
        if top is not None and top > value:
            warn(f"{call.text}: the qrels hold grades up to {shown(top)}, above {name}={shown(value)}; they "
                          f"count as {shown(value)}. {call.measure.name}({name}='max') takes the qrels' largest grade.")


def _few(ids: list) -> str:
    return ", ".join(map(repr, ids[:5])) + (", ..." if len(ids) > 5 else "")


def _check_positions(con, loaded_runs: list, seg_cols: list) -> None:
    for _name, loaded, view in loaded_runs:
        if view is not None:
            _warn_positions(con, view, [*seg_cols, "query_id"], loaded.label)
        else:
            c = loaded.columns
            pos = _fresh("pos")
            con.execute(f"CREATE TEMP VIEW {pos} AS SELECT {_q(c['query_id'])} AS query_id, "
                        f"{_q(c['rank_position'])} AS rank_position FROM {loaded.view}")
            _warn_positions(con, pos, ["query_id"], loaded.label)


def _warn_positions(con, view: str, key: list, label: str) -> None:
    """ties='rank': lists whose positions are not exactly 1..n are renumbered; say how many, never silently."""
    k = ", ".join(key)
    # Positions may be text (a TREC rank field, CSV): compared as numbers, not as '10' < '9'. The checks
    # made sure each is a whole number that fits a BIGINT.
    view = f"(SELECT * REPLACE (CAST(rank_position AS BIGINT) AS rank_position) FROM {view})"
    row = con.execute(
        "SELECT COUNT(*), SUM(CASE WHEN repeated THEN 1 ELSE 0 END), SUM(CASE WHEN gap THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN repeated OR gap THEN 1 ELSE 0 END), SUM(CASE WHEN from_zero THEN 1 ELSE 0 END) FROM ("
        "SELECT COUNT(DISTINCT rank_position) < COUNT(*) AS repeated, "
        "MIN(rank_position) <> 1 OR MAX(rank_position) <> COUNT(DISTINCT rank_position) AS gap, "
        "COUNT(DISTINCT rank_position) = COUNT(*) AND MIN(rank_position) = 0 AND MAX(rank_position) = COUNT(*) - 1 "
        f"AS from_zero FROM {view} GROUP BY {k})").fetchall()[0]
    total, repeated, gaps, bad, from_zero = row[0], row[1] or 0, row[2] or 0, row[3] or 0, row[4] or 0
    if bad and bad == from_zero:  # the usual logging convention: said once, plainly
        warn(
            f"{label}: positions count from 0 in {'all ' if bad == total else ''}{bad} of {total} lists (0..n-1); "
            "ties='rank' ranks position 0 first, and cutoffs count ranks from 1 (P@10 reads positions 0..9).")
    elif bad:
        warn(
            f"{label}: {bad} of {total} lists have positions that are not 1..n ({gaps} with gaps or not starting "
            f"at 1, {repeated} with repeated positions); ties='rank' renumbers each list 1..n by position, then "
            "by document id descending (byte order), and cutoffs apply to the new numbers.")


def _warn_unlabelled(con, loaded_runs: list, seg_cols: list) -> None:
    for _name, loaded, view in loaded_runs:
        key = ", ".join([*seg_cols, "query_id"])
        n = con.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {view} GROUP BY {key} "
                        "HAVING COUNT(relevance) = 0)").fetchall()[0][0]
        if n:
            warn(f"{loaded.label}: {n} list{'s have' if n > 1 else ' has'} no labelled row (every "
                          "label NULL); not averaged, like a query without judgments.")


def run_name(obj, index: int) -> str:
    """A run's display name: the file stem for a path ('bm25.run.gz' -> 'bm25'), else run1, run2, ..."""
    if isinstance(obj, (str, Path)):
        text = str(obj)
        if text == "-":
            return "stdin"
        path, sep, table = text.rpartition(":")
        if sep and table and path.lower().endswith(DATABASE_FILES):
            return table
        name = Path(text).name
        for suffix in (".gz", ".zst", ".bz2"):
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
        for suffix in (".txt", ".run", ".trec", ".tsv", ".csv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json"):
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        stem = Path(name).stem
        return stem or name or text
    return f"run{index + 1}"


def unique_names(objs) -> list[str]:
    """Names for several runs: stems; where different files' stems collide, their whole file names; then paths;
    then #2, #3 (the same file given twice keeps its stem: runA, runA#2)."""
    objs = list(objs)
    names = [run_name(o, i) for i, o in enumerate(objs)]
    for fallback in (lambda o, i: Path(str(o)).name, lambda o, i: str(o)):
        files: dict = {}
        for o, n in zip(objs, names):
            files.setdefault(n, set()).add(str(o) if isinstance(o, (str, Path)) else id(o))
        clash = {n for n, of in files.items() if len(of) > 1}
        if not clash:
            break
        names = [fallback(o, i) if n in clash and isinstance(o, (str, Path)) else n
                 for i, (o, n) in enumerate(zip(objs, names))]
    seen: dict = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def named_runs(runs) -> dict:
    """{name: run}: a dict is one already; a list of runs, or one run, named by file stem (run1, run2, ... for
    tables), as compare() names them."""
    if isinstance(runs, dict):
        if not runs or not all(isinstance(k, str) for k in runs):
            raise SqlmetricsError("runs as a dict is {name: run}, with at least one run and names that are text; got "
                                  f"the names {sorted(map(repr, runs))[:3]!r}.")
        return dict(runs)
    runs = list(runs) if isinstance(runs, (list, tuple)) else [runs]
    if not runs:
        raise SqlmetricsError("runs is empty; give a run, a list of runs or {name: run}.")
    return dict(zip(unique_names(runs), runs))
