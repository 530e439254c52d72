"""Per-query values against independent oracles, on generated collections (hypothesis).

Oracles:
- pytrec_eval-terrier 0.5.11 (trec_eval 9.0.8): every measure with a trec_eval counterpart, equal within 1e-9,
  ties included (trec_eval's rule: score DESC, then doc id DESC byte-wise; scores held as float32, hence
  score_precision="float32" on our side, or scores that are exact in float32).
- ranx 0.3.21: the measures it shares with us, on tie-free data only (its sort is not stable).

Oracle behaviour these tests rely on (checked against the installed versions):
- pytrec_eval reports only queries that are both in the run and in the qrels (trec_eval without -c);
  a qrels query absent from the run is simply missing from its output, so our `queries="qrels"` rows for
  those are checked against hand-computed values (0, NumRel = R, NumRet = 0).
- pytrec_eval crashes (segfault here; DESIGN.md saw a hang) when a query's qrels hold only negative judgments, and even
  when it survives (one measure at a time) it reports num_ret = 0 for that query. Such queries are kept
  out of every pytrec_eval call and checked by hand in `test_negative_only_queries`.
- pytrec_eval's nDCG gains are the raw grades whatever `relevance_level` is (a grade-1 document still
  gains 1 at level 2), which is what METRICS.md requires; the level only changes binary relevance.
- ranx refuses a run and qrels whose query sets differ (AssertionError) unless make_comparable=True; with
  plain dicts it aligns queries by dict insertion order and silently mis-scores when the orders differ,
  so we always pass ranx.Qrels / ranx.Run objects restricted to the common queries.
- ranx.evaluate(..., return_mean=False) with a single metric raises KeyError (it indexes the result by
  the bare metric name); we always pass several and read per-query values from `run.scores`.
- ranx's `-lN` suffix zeroes the gains of grades below N (our `nDCG(rel=N)`), unlike trec_eval's level.
"""
from __future__ import annotations

import math
import os
import random
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics

# Thousands of values against pytrec_eval, ranx (numba compiles at first use: about two minutes cold) and
# ir_measures: the full suite's (`.ci/run`); the fast one keeps the hand-computed and trec_eval checks.
pytestmark = pytest.mark.slow

# Scale with SQLMETRICS_ORACLE_EXAMPLES for a longer soak; the default keeps the file near a minute and a half on 2 cores.
_N = int(os.environ.get("SQLMETRICS_ORACLE_EXAMPLES", "30"))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOL = 1e-9

# Mixed case and punctuation, so byte-wise doc-id ordering matters ('-' < '.' < digits < upper < '_' < lower).
DOC_POOL = ("d1", "D1", "d-1", "d10", "a.b", "d.1", "D10", "d_1", "A", "a", "1", "10")
QID_POOL = ("q1", "q2", "Q1", "q-3", "10", "9")
# Few values, so ties are frequent. Three pairs are distinct in float64 but equal once rounded to float32
# (they tie for trec_eval, which holds scores as float32); 0.1 is not exact in float32 but keeps its order.
SCORES = (-1.5, 0.0, 0.1, 0.5, 0.5 + 1e-10, 1.0, 1.0 + 1e-9, 2.0 - 1e-9, 2.0, 3.0)
SCORES_F32_EXACT = (-1.5, 0.0, 0.25, 0.5, 1.0, 2.0, 2.5, 3.0)
# Distinct values (exact in float32) for tie-free runs.
DISTINCT_SCORES = tuple(i / 4 for i in range(-8, 40))
CUTS = (1, 3, 5, 10)
IPREC_POINTS = tuple(i / 10 for i in range(11))
RPREC_MULTS = tuple(i / 5 for i in range(1, 11))  # trec_eval's default Rprec_mult points 0.2, 0.4, ..., 2.0


# --------------------------------------------------------------------------------------------------
# Data generation


