"""Write the RAG demo: rag_retrieved.csv (query_id, doc_id, score: the chunks a pipeline retrieved),
rag_judgments.csv (query_id, doc_id, relevance: each retrieved chunk judged against the reference answer),
rag_verdicts.csv (query_id, statement, statement_of, verdict: the judged claims and sentences) and
rag_embeddings.parquet (query_id, generated, embedding, noncommittal: the question asked and the questions
generated from the answer), for the RAG example (README.md, docs/rag.md).

    python -m sqlmetrics.demo.make_rag      (fixed seed: the files are the same on every run)

20 questions, 5 chunks retrieved for each. Each question has a hidden quality: a good answer's claims are
mostly supported, its reference's claims mostly found in the context, its generated questions close to the
question asked (8 dimensions); two answers are noncommittal.
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

SEED = 20261125
FOLDER = Path(__file__).resolve().parent
QUESTIONS, CHUNKS, DIMENSIONS = 20, 5, 8


def rows(seed: int = SEED) -> tuple[list, list, list, list]:
    rnd = random.Random(seed)
    retrieved, judgments, verdicts, embeddings = [], [], [], []
    for i in range(QUESTIONS):
        query, quality = f"q{i:02d}", rnd.uniform(0.2, 0.95)
        for rank in range(CHUNKS):
            chunk = f"{query}_c{rank + 1}"
            retrieved.append((query, chunk, round(1 - rank / 10 + rnd.uniform(-0.02, 0.02), 4)))
            judgments.append((query, chunk, int(rnd.random() < quality)))
        for of, count in (("answer", rnd.randint(2, 5)), ("reference", rnd.randint(2, 4)), ("context", 3 * CHUNKS)):
            share = quality if of != "context" else quality / 2
            verdicts += [(query, f"{of} {j + 1}", of, int(rnd.random() < share)) for j in range(count)]
        asked = [rnd.gauss(0, 1) for _ in range(DIMENSIONS)]
        embeddings.append((query, 0, [round(x, 4) for x in asked], 0))
        noncommittal = int(i in (3, 11))
        for g in range(1, 4):
            noise = 1.5 * (1 - quality)
            embeddings.append((query, g, [round(x + rnd.gauss(0, noise), 4) for x in asked], noncommittal))
    return retrieved, judgments, verdicts, embeddings


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    retrieved, judgments, verdicts, embeddings = rows()
    for name, header, data in (("rag_retrieved.csv", ("query_id", "doc_id", "score"), retrieved),
                               ("rag_judgments.csv", ("query_id", "doc_id", "relevance"), judgments),
                               ("rag_verdicts.csv", ("query_id", "statement", "statement_of", "verdict"), verdicts)):
        with open(FOLDER / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(data)
    table = pa.table({"query_id": [r[0] for r in embeddings], "generated": [r[1] for r in embeddings],
                      "embedding": pa.array([r[2] for r in embeddings], pa.list_(pa.float32())),
                      "noncommittal": [r[3] for r in embeddings]})
    pq.write_table(table, FOLDER / "rag_embeddings.parquet")


if __name__ == "__main__":
    main()
