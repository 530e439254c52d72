"""Time a PBM (or, --model dbn, a DBN) fit (sqlmetrics.clicks) on a simulated click log: the log's check and first
aggregation against the EM iterations. `python bench/clicks_pbm.py --rows 1000000 --iterations 20` (100,000 sessions
of 10 positions, 1,000 queries of 50 documents; the clicks drawn from PBM whichever model is fitted). Prints the
seconds of each step; the log is written once to a Parquet file in --folder."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sqlmetrics.clicks import dbn, pbm  # the steps fit_clicks() runs, timed one by one
from sqlmetrics.clicks.log import checked_log
from sqlmetrics.local.connection import connect
from sqlmetrics.local.readers import load


def simulated(rows: int, positions: int = 10, queries: int = 1000, docs: int = 50, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    sessions = rows // positions
    query = rng.integers(0, queries, sessions)
    doc = np.argsort(rng.random((sessions, docs)), axis=1)[:, :positions]
    alpha = rng.uniform(0.05, 0.9, (queries, docs))
    gamma = 1 / np.arange(1, positions + 1)
    click = rng.random((sessions, positions)) < gamma * alpha[query[:, None], doc]
    return pa.table({"session": np.repeat(np.arange(sessions), positions), "query": np.repeat(query, positions),
                     "doc": doc.ravel(), "position": np.tile(np.arange(1, positions + 1), sessions),
                     "clicked": click.ravel().astype(np.int8)})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--threads", type=int)
    p.add_argument("--folder", default="/tmp")
    p.add_argument("--model", choices=("pbm", "dbn"), default="pbm")
    args = p.parse_args()
    path = Path(args.folder) / f"clicks_{args.rows}.parquet"
    if not path.exists():
        pq.write_table(simulated(args.rows), path)
    con = connect(None, args.threads, None)
    t0 = time.perf_counter()
    checked_log(con, load(con, str(path), "clicks"), ())
    t1 = time.perf_counter()
    model = {"pbm": pbm, "dbn": dbn}[args.model]
    model.aggregate(con)
    t2 = time.perf_counter()
    runs = model.fit(con, args.iterations, 1e-300)
    t3 = time.perf_counter()
    con.execute(model.log_likelihood(con, model.parameters(con))).fetchall()
    t4 = time.perf_counter()
    table, what = ("sqlm_counts", "cells") if args.model == "pbm" else ("sqlm_dbn_steps", "rows below a last click")
    cells = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    print(f"{args.model}: {args.rows:,} rows ({cells:,} {what}), {runs[0][0]} iterations: "
          f"read and check {t1 - t0:.2f} s, "
          f"aggregate {t2 - t1:.2f} s, iterations {t3 - t2:.2f} s ({(t3 - t2) / runs[0][0]:.3f} s each), "
          f"parameters and log-likelihood {t4 - t3:.2f} s; total {t4 - t0:.2f} s")


if __name__ == "__main__":
    main()
