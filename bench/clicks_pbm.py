"""Time a PBM fit (sqlmetrics.clicks) on a simulated click log, against a hand-written DuckDB EM over the same log
(the floor), each in a process of its own under the same --memory-limit, with its peak RSS.

    python bench/clicks_pbm.py --rows 1000000 --iterations 20
    python bench/clicks_pbm.py --rows 100000000 --memory-limit 1GB     # issue 44's bound

The log (sessions of 10 positions, 1,000 queries of 50 documents, examination 1/position, attractiveness uniform in
[0.05, 0.9]; seeded) is written once to --folder as Parquet, a million sessions at a time. Then, one process each:
  steps    fit_clicks()'s steps timed one by one: read and check the log, count it, the iterations, the parameters
           (--model dbn: DBN's, on the same log, whose clicks are PBM's; the other measurements are PBM's)
  floor    the same EM hand-written in DuckDB: the counts per (query, doc, position), then per iteration one
           statement for the new attractiveness and one for the new examination; nothing else (no per-segment
           stopping, no change measured, no checks)
  numpy    the same EM vectorised in numpy (the log read whole; counted, then two np.bincount per iteration)
  command  `sqlmetrics clicks LOG --model pbm -o params.parquet` end to end
Each prints its seconds and its peak RSS (the process's maximum resident set). The iterations' ratio steps / floor
is issue 44's bound (<= 1.2)."""
from __future__ import annotations

import argparse
import functools
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

POSITIONS, QUERIES, DOCS = 10, 1000, 50
WHAT = ("steps", "floor", "numpy", "command")
CHUNK = 1_000_000  # sessions generated at a time: a 100M-row log is never in memory whole


def simulated(sessions: int, first: int, rng, alpha) -> pa.Table:
    """`sessions` sessions numbered from `first`: a query each, 10 of its 50 documents in a random order, clicks
    drawn from the PBM (examination 1/position times the pair's attractiveness)."""
    query = rng.integers(0, QUERIES, sessions)
    doc = np.argsort(rng.random((sessions, DOCS)), axis=1)[:, :POSITIONS]
    gamma = 1 / np.arange(1, POSITIONS + 1)
    click = rng.random((sessions, POSITIONS)) < gamma * alpha[query[:, None], doc]
    return pa.table({"session": np.repeat(np.arange(first, first + sessions), POSITIONS),
                     "query": np.repeat(query, POSITIONS).astype(np.int32), "doc": doc.ravel().astype(np.int32),
                     "position": np.tile(np.arange(1, POSITIONS + 1, dtype=np.int8), sessions),
                     "clicked": click.ravel().astype(np.int8)})


def write_log(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.05, 0.9, (QUERIES, DOCS))
    sessions = rows // POSITIONS
    partial = path.with_suffix(".partial")
    with pq.ParquetWriter(partial, simulated(1, 0, np.random.default_rng(0), alpha).schema) as writer:
        for first in range(0, sessions, CHUNK):
            writer.write_table(simulated(min(CHUNK, sessions - first), first, rng, alpha))
    partial.rename(path)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def steps(path: str, iterations: int, memory_limit, threads, model: str = "pbm") -> dict:
    """fit_clicks()'s steps on the log, each timed (the same calls fit_clicks makes, in its order)."""
    from sqlmetrics.clicks import dbn, pbm
    from sqlmetrics.clicks.log import checked_log
    from sqlmetrics.local.connection import connect
    from sqlmetrics.local.readers import load

    con = connect(memory_limit, threads, None)
    t0 = time.perf_counter()
    checked_log(con, load(con, path, "clicks"), ())
    t1 = time.perf_counter()
    fitted = {"pbm": pbm, "dbn": dbn}[model]
    fitted.aggregate(con)
    t2 = time.perf_counter()
    runs = fitted.fit(con, iterations, 1e-300)
    t3 = time.perf_counter()
    con.execute(fitted.log_likelihood(con, fitted.parameters(con))).fetchall()
    t4 = time.perf_counter()
    cells = con.execute(f"SELECT COUNT(*) FROM {'sqlm_counts' if model == 'pbm' else 'sqlm_dbn_steps'}").fetchone()[0]
    return {"cells": cells, "iterations": runs[0][0], "check": t1 - t0, "count": t2 - t1, "iterate": t3 - t2,
            "finish": t4 - t3, "total": t4 - t0, "peak_mb": _peak_mb()}


def floor(path: str, iterations: int, memory_limit, threads) -> dict:
    """The PBM EM as one would write it by hand in DuckDB: count, then two GROUP BYs per iteration."""
    import duckdb

    config = {k: v for k, v in (("memory_limit", memory_limit), ("threads", threads)) if v is not None}
    con = duckdb.connect(config={**config, "temp_directory": tempfile.mkdtemp(prefix="floor")})
    t0 = time.perf_counter()
    con.execute(f"""CREATE TABLE cells AS SELECT query, doc, position, COUNT(*) AS n, SUM(clicked) AS k
                    FROM read_parquet('{path}') GROUP BY ALL""")
    con.execute("CREATE TABLE alpha AS SELECT DISTINCT query, doc, 0.5::DOUBLE AS a FROM cells")
    con.execute("CREATE TABLE gamma AS SELECT DISTINCT position, 0.5::DOUBLE AS g FROM cells")
    t1 = time.perf_counter()
    for _ in range(iterations):
        posterior = "FROM cells JOIN alpha USING (query, doc) JOIN gamma USING (position)"
        con.execute(f"""CREATE OR REPLACE TABLE alpha_next AS SELECT query, doc,
                        SUM(k + (n - k) * (1 - g) * a / (1 - g * a)) / SUM(n) AS a {posterior} GROUP BY query, doc""")
        con.execute(f"""CREATE OR REPLACE TABLE gamma AS SELECT position,
                        SUM(k + (n - k) * g * (1 - a) / (1 - g * a)) / SUM(n) AS g {posterior} GROUP BY position""")
        con.execute("DROP TABLE alpha")
        con.execute("ALTER TABLE alpha_next RENAME TO alpha")
    t2 = time.perf_counter()
    return {"count": t1 - t0, "iterate": t2 - t1, "iterations": iterations, "peak_mb": _peak_mb()}


