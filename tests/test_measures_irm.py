"""Accuracy, NumRet(rel=), ERR@k, BPM, NERR8, NERR9, NERR10, NERR11, INSQ, INST, SDCG, Compat against ir_measures
0.4.3's own providers; FallOut and AUROC against torchmetrics' definitions written here in NumPy / scikit-learn;
ranx's bpref (slow); the C/W/L residuals (BPMResid, ..., SDCGResid) against cwl_eval's own residuals, which
ir_measures does not report.

Per-query values on small seeded random collections whose scores tie often, to 1e-9 (gdeval's printed
ERR to its 5 decimals), plus a hand-computed case. Oracle behaviour these tests rely on (read in the
installed sources):
- Ties. ir_measures' accuracy and cwl_eval providers sort a query's documents by score with Python's stable
  sort, so tied documents keep the order they were given in; the run is handed to them already in this
  package's tie order (score DESC, then doc id DESC byte-wise), which they then keep. gdeval sorts by score
  DESC, doc id DESC itself. torchmetrics' order for ties is unspecified: the NumPy oracles use ours.
- Queries. Every provider reports every qrels query (ir_measures fills the missing ones with the measure's
  default 0), as queries="qrels" does; run-only queries are not reported.
- ir_measures' Accuracy raises ZeroDivisionError when the top k holds relevant documents and no
  non-relevant one; those queries are left out of its run (it then reports its default 0, our documented
  value there). pytrec_eval (NumRet) never sees a query whose judgments are all negative.
- gdeval needs numeric query ids and grades <= 4, and prints 5 decimals.
- cwl_eval sums float gains; BPM here decides "the gain so far reaches T" exactly. Gains are kept dyadic
  (max_rel - min_rel in 1, 2, 4) in the random BPM checks, where both agree; the difference is pinned in
  test_bpm_threshold_is_exact.
"""
from __future__ import annotations

import math
import random
import re
import shutil
import warnings

import ir_measures
import numpy as np
import pyarrow as pa
import pytest
from cwl.cwl_eval import RankingMaker
from ir_measures import Qrel, ScoredDoc
from ir_measures.providers.cwl_eval import CwlEvaluator, IrmQrelHandler
from sklearn.metrics import roc_auc_score

import sqlmetrics

TOL = 1e-9
SEEDS = range(12)
QIDS = ("1", "2", "3", "7", "10", "11")  # numeric: gdeval refuses other query ids
DOCS = ("d1", "D1", "d-1", "d10", "a.b", "d.1", "D10", "d_1", "A", "a", "1", "10", "x", "y")
SCORES = (-1.0, 0.0, 0.25, 0.5, 1.0, 2.0)  # few values: ties are frequent


def collection(seed, *, min_grade=-1, max_grade=4, tie_free=False):
    """(qrels, run) as {qid: {doc: value}}: the first query in both, the others in both, qrels or run only.
    Every qrels query has a grade >= 0 (pytrec_eval must not see a negative-only query)."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for i, qid in enumerate(rng.sample(QIDS, rng.randint(1, len(QIDS)))):
        role = "both" if i == 0 else rng.choice(["both", "both", "qrels", "run"])
        if role != "run":
            docs = rng.sample(DOCS, rng.randint(1, 9))
            grades = [rng.randint(min_grade, max_grade) for _ in docs]
            if max(grades) < 0:
                grades[0] = rng.randint(0, max_grade)
            qrels[qid] = dict(zip(docs, grades))
        if role != "qrels":
            docs = rng.sample(DOCS, rng.randint(1, len(DOCS)))
            values = rng.sample(range(-20, 20), len(docs)) if tie_free else [rng.choice(SCORES) for _ in docs]
            run[qid] = {d: float(v) for d, v in zip(docs, values)}
    return qrels, run


def collections(seeds=SEEDS, **options) -> tuple:
    """The seeded collections as one (qrels, run), each query id prefixed by its seed ("s3_7"): every measure
    compared on them is a value per query, so one evaluation (and one oracle call) checks every seed at once."""
    qrels, run = {}, {}
    for seed in seeds:
        q, r = collection(seed, **options)
        qrels.update({f"s{seed}_{qid}": docs for qid, docs in q.items()})
        run.update({f"s{seed}_{qid}": docs for qid, docs in r.items()})
    return qrels, run


def ordered(docs: dict) -> list:
    """Doc ids in this package's default order: score DESC, then doc id DESC byte-wise (computed here)."""
    by_id = sorted(docs, key=lambda d: d.encode(), reverse=True)
    return sorted(by_id, key=lambda d: -docs[d])  # stable: ties keep the doc-id order


