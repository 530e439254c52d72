"""fuse() on DuckDB, embedded: load and check the runs as evaluate() does, run the one fusion statement
(sqlmetrics/fusion.py), and return the fused run as a pyarrow Table or write it atomically (TREC text,
Parquet, CSV, or a table of a DuckDB file)."""
from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path

from ..catalogue import parse
from ..catalogue.fusion import DEFAULT_NORM, fusion_method
from ..errors import SqlmetricsError
from ..fusion import fusion_settings, fusion_statement
from ..identifiers import sql_literal as _lit
from ..statement import READ
from . import checks
from ..options import EVALUATE, resolve
from .collect import python_rows
from .connection import connect
from .evaluate import evaluate_local
from .output import (EXTENSIONS, TABLE_FORMATS, database_target, refuse_spaced_ids, refuse_spaced_tag, replace_file,
                     trec_number, writable_target, write_table, write_trec)
from .readers import load
from .runs import _is_run_dict
from .sources import _source, refuse_overflow

FUSED_COLUMNS = ("query_id", "doc_id", "rank", "score")


def named_runs(runs) -> list:
    """[(name, run)]: a {name: run} dict as it is, a list or tuple named by position (run1, run2, ...)."""
    if _is_run_dict(runs):
        return [(str(name), run) for name, run in runs.items()]
    if isinstance(runs, (list, tuple)):
        return [(f"run{i}", run) for i, run in enumerate(runs, 1)]
    raise SqlmetricsError("fusion takes two or more runs: a list of runs, or a {name: run} dict; one run was given.")


def fused_sources(con, items: list, columns: dict | None, inputs: list) -> list:
    """One checked Source per (name, run) (query_id, doc_id, score), loaded on con; `inputs` collects the
    Loaded inputs, for the caller to clean up."""
    sources = []
    for name, run in items:
        loaded = load(con, run, "run", columns, name)
        inputs.append(loaded)
        if "score" not in loaded.columns:
            raise SqlmetricsError(f"{loaded.label}: has no score column; fusion reads each run's scores.")
        try:
            checks.check(con, loaded, "run", "error", "score")
        except checks.RepeatedDocument as e:  # fusion takes no duplicates=: say only what fixes it
            raise SqlmetricsError(f"{e.where}. Remove the repeat: a run to fuse ranks each document once per "
                                  "query.") from None
        sources.append(_source(loaded.view, {r: loaded.columns[r] for r in ("query_id", "doc_id", "score")}))
    return sources


def ranked_sql(fused_sql: str, tag: str | None = None) -> str:
    """The fused run ranked: per query by score descending, ties by document id descending (trec_eval's
    order), the queries by id; with a tag, as TREC text's six fields."""
    rank = "ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC)"
    if tag is None:
        return f"SELECT query_id, doc_id, {rank} AS rank, score FROM ({fused_sql}) ORDER BY query_id, rank"
    return (f"SELECT query_id, 'Q0' AS q0, doc_id, {rank} AS rank, {trec_number('score')} AS score_text, "
            f"{_lit(tag)} AS tag FROM ({fused_sql}) ORDER BY query_id, rank")


def fuse(runs, method, norm=DEFAULT_NORM, output=None, tag: str = "fused", columns: dict | None = None, *,
         memory_limit=None, threads=None, temp_directory=None, **params):
    """Fuse two or more runs into one, in ONE SQL statement on DuckDB (the method's template in sql/fusion/).

    runs: a list of runs or a {name: run} dict, each anything evaluate() reads as a run. method: a fusion
    method's name or ranx's (rrf, CombSUM / sum, CombMNZ / mnz, wsum, bordafuse, ...; `sqlmetrics list`
    shows them); norm: none, min-max (default, as ranx), max, sum, zmuv or rank, per query and run;
    params: the method's (k=60 for RRF, phi= for RBC, weights=[...] for WSum, one per run in order).

    Returns a pyarrow Table (query_id, doc_id, rank, score), ranked per query by score descending, ties by
    document id descending; with output=, writes it atomically instead: `.parquet`, `.csv`, `.tsv`, `.json`,
    `.jsonl`, a DuckDB file's table (`fused.duckdb:rrf`, replaced), or else TREC text (`query Q0 doc rank score
    tag`). memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    items = named_runs(runs)
    settings = fusion_settings(method, norm, params, len(items))
    name = f"output={str(output)!r}"
    fmt = None
    if output is not None:  # refused before any work: a folder, a device, a table of a file that is not DuckDB's
        target = database_target(output)
        fmt = "duckdb" if target else EXTENSIONS.get(Path(output).suffix.lower(), "trec")
        writable_target(target[0] if target else output, name)
    con = connect(memory_limit, threads, temp_directory)
    inputs: list = []
    try:
        sources = fused_sources(con, items, columns, inputs)
        # The fused scores once, in a table that is ranked and written from: checked first.
        con.execute(f"CREATE TEMP TABLE sqlm_fused AS {fusion_statement(sources, *settings, fixed_order=True).sql(READ)}")
        sql = "SELECT query_id, doc_id, score FROM sqlm_fused"
        refuse_overflow(con, sql, "fuse")
        if fmt in (None, "duckdb", *TABLE_FORMATS):
            table = con.sql(ranked_sql(sql)).to_arrow_table()
            if fmt is None:
                return table
            # The package's one writer of tables: atomic files, a DuckDB table replaced in one transaction.
            write_table(table, output, fmt, name, "replace" if fmt == "duckdb" else "create", ("query_id", "doc_id"))
            return None
        # TREC text (any other name): `query Q0 doc rank score tag`
        refuse_spaced_tag(tag, f"tag={tag!r}")
        for loaded in inputs:
            refuse_spaced_ids(con, loaded, name)
        replace_file(output, name, lambda tmp: write_trec(con, ranked_sql(sql, tag), str(tmp)))
        return None
    finally:
        con.close()
        for folder in {i.temporary for i in inputs if i.temporary}:
            shutil.rmtree(folder, ignore_errors=True)


def _arange(start: float, stop: float, step: float) -> list:
    """numpy.arange(start, stop, step) rounded to step's decimals, as ranx builds its grids."""
    digits = str(step)[::-1].find(".")
    return [round(start + i * step, digits) for i in range(math.ceil((stop - start) / step))]


