"""One timed evaluation in a fresh process; run.py starts this once per tool and repetition.

    python bench/tools.py TOOL QRELS RUN '{"P@10": "P_10", ...}'

The JSON maps each canonical measure name to the tool's own spelling. Imports happen before the clock
starts; `seconds` runs from "files on disk" to "aggregate numbers in a dict". The last stdout line is a
JSON object: seconds, import_seconds, aggregate {canonical: value}, extra {...}.
"""
from __future__ import annotations

import json
import sys
import time


def sqlmetrics_api(names):
    import os

    import sqlmetrics

    # run.py --memory-limit: DuckDB's limit, past which it spills to disk.
    resources = {"memory_limit": os.environ["SQLMETRICS_BENCH_MEMORY_LIMIT"]} if os.environ.get(
        "SQLMETRICS_BENCH_MEMORY_LIMIT") else {}

    def go(qrels, run):
        res = sqlmetrics.evaluate(qrels, run, list(names.values()), **resources)
        return {c: res.aggregate[n] for c, n in names.items()}, {}
    return go


def pytrec_eval_tool(names):
    import pytrec_eval

    def go(qrels, run):
        # The usual way: pytrec_eval's own line parsers, evaluate, then the per-measure aggregate.
        with open(qrels) as f:
            q = pytrec_eval.parse_qrel(f)
        with open(run) as f:
            r = pytrec_eval.parse_run(f)
        loaded = time.perf_counter()
        per_query = pytrec_eval.RelevanceEvaluator(q, set(names.values())).evaluate(r)
        return {c: pytrec_eval.compute_aggregated_measure(n, [v[n] for v in per_query.values()])
                for c, n in names.items()}, {"evaluate_seconds": time.perf_counter() - loaded}
    return go


def ranx_tool(names, parquet=False):
    import ranx

    def go(qrels, run):
        if parquet:  # ranx.from_parquet asserts object ids and int64 grades; pandas >= 3 reads str, int32
            import pandas as pd
            ids = {"query_id": object, "doc_id": object}
            q = ranx.Qrels.from_df(pd.read_parquet(qrels).astype({**ids, "relevance": "int64"}),
                                   q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")
            r = ranx.Run.from_df(pd.read_parquet(run).astype(ids),
                                 q_id_col="query_id", doc_id_col="doc_id", score_col="score")
        else:
            q = ranx.Qrels.from_file(qrels, kind="trec")
            r = ranx.Run.from_file(run, kind="trec")
        metrics = list(names.values())
        loaded = time.perf_counter()
        res = ranx.evaluate(q, r, metrics)
        agg = {c: float(res[n]) for c, n in names.items()}
        t = time.perf_counter()  # a second call in the same process: numba code already loaded
        ranx.evaluate(q, r, metrics, save_results_in_run=False)
        return agg, {"evaluate_seconds": t - loaded, "warm_evaluate_seconds": time.perf_counter() - t}
    return go


def ir_measures_tool(names):
    import ir_measures

    measures = [ir_measures.parse_measure(n) for n in names.values()]
    providers = {str(m): next(p.NAME for p in ir_measures.DefaultPipeline.providers if p.supports(m))
                 for m in measures}

    def go(qrels, run):
        res = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(qrels), ir_measures.read_trec_run(run))
        by_name = {str(m): v for m, v in res.items()}
        return {c: by_name[str(ir_measures.parse_measure(n))] for c, n in names.items()}, {"providers": providers}
    return go


def duckdb_floor(names, join=False):
    import duckdb

    ranked = ("SELECT query_id, doc_id, ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC)"
              " AS rnk FROM read_parquet(?)")

    def go(qrels, run):
        if join:  # ranking plus the left join with the judgments that every measure needs
            sql = (f"SELECT count(*), sum(coalesce(q.relevance, 0) / r.rnk) FROM ({ranked}) r "
                   "LEFT JOIN read_parquet(?) q USING (query_id, doc_id)")
            row = duckdb.connect().execute(sql, [run, qrels]).fetchone()
        else:
            row = duckdb.connect().execute(f"SELECT count(*), sum(rnk) FROM ({ranked})", [run]).fetchone()
        return {}, {"rows": row[0], "checksum": row[1]}
    return go


