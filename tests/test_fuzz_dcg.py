"""Properties over generated collections, for the measures trec_eval 10.0 and ir_measures had and the catalogue
lacked:

- DCG and IDCG with any gains (zero and negative gains, grade 0 mapped, grades the map leaves alone) and any
  cutoff equal trec_eval 10.0's definition (m_ndcg.c) written out here: the run's gains (a judged grade >= 0,
  mapped; nothing for an unjudged or negatively judged document) over log2(rank + 1), and the ideal ranking's
  positive gains, largest first; nDCG is DCG / IDCG (0 where IDCG is 0).
- alpha_DCG and nNRBP equal pyndeval (the TREC Web track's ndeval) per query, on subtopic qrels with hostile ids
  (case, punctuation, non-ASCII: the greedy ideal breaks ties by byte order), negative and zero grades, unjudged
  documents and queries with no relevant subtopic (pyndeval's nNRBP is NaN there, ours 0).
"""
import math
import warnings

import pyarrow as pa
import pyndeval
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOCS = ["d1", "d2", "D2", "d-3", "d.3", "é4", "e4", "d5", "d 6", "d7"]
GAIN = st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0, 9.0, 1e-9])


def _log2(rank: int) -> float:
    return math.log(rank + 1) / math.log(2)


def trec_eval_dcg(judged: dict, ranked: list, gains: dict, k) -> tuple:
    """(DCG@k, IDCG@k) as m_ndcg.c computes them (without its sort's rounding of gains less than 1 apart)."""
    def gain(grade):
        return gains.get(grade, float(grade)) if grade is not None and grade >= 0 else 0.0
    depth = k or len(ranked)
    dcg = sum(gain(judged.get(d)) / _log2(i) for i, d in enumerate(ranked[:depth], 1))
    ideal = sorted((g for g in map(gain, judged.values()) if g > 0), reverse=True)[:k or None]
    return dcg, sum(g / _log2(i) for i, g in enumerate(ideal, 1))


@pytest.mark.slow  # hypothesis: 40 collections, a statement each
@SETTINGS
@given(judged=st.dictionaries(st.sampled_from(DOCS[:6]), st.sampled_from([-1, 0, 0, 1, 2, 3]), max_size=6),
       ranked=st.lists(st.sampled_from(DOCS[:6] + ["u1"]), unique=True, min_size=1, max_size=7),
       gains=st.dictionaries(st.sampled_from([0, 0, 1, 2, 3]), GAIN, max_size=4), k=st.sampled_from([None, 1, 3, 20]))
def test_dcg_and_idcg_are_trec_eval_10s(judged, ranked, gains, k):
    qrels = {"q": judged or {"z": 0}}
    run = {"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
    inner = "gains={" + ",".join(f"{g}:{v!r}" for g, v in sorted(gains.items())) + "}" if gains else ""
    names = [f"{m}({inner})" if inner else m for m in ("DCG", "IDCG", "nDCG")]
    names = [n + (f"@{k}" if k else "") for n in names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = sqlmetrics.evaluate(qrels, run, names).per_query.to_pylist()[0]
    dcg, idcg = trec_eval_dcg(qrels["q"], ranked, gains, k)
    assert row[names[0]] == pytest.approx(dcg, abs=1e-9) and row[names[1]] == pytest.approx(idcg, abs=1e-9), row
    assert row[names[2]] == pytest.approx(dcg / idcg if idcg > 0 else 0, abs=1e-9), row


SUBTOPIC_QRELS = st.lists(st.tuples(st.sampled_from(["q1", "q2", "Q1"]), st.sampled_from(["s1", "S1", "s-2", "s.3"]),
                                    st.sampled_from(DOCS), st.sampled_from([-1, 0, 1, 1, 2])),
                          min_size=1, max_size=30, unique_by=lambda r: r[:3])


@pytest.mark.slow  # hypothesis and pyndeval: 40 collections, two statements each
@SETTINGS
@given(qrels=SUBTOPIC_QRELS, ranked=st.lists(st.sampled_from(DOCS + ["u1", "u2"]), unique=True, min_size=1,
                                             max_size=10),
       alpha=st.sampled_from([0.5, 0.1, 0.9]), beta=st.sampled_from([0.5, 0.2, 0.7]), k=st.integers(1, 20))
def test_alpha_dcg_and_nnrbp_are_pyndevals(qrels, ranked, alpha, beta, k):
    queries = sorted({q for q, _, _, _ in qrels})
    run = [(q, d, float(len(ranked) - i)) for q in queries for i, d in enumerate(ranked)]  # no score ties
    names = [f"alpha_DCG(alpha={alpha})@{k}", f"nNRBP(alpha={alpha},beta={beta})"]
    table = pa.table({"query_id": [r[0] for r in qrels], "subtopic": [r[1] for r in qrels],
                      "doc_id": [r[2] for r in qrels], "relevance": [r[3] for r in qrels]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sqlmetrics.evaluate(table, pa.table({"query_id": [r[0] for r in run], "doc_id": [r[1] for r in run],
                                                    "score": [r[2] for r in run]}),
                                   names, qrels_format="subtopics").per_query.to_pylist()
    ours = {r["query_id"]: r for r in rows}
    theirs = pyndeval.RelevanceEvaluator(qrels, [f"alpha-DCG@{k}", "nNRBP"], alpha=alpha, beta=beta).evaluate(run)
    for q, values in theirs.items():
        for name, peer in zip(names, (values[f"alpha-DCG@{k}"], values["nNRBP"])):
            want = 0 if math.isnan(peer) else peer  # nNRBP with no relevant subtopic: 0/0 in ndeval
            assert ours[q][name] == pytest.approx(want, abs=1e-9), (q, name, ours[q][name], peer)
