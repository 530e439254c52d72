"""Deterministic synthetic qrels and runs for the benchmark, written as TREC text and Parquet.

    python bench/generate.py S M            # bench/data/S/, bench/data/M/
    python bench/generate.py S --no-ties    # bench/data/S-noties/: same rankings, distinct scores

Every query has 10-50 judged documents (grades 0-3, at least one relevant and one judged non-relevant)
and a ranking of `depth` documents: about 75% of its relevant and 50% of its judged non-relevant
documents, the rest unjudged. Scores are 5 + N(mu, 1) rounded to 3 decimals, mu = 1 + grade/2 for
relevant, 1 for judged non-relevant and 0 for unjudged documents, so ties occur within queries (about
1 tied pair per query at depth 100, about 140 at depth 1000). Rows are written in rank order with ties
in random order (as a real system would emit them), so only tools that apply trec_eval's tie rule
(score desc, doc id desc) agree with trec_eval on tied queries. With --no-ties the same rankings get the
distinct scores (depth - rank + 1) / 8, exact in float32, so every tool sees the same order.

run2.parquet is a second run for compare and report (query_id, doc_id, score): the same documents, each score
moved by round(score + (hash(doc_id) % 1000) / 1000 - 0.5, 3), DuckDB's hash.

Doc ids are "d<n>" with n < 10^7 shared across queries (variable width, so byte order differs from
numeric order); query ids are "q<n>". Generation is vectorised per chunk of CHUNK queries and streamed
to disk, so memory stays bounded (about 1.5 GB at depth 1000); the output depends only on the seed.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

SIZES = {"S": (1_000, 100), "M": (7_000, 1000), "L": (50_000, 1000), "XL": (200_000, 1000)}
DATA = Path(__file__).resolve().parent / "data"
CHUNK = 2_000  # queries per chunk; part of the output's definition (the RNG is seeded per chunk)
MAX_JUDGED = 50
CORPUS = 10_000_000  # doc numbers per query are (offset + slot * STRIDE) % CORPUS: distinct within a query
STRIDE = 104_729  # prime, coprime with CORPUS
GRADE_P = [0.6, 0.2, 0.13, 0.07]  # grades 0, 1, 2, 3 of judged documents
TREC = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")

QRELS_SCHEMA = pa.schema([("query_id", pa.string()), ("doc_id", pa.string()), ("relevance", pa.int32())])
RUN_SCHEMA = pa.schema([("query_id", pa.string()), ("doc_id", pa.string()), ("score", pa.float64()),
                        ("rank", pa.int32())])


def ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers.ravel()), pa.string()), "")


def chunk(seed: int, index: int, first_query: int, n: int, depth: int, ties: bool) -> tuple[pa.Table, pa.Table]:
    """Queries first_query .. first_query + n - 1 as (qrels, run) tables; depends only on (seed, index)."""
    rng = np.random.default_rng([seed, index])
    qnum = np.arange(first_query, first_query + n)
    offset = (qnum * 7919) % CORPUS

    # Judgments: slots 0 .. n_judged-1; slot 0 is relevant, slot 1 judged non-relevant.
    n_judged = rng.integers(10, MAX_JUDGED + 1, n)
    slots = np.arange(MAX_JUDGED)
    judged = slots < n_judged[:, None]
    grade = rng.choice(4, size=(n, MAX_JUDGED), p=GRADE_P)
    grade[:, 0] = rng.integers(1, 4, n)
    grade[:, 1] = 0

    # Retrieved judged documents first (in slot order), then unjudged slots n_judged, n_judged + 1, ...
    retrieved = judged & (rng.random((n, MAX_JUDGED)) < np.where(grade > 0, 0.75, 0.5))
    n_ret = retrieved.sum(1)[:, None]
    first = np.argsort(~retrieved, axis=1, kind="stable")  # retrieved slots first
    pos = np.arange(depth)
    head = np.zeros((n, depth), dtype=np.int64)
    head[:, :MAX_JUDGED] = first  # depth >= 100 > MAX_JUDGED
    is_judged = pos < n_ret
    slot = np.where(is_judged, head, n_judged[:, None] + pos - n_ret)
    g = np.where(is_judged, np.take_along_axis(grade, np.minimum(slot, MAX_JUDGED - 1), 1), -1)

    mu = np.select([g > 0, g == 0], [1.0 + 0.5 * g, 1.0], 0.0)
    milli = np.rint((5.0 + mu + rng.standard_normal((n, depth))) * 1000).astype(np.int64)
    # Rank order: score descending, ties in random order.
    order = np.argsort(-milli * (1 << 20) + rng.integers(0, 1 << 20, (n, depth)), axis=1)
    slot = np.take_along_axis(slot, order, 1)
    score = np.take_along_axis(milli, order, 1) / 1000.0
    if not ties:
        score = np.broadcast_to((depth - pos) / 8.0, (n, depth))

    qid = ids("q", qnum)
    doc = ids("d", (offset[:, None] + slot * STRIDE) % CORPUS)
    run = pa.table([pc.take(qid, np.repeat(np.arange(n), depth)), doc, pa.array(score.ravel()),
                    pa.array(np.tile(pos + 1, n).astype(np.int32))], schema=RUN_SCHEMA)
    qi, si = np.nonzero(judged)
    qrels = pa.table([pc.take(qid, qi), ids("d", (offset[qi] + si * STRIDE) % CORPUS),
                      pa.array(grade[qi, si].astype(np.int32))], schema=QRELS_SCHEMA)
    return qrels, run


def trec_qrels(t: pa.Table) -> pa.Table:
    zero = pa.array(np.zeros(len(t), dtype=np.int8))
    return pa.table({"q": t["query_id"], "it": zero, "d": t["doc_id"], "rel": t["relevance"]})


def trec_run(t: pa.Table) -> pa.Table:
    return pa.table({"q": t["query_id"], "q0": pa.repeat("Q0", len(t)), "d": t["doc_id"], "rank": t["rank"],
                     "score": t["score"], "tag": pa.repeat("bench", len(t))})


def generate(size: str, seed: int = 42, ties: bool = True) -> dict:
    n_queries, depth = SIZES[size]
    name = size if ties else f"{size}-noties"
    out = DATA / name
    tmp = DATA / f".{name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    start = time.perf_counter()
    writers = {
        "qrels.parquet": pq.ParquetWriter(tmp / "qrels.parquet", QRELS_SCHEMA),
        "run.parquet": pq.ParquetWriter(tmp / "run.parquet", RUN_SCHEMA),
        "qrels.txt": None, "run.txt": None,
    }
    rows = {"qrels": 0, "run": 0}
    for index, first in enumerate(range(0, n_queries, CHUNK)):
        qrels, run = chunk(seed, index, first + 1, min(CHUNK, n_queries - first), depth, ties)
        rows["qrels"] += len(qrels)
        rows["run"] += len(run)
        writers["qrels.parquet"].write_table(qrels)
        writers["run.parquet"].write_table(run)
        for fname, table in (("qrels.txt", trec_qrels(qrels)), ("run.txt", trec_run(run))):
            if writers[fname] is None:
                writers[fname] = pacsv.CSVWriter(tmp / fname, table.schema, write_options=TREC)
            writers[fname].write_table(table)
        print(f"\r{name}: {min(first + CHUNK, n_queries):,}/{n_queries:,} queries", end="", file=sys.stderr, flush=True)
    for w in writers.values():
        w.close()
    # A second run for compare and report: the same documents, each score moved by a hashed -0.5 .. +0.499.
    duckdb.sql(f"COPY (SELECT query_id, doc_id, round(score + (hash(doc_id) % 1000) / 1000.0 - 0.5, 3) AS score "
               f"FROM read_parquet('{tmp / 'run.parquet'}')) TO '{tmp / 'run2.parquet'}' (FORMAT parquet)")
    seconds = time.perf_counter() - start
    meta = {"size": size, "name": name, "queries": n_queries, "depth": depth, "seed": seed, "ties": ties,
            "rows": rows, "generate_seconds": round(seconds, 1),
            "bytes": {f.name: f.stat().st_size for f in sorted(tmp.iterdir())}}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    mb = sum(meta["bytes"].values()) / 1e6
    print(f"\r{name}: {rows['run']:,} run rows, {rows['qrels']:,} qrels rows, {mb:,.0f} MB, {seconds:.1f} s -> {out}",
          file=sys.stderr)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="+", choices=list(SIZES))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-ties", action="store_true", help="distinct scores (writes <size>-noties)")
    args = ap.parse_args()
    for size in args.sizes:
        n_queries, depth = SIZES[size]
        need = n_queries * depth * 67 + n_queries * 30 * 35  # ~38 B/line TREC + ~29 B/row Parquet (run, run2), qrels
        free = shutil.disk_usage(DATA.parent).free
        if need * 1.2 > free:
            sys.exit(f"{size} needs about {need / 1e9:.1f} GB and {free / 1e9:.1f} GB is free; not generating.")
        generate(size, args.seed, not args.no_ties)


if __name__ == "__main__":
    main()