@st.composite
def qrels_and_runs(draw, *, min_rel=-1, tie_free=False, scores=SCORES, negative_only_queries=False):
    """(qrels, run) as {qid: {docid: value}}.

    At least one query is in both; others are qrels-only or run-only. Every qrels query has at least one
    judgment >= 0 (pytrec_eval crashes otherwise) unless negative_only_queries, which adds 1-2 extra
    queries, in qrels and in the run, whose judgments are all negative.
    """
    qids = draw(st.lists(st.sampled_from(QID_POOL), min_size=1, max_size=6, unique=True))
    roles = ["both"] + [draw(st.sampled_from(["both", "qrels", "run"])) for _ in qids[1:]]
    qrels, run = {}, {}
    for qid, role in zip(qids, roles):
        if role in ("both", "qrels"):
            docs = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, max_size=8, unique=True))
            rels = draw(st.lists(st.integers(min_rel, 3), min_size=len(docs), max_size=len(docs)))
            if max(rels) < 0:
                rels[0] = draw(st.integers(0, 3))
            qrels[qid] = dict(zip(docs, rels))
        if role in ("both", "run"):
            run[qid] = draw(rankings(tie_free=tie_free, scores=scores))
    if negative_only_queries:
        extra = draw(st.lists(st.sampled_from(("neg1", "NEG2", "n.3")), min_size=1, max_size=2, unique=True))
        for qid in extra:
            docs = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, max_size=4, unique=True))
            qrels[qid] = {d: draw(st.integers(-3, -1)) for d in docs}
            run[qid] = draw(rankings(tie_free=tie_free, scores=scores))
    return qrels, run


@st.composite
def rankings(draw, *, tie_free=False, scores=SCORES):
    docs = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, max_size=10, unique=True))
    if tie_free:
        values = draw(st.lists(st.sampled_from(DISTINCT_SCORES), min_size=len(docs), max_size=len(docs),
                               unique=True))
    else:
        values = draw(st.lists(st.sampled_from(scores), min_size=len(docs), max_size=len(docs)))
    return dict(zip(docs, values))


