"""Evaluation on DuckDB, embedded: load the inputs into two relations, check them, run the one planned
statement, return Results. Each step is a function below; evaluate_local() composes them."""
from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import threading
import warnings
import weakref
from dataclasses import dataclass

import duckdb

from ..catalogue import parse_all
from ..catalogue.fusion import DEFAULT_NORM
from ..errors import SqlmetricsError, SqlmetricsWarning
from ..fusion import fusion_settings, fusion_statement
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import (FORMAT_GROUPS, GROUP_ROLES, ITEM_ROLES, QRELS_ROLES, RUN_ROLES, SUBTOPIC_ROLE, VERDICT_COLUMNS,
                       Settings)
from ..plan import output_columns, plan_measures
from ..relevance import relevance_expression
from ..results import Results
from sqlglot import exp

from ..statement import READ, Embeddings, Shape, Source, aggregate_sql, build_statement, check_subtopics
from . import checks
from .output import process_folder
from .readers import Loaded, _first_line, _fresh, _numbered, _types, damaged, load


def fetch_arrow(con, query: str, names: list):
    return con.sql(query).to_arrow_table().rename_columns(names)


def python_rows(con, query: str, names: list) -> tuple:
    """For evaluate_local(fetch=python_rows): per_query and per_group as (column names, list of row tuples)
    instead of Arrow tables. The command line prints these, and never imports pyarrow (~0.15 s)."""
    return names, con.execute(query).fetchall()