def _range(name: str, low, high, least) -> None:
    """min_<name> and max_<name> bound a grid: numbers, least <= min <= max (RRF's k also whole)."""
    for bound, value in ((f"min_{name}", low), (f"max_{name}", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not least <= value < math.inf or \
                (name == "k" and not float(value).is_integer()):
            raise SqlmetricsError(f"optimize_fusion: {bound}={value!r} must be a {'whole ' if name == 'k' else ''}"
                                  f"number of at least {least}.")
    if low > high:
        raise SqlmetricsError(f"optimize_fusion: min_{name}={low!r} is above max_{name}={high!r}: the grid is empty.")


def fusion_grid(method, n_runs: int, step=None, min_k: int = 10, max_k: int = 100, min_phi: float = 0.01,
                max_phi: float = 1.0) -> list:
    """The parameter settings ranx's optimize_fusion tries, in its order: WSum every weight vector of
    0, step, ..., 1 (default 0.1) whose float sum is exactly 1.0; RRF k = min_k, min_k + step (default 10),
    ..., max_k; RBC phi = min_phi, ... max_phi by step (default 0.01)."""
    name = fusion_method(method).name
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 < step < math.inf):
        raise SqlmetricsError(f"optimize_fusion: step={step!r} must be a positive number (e.g. step=0.05), or left "
                              "out for ranx's default.")
    if name == "WSum":
        if step is not None and step > 1:
            raise SqlmetricsError(f"optimize_fusion: step={step!r} leaves no weights between 0 and 1 to try; give "
                                  "a step of at most 1, e.g. 0.1.")
        weights = _arange(0, 1 + (step or 0.1), step or 0.1)
        return [{"weights": list(w)} for w in itertools.product(weights, repeat=n_runs) if sum(w) == 1.0]
    if name == "RRF":
        if step is not None and not float(step).is_integer():
            raise SqlmetricsError(f"optimize_fusion: RRF's k is a whole number: step={step!r} must be one too.")
        _range("k", min_k, max_k, 1)
        return [{"k": k} for k in range(min_k, max_k + 1, int(step or 10))]
    if name == "RBC":
        _range("phi", min_phi, max_phi, 0)
        return [{"phi": phi} for phi in _arange(min_phi, max_phi + (step or 0.01), step or 0.01)]
    raise SqlmetricsError(f"{name} has no parameter to optimise; optimize_fusion tunes WSum's weights, RRF's k "
                          "and RBC's phi.")


def optimize_fusion(qrels, runs, method="wsum", norm=DEFAULT_NORM, metric="nDCG@10", train=None, *, memory_limit=None,
                    threads=None, temp_directory=None, **grid) -> dict:
    """Grid search of a fusion method's parameters, as ranx's optimize_fusion (same grids and order; among
    equal scores the last setting wins): every setting's fused run is evaluated in ONE statement, per
    query, and the setting with the best mean `metric` over the `train` queries (default: every judged
    query) is chosen. grid: step, min_k, max_k, min_phi, max_phi (fusion_grid).

    Returns {"method", "norm", "params": the chosen setting, "train": its mean over the training queries,
    "held_out": its mean over the other judged queries (None without train=), "trials": [(setting, mean
    over the training queries)]}. memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    items = named_runs(runs)
    call = parse(metric)
    if call.measure.aggregate != "mean":
        raise SqlmetricsError(f"metric={metric!r} is not averaged over queries ({call.measure.aggregate}); pick a "
                              "measure whose value is a mean, such as nDCG@10 or AP.")
    settings = fusion_grid(method, len(items), **grid)
    fuse_options = {f"sqlm_trial_{i}": {"method": method, "norm": norm, **setting} for i, setting in enumerate(settings)}
    o = resolve(EVALUATE, {"fuse": fuse_options, "memory_limit": memory_limit, "threads": threads,
                           "temp_directory": temp_directory})
    results = evaluate_local(qrels, dict(items), [metric], o, python_rows)
    _names, rows = results.per_query
    per_trial: dict = {}  # trial -> {query: value}
    for run_name, query, value in rows:
        if run_name in fuse_options:
            per_trial.setdefault(run_name, {})[query] = value
    queries = sorted({q for values in per_trial.values() for q in values})
    chosen = set(queries) if train is None else {str(q) for q in train}
    unknown = chosen - set(queries)
    if unknown or not chosen:
        raise SqlmetricsError(f"train= names queries without judgments ({', '.join(sorted(unknown)[:5])}); "
                              "train on judged queries." if unknown else "train= is empty; name the training queries.")
    held_out = [q for q in queries if q not in chosen]

    def mean(trial: str, subset) -> float:
        values = [per_trial[trial][q] or 0.0 for q in subset]
        return sum(values) / len(values)

    best, best_score, trials = None, 0.0, []
    for i, setting in enumerate(settings):
        score = mean(f"sqlm_trial_{i}", sorted(chosen))
        trials.append((setting, score))
        if score >= best_score:  # ranx keeps the last of equal scores
            best, best_score = i, score
    return {"method": fusion_method(method).name, "norm": norm, "params": settings[best], "train": best_score,
            "held_out": mean(f"sqlm_trial_{best}", held_out) if held_out else None, "trials": trials}
