"""DCG, IDCG and nDCG with gains: hand-picked hostile input (the hypothesis corpus is test_fuzz_dcg.py)."""
import warnings

import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

QRELS = {"q1": {"d1": 1, "d2": 1, "d3": 2, "d4": 0, "d5": -1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d5": 0.6, "x": 0.5}}


def values(measures, qrels=QRELS, run=RUN, **options) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = sqlmetrics.evaluate(qrels, run, measures, **options).per_query.to_pylist()[0]
    return {m: row[m] for m in measures}


def test_a_gain_too_large_to_sum_is_refused_not_summed_to_infinity():
    """Three gains of 1e308 sum past the largest double: the ideal DCG became infinity and nDCG 0, printed as if
    measured (a run of d1 alone: 1e308 / 2.13e308 = 0.47). Gains are held to 1e300 in magnitude, which a ranking of
    any length sums without overflowing."""
    got = values(["nDCG(gains={1:1e300,2:1e300})", "DCG(gains={1:-1e300})"])
    assert got["nDCG(gains={1:1e300,2:1e300})"] == pytest.approx(1)
    assert got["DCG(gains={1:-1e300})"] == pytest.approx(-1e300 * (1 + 1 / 1.5849625007211562))
    for measure in ("nDCG(gains={1:1e308,2:1e308})", "IDCG(gains={2:-2e300})", "ideal_dcg.1=1e301"):
        with pytest.raises(SqlmetricsError, match=r"parameter 'gains'.*at most 1e\+?300"):
            values([measure], run={"q1": {"d1": 1.0}})


def test_odd_gains_and_grades():
    """Grade 0 mapped to a gain, a negative grade (pooled, not judged: never gains, and never in the ideal) and an
    unjudged document (x); gains of 0 for every grade: IDCG 0, nDCG 0 (not NaN), DCG 0."""
    got = values(["DCG(gains={0:2})", "IDCG(gains={0:2})", "DCG(gains={0:0,1:0,2:0})", "IDCG(gains={0:0,1:0,2:0})",
                  "nDCG(gains={0:0,1:0,2:0})", "IDCG@1", "DCG(rel=2)"])
    # The run: d1 (1) d2 (1) d3 (2) d5 (-1) x; the ideal: d4's grade 0 gains 2 under {0:2}, so 2, 2, 1, 1.
    assert got["DCG(gains={0:2})"] == pytest.approx(1 + 1 / 1.5849625007211562 + 2 / 2)
    assert got["IDCG(gains={0:2})"] == pytest.approx(2 + 2 / 1.5849625007211562 + 1 / 2 + 1 / 2.321928094887362)
    assert got["DCG(gains={0:0,1:0,2:0})"] == got["IDCG(gains={0:0,1:0,2:0})"] == 0
    assert got["nDCG(gains={0:0,1:0,2:0})"] == 0 and got["IDCG@1"] == 2 and got["DCG(rel=2)"] == 1


def test_an_empty_ranking_keeps_its_ideal_dcg():
    """queries='qrels' (trec_eval -c): a judged query the run does not rank has DCG 0 and its IDCG still."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sqlmetrics.evaluate({**QRELS, "q2": {"a": 3, "b": 1}}, RUN, ["DCG", "IDCG", "IDCG@1"],
                                   queries="qrels").per_query.to_pylist()
    q2 = next(r for r in rows if r["query_id"] == "q2")
    assert q2["DCG"] == 0 and q2["IDCG"] == pytest.approx(3 + 1 / 1.5849625007211562) and q2["IDCG@1"] == 3
