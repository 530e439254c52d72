"""Generate the demo data: `python -m sqlmetrics.demo.make_demo [FOLDER]` (default: this package's folder).

A small, realistic ad hoc retrieval setting, made with a fixed seed and the standard library only, so the
files are the same on every machine:

- 50 queries (401-450), each with 40-90 judged documents graded 0-3 (most judged documents are not
  relevant, a few are highly relevant) among ~250 candidates per query;
- `bm25.run.gz`: a lexical baseline, depth 100 — scores are a noisy function of the true grade;
- `rerank.run.gz`: a neural reranker, depth 100 — a sharper function of the grade on most queries, but
  worse than the baseline on some, as real rerankers are.

The runs are gzipped TREC run files (`qid Q0 docid rank score tag`), the qrels plain TREC qrels.
"""
from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

SEED = 20240601
QUERIES = range(401, 451)
DEPTH = 100


def build() -> dict:
    """{file name: text} of the three demo files."""
    rng = random.Random(SEED)
    qrels, runs = [], {"bm25": [], "rerank": []}
    used = set()
    for qid in QUERIES:
        n_candidates = rng.randint(200, 300)
        docs = []
        while len(docs) < n_candidates:
            doc = f"d{rng.randrange(10**6):06d}"
            if doc not in used:
                used.add(doc)
                docs.append(doc)
        n_judged = rng.randint(40, 90)
        judged = docs[:n_judged]
        grades = {}
        for doc in judged:
            u = rng.random()
            grades[doc] = 0 if u < 0.62 else 1 if u < 0.82 else 2 if u < 0.94 else 3
        if not any(grades.values()):
            grades[judged[0]] = 2
        for doc in sorted(judged):
            qrels.append(f"{qid} 0 {doc} {grades[doc]}")
        # unjudged candidates are very rarely relevant, as in a pooled collection
        truth = {doc: grades.get(doc, 1 if rng.random() < 0.03 else 0) for doc in docs}
        difficulty = rng.gauss(0, 0.8)
        skill = rng.gauss(1.0, 0.55)  # how much better the reranker is on this query (below 0: worse)
        bm25 = {d: 11.0 + 1.4 * truth[d] * max(0.2, 1 + difficulty) + rng.gauss(0, 3.0) for d in docs}
        rerank = {d: 0.42 * truth[d] * (1 + skill) + 0.25 * (bm25[d] - 11.0) + rng.gauss(0, 1.5) for d in docs}
        for name, scores in (("bm25", bm25), ("rerank", rerank)):
            ranked = sorted(docs, key=lambda d: (-round(scores[d], 4), d))[:DEPTH]
            for rank, doc in enumerate(ranked, 1):
                runs[name].append(f"{qid} Q0 {doc} {rank} {scores[doc]:.4f} {name}")
    return {
        "qrels.txt": "\n".join(qrels) + "\n",
        "bm25.run.gz": "\n".join(runs["bm25"]) + "\n",
        "rerank.run.gz": "\n".join(runs["rerank"]) + "\n",
    }


def write(folder: Path) -> None:
    for name, text in build().items():
        data = text.encode("ascii")
        if name.endswith(".gz"):
            data = gzip.compress(data, compresslevel=9, mtime=0)
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