class _Background(threading.Thread):
    """fn(*args) on a thread; result() waits for it and raises what it raised."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self._fn, self._args, self._value, self._error = fn, args, None, None
        self.start()

    def run(self):
        try:
            self._value = self._fn(*self._args)
        except BaseException as e:  # handed to the caller by result()
            self._error = e

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


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
            warnings.warn(f"{label} has no ranking for {len(missing)} qrels "
                          f"quer{'y' if len(missing) == 1 else 'ies'} ({_few(missing)}); they score 0 "
                          "(queries='intersection' averages only the queries in both).", SqlmetricsWarning, stacklevel=5)
        if missing and queries == "intersection" and \
                len(missing) == con.execute(f"SELECT COUNT(*) FROM ({judged})").fetchall()[0][0]:
            warnings.warn(f"{label} ranks no judged query: with queries='intersection' there is nothing to average, "
                          "and every measure is empty (NULL).", SqlmetricsWarning, stacklevel=5)
        if extra:
            warnings.warn(f"{label} ranks {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments "
                          f"({_few(extra)}); they are not averaged.", SqlmetricsWarning, stacklevel=5)


def _few(ids: list) -> str:
    return ", ".join(map(repr, ids[:5])) + (", ..." if len(ids) > 5 else "")


_SHARED: list = []  # the process's in-memory DuckDB database, opened by the first evaluation that needs it
_SHARED_LOCK = threading.Lock()
_LIVE: weakref.WeakSet = weakref.WeakSet()  # the connections connect() gave, for interrupt_queries()
_SPILLS = itertools.count()
# DuckDB's defaults that are not ours to keep: it would download and load extensions on first use.
_NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def connect(memory_limit=None, threads=None, temp_directory=None):
    """A DuckDB connection for one evaluation. Without resource options, a cursor on the process's
    in-memory database: opening a database costs ~30 ms, a cursor nothing, and the temporary tables and
    views of an evaluation belong to its cursor and go with it. With memory_limit (e.g. "2GB"), threads
    or temp_directory, a database of its own, which spills to temp_directory past the limit.

    An in-memory database spills to ./.tmp by default, in whatever folder the caller happens to be in.
    Here it spills to temp_directory or, without one, to a folder of its own inside this process's
    temporary folder (output.process_folder, removed at exit). No extension is ever installed or loaded."""
    resources = {}
    for name, value in (("memory_limit", memory_limit), ("threads", threads), ("temp_directory", temp_directory)):
        if value is not None:
            resources[name] = str(value) if name != "threads" else value
    if not resources:
        with _SHARED_LOCK:
            if not _SHARED:
                _SHARED.append(duckdb.connect(config={**_NO_EXTENSIONS, "temp_directory": _spill_folder()}))
            con = _SHARED[0].cursor()
    else:
        if "temp_directory" not in resources:
            resources["temp_directory"] = _spill_folder()
        try:
            con = duckdb.connect(config={**_NO_EXTENSIONS, **resources})
        except (duckdb.Error, TypeError, ValueError) as e:
            raise SqlmetricsError(f"memory_limit/threads/temp_directory: {_first_line(e)} "
                                  "(e.g. memory_limit='2GB', threads=2, temp_directory='/tmp/spill').") from None
    _LIVE.add(con)
    return con


def _spill_folder() -> str:
    # One per database: DuckDB makes it when it first spills and removes it when the database closes; two
    # databases never share one. Its parent, the process's folder, exists (DuckDB would not make it).
    return os.path.join(process_folder(), f"spill-{next(_SPILLS)}")


def interrupt_queries() -> None:
    """Interrupt what DuckDB runs for this process's evaluations (the command line's SIGINT and SIGTERM):
    its worker threads stop now instead of finishing their tasks. An idle connection is unaffected."""
    for con in list(_LIVE):
        try:
            con.interrupt()
        except duckdb.Error:  # closed meanwhile
            pass


class GeneratedSQLError(RuntimeError):
    """DuckDB rejected the statement sqlmetrics generated from checked inputs: a bug of ours. The message
    is one line; the statement is on .sql (the command line prints it with --debug)."""

    def __init__(self, message: str, sql: str):
        super().__init__(message)
        self.sql = sql


def _resource_error(e: BaseException, con, o: Settings) -> BaseException | None:
    """DuckDB out of memory, out of room to spill, or interrupted: the error to raise instead (one line
    naming the option that helps), or None when `e` is none of these."""
    text = str(e)
    if isinstance(e, duckdb.InterruptException) or (type(e) is RuntimeError and text == "Query interrupted"):
        return KeyboardInterrupt()  # DuckDB's answer to Ctrl-C during a query
    disk_full = "max_temp_directory_size" in text or "failed to offload" in text or "No space left" in text
    if disk_full and isinstance(e, (duckdb.OutOfMemoryException, duckdb.IOException)):
        return SqlmetricsError(
            f"DuckDB ran out of disk space while spilling to temp_directory={_temp_directory(con, o)!r} "
            f"({_first_line(e).rstrip('.')}). Free space there, or set temp_directory= to a folder on a disk "
            "with room.")
    if isinstance(e, duckdb.OutOfMemoryException):
        limit = f"memory_limit={o.memory_limit!r}" if o.memory_limit is not None else \
            "memory_limit= is DuckDB's default, 80% of RAM"
        return SqlmetricsError(
            f"DuckDB ran out of memory ({limit}; {_first_line(e).rstrip('.')}). Raise memory_limit= (e.g. "
            "memory_limit='8GB'), use fewer threads=, or set temp_directory= to a folder on a disk with room: "
            "past the limit DuckDB spills there.")
    return None


def _temp_directory(con, o: Settings) -> str:
    if o.temp_directory is not None:
        return str(o.temp_directory)
    try:
        return con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    except duckdb.Error:
        return "DuckDB's temporary folder"


def _present(con, view: str) -> list:
    return [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]


def _resolve_column(name: str, present: list, label: str, what: str) -> str:
    if name in present:
        return name
    folded = [c for c in present if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise SqlmetricsError(f"{label}: {what} {name!r} is not a column (columns: {', '.join(present)}).")


def _log_view(con, loaded: Loaded, segs: tuple, label, relevance, order_role: str, duplicates: str) -> str:
    """A view of one run in log mode: seg_1.., query_id, doc_id, the order column and (labels) relevance;
    checked for repeats by the whole list key, and de-duplicated by it when a policy is given."""
    present = _present(con, loaded.view)
    c = loaded.columns
    items = [f"{_q(_resolve_column(g, present, loaded.label, 'group_by'))} AS seg_{i}"
             for i, g in enumerate(segs, 1)]
    items += [f"{_q(c[r])} AS {r}" for r in ("query_id", "doc_id", order_role)]
    if label is not None:
        col = _q(_resolve_column(label, present, loaded.label, "label"))
        number = f"TRY_CAST({col} AS DOUBLE)"
        bad = con.execute(f"SELECT MIN(line_no), COUNT(*) FROM {loaded.numbered} WHERE {col} IS NOT NULL AND "
                          f"({number} IS NULL OR NOT isfinite({number}) OR contains(CAST({col} AS VARCHAR), '_'))"
                          ).fetchall()[0]
        if bad[1]:
            raise SqlmetricsError(f"{loaded.at(bad[0])}: the label column {label!r} is not a "
                                  f"finite number there ({bad[1]} such {'row' if bad[1] == 1 else 'rows'}). Labels are grades; "
                                  "NULL means unjudged.")
        items.append(f"CAST({col} AS DOUBLE) AS relevance")
    elif relevance is not None:
        items.append(f"{_relevance_sql(con, loaded, relevance, present)} AS relevance")
    key = [f"seg_{i}" for i in range(1, len(segs) + 1)] + ["query_id", "doc_id"]
    base = f"(SELECT line_no, {', '.join(items)} FROM {loaded.numbered})"
    view = _fresh("log")
    if duplicates == "error":
        dup = con.execute(f"SELECT {', '.join(f'CAST({k} AS VARCHAR)' for k in key)} FROM {base} GROUP BY "
                          f"{', '.join(key)} HAVING COUNT(*) > 1 LIMIT 1").fetchall()
        if dup:
            where = " and ".join(f"{g}={v!r}" for g, v in zip(segs, dup[0]))
            raise SqlmetricsError(
                f"{loaded.label}: document {dup[0][-1]!r} appears more than once in the list of query "
                f"{dup[0][-2]!r}{' (' + where + ')' if where else ''}. Remove the repeat, or pass "
                "duplicates='max' (keep the best-placed row) or 'first' (keep the first line).")
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base}")
    else:
        best = ("rank_position ASC NULLS LAST, " if order_role == "rank_position" else "score DESC NULLS LAST, ") \
            if duplicates == "max" else ""
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {base} "
                    f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {', '.join(key)} ORDER BY {best}line_no) = 1")
    return view


def _relevance_sql(con, loaded: Loaded, relevance, present: list) -> str:
    """relevance= over one log as DuckDB SQL, checked: it computes, and never gives NaN or infinity.

    Text columns (CSV and TSV are read as text, so that ids stay as written) are typed first: a column
    whose every value is a number is read as DOUBLE, one of true/false values as BOOLEAN."""
    tree, used = relevance_expression(relevance, present)
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {loaded.view})").fetchall())
    text = [c for c in used if types[c] == "VARCHAR"]
    if text:
        tests = [f"bool_and({_q(c)} IS NULL OR TRY_CAST({_q(c)} AS {t}) IS NOT NULL)" for c in text
                 for t in ("DOUBLE", "BOOLEAN")]
        typed = con.execute(f"SELECT {', '.join(tests)} FROM {loaded.view}").fetchall()[0]
        cast = {c: t for i, c in enumerate(text) for t, ok in zip(("DOUBLE", "BOOLEAN"), typed[2 * i:2 * i + 2])
                if ok and not (t == "BOOLEAN" and typed[2 * i])}
        tree = tree.transform(lambda node: exp.cast(node.copy(), cast[node.name])
                              if isinstance(node, exp.Column) and node.name in cast else node)
    expr = f"CAST(({tree.sql('duckdb')}) AS DOUBLE)"
    try:
        bad = con.execute(f"SELECT MIN(line_no) FILTER (WHERE NOT isfinite({expr})), COUNT(*) FILTER (WHERE NOT "
                          f"isfinite({expr})), COUNT(*) FILTER (WHERE {expr} IS NULL), COUNT(*) "
                          f"FROM {loaded.numbered}").fetchall()[0]
    except duckdb.Error as e:
        raise SqlmetricsError(f"relevance={relevance!r} cannot be computed over {loaded.label}: "
                              f"{_first_line(e)} (boolean columns: CAST(x AS INT), or a "
                              "{column: grade} mapping).") from None
    first, infinite, null, total = bad
    if infinite:
        value = con.execute(f"SELECT {expr} FROM {loaded.numbered} WHERE line_no = {first}").fetchall()[0][0]
        raise SqlmetricsError(
            f"{loaded.at(first)}: relevance={relevance!r} is {value} there ({infinite} such "
            f"{'row' if infinite == 1 else 'rows'}), not a grade: a division by zero? Guard it, e.g. "
            "CASE WHEN d > 0 THEN n / d ELSE 0 END, or NULLIF(d, 0) to leave those rows unjudged.")
    if null:
        warnings.warn(f"{loaded.label}: relevance={relevance!r} is NULL in {null} of {total} rows; those documents "
                      "are unjudged (no grade), as a NULL label is.", SqlmetricsWarning, stacklevel=6)
    return expr


def _warn_positions(con, view: str, key: list, label: str) -> None:
    """ties='rank': lists whose positions are not exactly 1..n are renumbered; say how many, never silently."""
    k = ", ".join(key)
    # Positions may be text (a TREC rank field, CSV): compared as numbers, not as '10' < '9'. The checks
    # made sure each is a whole number that fits a BIGINT.
    view = f"(SELECT * REPLACE (CAST(rank_position AS BIGINT) AS rank_position) FROM {view})"
    row = con.execute(
        "SELECT COUNT(*), SUM(CASE WHEN repeated THEN 1 ELSE 0 END), SUM(CASE WHEN gap THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN repeated OR gap THEN 1 ELSE 0 END) FROM ("
        "SELECT COUNT(DISTINCT rank_position) < COUNT(*) AS repeated, "
        "MIN(rank_position) <> 1 OR MAX(rank_position) <> COUNT(DISTINCT rank_position) AS gap "
        f"FROM {view} GROUP BY {k})").fetchall()[0]
    total, repeated, gaps, bad = row[0], row[1] or 0, row[2] or 0, row[3] or 0
    if bad:
        warnings.warn(
            f"{label}: {bad} of {total} lists have positions that are not 1..n ({gaps} with gaps or not starting "
            f"at 1, {repeated} with repeated positions); ties='rank' renumbers each list 1..n by position, then "
            "by document id descending (byte order), and cutoffs apply to the new numbers.",
            SqlmetricsWarning, stacklevel=6)


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
    col = _q(whole.columns["run_name"])
    nulls = con.execute(f"SELECT MIN(line_no) FROM {whole.numbered} WHERE {col} IS NULL").fetchall()[0][0]
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


def _judged(con, loaded: Loaded, judge):
    """The verdicts= rows (an Arrow table) with the verdict judge= gives each (a list of row dicts -> 1 or 0 each)."""
    import pyarrow as pa

    table = con.sql(f"SELECT * FROM {loaded.view}").to_arrow_table()
    if "verdict" in table.column_names:
        raise SqlmetricsError(f"{loaded.label}: has a verdict column; judge= judges statements without one. Drop "
                              "the column, or leave judge= out.")
    verdicts = _called(judge, "judge", table.to_pylist(), "statements")
    bad = next((v for v in verdicts if isinstance(v, str) or v not in (0, 1)), None)
    if bad is not None:
        raise SqlmetricsError(f"judge= returned {bad!r}: a verdict is 1 or 0 (True or False).")
    return table.append_column("verdict", pa.array([int(v) for v in verdicts], pa.int64()))


def _embedded(con, loaded: Loaded, embed):
    """The embeddings= rows (an Arrow table) with the vector embed= gives each question's text (a list of strings ->
    a list of numbers each)."""
    import pyarrow as pa

    table = con.sql(f"SELECT * FROM {loaded.view}").to_arrow_table()
    if "question" not in table.column_names or "embedding" in table.column_names:
        raise SqlmetricsError(f"{loaded.label}: embed= embeds each row's question (its text): give a question column "
                              f"and no embedding column (columns: {', '.join(table.column_names)}).")
    texts = table.column("question").to_pylist()
    if None in texts:
        raise SqlmetricsError(f"{loaded.label}, row {texts.index(None) + 1}: the question is empty; embed= needs its "
                              "text.")
    vectors = _called(embed, "embed", [str(t) for t in texts], "questions")
    try:
        array = pa.array([[float(x) for x in v] for v in vectors], pa.list_(pa.float64()))
    except (TypeError, ValueError):
        raise SqlmetricsError("embed= returned something other than a list of numbers for a question.") from None
    return table.append_column("embedding", array)


def _called(function, name: str, items: list, what: str) -> list:
    """The caller's function over all the items at once, one result per item."""
    try:
        out = list(function(items))
    except Exception as e:  # the caller's code: any failure is theirs, named so
        raise SqlmetricsError(f"{name}= failed on {len(items)} {what}: {type(e).__name__}: {e}") from e
    if len(out) != len(items):
        raise SqlmetricsError(f"{name}= returned {len(out)} results for {len(items)} {what}: give one per item, in "
                              "order.")
    return out