def as_input(nested, kind, value_name):
    """A {qid: {docid: value}} dict in one of the accepted input forms."""
    if kind == "dict":
        return nested
    rows = [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]
    random.Random(len(rows)).shuffle(rows)
    cols = {"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], value_name: [r[2] for r in rows]}
    if kind == "arrow":
        typ = pa.int64() if value_name == "relevance" else pa.float64()
        return pa.table({"query_id": pa.array(cols["query_id"], pa.string()),
                         "doc_id": pa.array(cols["doc_id"], pa.string()),
                         value_name: pa.array(cols[value_name], typ)})
    if kind == "pandas":
        return pd.DataFrame(cols)
    raise ValueError(kind)


def ours(qrels, run, measures, *, kinds=("dict", "dict"), **options):
    """sqlmetrics' per-query values as {qid: {measure: value}}, and its aggregate; at trec_eval 9.0.8's definitions
    unless told otherwise, which are pytrec_eval's."""
    options.setdefault("compat", "trec_eval-9.0.8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing-query warnings are expected here
        res = sqlmetrics.evaluate(as_input(qrels, kinds[0], "relevance"), as_input(run, kinds[1], "score"),
                                  list(measures), **options)
    table = res.per_query.to_pydict()
    qids = table["query_id"]
    assert len(qids) == len(set(qids)), f"duplicate query rows: {qids}"
    per_query = {q: {m: table[m][i] for m in measures} for i, q in enumerate(qids)}
    return per_query, res.aggregate


def compare(got, expected, context):
    """got/expected: {qid: {measure: value}}; collects every mismatch into one message."""
    bad = []
    for qid, values in expected.items():
        for m, want in values.items():
            have = got[qid][m]
            if have is None or not math.isclose(have, want, rel_tol=0, abs_tol=TOL):
                bad.append(f"  {qid!r} {m}: ours={have!r} oracle={want!r}")
    assert not bad, "per-query mismatches:\n" + "\n".join(bad[:40]) + f"\n{context}"


def describe(qrels, run, **extra):
    return f"qrels={qrels!r}\nrun={run!r}\n" + "".join(f"{k}={v!r}\n" for k, v in extra.items())


# --------------------------------------------------------------------------------------------------
# pytrec_eval

# Our canonical measure string -> pytrec_eval output key.
PYTREC_CANON = {
    **{f"P@{k}": f"P_{k}" for k in CUTS},
    **{f"R@{k}": f"recall_{k}" for k in CUTS},
    "AP": "map",
    **{f"AP@{k}": f"map_cut_{k}" for k in CUTS},
    "nDCG": "ndcg",
    **{f"nDCG@{k}": f"ndcg_cut_{k}" for k in CUTS},
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "Bpref": "bpref",
    **{f"IPrec@{r:.1f}": f"iprec_at_recall_{r:.2f}" for r in IPREC_POINTS},
    "SetP": "set_P",
    "SetR": "set_recall",
    "SetF(beta=0.5)": "set_F.0.5",  # trec_eval's beta, not squared
    **{f"Success@{k}": f"success_{k}" for k in CUTS},
    "NumQ": "num_q", "NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret",
    "GMAP": "map",  # per query GMAP is AP; its aggregate is checked against gm_map below
    "SetAP": "set_map",
    "SetRelP": "set_relative_P",
    **{f"RelP@{k}": f"relative_P_{k}" for k in CUTS},
    "NumNonRelJudgedRet": "num_nonrel_judged_ret",
    "GMBpref": "bpref",  # per query GMBpref is Bpref; its aggregate is checked against gm_bpref below
    **{f"RprecMult(mult={m})": f"Rprec_mult_{m:.2f}" for m in RPREC_MULTS},
    "IPrec11pt": "11pt_avg",
    "infAP": "infAP",
    "Utility": "utility",
    "binG": "binG",
    "G": "G",
    "nDCGRel": "ndcg_rel",
    "Rndcg": "Rndcg",
}
# trec_eval spellings (checked on fewer examples: each extra measure costs evaluate() time).
PYTREC_SPELLINGS = {
    "P_10": "P_10", "P.3": "P_3", "recall_5": "recall_5", "map": "map", "map_cut_10": "map_cut_10",
    "ndcg": "ndcg", "ndcg_cut_5": "ndcg_cut_5", "ndcg_cut.3": "ndcg_cut_3", "recip_rank": "recip_rank",
    "bpref": "bpref", "iprec_at_recall_0.00": "iprec_at_recall_0.00", "iprec_at_recall_0.30": "iprec_at_recall_0.30",
    "iprec_at_recall_1.00": "iprec_at_recall_1.00", "set_P": "set_P", "set_recall": "set_recall",
    "set_F": "set_F", "success_5": "success_5", "num_q": "num_q", "num_ret": "num_ret", "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret", "gm_map": "map", "set_map": "set_map", "set_relative_P": "set_relative_P",
    "relative_P_5": "relative_P_5", "relative_P.3": "relative_P_3", "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "gm_bpref": "bpref", "Rprec_mult_0.20": "Rprec_mult_0.20", "Rprec_mult.1.4": "Rprec_mult_1.40",
    "11pt_avg": "11pt_avg",
    "infAP": "infAP", "utility": "utility", "binG": "binG", "G": "G", "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg",
}
PYTREC_REQUEST = (
    [f"P_{k}" for k in CUTS] + [f"recall_{k}" for k in CUTS] + [f"map_cut_{k}" for k in CUTS]
    + [f"ndcg_cut_{k}" for k in CUTS] + [f"success_{k}" for k in CUTS]
    + ["map", "gm_map", "ndcg", "recip_rank", "Rprec", "bpref", "iprec_at_recall", "set_P", "set_recall",
       "set_F", "num_q", "num_ret", "num_rel", "num_rel_ret", "set_map", "set_relative_P",
       f"relative_P.{','.join(map(str, CUTS))}", "num_nonrel_judged_ret", "gm_bpref", "Rprec_mult", "11pt_avg",
       "infAP", "utility", "binG", "G", "ndcg_rel", "Rndcg"]
)
# Geometric means: our measure string -> pytrec_eval's per-query log value, whose mean's exp is the aggregate.
GEOMETRIC = {"GMAP": "gm_map", "gm_map": "gm_map", "GMBpref": "gm_bpref", "gm_bpref": "gm_bpref"}


def pytrec(qrels, run, relevance_level, judged_only=False):
    """pytrec_eval's per-query values {qid: {pytrec key: value}}, plus "set_F.0.5"."""
    # A negative-only query would crash (or hang) pytrec_eval: never hand it one.
    assert all(max(docs.values()) >= 0 for docs in qrels.values()), "negative-only query given to pytrec_eval"
    flags = dict(relevance_level=relevance_level, judged_docs_only_flag=judged_only)
    out = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_REQUEST, **flags).evaluate(run)
    # set_F with beta = 0.5 comes back under the same key "set_F", so it needs its own evaluator.
    half = pytrec_eval.RelevanceEvaluator(qrels, ["set_F.0.5"], **flags).evaluate(run)
    for qid in out:
        out[qid]["set_F.0.5"] = half[qid]["set_F"]
    return out


def missing_query_values(docs, relevance_level):
    """Hand-computed pytrec-keyed values for a qrels query with no ranking (trec_eval -c)."""
    values = {key: 0.0 for key in [*PYTREC_CANON.values(), *PYTREC_SPELLINGS.values()]}
    values["num_q"] = 1.0
    values["num_rel"] = float(sum(1 for rel in docs.values() if rel >= relevance_level))
    values["gm_map"] = values["gm_bpref"] = math.log(1e-5)
    return values


def keyed(oracle, table):
    """{qid: {pytrec key: v}} -> {qid: {our measure string: v}} through table (ours -> pytrec key)."""
    return {q: {ours_name: values[key] for ours_name, key in table.items()} for q, values in oracle.items()}


def check_aggregate(aggregate, oracle, table, context):
    """Mean over the oracle's queries; sum for num_*; exp(mean(gm_map)) for GMAP, exp(mean(gm_bpref)) for GMBpref
    (trec_eval's own rules)."""
    bad = []
    for m, key in table.items():
        if m in GEOMETRIC:
            want = math.exp(sum(v[GEOMETRIC[m]] for v in oracle.values()) / len(oracle))
        else:
            values = [v[key] for v in oracle.values()]
            want = sum(values) if key.startswith("num_") else sum(values) / len(values)
        if aggregate[m] is None or not math.isclose(aggregate[m], want, rel_tol=1e-12, abs_tol=TOL):
            bad.append(f"  aggregate {m}: ours={aggregate[m]!r} oracle={want!r}")
    assert not bad, "aggregate mismatches:\n" + "\n".join(bad) + f"\n{context}"


@pytest.mark.parametrize("relevance_level", [1, 2])
@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(), kinds=st.sampled_from([("dict", "dict"), ("arrow", "arrow"), ("pandas", "dict")]))
def test_pytrec_eval_intersection_float32(data, kinds, relevance_level):
    """queries="intersection", score_precision="float32": exactly pytrec_eval's queries and values."""
    qrels, run = data
    oracle = pytrec(qrels, run, relevance_level)
    got, aggregate = ours(qrels, run, PYTREC_CANON, kinds=kinds, queries="intersection",
                          score_precision="float32", relevance_level=relevance_level)
    context = describe(qrels, run, relevance_level=relevance_level, kinds=kinds)
    assert set(got) == set(oracle) == set(qrels) & set(run), context
    compare(got, keyed(oracle, PYTREC_CANON), context)
    check_aggregate(aggregate, oracle, PYTREC_CANON, context)


