"""Write the judges' demo: two judgment sets over the same documents, a human's and an LLM's, and a few systems
to rank under both (docs/rag.md, "Judge agreement"; the PPI example reads the same two files).

    python -m sqlmetrics.demo.make_judges      (fixed seed: the files are the same on every run)

- `rag_llm_qrels.txt`: 40 of the demo's queries (401-440), 20 documents each (the top of bm25.run.gz and
  rerank.run.gz, interleaved), every pair labelled 0-3 by the LLM;
- `rag_human_qrels.txt`: a random half of those queries (20), the same 20 documents each, labelled by a human:
  the demo qrels.txt's grade (0 where qrels.txt has none). The LLM gives the human's grade ~70% of the time,
  otherwise one grade off, more often above than below (LLM judges are lenient);
- `rag_systems.parquet`: six systems (run_name sys1..sys6) scoring those 20 documents for the 40 queries, each
  by the true grade plus noise of its own size, so that their order is clear at the top and close in the middle
  (one table, its run_name column naming the runs: evaluate(..., columns={"run_name": "run_name"})).

The qrels are TREC text (`query 0 doc grade`).
"""
from __future__ import annotations

import gzip
import random
from pathlib import Path

SEED = 20261207
FOLDER = Path(__file__).resolve().parent
QUERIES, DOCS, AGREE = 40, 20, 0.7
NOISE = (0.8, 1.0, 1.1, 1.2, 1.4, 2.0)  # one per system: sys2 to sys5 close


def _read(name: str, opener=open) -> list[list[str]]:
    with opener(FOLDER / name, "rt", encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def build(seed: int = SEED) -> tuple[dict[str, str], dict[str, list]]:
    """({file name: text} of the two qrels, the systems' columns)."""
    rnd = random.Random(seed)
    grade = {(q, d): int(g) for q, _, d, g in _read("qrels.txt")}
    ranked: dict[str, list[list[str]]] = {}
    for run in ("bm25.run.gz", "rerank.run.gz"):
        for q, _, d, *_ in sorted(_read(run, gzip.open), key=lambda r: (r[0], int(r[3]))):
            ranked.setdefault(q, [[], []])[run.startswith("rerank")].append(d)
    queries = sorted(ranked)[:QUERIES]
    humans = set(rnd.sample(queries, QUERIES // 2))
    human, llm, runs = [], [], {"run_name": [], "query_id": [], "doc_id": [], "score": []}
    for q in queries:
        interleaved = [d for pair in zip(*ranked[q]) for d in pair]
        docs = list(dict.fromkeys(interleaved))[:DOCS]
        for d in docs:
            truth = grade.get((q, d), 0)
            label = truth
            if rnd.random() >= AGREE:
                label = min(3, truth + 1) if rnd.random() < 0.7 or truth == 0 else truth - 1
            llm.append(f"{q} 0 {d} {label}")
            if q in humans:
                human.append(f"{q} 0 {d} {truth}")
        for s, noise in enumerate(NOISE, 1):
            for d in docs:
                for column, value in zip(runs, (f"sys{s}", q, d, round(grade.get((q, d), 0) + rnd.gauss(0, noise), 4))):
                    runs[column].append(value)
    return {"rag_human_qrels.txt": "\n".join(human) + "\n", "rag_llm_qrels.txt": "\n".join(llm) + "\n"}, runs


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts, runs = build()
    for name, text in texts.items():
        (FOLDER / name).write_text(text, encoding="utf-8")
    pq.write_table(pa.table(runs), FOLDER / "rag_systems.parquet")


if __name__ == "__main__":
    main()