def _only(columns: dict, role: str) -> dict:
    return {role: columns[role]} if role in columns else {}


def _table_columns(o: Settings) -> tuple[dict, dict]:
    """columns= maps both tables wherever the role exists; qrels_columns= overrides it for the qrels."""
    columns = dict(o.columns or {})
    qrels = {r: c for r, c in columns.items() if r in (*QRELS_ROLES, *GROUP_ROLES, SUBTOPIC_ROLE)}
    qrels.update(o.qrels_columns or {})
    run = {r: c for r, c in columns.items() if r in RUN_ROLES}
    return qrels, run


@dataclass
class _Job:
    """What one evaluation is, decided before any data is read."""

    calls: list
    shape: Shape
    segments: tuple
    labels: bool  # the judgments are in the run (qrels=None)
    order_role: str  # score, or rank_position with ties="rank"

    @property
    def group_roles(self) -> tuple:
        """The qrels' judgment-group roles the statement reads (qrels_format)."""
        return FORMAT_GROUPS[self.shape.qrels_format]

    @property
    def texts(self) -> list:
        return [c.text for c in self.calls]

    @property
    def log_mode(self) -> bool:
        return bool(self.segments) or self.labels


def evaluate_local(qrels, run, measures, o: Settings, fetch=None, progress=None) -> Results:
    """evaluate() on an embedded DuckDB: see sqlmetrics.evaluate for the arguments. progress(step, rows,
    con), when given, is told each step as it starts (reading, checking, computing, collecting), the rows
    read so far, and the connection running it (whose query_progress() DuckDB then keeps)."""
    job = _prepare(qrels, measures, o)
    run = _named_ranx(run)
    # Binding the templates is pure Python (sqlglot); it runs while DuckDB, which releases the GIL, loads
    # and checks the inputs. On small inputs that is a tenth of the whole evaluation.
    planning = _Background(plan_measures, job.calls, o.relevance_level)
    qrels_columns, run_columns = _table_columns(o)
    con = connect(o.memory_limit, o.threads, o.temp_directory)
    inputs: list = []  # every Loaded input, to remove the temporary folders made to read them
    step = _Steps(con, progress)
    try:
        q = None
        if not job.labels:
            groups = job.group_roles
            step("reading qrels")
            q = load(con, qrels, "qrels", qrels_columns, own_columns=bool(o.qrels_columns),
                     layout=None if o.qrels_format == "qrels" else o.qrels_format, glob=o.glob)
            inputs.append(q)
            missing = [g for g in groups if g not in q.columns]
            if missing:
                raise SqlmetricsError(f"{q.label}: qrels_format={o.qrels_format!r} needs a {missing[0]!r} column; "
                                      f"name it so, or map it, e.g. qrels_columns={{{missing[0]!r}: '<your column>'}}.")
            # trec_eval reads a preference level as any number (atof), a grade as an integer (atol).
            step("checking qrels")
            step.rows += checks.check(con, q, "qrels", groups=groups,
                                      whole_grades=o.qrels_format not in ("prefs", "qrels_prefs"))
        history = None
        if o.history is not None:  # the training interactions, read as qrels are (user, item, grade)
            h = load(con, o.history, "qrels", qrels_columns, own_columns=bool(o.qrels_columns))
            inputs.append(h)
            history = _source(h.view, {r: h.columns[r] for r in ("query_id", "doc_id")})
        verdicts = None
        if o.verdicts is not None:  # the judged statements: the query as the qrels name it, statement and verdict
            roles = {**_only(qrels_columns, "query_id"), "doc_id": "statement", "relevance": "verdict"}
            if o.judge is not None:  # no verdict yet (statement stands in for it while loading): the judge's
                v = load(con, o.verdicts, "qrels", {**roles, "relevance": "statement"}, what="verdicts")
                inputs.append(v)
                v = load(con, _judged(con, v, o.judge), "qrels", roles, what="verdicts (judged by judge=)")
            else:
                v = load(con, o.verdicts, "qrels", roles, what="verdicts")
            inputs.append(v)
            checks.check_verdicts(con, v)
            verdicts = _source(v.view, {"query_id": v.columns["query_id"], **{c: c for c in VERDICT_COLUMNS}})
        embeddings = None
        if o.embeddings is not None:  # the question embeddings: the query as the qrels name it, generated, ...
            roles = {**_only(qrels_columns, "query_id"), "doc_id": "generated", "relevance": "generated"}
            e = load(con, o.embeddings, "qrels", roles, what="embeddings")
            inputs.append(e)
            if o.embed is not None:  # the questions' texts: embed= gives their vectors
                e = load(con, _embedded(con, e, o.embed), "qrels", roles, what="embeddings (embedded by embed=)")
                inputs.append(e)
            vector, noncommittal = checks.check_embeddings(con, e)
            source = _source(e.view, {"query_id": e.columns["query_id"], "generated": "generated",
                                      **{c: c for c in (*vector, *noncommittal)}})
            if not noncommittal:  # optional here: no generation judged the answer noncommittal
                source = dataclasses.replace(source, constants={"noncommittal": 0})
            embeddings = Embeddings(source, "function" if vector == ("embedding",) else "long")
        items = None
        if o.items is not None:  # the item features: the item (read as the qrels' doc_id) and its features
            mapped = {r: c for r, c in (o.columns or {}).items() if r in ITEM_ROLES}
            item = {"doc_id": qrels_columns["doc_id"]} if "doc_id" in qrels_columns else {}
            i = load(con, o.items, "items", {**item, **mapped})
            inputs.append(i)
            if "vector" in i.columns and not _types(con, i.view)[i.columns["vector"]].endswith("]"):
                raise SqlmetricsError(f"{i.label}: the vector column {i.columns['vector']!r} is not a list of numbers; "
                                      "give a list (or array) per item, or the long form (dimension, value).")
            items = _source(i.view, i.columns)
        runs = _load_runs(con, run, run_columns, inputs, o.glob, step)
        if run_columns and all(lr.fixed_columns for _, lr in runs) and (q is None or q.fixed_columns):
            raise SqlmetricsError("columns= applies to CSV, Parquet and tables; every input here is TREC text, "
                                  "whose columns are fixed.")
        checked = _check_runs(con, runs, job, o, step)
        _warn(con, q, checked, job, o)
        # One named run is evaluated as a plain run (no run_name in the list key, no scan for run names)
        # and its results are labelled afterwards: the same numbers, a cheaper statement.
        multi = _is_run_dict(run) or "run_name" in run_columns
        fused = _fused_runs(o.fuse, checked, job, multi)
        union = multi and len(checked) + len(fused) > 1
        run_source = _run_source(con, checked, job, union, fused)
        qrels_source = None if job.labels else _source(q.view, {r: q.columns[r] for r in (*QRELS_ROLES, *job.group_roles)})
        sql = build_statement(planning.result(), qrels_source, run_source, job.shape, per_query=True,
                              history=history, items=items, verdicts=verdicts, embeddings=embeddings).sql(READ)
        step("computing measures")
        try:
            con.execute(f"CREATE TEMP TABLE per_list_result AS {sql}")
        except duckdb.Error as e:
            if _resource_error(e, con, o) is not None:
                raise  # worded below
            # The inputs were checked, so this is ours, not the caller's. One line; the statement on .sql.
            raise GeneratedSQLError(f"sqlmetrics generated SQL that DuckDB rejected: {_first_line(e)}", sql) from e
        _check_finite(con, job)
        _restore_segment_types(con, checked, job.segments)
        step("collecting results")
        return _collect(con, job, [name for name, _ in runs] + [name for name, _ in fused], multi, union,
                        fetch or fetch_arrow)
    except (duckdb.Error, RuntimeError, SqlmetricsError) as e:  # memory, disk or Ctrl-C, wherever it struck
        # A reader may have worded DuckDB's error as an unreadable input; DuckDB's own stays its __context__.
        cause = e.__context__ if isinstance(e, SqlmetricsError) else e
        instead = _resource_error(cause, con, o) if cause is not None else None
        if instead is None and not isinstance(e, SqlmetricsError):  # DuckDB's error: a damaged input file?
            instead = damaged(con, inputs)
        if instead is None:
            raise
        raise instead from None
    finally:
        con.close()
        for folder in {i.temporary for i in inputs if i.temporary}:
            shutil.rmtree(folder, ignore_errors=True)