def numpy_em(path: str, iterations: int, memory_limit, threads) -> dict:
    """The PBM EM vectorised in numpy, as a Python user would write it: the log read whole (pyarrow), counted per
    (query, doc, position) with np.unique, then per iteration two np.bincount sums."""
    t0 = time.perf_counter()
    log = pq.read_table(path, columns=["query", "doc", "position", "clicked"])
    query, doc, position, clicked = (log[c].to_numpy() for c in ("query", "doc", "position", "clicked"))
    del log
    cell = (query.astype(np.int64) * DOCS + doc) * (POSITIONS + 1) + position
    cells, where = np.unique(cell, return_inverse=True)
    n = np.bincount(where).astype(float)
    k = np.bincount(where, weights=clicked)
    del query, doc, position, clicked, cell, where
    pairs, pair = np.unique(cells // (POSITIONS + 1), return_inverse=True)
    slots, slot = np.unique(cells % (POSITIONS + 1), return_inverse=True)
    alpha, gamma = np.full(len(pairs), 0.5), np.full(len(slots), 0.5)
    t1 = time.perf_counter()
    for _ in range(iterations):
        a, g = alpha[pair], gamma[slot]
        rest = (n - k) / np.maximum(1 - g * a, 1e-300)
        alpha, gamma = (np.bincount(pair, k + rest * (1 - g) * a) / np.bincount(pair, n),
                        np.bincount(slot, k + rest * g * (1 - a)) / np.bincount(slot, n))
    t2 = time.perf_counter()
    return {"count": t1 - t0, "iterate": t2 - t1, "iterations": iterations, "peak_mb": _peak_mb()}


def command(path: str, iterations: int, memory_limit, threads) -> dict:
    out = Path(tempfile.mkdtemp(prefix="clicks")) / "params.parquet"
    args = [sys.executable, "-m", "sqlmetrics", "clicks", path, "--model", "pbm", "--iterations", str(iterations),
            "--tolerance", "1e-300", "-o", str(out)]
    args += ["--memory-limit", memory_limit] if memory_limit else []
    args += ["--threads", str(threads)] if threads else []
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"sqlmetrics clicks failed ({done.returncode}): {done.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"total": seconds, "peak_mb": peak}


def _child(what: str, args) -> dict:
    """Run one measurement in a fresh process: its peak RSS is its own, and `process` its whole wall time
    (interpreter and imports included)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", what, "--log", str(args.log),
                           "--iterations", str(args.iterations), "--memory-limit", args.memory_limit or "",
                           "--threads", str(args.threads or 0), "--model", args.model], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{what} failed: {done.stderr.strip()}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "process": time.perf_counter() - start}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--memory-limit")
    p.add_argument("--threads", type=int)
    p.add_argument("--folder", default="/tmp")
    p.add_argument("--model", choices=("pbm", "dbn"), default="pbm", help="the model of steps")
    p.add_argument("--repeat", type=int, default=1, help="run each this many times, in turn; print the medians")
    p.add_argument("--only", choices=WHAT, action="append")
    p.add_argument("--child", choices=WHAT, help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run = {"steps": functools.partial(steps, model=args.model), "floor": floor, "numpy": numpy_em,
               "command": command}[args.child]
        print(json.dumps(run(args.log, args.iterations, args.memory_limit or None, args.threads or None)))
        return
    args.log = Path(args.folder) / f"clicks_{args.rows}.parquet"
    if not args.log.exists():
        t = time.perf_counter()
        write_log(args.log, args.rows)
        print(f"wrote {args.log} ({args.log.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.0f} s")
    runs = [{what: _child(what, args) for what in args.only or WHAT} for _ in range(args.repeat)]  # interleaved
    results = {what: {k: statistics.median(r[what][k] for r in runs) for k in runs[0][what]} for what in runs[0]}
    print(f"{args.rows:,} rows, {args.iterations} iterations, memory limit {args.memory_limit or 'none'}"
          f"{f', medians of {args.repeat}' if args.repeat > 1 else ''}")
    for what, r in results.items():
        print(f"  {what:8s} " + ", ".join(f"{k} {v:,.2f}" if k != "iterations" and k != "cells" else f"{k} {v:,.0f}"
                                          for k, v in r.items()))
    if "steps" in results and "floor" in results:
        ours, hand = (results[w]["iterate"] / results[w]["iterations"] for w in ("steps", "floor"))
        print(f"  per iteration: {ours:.3f} s against the floor's {hand:.3f} s: {ours / hand:.2f}x")
    if "command" in results and "numpy" in results:
        mine, theirs = results["command"]["total"], results["numpy"]["process"]
        print(f"  end to end (whole processes): the command {mine:.2f} s, numpy {theirs:.2f} s: "
              f"numpy / command {theirs / mine:.2f}x")


if __name__ == "__main__":
    main()