@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(scores=SCORES_F32_EXACT), relevance_level=st.sampled_from([1, 2]))
def test_pytrec_eval_default_options(data, relevance_level):
    """Default options (queries="qrels", float64 scores) on scores exact in float32: trec_eval -c.

    Queries in both: pytrec_eval's values. Qrels queries absent from the run: 0 for every rate measure,
    NumRet = NumRelRet = 0, NumRel = R, NumQ = 1 (hand-computed). Run-only queries: no row.
    """
    qrels, run = data
    oracle = pytrec(qrels, run, relevance_level)
    for qid, docs in qrels.items():
        oracle.setdefault(qid, missing_query_values(docs, relevance_level))
    got, aggregate = ours(qrels, run, PYTREC_CANON, relevance_level=relevance_level)
    context = describe(qrels, run, relevance_level=relevance_level)
    assert set(got) == set(qrels), context
    compare(got, keyed(oracle, PYTREC_CANON), context)
    check_aggregate(aggregate, oracle, PYTREC_CANON, context)


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(), relevance_level=st.sampled_from([1, 2]))
def test_pytrec_eval_trec_spellings(data, relevance_level):
    """trec_eval's own measure names give trec_eval's values (and its -c query set)."""
    qrels, run = data
    oracle = pytrec(qrels, run, relevance_level)
    for qid, docs in qrels.items():
        oracle.setdefault(qid, missing_query_values(docs, relevance_level))
    got, aggregate = ours(qrels, run, PYTREC_SPELLINGS, score_precision="float32", relevance_level=relevance_level)
    context = describe(qrels, run, relevance_level=relevance_level)
    assert set(got) == set(qrels), context
    compare(got, keyed(oracle, PYTREC_SPELLINGS), context)
    check_aggregate(aggregate, oracle, PYTREC_SPELLINGS, context)


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(), relevance_level=st.sampled_from([1, 2]))
def test_pytrec_eval_judged_only(data, relevance_level):
    """judged_only=True is trec_eval -J: unjudged documents (and negative grades) leave each ranking first."""
    qrels, run = data
    oracle = pytrec(qrels, run, relevance_level, judged_only=True)
    got, aggregate = ours(qrels, run, PYTREC_CANON, queries="intersection", score_precision="float32",
                          relevance_level=relevance_level, judged_only=True)
    context = describe(qrels, run, relevance_level=relevance_level, judged_only=True)
    assert set(got) == set(oracle) == set(qrels) & set(run), context  # an emptied ranking still counts, as 0
    for values in oracle.values():
        # trec_eval (and so pytrec_eval) divide 0 by 0 for interpolated precision on an emptied ranking and
        # print nan; every other measure gives 0 there, as do ours (README: documented differences).
        nan = {k for k, v in values.items() if math.isnan(v)}
        assert values["num_ret"] == 0 or not nan, context
        assert all(k.startswith(("iprec_at_recall", "11pt_avg")) for k in nan), context
        values.update({k: 0.0 for k in nan})
    compare(got, keyed(oracle, PYTREC_CANON), context)