class _Steps:
    """step(name): tells `progress` (evaluate_local's) that the evaluation starts the named step, with the
    rows its checks have counted so far (step.rows). Without `progress`, nothing."""

    def __init__(self, con, progress):
        self.con, self.progress, self.rows = con, progress, 0
        if progress is not None:
            # DuckDB keeps a query's progress from its start (not after its default 2 s), and prints no bar of
            # its own: the caller draws one. Both are settings of this connection alone.
            con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false; "
                        "SET progress_bar_time = 0")

    def __call__(self, name: str) -> None:
        if self.progress is not None:
            self.progress(name, self.rows, self.con)


def _check_finite(con, job: _Job) -> None:
    """No NaN or infinity ever reaches the results. The inputs are finite (checked), so a non-finite value
    is an overflow inside a measure, such as an exponential gain 2^grade - 1 past grade 1023."""
    outs = output_columns(job.calls)
    counts = con.execute("SELECT " + ", ".join(f"COUNT(*) FILTER (WHERE NOT isfinite({o}))" for o in outs)
                         + " FROM per_list_result").fetchall()[0]
    for out, call, count in zip(outs, job.calls, counts):
        if count:
            where = con.execute(f"SELECT query_id, {out} FROM per_list_result WHERE NOT isfinite({out}) "
                                "ORDER BY ALL LIMIT 1").fetchall()[0]
            raise SqlmetricsError(
                f"{call.text} overflows a double for query {where[0]!r}"
                + (f" and {count - 1} more lists" if count > 1 else "") + f": its value there would be {where[1]}. An exponential gain (2^grade - 1, as gain='exp' and ERR compute it) "
                "overflows for grades of 1024 or more; use smaller grades or the linear gain.")


