"""The RAG measures against RAGAS itself (ragas==0.4.3), its language model and embeddings replaced by deterministic
fakes: tests/oracles/ragas_oracle.py runs in RAGAS's own venv (SQLMETRICS_RAGAS_PYTHON names its interpreter;
RAGAS would downgrade `rich` in the project's), scores generated samples and prints what the fakes answered. Those
answers become sqlmetrics' tables (verdicts=, embeddings=, the chunk verdicts as qrels), one query per sample, and
each query's value must equal RAGAS's score.

Differences, accounted for here:
- context precision and utilization: RAGAS divides by (relevant chunks + 1e-10); sqlmetrics by the relevant
  chunks (0 without any, as RAGAS's 0 / 1e-10): the two differ by at most 1e-10 relative; the test undoes it.
- answer relevancy when the model generated no question at all (every generation an empty string): RAGAS's
  collections metric returns 0.0; sqlmetrics has no generated question row for the query, hence no value
  (RAGAS's legacy ragas.metrics.answer_relevancy gives NaN there). Pinned below.
- RAGAS 0.4.3 has no sentence-extraction context relevancy any more (its ContextRelevance is a 0/1/2 rating by
  two judges): sqlmetrics' ContextRelevancy (the paper's |S| / sentences) has no RAGAS oracle here.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import sqlmetrics
from conftest import unavailable

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "oracles" / "ragas_oracle.py"
SAMPLES = 24


@pytest.fixture(scope="module")
def ragas():
    python = os.environ.get("SQLMETRICS_RAGAS_PYTHON")
    if not python:
        unavailable("SQLMETRICS_RAGAS_PYTHON is unset: set it to the python of a venv with "
                    "pip install ragas==0.4.3 'langchain-community<0.4' (as .ci/run does)")
    done = subprocess.run([python, str(SCRIPT), str(SAMPLES), "0"], capture_output=True, text=True, timeout=600)
    if done.returncode:
        pytest.fail(f"{SCRIPT.name} failed under {python}:\n{done.stderr[-3000:]}", pytrace=False)
    return json.loads(done.stdout)


def qid(i: int) -> str:
    return f"q{i:02d}"


def per_query(samples: list, measures, **tables) -> dict:
    """sqlmetrics' values per query; every sample is a query, its qrels and run one dummy document when the
    measures read other tables."""
    qrels = tables.pop("qrels", {qid(i): {"d": 1} for i in range(len(samples))})
    run = tables.pop("run", {qid(i): {"d": 1.0 + i} for i in range(len(samples))})
    res = sqlmetrics.evaluate(qrels, run, measures, **tables)
    return {r["query_id"]: r for r in res.per_query.to_pylist()}


def assert_equal(got, want, where, tolerance=1e-9):
    assert (got is None) == (want is None), (where, got, want)
    assert want is None or math.isclose(got, want, rel_tol=tolerance, abs_tol=tolerance), (where, got, want)


@pytest.mark.parametrize("measure, metric, of", [("Faithfulness", "faithfulness", "answer"),
                                                  ("ContextRecall", "context_recall", "reference")])
def test_judged_statement_shares_equal_ragas(ragas, measure, metric, of):
    samples = ragas[metric]
    rows = [(qid(i), statement, verdict) for i, sample in enumerate(samples)
            for statement, verdict in zip(sample["statements"], sample["verdicts"])]
    table = pa.table({"query_id": [r[0] for r in rows], "statement": [r[1] for r in rows],
                      "statement_of": [of] * len(rows), "verdict": [r[2] for r in rows]})
    values = per_query(samples, [measure], verdicts=table)
    assert any(s["score"] is None for s in samples) and any(s["score"] not in (None, 0, 1) for s in samples)
    for i, sample in enumerate(samples):
        assert_equal(values[qid(i)][measure], sample["score"], (metric, i, sample))


@pytest.mark.parametrize("measure, metric", [("ContextPrecision", "context_precision"),
                                              ("ContextUtilization", "context_utilization")])
def test_context_precision_over_chunk_verdicts_equals_ragas(ragas, measure, metric):
    """The chunks in RAGAS's order are the run (rank 1 first), their verdicts the qrels; RAGAS's score with its
    1e-10 smoothing undone (x (relevant + 1e-10) / relevant) equals sqlmetrics' to 1e-13."""
    samples = ragas[metric]
    qrels = {qid(i): {f"c{r}": v for r, v in enumerate(s["verdicts"])} for i, s in enumerate(samples)}
    run = {qid(i): {f"c{r}": 1 - r / 10 for r in range(len(s["verdicts"]))} for i, s in enumerate(samples)}
    values = per_query(samples, [measure], qrels=qrels, run=run)
    assert any(not any(s["verdicts"]) for s in samples) and any(s["score"] not in (0, 1) for s in samples)
    for i, sample in enumerate(samples):
        relevant = sum(sample["verdicts"])
        unsmoothed = sample["score"] * (relevant + 1e-10) / relevant if relevant else sample["score"]
        assert_equal(values[qid(i)][measure], unsmoothed, (metric, i, sample), tolerance=1e-13)


def test_answer_relevancy_equals_ragas(ragas):
    samples = ragas["answer_relevancy"]
    rows = [(qid(i), 0, s["asked"], 0) for i, s in enumerate(samples)]
    rows += [(qid(i), g, q["vector"], q["noncommittal"])
             for i, s in enumerate(samples) for g, q in enumerate(s["generated"], 1)]
    table = pa.table({"query_id": [r[0] for r in rows], "generated": [r[1] for r in rows],
                      "embedding": pa.array([r[2] for r in rows], pa.list_(pa.float64())),
                      "noncommittal": [r[3] for r in rows]})
    values = per_query(samples, ["AnswerRelevancy"], embeddings=table)
    assert any(s["generated"] and all(q["noncommittal"] for q in s["generated"]) for s in samples)
    assert any(len(s["generated"]) < s["generations"] for s in samples if s["generated"])
    for i, sample in enumerate(samples):
        if sample["generated"]:
            assert_equal(values[qid(i)]["AnswerRelevancy"], sample["score"], ("answer_relevancy", i, sample))
        else:  # no question generated: RAGAS's collections metric says 0.0, sqlmetrics has no value
            assert sample["score"] == 0.0 and values[qid(i)]["AnswerRelevancy"] is None, sample
