"""Prediction-powered inference (sqlmetrics.ppi): a hand-computed example, the command line, and hostile inputs named.
ppi-python itself, random values and the coverage simulation are in tests/test_fuzz_ppi.py (slow)."""
from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.errors import SqlmetricsError


def _qrels(rows) -> pa.Table:
    return pa.table({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                     "relevance": pa.array([r[2] for r in rows], pa.float64())})


def _run(queries, doc="d") -> pa.Table:
    """Each query's list is one document: P@1 is its relevance under the qrels (1 or 0)."""
    return pa.table({"query_id": list(queries), "doc_id": [doc] * len(queries), "score": [1.0] * len(queries)})


# q1 .. q5 of the example below, as unicode and hostile ids: quotes, a space, a semicolon
QUERIES = ["é1", "日本", "q 3;", "😀", "x'y"]
LLM = _qrels([(q, "d", r) for q, r in zip(QUERIES, (1, 0, 0, 1, 0))])
HUMAN = _qrels([(q, "d", r) for q, r in zip(QUERIES, (1, 0, 1))])
Z = 1.959963984540054  # the normal's 97.5% quantile


def test_by_hand():
    """P@1 per query. Run a: human Y (q1 q2 q3) = 1 0 1; LLM on them Yhat = 1 0 0; LLM on q4 q5 (unlabeled) = 1 0.
    n = 3, N = 2. mean Y = 2/3, mean Yhat = 1/3, cov(Y, Yhat) (1/n) = 1/3 - 2/9 = 1/9.
    All five LLM values 1 0 0 1 0: mean 2/5, sample variance (2*0.36 + 3*0.16)/4 = 0.3.
    lambda = (1/9) / ((1 + 3/2) 0.3) = (1/9)/0.75 = 4/27.
    estimate = lambda*(1/2) + 2/3 - lambda*(1/3) = 2/3 + (4/27)/6 = 56/81.
    var(Y) = var(Yhat) = 2/9, var(unlabeled) = 1/4 (population);
    var(Y - lambda Yhat) = 2/9 + lambda^2 2/9 - 2 lambda/9 = (2/9)(637/729) = 1274/6561;
    se^2 = lambda^2 (1/4)/2 + (1274/6561)/3 = 2/729 + 1274/19683 = 1328/19683.
    Human only: 2/3 +- z sqrt((2/9)/3); LLM only (all five): 2/5 +- z sqrt(0.24/5).

    Run b ranks only q1 and q4 (its other queries score 0, as trec_eval -c): human 1 0 0, LLM 1 0 0 | 1 0, so
    b - a is human Y = 0 0 -1, LLM Yhat = 0 0 0 | 0 0: every LLM value the same, lambda is 0/0 (ppi-python: NaN)
    and is taken as 0: the estimate is the human mean -1/3, its interval the human one, never NaN."""
    a, b = "a;'x", 'b "y"'  # run names with quotes and a semicolon
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="no ranking for"):
        rows = sqlmetrics.ppi(LLM, HUMAN, {a: _run(QUERIES), b: _run([QUERIES[0], QUERIES[3]])}, "P@1").to_pylist()
    assert [(r["run"], r["baseline"], r["measure"], r["n_human"], r["n_unlabeled"]) for r in rows] == [
        (a, None, "P@1", 3, 2), (b, None, "P@1", 3, 2), (b, a, "P@1", 3, 2)]
    row, diff = rows[0], rows[2]
    se = math.sqrt(1328 / 19683)
    expected = {"lambda": 4 / 27, "ppi_mean": 56 / 81, "ppi_low": 56 / 81 - Z * se, "ppi_high": 56 / 81 + Z * se,
                "human_mean": 2 / 3, "human_low": 2 / 3 - Z * math.sqrt(2 / 27),
                "llm_mean": 0.4, "llm_high": 0.4 + Z * math.sqrt(0.048)}
    for key, value in expected.items():
        assert row[key] == pytest.approx(value, abs=1e-12), key
    assert diff["lambda"] == 0.0 and diff["ppi_mean"] == pytest.approx(-1 / 3, abs=1e-12)
    assert (diff["ppi_low"], diff["ppi_high"]) == pytest.approx((diff["human_low"], diff["human_high"]), abs=1e-12)
    assert all(math.isfinite(v) for r in rows for v in r.values() if isinstance(v, float))