def _prepare(qrels, measures, o: Settings) -> _Job:
    segments = tuple([o.group_by] if isinstance(o.group_by, str) else o.group_by or ())
    calls = parse_all(measures, o.relevance_level, o.compat)  # fails on a bad name before any data is read
    taken = {"run", "query_id", "num_lists", *(c.text for c in calls), *output_columns(calls)}
    for g in segments:
        if g in taken:
            raise SqlmetricsError(f"group_by= {g!r}: that name is taken by a result column; rename the column.")
    check_subtopics(calls, o.qrels_format, qrels is not None)
    if qrels is None and o.qrels_format != "qrels":
        raise SqlmetricsError(f"qrels_format={o.qrels_format!r} reads judgment groups from the qrels; with qrels=None "
                              "the judgments are the run's own labels.")
    shape = Shape(queries=o.queries, ties=o.ties, relevance_level=o.relevance_level, score_precision=o.score_precision,
                  depth=o.depth, judged_only=o.judged_only, fixed_order=True, qrels_format=o.qrels_format)
    preferences = [c.text for c in calls if c.measure.rows == "preferences"]
    if o.qrels_format == "qrels_jg" and preferences:
        raise SqlmetricsError(f"{preferences[0]} compares preferences: it takes qrels_format='qrels' (one judgment "
                              "group per query), 'prefs' or 'qrels_prefs', not 'qrels_jg'.")
    # Counting the queries and the ranked documents needs no grade: trec_eval prints num_q with preferences.
    others = [c.text for c in calls if c.measure.rows != "preferences" and c.measure.name not in ("NumQ", "NumRet")]
    if o.qrels_format in ("prefs", "qrels_prefs") and others:
        raise SqlmetricsError(f"qrels_format={o.qrels_format!r} holds preferences: {others[0]} needs graded "
                              "judgments (qrels_format='qrels' or 'qrels_jg'); the prefs_* measures read preferences.")
    return _Job(calls, shape, segments, qrels is None, "rank_position" if o.ties == "rank" else "score")


