"""Pools and holes: which documents a pool of runs sends to the assessors, and how far each run reaches past the
judgments.

    pool(runs, depth=10)            per topic, the union of every run's top 10, with the runs that placed each
                                    document there and its best rank; with qrels=, only the documents still to
                                    judge, and per topic how many are pooled, judged and to judge
    holes(qrels, runs, ["P@10"])    per run and measure: the value with unjudged documents non-relevant, the
                                    condensed value (judged documents only: trec_eval -J), their spread, Judged@k,
                                    Unjudged@k, and the share of the run's top k outside the pool of the other runs

The pool is ONE statement (pool_statement), a sqlglot tree as fusion.py's is: run on DuckDB here, generated for
another engine by render_pool(). Its CTEs:

    pool_input    every run's rows, with the run's name                                      UNION ALL
    pool_top      each run's top `depth` per topic: ROW_NUMBER in evaluate()'s order (score descending, then
                  document id descending: statement.trees._order_by, the order trec_eval ranks by)
    pool_judged   (with qrels) the documents graded 0 or more: a negative grade is pooled but not judged yet, as
                  trec_eval reads it (and as the pool file this module writes marks a document to judge: -1)
    then one GROUP BY (query_id, doc_id): the runs that pooled it (sorted), how many, its best rank, and with qrels
    whether it is judged.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, replace

from ..catalogue import parse
from ..deferred import exp, sqlglot
from ..dialects.info import dialect_info
from ..dialects.portable import portable_fusion
from ..errors import SqlmetricsError
from ..evaluation import evaluate
from ..identifiers import column_identifier, table_reference
from ..identifiers import quote_identifier as _q
from ..local import checks
from ..local.connection import connect
from ..local.readers import load
from ..local.runs import named_runs
from ..local.sources import _source
from ..statement import READ, Shape, Source
from ..statement.trees import _cols, _order_by, _window

# The engines whose ARRAY_AGG(... ORDER BY ...) sqlglot writes (Snowflake's WITHIN GROUP): the pool's list of runs.
ARRAY_DIALECTS = ("duckdb", "postgres", "bigquery", "snowflake", "spark", "databricks", "trino")
# holes()'s columns after run and measure (its docstring says what each is).
HOLE_VALUES = ("value", "condensed", "spread", "judged", "unjudged", "outside")
_INPUT_ROLES = {"run_name": "VARCHAR", "query_id": "VARCHAR", "doc_id": "VARCHAR", "score": "DOUBLE"}


@dataclass(frozen=True)
class Pool:
    """pool()'s answer. docs: query_id, doc_id, best_rank (the best rank any run gave it), n_runs and runs (the
    names of the runs whose top `depth` holds it, sorted), per topic by best rank, then id; with qrels, only the
    documents still to judge. topics: per topic, pooled (the pool's size) and with qrels judged and to_judge; a
    topic the qrels have and no run ranks is there with 0s."""

    depth: int
    docs: object
    topics: object


def check_depth(depth) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise SqlmetricsError(f"depth={depth!r} must be a whole number of at least 1: how many "
                              "of each run's top documents per topic go into the pool, e.g. 10.")
    return depth


def pool_ctes(runs: list, depth: int, qrels: Source | None = None) -> list:
    """[(name, SELECT)]: pool_input, pool_top and with qrels pool_judged. runs: [(name, Source)], each Source with
    the roles query_id, doc_id and score."""
    parts = [replace(source.bound(), constants={**source.constants, "run_name": name}).select(_INPUT_ROLES)
             for name, source in runs]
    rank = _window(exp.func("ROW_NUMBER"), _cols(["run_name", "query_id"]), _order_by(Shape()))
    ranked = exp.select(*_cols(["run_name", "query_id", "doc_id"]), exp.alias_(rank, "rnk")).from_("pool_input")
    ctes = [("pool_input", parts[0] if len(parts) == 1 else exp.union(*parts, distinct=False)),
            ("pool_top", exp.select("*").from_(ranked.subquery("ranked")).where(f"rnk <= {depth}"))]
    if qrels is not None:
        judged = qrels.bound().select({"query_id": "VARCHAR", "doc_id": "VARCHAR", "relevance": "DOUBLE"})
        ctes.append(("pool_judged", exp.select("query_id", "doc_id").from_(judged.subquery("qrels"))
                     .where("relevance >= 0")))
    return ctes


def _with(final: exp.Select, ctes: list) -> exp.Select:
    for name, query in ctes:
        final = final.with_(name, as_=query, copy=False)
    return final


def pool_statement(runs: list, depth: int, qrels: Source | None = None, to_judge: bool = False) -> exp.Select:
    """SELECT query_id, doc_id, runs, n_runs, best_rank: every pooled document once; with qrels, also `judged`, or
    with to_judge only the documents not judged instead."""
    join = " LEFT JOIN pool_judged AS j ON t.query_id = j.query_id AND t.doc_id = j.doc_id" if qrels else ""
    judged = ", MAX(j.doc_id) IS NOT NULL AS judged" if qrels and not to_judge else ""
    final = sqlglot.parse_one(
        "SELECT t.query_id AS query_id, t.doc_id AS doc_id, ARRAY_AGG(t.run_name ORDER BY t.run_name NULLS FIRST) "
        f"AS runs, COUNT(*) AS n_runs, MIN(t.rnk) AS best_rank{judged} FROM pool_top AS t{join} "
        "GROUP BY t.query_id, t.doc_id"
        + (" HAVING MAX(j.doc_id) IS NULL" if qrels and to_judge else ""), read=READ)
    return _with(final, pool_ctes(runs, depth, qrels))


def outside_statement(runs: list, depth: int) -> exp.Select:
    """SELECT run_name, query_id, outside: per run and topic, the share of the run's top `depth` documents (of
    min(depth, its length)) that no other run has in its own top `depth` (a leave-one-run-out pool)."""
    final = sqlglot.parse_one(
        "SELECT run_name, query_id, AVG(CASE WHEN pooled_by = 1 THEN 1.0 ELSE 0.0 END) AS outside FROM ("
        "SELECT run_name, query_id, COUNT(*) OVER (PARTITION BY query_id, doc_id) AS pooled_by FROM pool_top) AS r "
        "GROUP BY run_name, query_id", read=READ)
    return _with(final, pool_ctes(runs, depth))


def render_pool(runs, depth: int = 10, dialect: str = "duckdb", *, qrels=None, columns: dict | None = None) -> str:
    """pool()'s statement for `dialect`, over tables that live in that engine: the pooled documents (query_id,
    doc_id, runs, n_runs, best_rank), with qrels= only those not judged yet. runs: a table name, a list of them (named
    by the table, as pool() names files by stem) or {name: table}; names as render() takes them. columns= maps the
    roles query_id, doc_id, score and relevance where the tables name them otherwise. The tables are not checked
    here: pool() refuses what the statement would take silently (repeats, missing ids or scores)."""
    depth = check_depth(depth)
    info = dialect_info(dialect)
    if info.name not in ARRAY_DIALECTS:
        raise SqlmetricsError(f"render_pool: dialect={dialect!r} has no array aggregate to hold each document's runs; "
                              f"render for one that has ({', '.join(ARRAY_DIALECTS)}), or run pool() on DuckDB.")
    d, fold = info.sqlglot, info.fold_case
    tables = runs if isinstance(runs, dict) else \
        {str(t).rpartition(".")[2]: t for t in (runs if isinstance(runs, (list, tuple)) else [runs])}
    if len(tables) != (len(runs) if isinstance(runs, (list, tuple)) else len(tables)) or not tables:
        raise SqlmetricsError(f"render_pool: runs={runs!r} must name one table per run, each once by its last part "
                              "(or pass {name: table}).")

    def source(table, roles) -> Source:
        return Source(table_reference(table, d, fold),
                      {r: column_identifier((columns or {}).get(r, r), d, fold) for r in roles})

    sources = [(name, source(t, ("query_id", "doc_id", "score"))) for name, t in tables.items()]
    judged = None if qrels is None else source(qrels, ("query_id", "doc_id", "relevance"))
    tree = portable_fusion(pool_statement(sources, depth, judged, to_judge=True), info, ("pool_input", "pool_judged"))
    return tree.sql(dialect=d, pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)


def _loaded_runs(con, runs: dict, columns: dict | None, inputs: list) -> list:
    """[(name, Source)]: each run loaded and checked as evaluate() checks it (ids, scores, repeats, no rows)."""
    out = []
    for name, run in runs.items():
        loaded = load(con, run, "run", columns, name)
        inputs.append(loaded)
        if "score" not in loaded.columns:
            raise SqlmetricsError(f"{loaded.label}: has no score column; a pool takes each run's top documents by "
                                  "score. Map one with columns={'score': ...} (command line: --column score=NAME).")
        try:
            rows = checks.check(con, loaded, "run", "error", "score", empty_run="score")
        except checks.RepeatedDocument as e:  # pool takes no duplicates=: say only what fixes it
            raise SqlmetricsError(f"{e.where}. Remove the repeat: a run ranks each document once per topic.") from None
        if not rows:
            raise SqlmetricsError(f"{loaded.label}: has no rows, not one ranked document; a run that retrieved nothing "
                                  "is almost always a step that failed before writing it. Check it, or leave it out "
                                  "of the pool.")
        out.append((name, _source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "score")})))
    return out


def _loaded_qrels(con, qrels, columns: dict | None, inputs: list):
    loaded = load(con, qrels, "qrels", columns)
    inputs.append(loaded)
    checks.check(con, loaded, "qrels")
    return loaded, _source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "relevance")})


def _cleanup(con, inputs: list) -> None:
    con.close()
    for folder in {i.temporary for i in inputs if i.temporary}:
        shutil.rmtree(folder, ignore_errors=True)


def pool(runs, depth: int = 10, *, qrels=None, columns: dict | None = None, memory_limit=None, threads=None,
         temp_directory=None) -> Pool:
    """Depth-k pooling across runs, in ONE SQL statement on DuckDB: per topic, the union of each run's top `depth`
    documents, ranked as evaluate() ranks them (score descending, ties by document id descending).

    runs: a run, a list of runs (named by file stem, else run1, run2, ...) or {name: run}, each anything evaluate()
    reads as a run. qrels: judgments already made; then only the documents not judged yet (no qrels row, or a
    negative grade: pooled but unjudged, as trec_eval reads it) are listed, the documents to judge next.
    columns: {role: column} for the runs and qrels, as evaluate() takes it. memory_limit, threads and
    temp_directory are DuckDB's.

    Returns a Pool: .docs (query_id, doc_id, best_rank, n_runs, runs) and .topics (query_id, pooled, and with qrels
    judged and to_judge), pyarrow Tables."""
    depth = check_depth(depth)
    runs = named_runs(runs)
    con = connect(memory_limit, threads, temp_directory)
    inputs: list = []
    try:
        sources = _loaded_runs(con, runs, columns, inputs)
        judged, qrels_topics, qrels_source = "", "", None
        if qrels is not None:
            loaded, qrels_source = _loaded_qrels(con, qrels, columns, inputs)
            judged = " WHERE NOT judged"
            # A topic the qrels judge and no run ranks is in the counts too, with nothing pooled.
            qrels_topics = (f" FULL JOIN (SELECT DISTINCT CAST({_q(loaded.columns['query_id'])} AS VARCHAR) AS "
                            f"query_id FROM {loaded.view}) AS q USING (query_id)")
        con.execute(f"CREATE TEMP TABLE sqlm_pool AS {pool_statement(sources, depth, qrels_source).sql(READ)}")
        docs = con.sql("SELECT query_id, doc_id, best_rank, n_runs, runs FROM sqlm_pool" + judged +
                       " ORDER BY query_id, best_rank, doc_id").to_arrow_table()
        counts = ("COALESCE(pooled, 0) AS pooled, COALESCE(judged, 0) AS judged, COALESCE(pooled - judged, 0) AS "
                  "to_judge" if qrels is not None else "pooled")
        per_topic = ("SELECT query_id, COUNT(*) AS pooled" +
                     (", COUNT(*) FILTER (WHERE judged) AS judged" if qrels is not None else "") +
                     " FROM sqlm_pool GROUP BY query_id")
        topics = con.sql(f"SELECT query_id, {counts} FROM ({per_topic}) AS p{qrels_topics} ORDER BY query_id"
                         ).to_arrow_table()
        return Pool(depth, docs, topics)
    finally:
        _cleanup(con, inputs)


def _condensed(measures) -> list:
    """[(standard, condensed)] measure strings: each measure as given, and the same over its judged documents only
    (ir_measures' judged_only=True, trec_eval -J for that measure)."""
    if isinstance(measures, str):
        measures = [measures]
    pairs = []
    for text in measures:
        call = parse(text)
        if call.judged_only:
            raise SqlmetricsError(f"holes: measure {text!r} is already judged only; give it without "
                                  "judged_only=True (holes reports both values).")
        if call.measure.rows != "ranking":
            raise SqlmetricsError(f"holes: measure {text!r} reads its {call.measure.rows}, not a ranked list, so it "
                                  "has no condensed value (a list without its unjudged documents); give measures of a "
                                  "ranked list, such as P@10, nDCG@10 or AP.")
        pairs.append((call.canonical, replace(call, judged_only=True).canonical))
    if not pairs:
        raise SqlmetricsError("holes: no measure was given; pass at least one, e.g. ['P@10', 'nDCG@10'].")
    return pairs


def holes(qrels, runs, measures, depth: int = 10, *, per_query: bool = False, columns: dict | None = None,
          memory_limit=None, threads=None, temp_directory=None):
    """How much each run's value depends on the judgments' holes, per run and measure (a pyarrow Table; with
    per_query=True per run, judged topic and measure):

    value      the measure with unjudged documents counted as not relevant (evaluate()'s default)
    condensed  the measure over each list's judged documents only (judged_only=True: trec_eval -J, Sakai's condensed
               lists); a negative grade is unjudged there, as in trec_eval
    spread     condensed - value
    judged     Judged@depth: the share of the run's top `depth` (of min(depth, its length)) with a qrels row
    unjudged   Unjudged@depth: the share of the top `depth` positions holding an unjudged document (over depth:
               trec_eval's unj_k and trectools' get_unjudged)
    outside    the share of the run's top `depth` (of min(depth, its length)) that no other run has in its own top
               `depth`: how much the run falls outside a pool of the others (Zobel 1998); per run, its mean over the
               judged topics it ranks (1.0 for a lone run: there is no other); null for a topic the run does not rank

    The means are evaluate()'s, over every judged topic (a topic a run misses scores 0). runs: a run, a list of runs
    or {name: run}; measures: measure strings of a ranked list (P@10, nDCG@10, AP, ...), each reported in its
    canonical spelling. columns, memory_limit, threads and temp_directory as evaluate() takes them."""
    depth = check_depth(depth)
    pairs = _condensed(measures)
    runs = named_runs(runs)
    extra = [f"Judged@{depth}", f"Unjudged@{depth}"]
    wanted = list(dict.fromkeys([m for pair in pairs for m in pair] + extra))
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    results = evaluate(qrels, runs, wanted, columns=columns, **resources)
    con = connect(memory_limit, threads, temp_directory)
    inputs: list = []
    try:
        sources = _loaded_runs(con, runs, columns, inputs)
        loaded, _ = _loaded_qrels(con, qrels, columns, inputs)
        judged_topics = f"SELECT DISTINCT CAST({_q(loaded.columns['query_id'])} AS VARCHAR) FROM {loaded.view}"
        per_topic = (f"SELECT * FROM ({outside_statement(sources, depth).sql(READ)}) AS o "
                     f"WHERE query_id IN ({judged_topics})")
        if per_query:
            outside = {(r, q): v for r, q, v in con.execute(per_topic).fetchall()}
        else:
            outside = dict(con.execute(f"SELECT run_name, AVG(outside) FROM ({per_topic}) AS t GROUP BY run_name"
                                       ).fetchall())
    finally:
        _cleanup(con, inputs)
    # {run: {measure: mean}} (runs are always passed as a dict), or one such row per (run, topic)
    lists = results.per_query.to_pylist() if per_query else [{"run": r, **v} for r, v in results.aggregate.items()]
    rows = []
    for values in lists:
        key = (values["run"], values["query_id"]) if per_query else values["run"]
        for standard, condensed in pairs:
            v, c = values[standard], values[condensed]
            rows.append({"run": values["run"], **({"query_id": values["query_id"]} if per_query else {}),
                         "measure": standard, "value": v, "condensed": c,
                         "spread": None if v is None or c is None else c - v, "judged": values[extra[0]],
                         "unjudged": values[extra[1]], "outside": outside.get(key)})
    import pyarrow as pa

    names = ["run", *(["query_id"] if per_query else []), "measure"]
    return pa.Table.from_pylist(rows, schema=pa.schema([*((n, pa.string()) for n in names),
                                                        *((n, pa.float64()) for n in HOLE_VALUES)]))