def duckdb_checked_floor(names):
    """What a checked, exact evaluation cannot skip: the exact repeat check of the run and the qrels (sqlmetrics'
    own: sort the hashes of (query, doc), compare neighbours with LAG), then the tie-broken ranking LEFT JOIN the
    qrels, summed so that DuckDB computes every row."""
    import duckdb

    repeats = ("SELECT COUNT(*) FROM (SELECT h, LAG(h) OVER (ORDER BY h) AS previous FROM (SELECT hash(CAST(query_id "
               "AS VARCHAR), CAST(doc_id AS VARCHAR)) AS h FROM read_parquet(?))) WHERE h = previous")
    floor = duckdb_floor(names, join=True)

    def go(qrels, run):
        con = duckdb.connect()
        repeated = [con.execute(repeats, [path]).fetchone()[0] for path in (run, qrels)]
        _, extra = floor(qrels, run)
        return {}, {**extra, "repeated": repeated}
    return go


def ir_eval_numba_tool(names):
    """ir_eval_numba's per-list functions (numba, integer ids, binary relevance), called once per query and measure
    on lists sorted by trec_eval's rule (score desc, doc id desc) with pyarrow; the means taken with numpy. Its
    functions are njit(cache=True): a first call on tiny arrays, before the clock, loads them from the disk cache."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from ir_eval_numba import metrics

    tiny = np.array([1, 2], dtype=np.int64)
    for f in (metrics.precision, metrics.recall, metrics.reciprocal_rank):
        f(tiny, tiny, 1)

    def kernel(name):  # (actual, predicted) -> the value of one list
        cut = int(name.split("@")[1]) if "@" in name else None
        if name.startswith("P@") or name in ("SetP", "Rprec"):
            return lambda a, p: metrics.precision(a, p, cut or (len(a) if name == "Rprec" else len(p)))
        if name.startswith("R@") or name == "SetR":
            return lambda a, p: metrics.recall(a, p, cut or len(p))
        if name.startswith("RR"):  # it reads predicted[:k] unchecked: k no longer than the list
            return lambda a, p: metrics.reciprocal_rank(a, p, min(cut or len(p), len(p)))
        raise ValueError(f"ir_eval_numba has no {name}")
    kernels = {n: kernel(n) for n in names.values()}

    def go(qrels, run):
        r = pq.read_table(run, columns=["query_id", "doc_id", "score"]).sort_by(
            [("query_id", "ascending"), ("score", "descending"), ("doc_id", "descending")])
        q = pq.read_table(qrels, columns=["query_id", "doc_id", "relevance"])
        q = q.filter(pc.greater_equal(q["relevance"], 1))
        # Its integer ids: a retrieved document is its row in the sorted run, a relevant one never retrieved a
        # number past them (hashing millions of string ids into a dictionary would cost more than the rest).
        ids = np.arange(len(r))
        r = r.append_column("id", pa.array(ids))
        q = q.append_column("absent", pa.array(np.arange(len(r), len(r) + len(q))))
        q = r.select(["query_id", "doc_id", "id"]).join(q, ["query_id", "doc_id"], join_type="right outer").sort_by(
            "query_id")  # its hash table over the qrels, the smaller side
        relevant = pc.coalesce(q["id"], q["absent"]).to_numpy()
        rel_q = q["query_id"].to_numpy()
        run_q = r["query_id"].combine_chunks()
        starts = np.flatnonzero(np.r_[True, pc.not_equal(run_q[1:], run_q[:-1]).to_numpy(zero_copy_only=False)])
        values = {n: [] for n in kernels}
        for start, end, query in zip(starts, np.r_[starts[1:], len(r)], run_q.take(starts).to_pylist()):
            lo, hi = np.searchsorted(rel_q, query, "left"), np.searchsorted(rel_q, query, "right")
            actual, predicted = relevant[lo:hi], ids[start:end]
            for n, f in kernels.items():
                values[n].append(f(actual, predicted) if len(actual) else 0.0)
        return {c: float(np.mean(values[n])) for c, n in names.items()}, {}
    return go


def partitioned_copy(run: str) -> str:
    """run-parts/ beside run.parquet: the same rows as Parquet files part=0..7, split by a hash of the query
    id (written by DuckDB the first time, through a partial folder renamed when complete)."""
    from pathlib import Path
    import shutil

    import duckdb

    parts = Path(run).with_name("run-parts")
    if not parts.exists():
        partial = parts.with_name("run-parts.partial")
        shutil.rmtree(partial, ignore_errors=True)
        duckdb.sql(f"COPY (SELECT *, hash(query_id) % 8 AS part FROM read_parquet('{run}')) TO '{partial}' "
                   "(FORMAT parquet, PARTITION_BY (part))")
        partial.rename(parts)
    return str(parts)


def spark_tool(names):
    """sqlmetrics.evaluate(engine=spark) on Spark local (every core) over the partitioned copy of the run.
    The session starts and the copy is made before the clock, like an import; `evaluate_seconds` is Spark's
    part. After it, outside that time, the same evaluation on DuckDB from run.parquet: the largest
    difference of any per-query value goes in extra."""
    import os

    import sqlmetrics
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{os.cpu_count()}]").appName("sqlmetrics-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    def go(qrels, run):
        parts = partitioned_copy(run)
        t = time.perf_counter()
        spark.read.parquet(qrels).createOrReplaceTempView("bench_qrels")
        spark.read.parquet(parts).createOrReplaceTempView("bench_run")
        measures = list(names.values())
        res = sqlmetrics.evaluate("bench_qrels", "bench_run", measures, engine=spark)
        seconds = time.perf_counter() - t
        spark.stop()
        on_duckdb = sqlmetrics.evaluate(qrels, run, measures).per_query.to_pylist()
        on_spark = {r["query_id"]: r for r in res.per_query.to_pylist()}
        differences = [abs(r[m] - on_spark[r["query_id"]][m]) if None not in (r[m], on_spark[r["query_id"]][m])
                       else float(r[m] is not on_spark[r["query_id"]][m]) for r in on_duckdb for m in measures]
        return {c: res.aggregate[n] for c, n in names.items()}, {
            "evaluate_seconds": seconds, "queries": len(on_spark), "queries_on_duckdb": len(on_duckdb),
            "per_query_max_difference": max(differences, default=0.0)}
    return go


TOOLS = {
    "sqlmetrics": sqlmetrics_api,
    "sqlmetrics-spark": spark_tool,
    "pytrec_eval": pytrec_eval_tool,
    "ranx": ranx_tool,
    "ranx-parquet": lambda names: ranx_tool(names, parquet=True),
    "ir_measures": ir_measures_tool,
    "duckdb-floor": duckdb_floor,
    "duckdb-floor-join": lambda names: duckdb_floor(names, join=True),
    "duckdb-checked-floor": duckdb_checked_floor,
    "ir-eval-numba": ir_eval_numba_tool,
}


def main() -> None:
    tool, qrels, run, names = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    t = time.perf_counter()
    go = TOOLS[tool](names)
    import_seconds = time.perf_counter() - t
    t = time.perf_counter()
    aggregate, extra = go(qrels, run)
    seconds = time.perf_counter() - t
    aggregate = {k: (None if v is None else float(v)) for k, v in aggregate.items()}
    print(json.dumps({"seconds": seconds, "import_seconds": import_seconds, "aggregate": aggregate, "extra": extra}))


if __name__ == "__main__":
    main()