def _restore_segment_types(con, checked: list, segments: tuple) -> None:
    """The statement keys lists by segment values as text (the same on every engine); the results give each
    segment column back its type in the runs, when they agree on one: a date stays a DATE."""
    for i, name in enumerate(segments, 1):
        types = {str(con.sql(f"SELECT seg_{i} FROM {view}").types[0]) for _, _, view in checked}
        if len(types) == 1 and types != {"VARCHAR"}:
            try:
                con.execute(f"ALTER TABLE per_list_result ALTER COLUMN {_q(name)} TYPE {types.pop()}")
            except duckdb.Error:
                pass  # a type whose text does not read back (a nested one): the column stays text


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
            step.rows += checks.check(con, loaded, "run", "max", job.order_role, float32)
            view = _log_view(con, loaded, job.segments, o.label, o.relevance, job.order_role, o.duplicates)
            checked.append((name, loaded, view))
        else:
            step.rows += checks.check(con, loaded, "run", o.duplicates, job.order_role, float32)
            checked.append((name, _dedup(con, loaded, o.duplicates), None))
    return checked


def _warn(con, q: Loaded | None, checked: list, job: _Job, o: Settings) -> None:
    """What the caller should know about the data: missing queries, renumbered positions, unlabelled lists."""
    if q is not None:
        _warn_missing(con, q, [(n, lr) for n, lr, _ in checked], "intersection" if job.segments else o.queries)
    seg_cols = [f"seg_{i}" for i in range(1, len(job.segments) + 1)]
    if o.ties == "rank":
        _check_positions(con, checked, seg_cols)
    if job.labels:
        _warn_unlabelled(con, checked, seg_cols)


