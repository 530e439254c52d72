"""Properties every evaluation must satisfy, whatever the data (hypothesis).

No oracle here: each test states a relation between sqlmetrics' own outputs (row order does not matter,
the ideal ranking scores 1, rates stay in [0, 1], P@k * k = Hits@k, ...), or between its outputs and
facts computed directly from the generated data (which queries have a positive gain, R).
"""
from __future__ import annotations

import math
import os
import random
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics.catalogue import measures, parse

_N = int(os.environ.get("SQLMETRICS_INVARIANT_EXAMPLES", "30"))
# Many random collections, each evaluated with every measure of the catalogue: the full suite's (`.ci/run`).
pytestmark = pytest.mark.slow
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DOC_POOL = ("d1", "D1", "d-1", "d10", "a.b", "d.1", "D10", "d_1", "A", "a", "1", "10")
QID_POOL = ("q1", "q2", "Q1", "q-3", "10", "9")
SCORES = (-1.5, 0.0, 0.1, 0.5, 1.0, 1.0 + 1e-9, 2.0, 2.5, 3.0)
DISTINCT_SCORES = tuple(i / 4 for i in range(-8, 40))  # exact in float32 too
CUTS = (1, 2, 3, 5, 10, 20)


def catalogue_calls() -> list:
    """Every measure of the catalogue (but the diversity ones), bare where it may be, at a few cutoffs (recall points for IPrec),
    and with each option of its choice parameters: derived from sql/, so a new template is covered."""
    out = []
    for m in measures().values():
        if m.rows == "subtopics":  # diversity measures read subtopic qrels: tests/test_diversity.py
            continue
        if m.aggregate == "once" or m.rows == "items":
            continue  # the run's items, rated pairs, or item similarities (history=, items=): tests/test_recsys.py
        if m.rows in ("verdicts", "embeddings", "nuggets"):
            continue  # the query's statements, embeddings or nuggets, not the ranking: tests/test_rag.py, tests/test_nuggets.py
        variants = [""] + [f"({p.name}='{o}')" for p in m.params.values() if p.type == "choice"
                           for o in p.options if o != p.default]
        at = m.params.get(m.at) if m.at else None
        points = [] if at is None else ["0.0", "0.1", "0.5", "1.0"] if at.type == "fraction" else ["1", "3", "10"]
        for variant in variants:
            if at is None or not at.required:
                out.append(m.name + variant)
            out += [f"{m.name}{variant}@{point}" for point in points]
    return out


ALL = catalogue_calls()
RANGES = {call: parse(call).measure for call in ALL}


@st.composite
def qrels_and_runs(draw, *, tie_free=False):
    """({qid: {docid: relevance}}, {qid: {docid: score}}): grades -1..3 (negative-only queries allowed),
    ties frequent unless tie_free, qrels-only and run-only queries."""
    qids = draw(st.lists(st.sampled_from(QID_POOL), min_size=1, max_size=6, unique=True))
    roles = ["both"] + [draw(st.sampled_from(["both", "qrels", "run"])) for _ in qids[1:]]
    qrels, run = {}, {}
    for qid, role in zip(qids, roles):
        if role in ("both", "qrels"):
            docs = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, max_size=8, unique=True))
            qrels[qid] = {d: draw(st.integers(-1, 3)) for d in docs}
        if role in ("both", "run"):
            docs = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, max_size=10, unique=True))
            pool = DISTINCT_SCORES if tie_free else SCORES
            scores = draw(st.lists(st.sampled_from(pool), min_size=len(docs), max_size=len(docs), unique=tie_free))
            run[qid] = dict(zip(docs, scores))
    return qrels, run


def rows(nested):
    return [(q, d, v) for q, docs in nested.items() for d, v in docs.items()]


def table(rows_, value_name):
    typ = pa.int64() if value_name == "relevance" else pa.float64()
    return pa.table({"query_id": pa.array([r[0] for r in rows_], pa.string()),
                     "doc_id": pa.array([r[1] for r in rows_], pa.string()),
                     value_name: pa.array([r[2] for r in rows_], typ)})


def evaluate(qrels, run, measures, **options):
    """Per-query values {qid: {measure: value}} and the aggregate dict."""
    if isinstance(qrels, dict):
        qrels, run = table(rows(qrels), "relevance"), table(rows(run), "score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing-query warnings are expected
        res = sqlmetrics.evaluate(qrels, run, list(measures), **options)
    cols = res.per_query.to_pydict()
    qids = cols["query_id"]
    assert len(qids) == len(set(qids)), f"duplicate query rows: {qids}"
    return {q: {m: cols[m][i] for m in measures} for i, q in enumerate(qids)}, res.aggregate


def same(a, b, tol=1e-12):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def describe(qrels, run, **extra):
    return f"qrels={qrels!r}\nrun={run!r}\n" + "".join(f"{k}={v!r}\n" for k, v in extra.items())


@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(), seed=st.integers(0, 2**32 - 1),
       options=st.sampled_from([{}, {"queries": "intersection"}, {"ties": "docid_asc"},
                                {"score_precision": "float32", "relevance_level": 2}]))