def ours(qrels, run, measures, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing-query warnings are expected here
        table = sqlmetrics.evaluate(qrels, run, list(measures), **options).per_query.to_pydict()
    return {q: {m: table[m][i] for m in measures} for i, q in enumerate(table["query_id"])}


def irm(provider, measures: dict, qrels, run) -> dict:
    """{qid: {our string: value}} from an ir_measures provider; measures: {our string: ir_measures string}.
    The run is given in our tie order, which the stable-sorting providers keep."""
    parsed = {name: ir_measures.parse_measure(spec) for name, spec in measures.items()}
    qrels_rows = [Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    run_rows = [ScoredDoc(q, d, docs[d]) for q, docs in run.items() for d in ordered(docs)]
    out: dict = {}
    for name, measure in parsed.items():
        for metric in provider.evaluator([measure], qrels_rows).iter_calc(run_rows):
            out.setdefault(metric.query_id, {})[name] = float(metric.value)
    return out


def compare(got, expected, context, tol=TOL):
    """context: a text, or the (qrels, run) compared, of which a failure shows the queries that differ."""
    bad, queries = [], []
    assert set(got) == set(expected), f"queries: ours {sorted(got)} oracle {sorted(expected)}"
    for qid, values in expected.items():
        for m, want in values.items():
            have = got[qid][m]
            if want is None and have is None:
                continue
            if have is None or want is None or not math.isclose(have, want, rel_tol=0, abs_tol=tol):
                bad.append(f"  {qid!r} {m}: ours={have!r} oracle={want!r}")
                queries.append(qid)
    if bad and not isinstance(context, str):
        qrels, run = context
        context = "\n".join(f"{q}: qrels={qrels.get(q)} run={run.get(q)}" for q in dict.fromkeys(queries))
    assert not bad, "per-query mismatches:\n" + "\n".join(bad[:30]) + f"\n{context}"


# ------------------------------------------------------------------------------------------ ir_measures


ACCURACY = {"Accuracy": None, "Accuracy@1": 1, "Accuracy@3": 3, "Accuracy@5": 5, "Accuracy(rel=2)@5": 5,
            "Accuracy(rel=2)": None}


def test_accuracy():
    """ir_measures reports Accuracy only for queries with a relevant document in the top k (its mean is
    over those): every other qrels query must be NULL here, which the mean skips."""
    qrels, run = collections()
    got = ours(qrels, run, ACCURACY)
    expected: dict = {q: dict.fromkeys(ACCURACY) for q in qrels}
    for name, k in ACCURACY.items():
        level = 2 if "rel=2" in name else 1
        # ir_measures divides by zero when the top k holds relevant documents only: such queries are left
        # out of its run, so that it reports nothing for them, and NULL is our value there.
        kept = {}
        for q, docs in run.items():
            top = ordered(docs)[:k] if k else ordered(docs)
            rel = [qrels.get(q, {}).get(d, 0) >= level for d in top]
            if not (any(rel) and all(rel)):
                kept[q] = docs
        for q, values in irm(ir_measures.accuracy, {name: name}, qrels, kept).items():
            expected.setdefault(q, {}).update(values)
    compare(got, expected, (qrels, run))


NUMRET = {"NumRet": "NumRet", "NumRet(rel=1)": "NumRet(rel=1)", "NumRet(rel=2)": "NumRet(rel=2)",
          "num_ret": "NumRet", "NumRet(rel=4)": "NumRet(rel=4)"}


def test_numret():
    qrels, run = collections()
    compare(ours(qrels, run, NUMRET), irm(ir_measures.pytrec_eval, NUMRET, qrels, run), (qrels, run))


def gdeval_err(qrels, run, k, gmax):
    """gdeval's ERR@k, written here from its rules: run sorted by score DESC then doc id DESC, grades <= 0
    gain nothing, r = (2^g - 1) / 2^gmax (gdeval: gmax = 4); a query with no positive grade scores 0."""
    out = {}
    for q, judged in qrels.items():
        grades = [max(judged.get(d, 0), 0) for d in ordered(run.get(q, {}))][:k]
        value, reach = 0.0, 1.0
        for i, g in enumerate(grades):
            r = (2 ** min(g, gmax) - 1) / 2 ** gmax
            value += reach * r / (i + 1)
            reach *= 1 - r
        out[q] = value
    return out


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval (ir_measures' ERR) is a Perl script")
@pytest.mark.parametrize("seed", SEEDS)
def test_err_gdeval(seed):
    """ERR@k is ir_measures' (gdeval's) ERR@k: to the 5 decimals gdeval prints, and to 1e-9 against
    gdeval's rules written here; ERR(gmax='max')@k scales by the largest grade of the qrels."""
    qrels, run = collection(seed)
    cuts = (1, 3, 5, 20)
    got = ours(qrels, run, [f"ERR@{k}" for k in cuts] + [f"ERR(gmax='max')@{k}" for k in cuts] + ["ERR"])
    context = f"qrels={qrels}\nrun={run}"
    printed = irm(ir_measures.gdeval, {f"ERR@{k}": f"ERR@{k}" for k in cuts}, qrels, run)
    compare({q: {m: v for m, v in values.items() if m in printed[q]} for q, values in got.items()}, printed,
            context, tol=5e-6)
    top = max(g for docs in qrels.values() for g in docs.values())
    exact: dict = {q: {} for q in qrels}
    for k in cuts:
        for q, v in gdeval_err(qrels, run, k, 4).items():
            exact[q][f"ERR@{k}"] = v
        for q, v in gdeval_err(qrels, run, k, top).items():
            exact[q][f"ERR(gmax='max')@{k}"] = v
    for q, v in gdeval_err(qrels, run, 10 ** 6, 4).items():
        exact[q]["ERR"] = v
    compare(got, exact, context)


# cwl_eval: gains (g - min_rel) / (max_rel - min_rel). BPM's threshold checks keep max_rel - min_rel dyadic.
CWL = ["BPM(max_rel=4)@5", "BPM(T=0.5,max_rel=2)@3", "BPM(T=2,min_rel=1,max_rel=3)@10", "BPM(T=1.5,max_rel=1)@4",
       "BPM(T=0.75,max_rel=4)@20", "NERR8(max_rel=4)@5", "NERR8(max_rel=2)@3", "NERR8(min_rel=1,max_rel=3)@10",
       "NERR8(max_rel=3)@20", "NERR10(max_rel=4)", "NERR10(p=0.5,max_rel=2)", "NERR10(p=0.8,min_rel=1,max_rel=3)",
       "NERR10(p=0.95,max_rel=3)"]


def test_cwl():
    qrels, run = collections()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = irm(ir_measures.cwl_eval, {m: m for m in CWL}, qrels, run)
    compare(ours(qrels, run, CWL), expected, (qrels, run))


# Graded qrels in the fast suite; binary ones too in the full suite, for the oracles that pad every ranking to 1000
# positions in Python (seconds each).
GRADES = [4, pytest.param(1, marks=pytest.mark.slow)]

# The measures read over all 1000 positions (rows: positions), on score ties that no order can change.
CWL_POSITIONS = ["INSQ(max_rel=4)", "INSQ(T=2.5,max_rel=2)", "INSQ(T=0.5,min_rel=1,max_rel=3)", "INSQ(max_rel=1)",
                 "INST(max_rel=4)", "INST(T=3,max_rel=2)", "INST(T=0.5,max_rel=1)", "INST(T=0.25,min_rel=1,max_rel=3)",
                 "NERR9(max_rel=4)@5", "NERR9(max_rel=1)@3", "NERR9(min_rel=1,max_rel=3)@10", "NERR9(max_rel=2)@20",
                 "NERR11(max_rel=4)", "NERR11(T=2,max_rel=1)", "NERR11(T=0.5,min_rel=1,max_rel=3)",
                 "SDCG(max_rel=4)@5", "SDCG(max_rel=1)@1", "SDCG(min_rel=1,max_rel=3)@10", "SDCG(max_rel=2)@20"]


@pytest.mark.parametrize("max_grade", GRADES)
def test_cwl_positions(max_grade):
    """Graded and binary qrels, unjudged documents, runs shorter and longer than the judged set, a query with
    nothing relevant (\"nil\") and one never retrieved (\"0\")."""
    qrels, run = collections(max_grade=max_grade, tie_free=True)
    qrels["nil"], run["nil"] = {"d1": 0, "d2": -1}, {"d1": 2.0, "x": 1.0}
    qrels["0"] = {"d1": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = irm(ir_measures.cwl_eval, {m: m for m in CWL_POSITIONS}, qrels, run)
    compare(ours(qrels, run, CWL_POSITIONS), expected, (qrels, run))


def test_cwl_past_1000_ranks():
    """cwl_eval cuts and pads every ranking to 1000 ranks: relevant documents at ranks 999..1002 and cutoffs
    beyond 1000."""
    qrels = {"1": {f"d{i:04d}": g for i, g in ((2, 1), (998, 4), (999, 2), (1000, 3), (1001, 4), (1002, 1))}}
    run = {"1": {f"d{i:04d}": float(2000 - i) for i in range(1, 1201)}}
    measures = ["BPM(T=5,max_rel=4)@1100", "BPM(T=0.1,max_rel=4)@1100", "NERR8(max_rel=4)@1200",
                "NERR8(max_rel=5)@999", "NERR8(max_rel=5)@1200", "NERR10(p=0.999,max_rel=4)",
                "NERR10(p=0.999,max_rel=5)", "NERR10(p=0.5,max_rel=5)", "INSQ(T=20,max_rel=4)", "INST(T=30,max_rel=4)",
                "NERR9(max_rel=5)@1200", "NERR9(max_rel=5)@999", "NERR11(T=50,max_rel=5)", "SDCG(max_rel=4)@1100",
                "SDCG(max_rel=4)@999"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = irm(ir_measures.cwl_eval, {m: m for m in measures}, qrels, run)
    compare(ours(qrels, run, measures), expected, "ranks past 1000")


# The residuals (best case minus worst case) against cwl_eval's own, which ir_measures' provider does not report.
CWL_RESIDUALS = {"BPMResid(max_rel=4)@5": "BPM(max_rel=4)@5", "BPMResid(T=2,min_rel=1,max_rel=3)@10":
                 "BPM(T=2,min_rel=1,max_rel=3)@10", "BPMResid(T=0.5,max_rel=2)@1200": "BPM(T=0.5,max_rel=2)@1200",
                 "NERR8Resid(max_rel=4)@5": "NERR8(max_rel=4)@5", "NERR8Resid(min_rel=1,max_rel=3)@20":
                 "NERR8(min_rel=1,max_rel=3)@20", "NERR9Resid(max_rel=4)@5": "NERR9(max_rel=4)@5",
                 "NERR9Resid(max_rel=2)@20": "NERR9(max_rel=2)@20", "NERR10Resid(max_rel=4)": "NERR10(max_rel=4)",
                 "NERR10Resid(p=0.5,min_rel=1,max_rel=3)": "NERR10(p=0.5,min_rel=1,max_rel=3)",
                 "NERR11Resid(max_rel=4)": "NERR11(max_rel=4)", "NERR11Resid(T=0.5,min_rel=1,max_rel=3)":
                 "NERR11(T=0.5,min_rel=1,max_rel=3)", "INSQResid(max_rel=4)": "INSQ(max_rel=4)",
                 "INSQResid(T=2.5,max_rel=2)": "INSQ(T=2.5,max_rel=2)", "INSTResid(max_rel=4)": "INST(max_rel=4)",
                 "INSTResid(T=0.5,max_rel=1)": "INST(T=0.5,max_rel=1)", "INSTResid(T=3,min_rel=1,max_rel=3)":
                 "INST(T=3,min_rel=1,max_rel=3)", "SDCGResid(max_rel=4)@5": "SDCG(max_rel=4)@5",
                 "SDCGResid(max_rel=1)@1200": "SDCG(max_rel=1)@1200"}


def cwl_residuals(measures: dict, qrels, run) -> dict:
    """{qid: {our string: cwl_eval's residual expected utility}}; measures: {our string: ir_measures string}.
    The rankings are built as ir_measures' cwl_eval provider builds them (its qrels handler: grades clipped and
    scaled by min_rel and max_rel; 1000 positions), in our tie order, and each cwl_eval metric is asked for its
    residuals (cwl_eval -r). A qrels query the run does not rank, which cwl_eval never sees, is 0 (every
    measure's value there)."""
    out: dict = {q: dict.fromkeys(measures, 0.0) for q in qrels}
    for name, spec in measures.items():
        measure = ir_measures.parse_measure(spec)
        handler = IrmQrelHandler(None, measure["min_rel"], measure["max_rel"])
        for q, docs in qrels.items():
            for d, g in docs.items():
                handler.put_value(q, d, max(g, 0))
        for q in set(qrels) & set(run):
            maker = RankingMaker(q, handler, min_gain=0.0, max_gain=1.0, cost_dict=None, max_cost=1.0, min_cost=1.0,
                                 max_n=1000)
            for d in ordered(run[q]):
                maker.add(d, "_")
            metric = CwlEvaluator._irm_convert_to_measure(None, measure)
            metric.residuals = True
            metric.measure(maker.get_ranking())
            out[q][name] = float(metric.residual_expected_utility)
    return out


@pytest.mark.slow  # 1.4 s; test_cwl and test_cwl_positions are cwl_eval's fast cases
@pytest.mark.parametrize("max_grade", GRADES)
def test_cwl_residuals(max_grade):
    """Unjudged documents, tied scores (the ranking is handed to cwl_eval in our order), runs shorter and longer
    than the judged set, a query never retrieved ("0"), one with nothing relevant ("nil"), and a ranking past
    cwl_eval's 1000 positions ("long")."""
    qrels, run = collections(max_grade=max_grade)
    qrels["nil"], run["nil"] = {"d1": 0, "d2": -1}, {"d1": 2.0, "x": 1.0}
    qrels["0"] = {"d1": 1}
    qrels["long"] = {f"d{i:04d}": i % (max_grade + 1) for i in range(0, 1100, 7)}
    run["long"] = {f"d{i:04d}": float(-i) for i in range(1050)}
    compare(ours(qrels, run, CWL_RESIDUALS), cwl_residuals(CWL_RESIDUALS, qrels, run), (qrels, run))


def test_bpm_threshold_is_exact():
    """Six gains of 1/3 reach T = 2 exactly at rank 6: the reader stops there, (6/3)/6. cwl_eval's float
    sum is 1.9999999999999998 < 2, so it reads on to k = 10: 2/10 (the documented difference)."""
    qrels = {"1": {d: 1 for d in "abcdef"}}
    run = {"1": {d: float(10 - i) for i, d in enumerate("abcdefghij")}}
    measure = "BPM(T=2,max_rel=3)@10"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert irm(ir_measures.cwl_eval, {measure: measure}, qrels, run)["1"][measure] == pytest.approx(0.2, abs=TOL)
    assert ours(qrels, run, [measure])["1"][measure] == pytest.approx(1 / 3, abs=TOL)


# ir_measures' Compat sorts the run by score, ties by doc id ascending (ties='docid_asc' here), and orders the
# ideal ranking's equal grades by the run's scores, ties in the qrels' order: the qrels are given by doc id.
COMPAT = {"Compat": "Compat", "Compat(p=0.8)": "Compat(p=0.8)", "Compat(p=0.5,normalize=False)":
          "Compat(p=0.5,normalize=False)", "Compat(p=0.99)": "Compat(p=0.99)", "Compat(normalize=False)":
          "Compat(normalize=False)"}


def compat_oracle(qrels, run) -> dict:
    """ir_measures' compat provider on qrels listed by doc id within a query; a qrels query the run does not
    rank is 0 (ir_measures' default there)."""
    by_id = {q: dict(sorted(docs.items(), key=lambda item: item[0].encode())) for q, docs in qrels.items()}
    expected = {q: dict.fromkeys(COMPAT, 0.0) for q in qrels}
    for q, values in irm(ir_measures.compat, COMPAT, by_id, run).items():
        expected[q].update(values)
    return expected


@pytest.mark.parametrize("max_grade", [1, 4])
def test_compat(max_grade):
    """Score ties, graded and binary qrels, unjudged documents, a query with nothing relevant ("nil"), one not
    ranked ("0"), and one whose run and relevant set both pass 1000 documents ("long"; its relevant set is
    longer than its run). Scores are made positive, an order-preserving shift: see
    test_compat_nonpositive_scores."""
    qrels, run = collections(max_grade=max_grade)
    qrels["nil"], run["nil"] = {"d1": 0, "d2": -1}, {"d1": 2.0, "x": 1.0}
    qrels["0"] = {"d1": 1}
    qrels["long"] = {f"d{i:04d}": 1 + i % max_grade for i in range(0, 2600, 2)}
    run["long"] = {f"d{i:04d}": float(i % 7) for i in range(1200)}
    run = {q: {d: v + 10 for d, v in docs.items()} for q, docs in run.items()}
    compare(ours(qrels, run, COMPAT, ties="docid_asc"), compat_oracle(qrels, run), (qrels, run))


def test_compat_nonpositive_scores():
    """Pinned difference: ir_measures gives an unretrieved relevant document score 0 in its ideal ranking, so with
    run scores below 0 it places unretrieved d3 and d4 above retrieved d1 (-1) among the grade-1 documents, where
    the ideal ranking here puts the retrieved ones first, as ir_measures does on the same run shifted to positive
    scores. Run: d2 (0, unjudged), d1 (-1); relevant d1, d3, d4."""
    qrels, run = {"1": {"d1": 1, "d3": 1, "d4": 1}}, {"1": {"d2": 0.0, "d1": -1.0}}
    want_here = (0.95 / 2 + 0.95 ** 2 / 3) / (1 + 0.95 + 0.95 ** 2)  # ideal d1, d3, d4: d1 in both tops from depth 2
    want_irm = (0.95 ** 2 / 3) / (1 + 0.95 + 0.95 ** 2)  # ideal d3, d4, d1: d1 in both tops from depth 3
    assert ours(qrels, run, ["Compat"])["1"]["Compat"] == pytest.approx(want_here, abs=TOL)
    assert compat_oracle(qrels, run)["1"]["Compat"] == pytest.approx(want_irm, abs=TOL)
    shifted = {"1": {d: v + 10 for d, v in run["1"].items()}}
    assert compat_oracle(qrels, shifted)["1"]["Compat"] == pytest.approx(want_here, abs=TOL)


def test_compat_refuses_judgment_groups():
    """Each list has one ideal ranking: judgment groups (qrels_format='qrels_jg') are refused, by name."""
    qrels = pa.table({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [1, 0], "judgment_group": ["g1", "g2"]})
    with pytest.raises(sqlmetrics.SqlmetricsError, match="Compat .*qrels_jg"):
        sqlmetrics.evaluate(qrels, {"1": {"a": 1.0}}, ["Compat"], qrels_format="qrels_jg")


# ------------------------------------------------------------------------------------------ torchmetrics


def targets(qrels, run, q, level):
    """torchmetrics' view of a query: the ranked documents (our order), target = graded >= level."""
    docs = ordered(run[q])
    return docs, np.array([qrels[q].get(d, 0) >= level for d in docs], dtype=int)


def fallout(t, k):
    """RetrievalFallOut(top_k=k): non-relevant in the top k over the non-relevant given; 1.0 when there is
    none (empty_target_action='pos', its default)."""
    neg = 1 - t
    return 1.0 if neg.sum() == 0 else float(neg[:k].sum() / neg.sum())


def auroc(t, scores, k):
    """RetrievalAUROC(top_k=k): the ROC area over the top k; 0 when the top k has no positive (torchmetrics
    returns 0) or no negative (its ROC curve then has a zero false-positive rate, area 0)."""
    t, scores = t[:k], scores[:k]
    if t.sum() == 0 or t.sum() == len(t):
        return 0.0
    return float(roc_auc_score(t, scores))


TORCH_CUTS = (1, 3, 5, None)


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("tie_free", [True, False])
def test_fallout_and_auroc(level, tie_free):
    """On tie-free runs AUROC is scikit-learn's ROC area on the scores themselves; with ties, on the
    positions (the ranking, ties broken by the evaluation's rule), which is what AUROC measures here."""
    qrels, run = collections(tie_free=tie_free)
    names = {}
    for k in TORCH_CUTS:
        at = f"@{k}" if k else ""
        names[f"FallOut(rel={level}){at}"] = ("fallout", k)
        names[f"AUROC(rel={level}){at}"] = ("auroc", k)
    got = ours(qrels, run, names)
    expected = {}
    for q in qrels:
        if q not in run:
            expected[q] = {n: 1.0 if kind == "fallout" else 0.0 for n, (kind, _) in names.items()}
            continue
        docs, t = targets(qrels, run, q, level)
        scores = np.array([run[q][d] for d in docs]) if tie_free else -np.arange(len(docs), dtype=float)
        expected[q] = {n: fallout(t, k or len(t)) if kind == "fallout" else auroc(t, scores, k or len(t))
                       for n, (kind, k) in names.items()}
    compare(got, expected, (qrels, run))


# ------------------------------------------------------------------------------------------ hand case

# Query 1: run x 1.0, a 1.0, c 0.5, b 0.5, d 0.2 ranks (ties by doc id DESC) x, a, c, b, d; grades a 2, c 1,
# b 0, d -1, e 3 (not retrieved), x unjudged. Query 2 is judged and has no ranking.
HAND_QRELS = {"1": {"a": 2, "b": 0, "c": 1, "d": -1, "e": 3}, "2": {"f": 1}}
HAND_RUN = {"1": {"a": 1.0, "x": 1.0, "c": 0.5, "b": 0.5, "d": 0.2}}
HAND = {
    # relevant a (rank 2), c (3); non-relevant x, b, d; x is above both: 2 of the 6 pairs inverted
    "Accuracy": (1 - 2 / 6, None), "AUROC": (1 - 2 / 6, 0.0),
    "Accuracy@2": (0.0, None), "AUROC@2": (0.0, 0.0),  # x, a: one pair, inverted
    "Accuracy@1": (None, None), "AUROC@1": (0.0, 0.0),  # no pair
    "FallOut@2": (1 / 3, 1.0), "FallOut": (1.0, 1.0),  # x of x, b, d
    "NumRet": (5.0, 0.0), "NumRet(rel=1)": (2.0, 0.0), "NumRet(rel=2)": (1.0, 0.0),
    # r = (2^g - 1) / 16: a 3/16, c 1/16 at ranks 2, 3
    "ERR@5": (3 / 16 / 2 + (13 / 16) * (1 / 16) / 3, 0.0),
    # gmax = 3, the qrels' largest grade: a 3/8, c 1/8
    "ERR(gmax='max')@5": (3 / 8 / 2 + (5 / 8) * (1 / 8) / 3, 0.0),
    # gains (max_rel 3): 0, 2/3, 1/3, 0, 0. BPM T=1: reached at rank 3; T=2 never: read to k = 5
    "BPM(max_rel=3)@5": (1 / 3, 0.0), "BPM(T=2,max_rel=3)@5": (1 / 5, 0.0),
    # P = 1, 1, 1/3, 2/9, 2/9: gain read 2/3 + 1/9 over 25/9
    "NERR8(max_rel=3)@5": (7 / 25, 0.0),
    # continuation p(1 - g) = 1/2, 1/6, 1/3, 1/2, ...: P = 1, 1/2, 1/12, 1/36, 1/72, ... (sum 59/36)
    "NERR10(p=0.5,max_rel=3)": (13 / 59, 0.0),
    # max_rel defaults to the qrels' largest grade, 3 here
    "BPM@5": (1 / 3, 0.0), "NERR8@5": (7 / 25, 0.0), "NERR10(p=0.5)": (13 / 59, 0.0),
    # max_rel = 3 <= min_rel (ir_measures refuses it): every gain is 0
    "NERR10(min_rel=3)": (0.0, 0.0), "BPM(min_rel=3)@5": (0.0, 0.0), "NERR8(min_rel=4)@5": (0.0, 0.0),
}


def test_hand_case():
    got = ours(HAND_QRELS, HAND_RUN, HAND)
    compare(got, {q: {m: v[i] for m, v in HAND.items()} for i, q in enumerate(("1", "2"))}, "hand case")


def test_accuracy_mean_skips_undefined_queries():
    """Query 1's Accuracy is 2/3, query 2 has no ranking: ir_measures' mean and ours are 2/3 (AUROC's 1/3)."""
    measure = ir_measures.parse_measure("Accuracy")
    qrels_rows = [Qrel(q, d, g) for q, docs in HAND_QRELS.items() for d, g in docs.items()]
    run_rows = [ScoredDoc("1", d, HAND_RUN["1"][d]) for d in ordered(HAND_RUN["1"])]
    assert ir_measures.accuracy.evaluator([measure], qrels_rows).calc_aggregate(run_rows)[measure] == pytest.approx(2 / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aggregate = sqlmetrics.evaluate(HAND_QRELS, HAND_RUN, ["Accuracy", "AUROC"]).aggregate
    assert aggregate["Accuracy"] == pytest.approx(2 / 3, abs=TOL)
    assert aggregate["AUROC"] == pytest.approx(1 / 3, abs=TOL)


def test_auroc_ties_differ_from_the_roc_curve():
    """Pinned difference: x and a tie at 1.0; ranked x, a (doc id DESC) the top-2 pair is inverted, 0;
    the ROC curve (torchmetrics, scikit-learn) counts the tied pair 1/2."""
    assert roc_auc_score([0, 1], [1.0, 1.0]) == 0.5
    assert ours(HAND_QRELS, HAND_RUN, ["AUROC@2"])["1"]["AUROC@2"] == 0.0


# ------------------------------------------------------------------------------------------ ranx


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_ranx_bpref(seed):
    """`bpref` is also ranx's name: equal to ranx where ranx is defined and agrees (tie-free runs, no negative
    grades, every query with a relevant and a judged non-relevant document); its NaN cases are noted in
    sql/Bpref.sql."""
    import ranx  # slow import (numba)

    qrels, run = collection(seed, min_grade=0, tie_free=True)
    common = [q for q in sorted(set(qrels) & set(run))
              if any(g >= 1 for g in qrels[q].values()) and any(g < 1 for g in qrels[q].values())]
    if not common:
        return
    rq = ranx.Qrels({q: qrels[q] for q in common})
    rr = ranx.Run({q: run[q] for q in common})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(rq, rr, ["bpref", "map"], return_mean=False)
    expected = {q: {"bpref": float(rr.scores["bpref"][q])} for q in common}
    got = ours({q: qrels[q] for q in common}, {q: run[q] for q in common}, ["bpref"])
    compare(got, expected, f"qrels={qrels}\nrun={run}")


def test_ir_measures_parameter_spellings():
    """ir_measures' own spellings of measures that are here under another parameter or name: each gives
    ir_measures' (pytrec_eval's) value under the same string; dcg='exp-log2' is the exponential gain
    (ranx's ndcg_burges, tested against ranx in test_oracles), which graded qrels tell from the linear one."""
    qrels, run = collections()
    spellings = ["SetP(relative=True)", "SetP(relative=True,rel=2)", "SetP(relative=False)", "nDCG(dcg='log2')@10",
                 "nDCG(dcg='log2')", "AP(judged_only=False)", "P(judged_only=False)@5", "AP(judged_only=True)",
                 "nDCG(judged_only=True)@10", "P(judged_only=True)@5", "RR(judged_only=True)", "R(judged_only=True)@10"]
    compare(ours(qrels, run, spellings), irm(ir_measures.pytrec_eval, {s: s for s in spellings}, qrels, run),
            (qrels, run))
    exp = ours(qrels, run, ["nDCG(dcg='exp-log2')@10", "nDCG(gain='exp')@10", "nDCG@10", "DCG(dcg='exp-log2')@5",
                            "DCG(gain='exp')@5"])
    assert all(v["nDCG(dcg='exp-log2')@10"] == v["nDCG(gain='exp')@10"] and
               v["DCG(dcg='exp-log2')@5"] == v["DCG(gain='exp')@5"] for v in exp.values())
    assert any(v["nDCG(dcg='exp-log2')@10"] != v["nDCG@10"] for v in exp.values())


@pytest.mark.parametrize("spelling, message", [
    ("AP(judged_only=yes)", "write True or False, got 'yes'"),
    ("Compat(judged_only=True)", "judged_only applies to the measures of a ranked list; Compat reads its overlap"),
    ("nDCG(dcg='exp')@10", "'exp' is not one of log2, exp-log2"),
    ("SetP(relative=yes)", "'yes' is not one of False, True"),
])
def test_ir_measures_parameter_spellings_refused_say_why(spelling, message):
    with pytest.raises(sqlmetrics.SqlmetricsError, match=re.escape(message)):
        sqlmetrics.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, [spelling])