def _collect(con, job: _Job, run_names: list, multi: bool, union: bool, fetch) -> Results:
    """Results from per_list_result: the aggregates, the per-list rows, and the per-segment rows."""
    texts = job.texts
    keys = ["run_name"] if union else []
    aggregates = [(out, c.measure.aggregate) for out, c in zip(output_columns(job.calls), job.calls)]
    segs = list(job.segments)
    list_key = [*keys, *segs, "query_id"]
    rows = con.execute(aggregate_sql("per_list_result", aggregates, keys, list_key)).fetchall()
    # One named run's results get its name as their first column.
    named = f"{_lit(str(run_names[0]))} AS run_name, " if multi and not union else ""
    run_col = ["run"] if multi else []
    per_list = fetch(con, f"SELECT {named}* FROM per_list_result", [*run_col, *segs, "query_id", *texts])
    per_group = None
    if segs:
        groups = [(g, exp.to_identifier(g, quoted=True)) for g in segs]
        con.execute("CREATE TEMP TABLE per_group_result AS " + aggregate_sql("per_list_result", aggregates, keys, list_key,
                                                                          groups))
        per_group = fetch(con, f"SELECT {named}* FROM per_group_result", [*run_col, *segs, *texts, "num_lists"])
    if multi:
        if not union:
            rows = [(str(run_names[0]), *row) for row in rows]
        aggregate = {row[0]: dict(zip(texts, row[1:])) for row in rows}
        for name in run_names:  # a run with no judged query at all still gets its (empty) values
            aggregate.setdefault(str(name), {t: None for t in texts})
    else:
        aggregate = dict(zip(texts, rows[0])) if rows else {t: None for t in texts}
    return Results(aggregate=aggregate, per_query=per_list, measures=texts, per_group=per_group)


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