def rescored(run, *, float32, docid_desc):
    """The run re-scored with distinct integers in the order score DESC, then doc id (bytes) DESC or ASC.

    Computed here, independently of sqlmetrics, so pytrec_eval sees a tie-free run in exactly that order.
    """
    out = {}
    for qid, docs in run.items():
        score = (lambda d: float(np.float32(docs[d]))) if float32 else (lambda d: docs[d])
        by_id = sorted(docs, key=lambda d: d.encode(), reverse=docid_desc)
        ordered = sorted(by_id, key=lambda d: -score(d))  # stable: ties keep the doc-id order
        out[qid] = {d: float(len(ordered) - i) for i, d in enumerate(ordered)}
    return out


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs())
def test_pytrec_eval_ties_docid_asc(data):
    """ties="docid_asc": pytrec_eval on the same run re-scored (tie-free) in score DESC, doc id ASC order."""
    qrels, run = data
    tie_free = rescored(run, float32=True, docid_desc=False)
    expected = keyed(pytrec(qrels, tie_free, 1), PYTREC_CANON)
    got, _ = ours(qrels, run, PYTREC_CANON, queries="intersection", score_precision="float32", ties="docid_asc")
    context = describe(qrels, run, ties="docid_asc")
    assert set(got) == set(expected), context
    compare(got, expected, context)


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs())
def test_pytrec_eval_float64_scores(data):
    """Default score_precision (float64): pytrec_eval on the run re-scored in float64 score DESC, doc id DESC.

    Where the data holds 1.0 and 1.0 + 1e-9, float64 separates what float32 ties, so this is not the
    float32 test again.
    """
    qrels, run = data
    tie_free = rescored(run, float32=False, docid_desc=True)
    expected = keyed(pytrec(qrels, tie_free, 1), PYTREC_CANON)
    got, _ = ours(qrels, run, PYTREC_CANON, queries="intersection")
    context = describe(qrels, run, score_precision="float64")
    assert set(got) == set(expected), context
    compare(got, expected, context)