@pytest.mark.slow
def test_command_line(cli, tmp_path):
    for name, table in (("llm.parquet", LLM), ("human.parquet", HUMAN), ("a.parquet", _run(QUERIES))):
        pq.write_table(table, tmp_path / name)
    code, out, err = cli("ppi", "llm.parquet", "human.parquet", "a.parquet", "-m", "P@1", "--alpha", "0.1")
    assert code == 0, err
    assert "[90%]" in out and f"{56 / 81:.4f}" in out
    code, out, err = cli("ppi", "llm.parquet", "human.parquet", "a.parquet", "-m", "P@1", "-o", "out.parquet")
    assert code == 0 and out == "", err
    assert pq.read_table(tmp_path / "out.parquet")["ppi_mean"].to_pylist() == pytest.approx([56 / 81])
    code, out, err = cli("ppi", "llm.parquet", "human.parquet", "a.parquet", "-m", "P@1", "--alpha", "1",
                         "-o", "bad.csv")
    assert code == 2 and "alpha=1.0" in err and not (tmp_path / "bad.csv").exists()


@pytest.mark.parametrize("human, words", [
    (_qrels([("é1", "d", 1)]), ["human qrels labels 1 query ('é1')", "at least two"]),
    *[pytest.param(*case, marks=pytest.mark.slow) for case in [(_qrels([("é1", "d", 1), ("q9", "d", 0)]), ["query 'q9'", "no row in the LLM qrels"]),
    (_qrels([(q, "d", 1) for q in QUERIES]), ["LLM qrels: every query", "human mean"]),
    (_qrels([("é1", "d", 1), ("日本", "d", float("nan"))]), ["human qrels", "relevance"])]],
])
def test_bad_human_qrels(human, words):
    with pytest.raises(SqlmetricsError) as e:
        sqlmetrics.ppi(LLM, human, {"a": _run(QUERIES)}, "P@1")
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.parametrize("kwargs, words", [
    ({"alpha": 0.0}, ["alpha=0.0", "between 0 and 1"]), ({"alpha": float("nan")}, ["alpha=nan"]),
    ({"alpha": "0.05"}, ["alpha='0.05'"]), ({"measure": "NumRel"}, ["NumRel is aggregated as a sum"]),
    ({"measure": "GMAP"}, ["geometric"]), ({"baseline": "zz"}, ["baseline='zz'"]),
])
def test_bad_arguments(kwargs, words):
    """Refused before anything is read: the qrels here do not exist."""
    args = {"measure": "P@1", **kwargs}
    with pytest.raises(SqlmetricsError) as e:
        sqlmetrics.ppi("no_llm.txt", "no_human.txt", {"a": "no_run.txt"}, args.pop("measure"), **args)
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("llm, human, measure, words", [
    (LLM, _qrels([("é1", "d", 1), ("日本", "d", None)]), "P@1", ["human qrels", "row 2", "'relevance' holds None"]),
    (_qrels([("é1", "d", 1), ("日本", "d", None), ("😀", "d", 1)]), HUMAN, "P@1",
     ["with the LLM qrels", "row 2", "'relevance' holds None"]),
    (LLM, HUMAN, "FirstRank", ["FirstRank has no value", "query '日本'", "RR instead"]),
    (LLM.slice(0, 0), HUMAN, "P@1", ["LLM qrels"]),
])
def test_bad_llm_qrels_and_measures(llm, human, measure, words):
    with pytest.raises(SqlmetricsError) as e:
        sqlmetrics.ppi(llm, human, {"a": _run(QUERIES)}, measure)
    for w in words:
        assert w in str(e.value), str(e.value)
