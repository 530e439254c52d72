"""sqlmetrics.ppi against ppi-python 0.2.3 on random per-query values, and the interval's coverage by simulation.

Each query's list is one document, so DCG@1 is its grade (a float >= 0, linear gain, log2(2) = 1): the qrels set the
per-query values Y (human) and Yhat (LLM) exactly, and ppi-python gets the same values as arrays. Runs draw their
values independently: one ppi() call checks every run's mean and every difference with the first run."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics

pytestmark = pytest.mark.slow
ppi_py = pytest.importorskip("ppi_py")


def _tables(human: np.ndarray, llm: np.ndarray) -> tuple:
    """human: runs x n grades (queries 0..n-1); llm: runs x (n+N) grades. Run r ranks document f"d{r}" alone for
    every query; the qrels grade it per run, so runs share the qrels and differ in their values."""
    runs, total = llm.shape
    n = human.shape[1]

    def qrels(values, queries):
        return pa.table({"query_id": [f"q{q}" for r in range(runs) for q in range(queries)],
                         "doc_id": [f"d{r}" for r in range(runs) for _ in range(queries)],
                         "relevance": pa.array(values[:, :queries].ravel(), pa.float64())})

    named = {f"r{r:03d}": pa.table({"query_id": [f"q{q}" for q in range(total)], "doc_id": [f"d{r}"] * total,
                                    "score": [1.0] * total}) for r in range(runs)}
    return qrels(llm, total), qrels(human, n), named


def _oracle(y, yhat, yhat_unlabeled, alpha):
    """ppi-python's estimate and interval; where every LLM value is the same its λ is 0/0 (NaN), and sqlmetrics
    takes λ = 0 (any λ gives the same estimate and variance there): ppi-python with lam=0."""
    lam = 0.0 if np.var(np.concatenate([yhat, yhat_unlabeled])) == 0 else None
    est = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=alpha, lam=lam)
    human = ppi_py.classical_mean_ci(y, alpha=alpha)
    everything = np.concatenate([yhat, yhat_unlabeled])
    llm = ppi_py.classical_mean_ci(everything, alpha=alpha)
    return {"ppi_mean": float(np.squeeze(est)), "ppi_low": float(np.squeeze(low)), "ppi_high": float(np.squeeze(high)),
            "human_mean": float(y.mean()), "human_low": float(human[0]), "human_high": float(human[1]),
            "llm_mean": float(everything.mean()), "llm_low": float(llm[0]), "llm_high": float(llm[1])}


# grades on a grid of eighths (exact doubles, so ties and constant values happen exactly) or any float in [0, 3]
GRADE = st.one_of(st.integers(0, 24).map(lambda k: k / 8), st.floats(0, 3, allow_nan=False))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_matches_ppi_python(data):
    runs, n, unlabeled = data.draw(st.integers(1, 3)), data.draw(st.integers(2, 12)), data.draw(st.integers(1, 12))
    alpha = data.draw(st.sampled_from([0.05, 0.1, 0.32]))
    grades = st.lists(GRADE, min_size=runs * (n + unlabeled), max_size=runs * (n + unlabeled))
    llm = np.array(data.draw(grades)).reshape(runs, n + unlabeled)
    human = np.array(data.draw(grades)[: runs * n]).reshape(runs, n)
    if data.draw(st.booleans()):  # an LLM that mostly agrees: λ away from 0
        human = np.where(np.arange(n) % 3 == 0, human, llm[:, :n])
    qrels_llm, qrels_human, named = _tables(human, llm)
    rows = sqlmetrics.ppi(qrels_llm, qrels_human, named, "DCG@1", alpha=alpha).to_pylist()
    assert len(rows) == 2 * runs - 1
    for row in rows:
        r = int(row["run"][1:])
        y, yhat, yu = human[r], llm[r, :n], llm[r, n:]
        if row["baseline"] is not None:  # the paired difference run - baseline (run r000)
            y, yhat, yu = y - human[0], yhat - llm[0, :n], yu - llm[0, n:]
        assert (row["n_human"], row["n_unlabeled"]) == (n, unlabeled)
        for key, value in _oracle(y, yhat, yu, alpha).items():
            assert row[key] == pytest.approx(value, abs=1e-9), (key, row)


def test_coverage():
    """200 independent draws (runs) of n = 60 human-labelled and N = 240 LLM-only queries: Y ~ U(0.1, 1.1) (mean
    0.6), Yhat = |0.7 Y + 0.25 + noise| (biased: LLM-only intervals miss). The PPI interval at 90% covers 0.6 in
    about 90% of draws (binomial sd 2.1%: a loose band), and it is narrower than the human-only one on average."""
    rng = np.random.default_rng(45)
    runs, n, unlabeled = 200, 60, 240
    y = rng.uniform(0.1, 1.1, (runs, n + unlabeled))
    llm = np.abs(0.7 * y + 0.25 + rng.normal(0, 0.1, y.shape))
    rows = sqlmetrics.ppi(*_tables(y[:, :n], llm), "DCG@1", alpha=0.1).to_pylist()
    means = [r for r in rows if r["baseline"] is None]
    assert len(means) == runs
    covered = np.mean([r["ppi_low"] <= 0.6 <= r["ppi_high"] for r in means])
    assert 0.84 <= covered <= 0.96, covered
    assert np.mean([r["llm_low"] <= 0.6 <= r["llm_high"] for r in means]) < 0.5  # the LLM alone is biased
    width = np.mean([r["ppi_high"] - r["ppi_low"] for r in means])
    assert width < np.mean([r["human_high"] - r["human_low"] for r in means])
