"""Time agreement() (sqlmetrics.judgments) on issue 45's scale, against scikit-learn + krippendorff on the same
data, each in a process of its own, with its peak RSS.

    python bench/judgments_agreement.py                                 # 10M LLM labels, 100k human, 1GB
    python bench/judgments_agreement.py --queries 1000 --memory-limit 256MB

The data (seeded; written once to --folder as Parquet): the LLM labels every one of --queries queries × 100
documents 0-3; the human labels 100k of those pairs (1,000 queries × 100 documents), agreeing with the LLM ~70% of
the time. Then, one process each:
  sqlmetrics  agreement(human, llm, per_query=True, memory_limit=...): read, check, join, the statistics
  peers       pandas: both files read whole, merged on (query, doc), then sklearn's cohen_kappa_score (3 weightings)
              and krippendorff.alpha (3 levels) on the overlap: overall only (per query would be 1,000 more calls)
Each prints its seconds and peak RSS; the last line is the ratio peers / sqlmetrics."""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

DOCS, HUMAN_QUERIES = 100, 1000


def write_data(folder: Path, queries: int, seed: int = 0) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    llm, human = folder / f"llm_{queries}.parquet", folder / f"human_{queries}.parquet"
    if llm.exists() and human.exists():
        return human, llm
    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(DOCS)]
    with pq.ParquetWriter(llm, pa.schema([("query_id", pa.string()), ("doc_id", pa.string()),
                                          ("relevance", pa.int8())])) as writer:
        for first in range(0, queries, 10_000):  # 1M labels at a time
            n = min(10_000, queries - first)
            q = np.repeat([f"q{i:06d}" for i in range(first, first + n)], DOCS)
            writer.write_table(pa.table({"query_id": q, "doc_id": np.tile(docs, n),
                                         "relevance": rng.integers(0, 4, n * DOCS).astype(np.int8)}))
    sample = pq.read_table(llm, filters=[("query_id", "<", f"q{HUMAN_QUERIES:06d}")])
    agree = rng.random(sample.num_rows) < 0.7
    shifted = (sample["relevance"].to_numpy() + rng.integers(1, 4, sample.num_rows)) % 4
    labels = np.where(agree, sample["relevance"].to_numpy(), shifted).astype(np.int8)
    pq.write_table(sample.set_column(2, "relevance", pa.array(labels)), human)
    return human, llm


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_sqlmetrics(human: str, llm: str, memory_limit: str) -> dict:
    from sqlmetrics.judgments import agreement

    t = time.perf_counter()
    r = agreement(human, llm, per_query=True, memory_limit=memory_limit)
    seconds = time.perf_counter() - t
    row = r.overall.to_pylist()[0]
    return {"seconds": seconds, "peak_mb": _peak_mb(), "kappa": row["kappa"], "alpha_ordinal": row["alpha_ordinal"],
            "pairs": row["pairs"], "queries": r.per_query.num_rows}


def run_peers(human: str, llm: str) -> dict:
    import krippendorff
    import numpy as np
    import pandas as pd
    from sklearn.metrics import cohen_kappa_score

    t = time.perf_counter()
    both = pd.read_parquet(human).merge(pd.read_parquet(llm), on=["query_id", "doc_id"], suffixes=("_a", "_b"))
    a, b = both["relevance_a"].to_numpy(), both["relevance_b"].to_numpy()
    kappas = [cohen_kappa_score(a, b, weights=w) for w in (None, "linear", "quadratic")]
    data = np.vstack([a, b]).astype(float)
    alphas = [krippendorff.alpha(data, level_of_measurement=level) for level in ("nominal", "ordinal", "interval")]
    return {"seconds": time.perf_counter() - t, "peak_mb": _peak_mb(), "kappa": kappas[0],
            "alpha_ordinal": alphas[1], "pairs": len(both)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=100_000, help="LLM-labelled queries (x100 documents)")
    p.add_argument("--memory-limit", default="1GB")
    p.add_argument("--folder", default="/tmp/sqlmetrics-bench-judgments")
    p.add_argument("--only", choices=("sqlmetrics", "peers"), help=argparse.SUPPRESS)  # one child process's part
    args = p.parse_args()
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    human, llm = write_data(folder, args.queries)
    if args.only:
        out = run_sqlmetrics(str(human), str(llm), args.memory_limit) if args.only == "sqlmetrics" else \
            run_peers(str(human), str(llm))
        print(json.dumps(out))
        return
    results = {}
    for part in ("sqlmetrics", "peers"):
        done = subprocess.run([sys.executable, __file__, "--queries", str(args.queries), "--memory-limit",
                               args.memory_limit, "--folder", str(folder), "--only", part],
                              check=True, capture_output=True, text=True)
        results[part] = json.loads(done.stdout.splitlines()[-1])
        print(f"{part:<10} {results[part]['seconds']:8.2f} s  peak RSS {results[part]['peak_mb']:7.0f} MB  "
              f"kappa {results[part]['kappa']:.6f}  alpha_ordinal {results[part]['alpha_ordinal']:.6f}  "
              f"pairs {results[part]['pairs']}")
    print(f"peers / sqlmetrics: {results['peers']['seconds'] / results['sqlmetrics']['seconds']:.2f}x time")


if __name__ == "__main__":
    main()
