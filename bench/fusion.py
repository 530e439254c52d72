"""Time sqlmetrics.fuse against ranx.fuse on two runs of 1M rows each, in one process, back to back.

    python bench/fusion.py [--queries 1000] [--depth 1000] [--methods rrf,wsum,mnz] [--repeat 1]

The two runs rank `depth` documents for each of `queries` queries, drawn from a pool of 1.5 x depth
documents per query (so about two thirds of each run's documents are in the other run too), with distinct
scores in each list (no ties: the tools agree on every score). Both are written as Parquet to a temporary
folder, and each tool starts from those files: sqlmetrics.fuse reads them and returns the fused run as a
pyarrow Table; ranx reads them (Run.from_parquet) and fuses them. ranx's fuse alone (Runs already in
memory) is timed too. ranx is compiled (numba) by a small fusion first, outside the timings. The fused
scores of the two tools are compared (largest absolute difference). Prints a markdown table.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import sqlmetrics

# method -> (sqlmetrics method, ranx method, normalisation, parameters)
METHODS = {
    "rrf": ("RRF", "rrf", "min-max", {"k": 60}),
    "wsum": ("WSum", "wsum", "min-max", {"weights": [0.3, 0.7]}),
    "mnz": ("CombMNZ", "mnz", "zmuv", {}),
}


def write_runs(folder: Path, queries: int, depth: int, seed: int = 7) -> list:
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(2):
        q = np.repeat(np.arange(queries), depth)
        docs = np.concatenate([rng.choice(int(depth * 1.5), depth, replace=False) for _ in range(queries)])
        scores = np.concatenate([rng.permutation(depth) for _ in range(queries)]) / depth
        table = pa.table({"query_id": pa.array([f"q{x}" for x in q]), "doc_id": pa.array([f"d{x}" for x in docs]),
                          "score": pa.array(scores + i)})
        path = folder / f"run{i}.parquet"
        pq.write_table(table, path)
        paths.append(path)
    return paths


def _frame(path: Path):
    """The run as the pandas frame ranx takes: ids as Python objects (pandas 3 reads text as its own string
    dtype, which ranx's Run.from_parquet refuses)."""
    frame = pq.read_table(path).to_pandas()
    return frame.astype({"query_id": object, "doc_id": object})


def time_it(fn) -> tuple:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--methods", default="rrf,wsum,mnz")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    import ranx  # the oracle and the competitor; imported after the data is made

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "small").mkdir()
        small = [ranx.Run.from_df(_frame(p), q_id_col="query_id", doc_id_col="doc_id", score_col="score")
                 for p in write_runs(Path(tmp) / "small", 2, 4)]
        for name in args.methods.split(","):  # numba's compilation, outside the timings (same types as timed)
            _, method, norm, params = METHODS[name]
            ranx.fuse(small, norm=norm, method=method, params=params)
        paths = write_runs(Path(tmp), args.queries, args.depth)
        rows = ["| method (norm) | sqlmetrics s | ranx s (files to fused run) | ranx fuse alone s | ranx / sqlmetrics | largest score difference |",
                "|---|---:|---:|---:|---:|---:|"]
        for name in args.methods.split(","):
            ours_name, method, norm, params = METHODS[name]
            ours_t, ranx_t, fuse_t = [], [], []
            for _ in range(args.repeat):
                t, ours = time_it(lambda: sqlmetrics.fuse([str(p) for p in paths], ours_name, norm=norm, **params))
                ours_t.append(t)

                def with_ranx():
                    runs = [ranx.Run.from_df(_frame(p), q_id_col="query_id", doc_id_col="doc_id", score_col="score")
                            for p in paths]
                    t, fused = time_it(lambda: ranx.fuse(runs, norm=norm, method=method, params=params))
                    fuse_t.append(t)
                    return fused

                t, theirs = time_it(with_ranx)
                ranx_t.append(t)
            frame = theirs.to_dataframe()
            con = duckdb.connect()
            con.register("ours", ours)
            con.register("theirs", frame)
            diff, missing = con.sql("SELECT MAX(ABS(o.score - t.score)), COUNT(*) FILTER (WHERE t.score IS NULL) FROM "
                                    "ours o LEFT JOIN theirs t ON o.query_id = t.q_id AND o.doc_id = t.doc_id").fetchall()[0]
            assert missing == 0 and len(frame) == ours.num_rows, "the tools fused different documents"
            o, r, f = (statistics.median(x) for x in (ours_t, ranx_t, fuse_t))
            rows.append(f"| {ours_name} ({norm}) | {o:.2f} | {r:.2f} | {f:.2f} | {r / o:.1f}x | {diff:.1e} |")
        print(f"2 runs x {args.queries * args.depth:,} rows ({args.queries:,} queries x {args.depth}); "
              f"fused run {ours.num_rows:,} rows; median of {args.repeat}; {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores; sqlmetrics {sqlmetrics.__version__}, duckdb {duckdb.__version__}, "
              f"ranx {ranx.__version__ if hasattr(ranx, '__version__') else '0.3.21'}\n")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
