"""Write search_log.parquet: a small, realistic search log for the "logs in the warehouse" examples.

    python -m sqlmetrics.demo.make_log      (fixed seed: the file is the same on every run)

One row per shown result: date, market, arm (A/B test: control / treatment), session (one query shown once:
the list key), query, doc, position (1..10 as shown), clicked and purchased (0/1 flags), rating (an editor's
grade 0..3 for about 60% of the rows, NULL otherwise). Each query has hidden document qualities; the
treatment arm ranks by a less noisy estimate of them, so it should win on every measure. Clicks follow a
position-biased cascade-like model; purchases need a click.
"""
from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20240611
OUT = Path(__file__).with_name("search_log.parquet")


def rows(seed: int = SEED) -> dict:
    rnd = random.Random(seed)
    queries = [f"q{i:02d}" for i in range(40)]
    catalogue = {q: {f"{q}_d{j:02d}": rnd.choice([0, 0, 0, 1, 1, 2, 3]) for j in range(25)} for q in queries}
    out = {k: [] for k in ("date", "market", "arm", "session", "query", "doc", "position", "clicked",
                           "purchased", "rating")}
    session = 0
    for day in ("2024-06-01", "2024-06-02", "2024-06-03"):
        for market in ("de", "us"):
            for arm, noise in (("control", 1.6), ("treatment", 0.9)):
                for _ in range(25):
                    session += 1
                    q = rnd.choice(queries)
                    docs = catalogue[q]
                    shown = sorted(docs, key=lambda d: -(docs[d] + rnd.gauss(0, noise)))[:10]
                    stop = False
                    for pos, d in enumerate(shown, 1):
                        grade = docs[d]
                        p_click = 0 if stop else (0.9 / pos ** 0.7) * (0.1 + 0.3 * grade)
                        clicked = int(rnd.random() < p_click)
                        purchased = int(clicked and grade >= 2 and rnd.random() < 0.35 * grade)
                        stop = stop or purchased or (clicked and rnd.random() < 0.5)
                        out["date"].append(day)
                        out["market"].append(market)
                        out["arm"].append(arm)
                        out["session"].append(f"s{session:04d}")
                        out["query"].append(q)
                        out["doc"].append(d)
                        out["position"].append(pos)
                        out["clicked"].append(clicked)
                        out["purchased"].append(purchased)
                        out["rating"].append(grade if rnd.random() < 0.6 else None)
    return out


def table(seed: int = SEED) -> pa.Table:
    data = rows(seed)
    types = {"position": pa.int32(), "clicked": pa.int8(), "purchased": pa.int8(), "rating": pa.int8()}
    return pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in data.items()})


def main(path: Path = OUT) -> Path:
    pq.write_table(table(), path, compression="zstd")
    return path


if __name__ == "__main__":
    print(main())