def test_float32_rounding_changes_the_order():
    """A fixed case: 1.0 + 1e-9 ties with 1.0 in float32 only; doc ids DESC then decide."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"b": 1.0, "a": 1.0 + 1e-9}}
    assert pytrec_eval.RelevanceEvaluator(qrels, ["recip_rank"]).evaluate(run)["q"]["recip_rank"] == 0.5
    f32, _ = ours(qrels, run, ["RR"], score_precision="float32")
    f64, _ = ours(qrels, run, ["RR"])
    assert f32["q"]["RR"] == 0.5
    assert f64["q"]["RR"] == 1.0


# --------------------------------------------------------------------------------------------------
# Queries whose judgments are all negative (kept away from pytrec_eval)

NEG_ZERO = ["P@1", "P@5", "R@5", "AP", "AP@5", "nDCG", "nDCG@5", "nDCG(gain='exp')@5", "RR", "RR@5", "Rprec",
            "Bpref", "IPrec@0.0", "IPrec@0.5", "IPrec@1.0", "SetP", "SetR", "SetF(beta=0.5)", "F1", "F1@5",
            "Success@5", "Hits@5", "Hits", "DCG@5", "DCG", "CG@5", "RBP(p=0.8)", "ERR@10", "ContextPrecision@5",
            "NumRel", "NumRelRet", "SetAP", "SetRelP", "RelP@5", "NumNonRelJudgedRet", "GMBpref", "RprecMult",
            "RprecMult(mult=0.2)", "IPrec11pt", "infAP", "binG", "nDCG(gains={0:1,1:3})", "G", "nDCGRel", "Rndcg"]


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(negative_only_queries=True), relevance_level=st.sampled_from([1, 2]))
def test_negative_only_queries(data, relevance_level):
    """A query judged only with negative grades has R = 0: every measure is 0, NumRet = n, FirstRank NULL.

    Hand-computed, since pytrec_eval crashes on such queries (and reports num_ret = 0 when it does not).
    The other queries still match pytrec_eval, which is given the qrels without the negative-only ones.
    """
    qrels, run = data
    negative = {q for q, docs in qrels.items() if max(docs.values()) < 0}
    assert negative
    measures = [*PYTREC_CANON, *[m for m in NEG_ZERO if m not in PYTREC_CANON], "FirstRank"]
    got, _ = ours(qrels, run, measures, relevance_level=relevance_level, score_precision="float32")
    context = describe(qrels, run, relevance_level=relevance_level)
    assert set(got) == set(qrels), context
    bad = []
    for qid in sorted(negative):
        for m in NEG_ZERO:
            if got[qid][m] != 0:
                bad.append(f"  {qid!r} {m} = {got[qid][m]!r}, expected 0")
        if got[qid]["NumRet"] != len(run[qid]):
            bad.append(f"  {qid!r} NumRet = {got[qid]['NumRet']!r}, expected {len(run[qid])}")
        if got[qid]["FirstRank"] is not None:
            bad.append(f"  {qid!r} FirstRank = {got[qid]['FirstRank']!r}, expected NULL")
    assert not bad, "negative-only queries:\n" + "\n".join(bad) + "\n" + context
    kept = {q: docs for q, docs in qrels.items() if q not in negative}
    oracle = pytrec(kept, {q: docs for q, docs in run.items() if q not in negative}, relevance_level)
    compare(got, keyed(oracle, PYTREC_CANON), context)


# --------------------------------------------------------------------------------------------------
# ranx (tie-free data, no negative judgments)

RANX_CUTS = (1, 3, 10)
# ranx metric -> our measure strings that must equal it. Canonical names:
RANX_CANON = {
    **{f"dcg@{k}": [f"DCG@{k}"] for k in RANX_CUTS},
    "dcg": ["DCG"],
    **{f"dcg_burges@{k}": [f"DCG(gain='exp')@{k}"] for k in RANX_CUTS},
    **{f"ndcg_burges@{k}": [f"nDCG(gain='exp')@{k}"] for k in RANX_CUTS},
    "ndcg_burges": ["nDCG(gain='exp')"],
    **{f"f1@{k}": [f"F1@{k}"] for k in RANX_CUTS},
    "f1": ["F1"],
    **{f"hits@{k}": [f"Hits@{k}"] for k in RANX_CUTS},
    "hits": ["Hits"],
    **{f"mrr@{k}": [f"RR@{k}"] for k in RANX_CUTS},
    "mrr": ["RR"],
    **{f"map@{k}": [f"AP@{k}"] for k in RANX_CUTS},
    "map": ["AP"],
    **{f"ndcg@{k}": [f"nDCG@{k}"] for k in RANX_CUTS},
    "ndcg": ["nDCG"],
    **{f"precision@{k}": [f"P@{k}"] for k in RANX_CUTS},
    "precision": ["SetP"],
    **{f"recall@{k}": [f"R@{k}"] for k in RANX_CUTS},
    "recall": ["SetR"],
    **{f"hit_rate@{k}": [f"Success@{k}"] for k in RANX_CUTS},
    "r-precision": ["Rprec"],
}
# ranx's own spellings, and its relevance-level suffix: `-l2` drops the grades below 2 (gains included),
# i.e. our per-measure rel=2 (not relevance_level, which leaves nDCG gains alone as trec_eval does).
RANX_SPELLINGS = {
    **{m: [m] for m in ("dcg@5", "dcg_burges@5", "ndcg_burges@5", "f1@5", "hits@5", "mrr@5", "map@5", "ndcg@5",
                        "precision@5", "recall@5", "hit_rate@5", "precision", "recall", "f1")},
    "r-precision": ["r-precision", "r_precision"],
    "ndcg@5-l2": ["ndcg@5-l2", "nDCG(rel=2)@5"],
    "ndcg-l2": ["nDCG(rel=2)"],
    "ndcg_burges@5-l2": ["ndcg_burges@5-l2"],
    "dcg@5-l2": ["dcg@5-l2"],
    "precision@5-l2": ["precision@5-l2", "P(rel=2)@5"],
    "recall@5-l2": ["recall@5-l2"],
    "map@5-l2": ["map@5-l2"],
    "mrr@5-l2": ["mrr@5-l2"],
    "hits@5-l2": ["hits@5-l2"],
    "r-precision-l2": ["r-precision-l2"],
}


def ranx_per_query(qrels, run, metrics):
    """ranx's per-query values {qid: {metric: value}} over the queries in both qrels and run."""
    import ranx  # a slow import (numba, and matplotlib through ranx.meta), for the slow tests only

    common = sorted(set(qrels) & set(run))
    rq = ranx.Qrels({q: dict(qrels[q]) for q in common})
    rr = ranx.Run({q: dict(run[q]) for q in common})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumbaTypeSafetyWarning on hashed doc ids
        ranx.evaluate(rq, rr, list(metrics), return_mean=False)
    out = {q: {} for q in common}
    for metric in metrics:
        scores = rr.scores[metric]
        assert set(scores) == set(common)
        for q in common:
            out[q][metric] = float(scores[q])
    return out


