"""evaluate(): the one entry point. Where the tables are decides where the statement runs: files, frames
and dicts on an embedded DuckDB (local/), tables in another engine on that engine (engines/)."""
from __future__ import annotations

from .errors import SqlmetricsError
from .local.collect import fetch_arrow
from .local.evaluate import evaluate_local
from .local.output import checked_output, write_table
from .options import BY_NAME, EVALUATE, EVALUATE_ON, check_log_options, resolve, signature, taken_by
from .results import Results

_DUCKDB_ONLY = [o.name for o in taken_by(EVALUATE)
                if EVALUATE_ON not in o.takers and o.name not in ("engine", "output", "into_mode")]


def engine_options(o) -> dict:
    """evaluate_on()'s options from evaluate()'s resolved ones `o`; an option only DuckDB has is an error."""
    given = [n for n in _DUCKDB_ONLY if getattr(o, n) != BY_NAME[n].default]
    if given:
        raise SqlmetricsError(f"{', '.join(n + '=' for n in given)} {'is' if len(given) == 1 else 'are'} "
                              "DuckDB's; with engine= the tables are evaluated where they live.")
    return {opt.name: getattr(o, opt.name) for opt in taken_by(EVALUATE_ON) if opt.name in o.as_dict()}


def evaluate(qrels=None, run=None, measures=None, **options) -> Results:
    """Evaluate one run, or {run_name: run}, against qrels; every measure in one SQL statement.

    qrels, run: file paths (TREC text, CSV, TSV, Parquet, JSON Lines, `file.duckdb:table`, a SQLite
    `file.db:table`), pyarrow tables or streams, pandas or polars frames, DuckDB relations, ranx objects or
    {query_id: {doc_id: value}} dicts. Ids are text: a number id is compared as written (7 is '7').
    measures: strings in any spelling (`nDCG@10`, `map`, `P_10`, `ndcg_cut.10`, `mrr@10`, ...).

    The options are declared in sqlmetrics.options (`help(sqlmetrics.evaluate)` lists them): columns= maps
    role names in both tables wherever the role exists (mapping run_name evaluates every run of the
    table), qrels_columns= overrides it for the qrels. memory_limit ("2GB"), threads and temp_directory are
    DuckDB's: past the limit it spills to disk instead of failing.

    Logs: group_by=["date", "arm"] evaluates each (segment, query) list and adds Results.per_group;
    qrels=None with label="rating" (a column of the run) or relevance="2*purchased + clicked" / {"purchased":
    2, "clicked": 1} takes the judgments from the run itself, per list.

    output= writes per_query, typed (measures DOUBLE, ids text, dates DATE), in the format its extension
    names: .parquet, .csv, .tsv, .json, .jsonl, atomically; or "results.duckdb:table", a table of a DuckDB
    file, in one transaction, as into_mode= says: 'create' (an existing table is an error), 'replace',
    'append', or 'merge' (rows with the same key, run, segments and query_id, are replaced).

    Nugget measures (NuggetVitalStrict, ...): nuggets= and assignments= (each run's by its name); with no qrels and
    no run, the nuggets' topics are scored for every run the assignments name.

    engine= (a DB-API connection, chdb session, DataFusion or Polars SQL context, SparkSession) runs the
    same SQL where the tables live: qrels and run are then table names there (see evaluate_on).
    """
    fetch = options.pop("_fetch", fetch_arrow)  # the command line takes Python rows, not pyarrow
    progress = options.pop("_progress", None)  # the command line's progress line: told each step
    trec_grades = options.pop("_trec_grades", False)  # `sqlmetrics trec_eval` at a negative -l: see Shape.trec_grades
    o = resolve(EVALUATE, options)
    if measures is None:
        raise SqlmetricsError("evaluate: name the measures, e.g. measures=['nDCG@10'].")
    if qrels is None and run is None:
        if o.nuggets is None or o.assignments is None or o.engine is not None:
            raise SqlmetricsError("evaluate: pass qrels and run; or, for the nugget measures alone, nuggets= and "
                                  "assignments= (locally, without engine=).")
    else:
        check_log_options(qrels, o.group_by, o.label, o.relevance)
    out_format = checked_output(o.output, o.into_mode)
    if o.engine is None:
        results = evaluate_local(qrels, run, measures, o, fetch, progress, trec_grades)
    else:
        from .engines import evaluate_on  # here: a local evaluation loads no other engine's dialect

        results = evaluate_on(o.engine, measures, qrels=qrels, run=run, **engine_options(o))
    if out_format is not None:
        table = results.per_query
        key = tuple(c for c in table.column_names if c not in results.measures)
        write_table(table, o.output, out_format, f"output={str(o.output)!r}", o.into_mode, key)
    return results


evaluate.__signature__ = signature(EVALUATE, "qrels=None, run=None, measures=None")