def _warn_unlabelled(con, loaded_runs: list, seg_cols: list) -> None:
    for _name, loaded, view in loaded_runs:
        key = ", ".join([*seg_cols, "query_id"])
        n = con.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {view} GROUP BY {key} "
                        "HAVING COUNT(relevance) = 0)").fetchall()[0][0]
        if n:
            warnings.warn(f"{loaded.label}: {n} list{'s have' if n > 1 else ' has'} no labelled row (every "
                          "label NULL); not averaged, like a query without judgments.",
                          SqlmetricsWarning, stacklevel=5)


def _fused_runs(fuse, checked: list, job: _Job, multi: bool) -> list:
    """[(name, the fused run's SELECT in DuckDB's SQL)] for evaluate(fuse={name: {method, norm, params}}):
    each fuses the checked runs, in the order given, and is one more run of the statement."""
    if not fuse:
        return []
    if not isinstance(fuse, dict) or not all(isinstance(v, dict) for v in fuse.values()):
        raise SqlmetricsError("fuse= takes {name: {'method': ..., 'norm': ..., **params}}, e.g. {'rrf': {'k': 60}}.")
    if not multi or job.log_mode or job.order_role != "score":
        raise SqlmetricsError("fuse= fuses the scores of named runs: pass {name: run, ...} (not logs, not ties='rank').")
    taken = {str(name) for name, _, _ in checked}
    sources = [_source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "score")})
               for _, loaded, _ in checked]
    out = []
    for name, spec in fuse.items():
        if str(name) in taken:
            raise SqlmetricsError(f"fuse=: {name!r} is already the name of a run; name the fused run otherwise.")
        spec = dict(spec)
        settings = fusion_settings(spec.pop("method", name), spec.pop("norm", DEFAULT_NORM), spec, len(sources))
        out.append((str(name), fusion_statement(sources, *settings, fixed_order=True).sql(READ)))
    return out


def _run_source(con, checked: list, job: _Job, union: bool, fused: list) -> Source:
    """The run relation the statement reads: one run as it is, several (and the fused ones) as one UNION ALL
    with run_name."""
    options, segs = job.shape, job.segments
    run_roles = ["query_id", "doc_id", job.order_role]
    seg_cols = [f"seg_{i}" for i in range(1, len(segs) + 1)]
    if job.log_mode:
        roles = [*seg_cols, *run_roles, *(["relevance"] if job.labels else [])]
        options.group_by = tuple((f"seg_{i}", exp.to_identifier(g, quoted=True)) for i, g in enumerate(segs, 1))
        options.labels = job.labels
        if not union:
            return _source(checked[0][2], {r: r for r in roles})
        options.run_key = ("run_name",)
        parts = [f"SELECT {_lit(str(name))} AS run_name, {', '.join(roles)} FROM {view}" for name, _, view in checked]
        run_view = _fresh("runs")
        con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
        return _source(run_view, {r: r for r in ["run_name", *roles]})
    if not union:
        loaded = checked[0][1]
        return _source(loaded.view, {r: loaded.columns[r] for r in run_roles})
    options.run_key = ("run_name",)
    options.run_names = tuple(str(name) for name, _, _ in checked) + tuple(name for name, _ in fused)
    parts = []
    for name, loaded, _ in checked:
        cols = ", ".join(f"{_q(loaded.columns[r])} AS {r}" for r in run_roles)
        parts.append(f"SELECT {_lit(str(name))} AS run_name, {cols} FROM {loaded.view}")
    parts += [f"SELECT {_lit(name)} AS run_name, query_id, doc_id, score FROM ({sql})" for name, sql in fused]
    run_view = _fresh("runs")
    con.execute(f"CREATE TEMP VIEW {run_view} AS " + " UNION ALL ".join(parts))
    return _source(run_view, {r: r for r in ["run_name", *run_roles]})


def _source(view: str, columns: dict) -> Source:
    """A relation of ours (its name is generated) whose columns are the caller's: quoted as written."""
    return Source(exp.to_table(view), {role: exp.to_identifier(col, quoted=True) for role, col in columns.items()})