def check_against_ranx(qrels, run, table):
    expected_ranx = ranx_per_query(qrels, run, list(table))
    measures = [name for names in table.values() for name in names]
    got, _ = ours(qrels, run, measures, queries="intersection")
    context = describe(qrels, run)
    assert set(got) == set(expected_ranx), context
    expected = {q: {name: values[metric] for metric, names in table.items() for name in names}
                for q, values in expected_ranx.items()}
    compare(got, expected, context)


@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(min_rel=0, tie_free=True))
def test_ranx_tie_free(data):
    """Canonical names against ranx, on the queries in both (ranx refuses differing query sets)."""
    qrels, run = data
    check_against_ranx(qrels, run, RANX_CANON)


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(min_rel=0, tie_free=True))
def test_ranx_spellings_and_level_suffix(data):
    qrels, run = data
    check_against_ranx(qrels, run, RANX_SPELLINGS)


# --------------------------------------------------------------------------------------------------
# ir_measures (its pytrec_eval provider for infAP and gain mappings; its judged provider for Judged@k)

GAIN_MAPS = ({0: 0, 1: 1, 2: 3}, {1: 5, 2: 1, 3: 2}, {0: 2, 3: 1})  # the second and third reorder the grades


def ir_measures_per_query(qrels, run, measures):
    """{qid: {str(measure): value}} from ir_measures.iter_calc."""
    import ir_measures

    out = {}
    for metric in ir_measures.iter_calc(measures, qrels, run):
        out.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
    return out