def test_shuffling_rows_changes_nothing(data, seed, options):
    qrels, run = data
    q_rows, r_rows = rows(qrels), rows(run)
    shuffled_q, shuffled_r = q_rows[:], r_rows[:]
    rnd = random.Random(seed)
    rnd.shuffle(shuffled_q)
    rnd.shuffle(shuffled_r)
    a, agg_a = evaluate(table(q_rows, "relevance"), table(r_rows, "score"), ALL, **options)
    b, agg_b = evaluate(table(shuffled_q, "relevance"), table(shuffled_r, "score"), ALL, **options)
    context = describe(qrels, run, options=options, seed=seed)
    assert set(a) == set(b), context
    bad = [f"  {q!r} {m}: {a[q][m]!r} vs {b[q][m]!r}" for q in a for m in ALL if not same(a[q][m], b[q][m])]
    bad += [f"  aggregate {m}: {agg_a[m]!r} vs {agg_b[m]!r}" for m in ALL if not same(agg_a[m], agg_b[m])]
    assert not bad, "row order changed values:\n" + "\n".join(bad) + "\n" + context


IDEAL_ONE = ["nDCG", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@10", "nDCG(gain='exp')", "nDCG(gain='exp')@5"]
IDEAL_ONE_IF_RELEVANT = ["AP", "RR", "Rprec", "Bpref", "IPrec@0.0", "IPrec@0.5", "IPrec@1.0", "SetR", "R@20"]


@settings(max_examples=_N, **_SETTINGS)
@given(qrels=st.dictionaries(st.sampled_from(QID_POOL),
                             st.dictionaries(st.sampled_from(DOC_POOL), st.integers(-1, 3), min_size=1, max_size=8),
                             min_size=1, max_size=6),
       unjudged=st.lists(st.sampled_from(("u1", "U2", "u-3")), unique=True, max_size=3),
       relevance_level=st.sampled_from([1, 2]))
def test_ideal_ranking_scores_one(qrels, unjudged, relevance_level):
    """Run = every judged doc, scored in relevance order with distinct scores (then a few unjudged docs).

    nDCG = nDCG@k = 1 wherever some grade is positive (whatever the relevance level: it does not change
    gains), 0 where none is; the binary measures are 1 wherever R > 0.
    """
    run = {}
    for qid, docs in qrels.items():
        ordered = sorted(docs, key=lambda d: -docs[d])
        ranked = ordered + [u for u in unjudged if u not in docs]
        run[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    got, _ = evaluate(qrels, run, IDEAL_ONE + IDEAL_ONE_IF_RELEVANT, relevance_level=relevance_level)
    context = describe(qrels, run, relevance_level=relevance_level)
    assert set(got) == set(qrels), context
    bad = []
    for qid, docs in qrels.items():
        positive = max(docs.values()) > 0
        relevant = max(docs.values()) >= relevance_level
        for m in IDEAL_ONE:
            if not same(got[qid][m], 1.0 if positive else 0.0):
                bad.append(f"  {qid!r} {m} = {got[qid][m]!r}, expected {1.0 if positive else 0.0}")
        for m in IDEAL_ONE_IF_RELEVANT:
            if not same(got[qid][m], 1.0 if relevant else 0.0):
                bad.append(f"  {qid!r} {m} = {got[qid][m]!r}, expected {1.0 if relevant else 0.0}")
    assert not bad, "ideal ranking:\n" + "\n".join(bad) + "\n" + context


@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(), relevance_level=st.sampled_from([1, 2, 3]),
       queries=st.sampled_from(["qrels", "intersection"]))
def test_every_measure_stays_in_its_declared_range(data, relevance_level, queries):
    """Each template's `range:` (e.g. 0..1, or 0.. for counts) holds per query and in the aggregate;
    only a measure whose empty value is null (FirstRank) may be undefined."""
    qrels, run = data
    got, aggregate = evaluate(qrels, run, ALL, relevance_level=relevance_level, queries=queries)
    context = describe(qrels, run, relevance_level=relevance_level, queries=queries)

    def outside(m: str, v) -> bool:
        measure = RANGES[m]
        if v is None:
            return measure.empty is not None
        low, high = measure.range
        return math.isnan(v) or (low is not None and v < low - 1e-12) or (high is not None and v > high + 1e-12)

    bad = [f"  {q!r} {m} = {v[m]!r}" for q, v in got.items() for m in ALL if outside(m, v[m])]
    bad += [f"  aggregate {m} = {aggregate[m]!r}" for m in ALL if got and outside(m, aggregate[m])]
    assert not bad, "outside the declared range:\n" + "\n".join(bad) + "\n" + context


@settings(max_examples=_N, **_SETTINGS)
@given(data=qrels_and_runs(), relevance_level=st.sampled_from([1, 2]),
       queries=st.sampled_from(["qrels", "intersection"]))
def test_count_identities(data, relevance_level, queries):
    """P@k * k = Hits@k; R@k non-decreasing in k; NumRelRet = Hits; SetP * NumRet = SetR * NumRel = NumRelRet;
    NumRel = R counted from the data; aggregates: NumRelRet is the sum of the per-query Hits."""
    qrels, run = data
    measures = [*[f"P@{k}" for k in CUTS], *[f"Hits@{k}" for k in CUTS], *[f"R@{k}" for k in CUTS],
                "Hits", "NumRelRet", "NumRet", "NumRel", "SetP", "SetR"]
    got, aggregate = evaluate(qrels, run, measures, relevance_level=relevance_level, queries=queries)
    context = describe(qrels, run, relevance_level=relevance_level, queries=queries)
    bad = []
    for q, v in got.items():
        for k in CUTS:
            if not same(v[f"P@{k}"] * k, v[f"Hits@{k}"], 1e-9):
                bad.append(f"  {q!r} P@{k} * {k} = {v[f'P@{k}'] * k!r} but Hits@{k} = {v[f'Hits@{k}']!r}")
        for k1, k2 in zip(CUTS, CUTS[1:]):
            if v[f"R@{k1}"] > v[f"R@{k2}"] + 1e-12:
                bad.append(f"  {q!r} R@{k1} = {v[f'R@{k1}']!r} > R@{k2} = {v[f'R@{k2}']!r}")
        if not same(v["NumRelRet"], v["Hits"]):
            bad.append(f"  {q!r} NumRelRet = {v['NumRelRet']!r} but Hits = {v['Hits']!r}")
        if not same(v["Hits@20"], v["Hits"]):  # runs hold at most 10 docs
            bad.append(f"  {q!r} Hits@20 = {v['Hits@20']!r} but Hits = {v['Hits']!r}")
        n = len(run.get(q, {}))
        r = sum(1 for rel in qrels.get(q, {}).values() if rel >= relevance_level)
        if v["NumRet"] != n or v["NumRel"] != r:
            bad.append(f"  {q!r} NumRet = {v['NumRet']!r} (n = {n}), NumRel = {v['NumRel']!r} (R = {r})")
        if n and not same(v["SetP"] * n, v["NumRelRet"], 1e-9):
            bad.append(f"  {q!r} SetP * n = {v['SetP'] * n!r} but NumRelRet = {v['NumRelRet']!r}")
        if r and not same(v["SetR"] * r, v["NumRelRet"], 1e-9):
            bad.append(f"  {q!r} SetR * R = {v['SetR'] * r!r} but NumRelRet = {v['NumRelRet']!r}")
    if got:
        hits_total = sum(v["Hits"] for v in got.values())
        if not same(aggregate["NumRelRet"], hits_total, 1e-9):
            bad.append(f"  aggregate NumRelRet = {aggregate['NumRelRet']!r} but the per-query Hits sum to {hits_total!r}")
        if not same(aggregate["Hits"], hits_total / len(got), 1e-9):
            bad.append(f"  aggregate Hits = {aggregate['Hits']!r}, mean of per-query Hits = {hits_total / len(got)!r}")
    assert not bad, "identities broken:\n" + "\n".join(bad) + "\n" + context


@settings(max_examples=max(_N // 2, 10), **_SETTINGS)
@given(data=qrels_and_runs(tie_free=True), relevance_level=st.sampled_from([1, 2]))
def test_tie_rule_irrelevant_without_ties(data, relevance_level):
    qrels, run = data
    a, agg_a = evaluate(qrels, run, ALL, relevance_level=relevance_level)
    b, agg_b = evaluate(qrels, run, ALL, relevance_level=relevance_level, ties="docid_asc")
    context = describe(qrels, run, relevance_level=relevance_level)
    assert set(a) == set(b), context
    bad = [f"  {q!r} {m}: {a[q][m]!r} vs {b[q][m]!r}" for q in a for m in ALL if not same(a[q][m], b[q][m])]
    bad += [f"  aggregate {m}: {agg_a[m]!r} vs {agg_b[m]!r}" for m in ALL if not same(agg_a[m], agg_b[m])]
    assert not bad, "docid_desc vs docid_asc on tie-free data:\n" + "\n".join(bad) + "\n" + context


def test_tie_rule_matters_with_ties():
    """The counterpart (so the test above cannot pass by ignoring `ties`): a tie decided by the doc id."""
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    desc, _ = evaluate(qrels, run, ["RR"])
    asc, _ = evaluate(qrels, run, ["RR"], ties="docid_asc")
    assert desc["q"]["RR"] == 0.5  # b before a
    assert asc["q"]["RR"] == 1.0
