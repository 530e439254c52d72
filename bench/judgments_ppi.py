"""Time sqlmetrics.ppi() at issue 45's scale: 10M LLM labels (100,000 queries x 100 documents, grades 0-3), 100k
human labels (1,000 of those queries x 100 documents) and a run over the same 10M pairs, P@10. Each side runs in a
fresh process (its time and peak RSS): ppi() with memory_limit 1GB, and the other way, pandas computing the
per-query P@10 under both label sets and ppi-python's ppi_mean_ci on the arrays (its own time printed apart).

    python bench/judgments_ppi.py [--queries 100000] [--docs 100] [--human 1000] [--folder /tmp/ppi_bench]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import duckdb

OURS = """
import json, sys, time, warnings
import sqlmetrics
folder = sys.argv[1]
t = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    table = sqlmetrics.ppi(f"{folder}/llm.parquet", f"{folder}/human.parquet", {"run": f"{folder}/run.parquet"},
                           "P@10", alpha=0.05, memory_limit="1GB")
row = table.to_pylist()[0]
print(json.dumps({"seconds": time.perf_counter() - t, "ppi": [row["ppi_low"], row["ppi_mean"], row["ppi_high"]]}))
"""

PANDAS = """
import json, sys, time
import numpy as np, pandas as pd
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
folder = sys.argv[1]
t = time.perf_counter()
run = pd.read_parquet(f"{folder}/run.parquet")
# trec_eval's order: score descending, doc_id descending; the top 10 of each query
run = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
top = run.groupby("query_id", sort=False).head(10)

def p10(qrels):
    rel = qrels[qrels.relevance >= 1][["query_id", "doc_id"]]
    hits = top.merge(rel, on=["query_id", "doc_id"]).groupby("query_id").size()
    return (hits.reindex(qrels.query_id.unique(), fill_value=0) / 10.0)

llm = p10(pd.read_parquet(f"{folder}/llm.parquet"))
human = p10(pd.read_parquet(f"{folder}/human.parquet"))
y, yhat = human.to_numpy(), llm.loc[human.index].to_numpy()
unlabeled = llm.drop(human.index).to_numpy()
t_arrays = time.perf_counter() - t
t2 = time.perf_counter()
low, high = ppi_mean_ci(y, yhat, unlabeled, alpha=0.05)
mean = ppi_mean_pointestimate(y, yhat, unlabeled)
t_ppi = time.perf_counter() - t2
print(json.dumps({"seconds": time.perf_counter() - t, "arrays": t_arrays, "ppi_py": t_ppi,
                  "ppi": [float(np.squeeze(low)), float(np.squeeze(mean)), float(np.squeeze(high))]}))
"""


def write_inputs(folder: Path, queries: int, docs: int, human: int) -> None:
    """Grades 0-3 from a hash (the LLM's; the human's equal to it on about 70% of pairs, else one grade lower, as a
    lenient LLM's); the run's scores half the LLM's grade plus noise up to 2.5, so its top 10 holds some relevant
    documents and some not."""
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"""CREATE TABLE pairs AS SELECT 'q' || q AS query_id, 'd' || d AS doc_id, q,
                    hash(q * 1000003 + d) % 20 AS h, hash(q * 7919 + d * 31) % 100 AS coin, hash(d * 131 + q) % 1000 AS noise
                    FROM range({queries}) a(q), range({docs}) b(d)""")
    # grade 0 on 70% of pairs, 1 on 15%, 2 on 10%, 3 on 5%
    con.execute("CREATE TABLE graded AS SELECT *, CASE WHEN h < 14 THEN 0 WHEN h < 17 THEN 1 WHEN h < 19 THEN 2 "
                "ELSE 3 END AS llm FROM pairs")
    con.execute(f"COPY (SELECT query_id, doc_id, llm AS relevance FROM graded) TO '{folder}/llm.parquet'")
    con.execute(f"""COPY (SELECT query_id, doc_id, CASE WHEN coin < 70 THEN llm ELSE greatest(llm - 1, 0) END
                    AS relevance FROM graded WHERE q < {human}) TO '{folder}/human.parquet'""")
    con.execute(f"""COPY (SELECT query_id, doc_id, 0.5 * llm + noise / 400.0 AS score FROM graded)
                    TO '{folder}/run.parquet'""")
    con.close()


def fresh(code: str, folder: Path) -> dict:
    """The code's JSON line, run in a process of its own, with that process's peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["peak_rss_mb"] = max(peak, before) / 1024  # ru_maxrss: KiB on Linux, the largest child so far
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--queries", type=int, default=100_000)
    p.add_argument("--docs", type=int, default=100)
    p.add_argument("--human", type=int, default=1_000)
    p.add_argument("--folder", default="/tmp/ppi_bench")
    args = p.parse_args()
    folder = Path(args.folder) / f"{args.queries}x{args.docs}_{args.human}"
    if not (folder / "run.parquet").exists():
        t = time.perf_counter()
        write_inputs(folder, args.queries, args.docs, args.human)
        print(f"inputs written in {time.perf_counter() - t:.1f} s to {folder}")
    ours = fresh(OURS, folder)  # first: ru_maxrss of the children is a running maximum
    print(f"sqlmetrics.ppi (memory_limit 1GB): {ours['seconds']:.2f} s, peak RSS {ours['peak_rss_mb']:.0f} MB, "
          f"PPI {ours['ppi']}")
    other = fresh(PANDAS, folder)
    print(f"pandas + ppi-python: {other['seconds']:.2f} s (per-query arrays {other['arrays']:.2f} s, ppi_mean_ci "
          f"{other['ppi_py']:.3f} s), peak RSS {other['peak_rss_mb']:.0f} MB (or more: the larger child), "
          f"PPI {other['ppi']}")
    print(f"ratio (pandas + ppi-python) / sqlmetrics: {other['seconds'] / ours['seconds']:.2f}")


if __name__ == "__main__":
    main()