def gains_text(gains):
    return "{" + ",".join(f"{g}:{v}" for g, v in gains.items()) + "}"


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(scores=SCORES_F32_EXACT), gains=st.sampled_from(GAIN_MAPS))
def test_ir_measures_infap_and_gains(data, gains):
    """infAP and nDCG(gains=...)(@k) per query, ties included. ir_measures maps the qrels grades through gains
    (an unlisted grade keeps its own) and hands the mapped qrels to trec_eval's ndcg / ndcg_cut_k: the ideal
    ranking follows the mapped gains, which these maps reorder."""
    import ir_measures

    qrels, run = data
    theirs = [ir_measures.infAP, ir_measures.nDCG(gains=gains), ir_measures.nDCG(gains=gains) @ 3]
    ours_names = ["infAP", f"nDCG(gains={gains_text(gains)})", f"nDCG(gains={gains_text(gains)})@3"]
    expected_raw = ir_measures_per_query(qrels, run, theirs)
    expected = {q: {o: values[str(t)] for o, t in zip(ours_names, theirs)}
                for q, values in expected_raw.items()}
    got, _ = ours(qrels, run, ours_names)  # ir_measures scores every judged query, as queries="qrels" does
    context = describe(qrels, run, gains=gains)
    assert set(expected) == set(got), context
    compare(got, expected, context)


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(min_rel=0, scores=SCORES_F32_EXACT), k=st.sampled_from(CUTS))
def test_unjudged_is_one_minus_ir_measures_judged(data, k):
    """unj_k (trec_eval 10.0) = 1 - ir_measures' Judged@k when the run has at least k documents and no grade is
    negative; otherwise (min(k, n) - judged in the top k) / k. ir_measures breaks ties by doc id ascending."""
    import ir_measures

    qrels, run = data
    judged = ir_measures_per_query(qrels, run, [ir_measures.Judged @ k])
    got, _ = ours(qrels, run, [f"unj_{k}"], queries="intersection", ties="docid_asc")
    bad = []
    for qid, values in judged.items():
        if qid not in run:
            continue
        n = min(k, len(run[qid]))
        want = (n - values[str(ir_measures.Judged @ k)] * n) / k
        if not math.isclose(got[qid][f"unj_{k}"], want, abs_tol=TOL):
            bad.append(f"  {qid!r}: ours={got[qid][f'unj_{k}']!r} from Judged: {want!r}")
    assert not bad, "\n".join(bad) + "\n" + describe(qrels, run, k=k)
