"""Write the judges' demo: two judgment sets over the same documents, a human's and an LLM's, and a few systems
to rank under both (docs/rag.md, "Judge agreement"; the PPI example reads the same two files).

    python -m sqlmetrics.demo.make_judges      (fixed seed: the files are the same on every run)

- `rag_llm_qrels.txt`: 40 of the demo's queries (401-440), 20 documents each (the top of bm25.run.gz and
  rerank.run.gz, interleaved), every pair labelled 0-3 by the LLM;
- `rag_human_qrels.txt`: a random half of those queries (20), the same 20 documents each, labelled by a human:
  the demo qrels.txt's grade (0 where qrels.txt has none). The LLM gives the human's grade ~70% of the time,
  otherwise one grade off, more often above than below (LLM judges are lenient);
- `judge_runs.run.gz`: six systems (tags sys1..sys6) ranking those 20 documents for the 40 queries, each by the
  true grade plus noise of its own size, so that their order is clear at the top and close in the middle.

TREC text: qrels `query 0 doc grade`, the run `query Q0 doc rank score tag` (gzipped with a fixed timestamp).
"""
from __future__ import annotations

import gzip
import random
from pathlib import Path

SEED = 20261207
FOLDER = Path(__file__).resolve().parent
QUERIES, DOCS, AGREE = 40, 20, 0.7
NOISE = (0.4, 0.8, 1.2, 1.3, 2.0, 3.0)  # one per system: sys3 and sys4 are nearly tied


def _read(name: str, opener=open) -> list[list[str]]:
    with opener(FOLDER / name, "rt", encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def build(seed: int = SEED) -> dict[str, str]:
    """{file name: text} of the three files."""
    rnd = random.Random(seed)
    grade = {(q, d): int(g) for q, _, d, g in _read("qrels.txt")}
    ranked: dict[str, list[list[str]]] = {}
    for run in ("bm25.run.gz", "rerank.run.gz"):
        for q, _, d, *_ in sorted(_read(run, gzip.open), key=lambda r: (r[0], int(r[3]))):
            ranked.setdefault(q, [[], []])[run.startswith("rerank")].append(d)
    queries = sorted(ranked)[:QUERIES]
    humans = set(rnd.sample(queries, QUERIES // 2))
    human, llm, runs = [], [], []
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
            scored = sorted(((grade.get((q, d), 0) + rnd.gauss(0, noise), d) for d in docs), reverse=True)
            runs += [f"{q} Q0 {d} {r} {score:.4f} sys{s}" for r, (score, d) in enumerate(scored, 1)]
    return {"rag_human_qrels.txt": "\n".join(human) + "\n", "rag_llm_qrels.txt": "\n".join(llm) + "\n",
            "judge_runs.run.gz": "\n".join(runs) + "\n"}


def main() -> None:
    for name, text in build().items():
        data = text.encode("utf-8")
        (FOLDER / name).write_bytes(gzip.compress(data, mtime=0) if name.endswith(".gz") else data)


if __name__ == "__main__":
    main()
