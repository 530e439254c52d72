"""pool() and holes() on random runs against trectools (0.0.50) and a plain-Python model of depth-k pooling.

trectools sorts a run by score descending, then document id ASCENDING (TrecRun.read_run) before taking its top X,
where evaluate() and pool() break ties by document id descending (trec_eval's order): the runs here have distinct
scores within a list, so the orders agree (test_pools.py pins the tie rule by hand). trectools' get_unjudged counts a
document with any qrels row as judged, where Unjudged@k (trec_eval's unj_k) counts a negative grade as unjudged: the
grades here are 0..2. Its precision, recall and nDCG average over the run's topics where ours average over the
qrels': every topic here is in both, and has a relevant document (trectools' recall and nDCG divide by their count).
"""
from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.judgments.pools import holes, pool

pytestmark = pytest.mark.slow  # hypothesis and trectools (pandas); test_pools.py has the hand-picked cases

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
DOCS = [f"d{i}" for i in range(12)]


@st.composite
def collections(draw):
    """(topics, runs {name: {topic: [doc, ...] best first}}, qrels {topic: {doc: grade}}, depth)."""
    topics = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    runs = {}
    for r in range(draw(st.integers(1, 3))):
        runs[f"r{r}"] = {t: draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True)) for t in topics}
    qrels = {}
    for t in topics:
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        grades = draw(st.lists(st.integers(0, 2), min_size=len(judged), max_size=len(judged)))
        grades[0] = max(grades[0], 1)  # a relevant document per topic: trectools divides by their count
        qrels[t] = dict(zip(judged, grades))
    return topics, runs, qrels, draw(st.integers(1, 6))


def _write(tmp_path, runs, qrels) -> tuple:
    paths = {}
    for name, lists in runs.items():
        # Scores distinct within a list, decreasing with the rank; the rank field says nothing to either tool.
        lines = [f"{t} Q0 {d} {i + 1} {100 - i}.5 {name}\n" for t, docs in lists.items() for i, d in enumerate(docs)]
        paths[name] = tmp_path / f"{name}.run"
        paths[name].write_text("".join(lines))
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"{t} 0 {d} {g}\n" for t, docs in qrels.items() for d, g in docs.items()))
    return {n: str(p) for n, p in paths.items()}, str(qrels_path)


@given(collections())
@SETTINGS
def test_pool_equals_trectools_and_a_python_model(tmp_path_factory, collection):
    from trectools import TrecPoolMaker, TrecRun

    topics, runs, qrels, depth = collection
    paths, qrels_path = _write(tmp_path_factory.mktemp("pool"), runs, qrels)
    got = pool(paths, depth)
    docs = got.docs.to_pylist()
    theirs = TrecPoolMaker().make_pool([TrecRun(p) for p in paths.values()], strategy="topX", topX=depth).pool
    assert {(d["query_id"], d["doc_id"]) for d in docs} == {(t, doc) for t, ds in theirs.items() for doc in ds}
    # The runs, their count and the best rank: each run's list is already best first.
    model = {}
    for name, lists in runs.items():
        for t, ranked in lists.items():
            for rank, doc in enumerate(ranked[:depth], 1):
                runs_of, best = model.get((t, doc), ([], rank))
                model[t, doc] = (sorted([*runs_of, name]), min(best, rank))
    assert {(d["query_id"], d["doc_id"]): (d["runs"], d["best_rank"]) for d in docs} == model
    assert all(d["n_runs"] == len(d["runs"]) for d in docs)
    # With the qrels: the documents they do not grade, and per topic the counts.
    with_qrels = pool(paths, depth, qrels=qrels_path)
    assert {(d["query_id"], d["doc_id"]) for d in with_qrels.docs.to_pylist()} == \
        {key for key in model if key[1] not in qrels[key[0]]}
    counts = {r["query_id"]: (r["pooled"], r["judged"], r["to_judge"]) for r in with_qrels.topics.to_pylist()}
    for t in topics:
        pooled = [doc for (q, doc) in model if q == t]
        judged = sum(doc in qrels[t] for doc in pooled)
        assert counts[t] == (len(pooled), judged, len(pooled) - judged)


@given(collections())
@SETTINGS
def test_holes_equal_trectools_condensed_and_unjudged(tmp_path_factory, collection):
    from trectools import TrecEval, TrecQrel, TrecRun

    topics, runs, qrels, depth = collection
    paths, qrels_path = _write(tmp_path_factory.mktemp("holes"), runs, qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # trectools' pandas FutureWarnings
        table = holes(qrels_path, paths, [f"P@{depth}", f"nDCG@{depth}", f"R@{depth}", "RR"], depth)
        got = {(r["run"], r["measure"]): r for r in table.to_pylist()}
        for name, path in paths.items():
            te = TrecEval(TrecRun(path), TrecQrel(qrels_path))
            row = got[name, f"P@{depth}"]
            assert row["unjudged"] == pytest.approx(te.get_unjudged(depth), abs=1e-12)
            assert row["condensed"] == pytest.approx(te.get_precision(depth, removeUnjudged=True), abs=1e-12)
            assert row["value"] == pytest.approx(te.get_precision(depth), abs=1e-12)
            assert got[name, f"nDCG@{depth}"]["condensed"] == pytest.approx(te.get_ndcg(depth, removeUnjudged=True),
                                                                           abs=1e-12)
            assert got[name, f"R@{depth}"]["condensed"] == pytest.approx(te.get_recall(depth, removeUnjudged=True),
                                                                        abs=1e-12)
            # trectools' reciprocal rank (and R-precision) ignore removeUnjudged: both rank self.run.run_data again
            # after the drop, whatever trec_eval= says (on one list, d1 unjudged then d0 relevant, it gives 0.5 where
            # the condensed list is d0 alone: 1). The condensed RR from the lists instead: the first relevant among
            # the judged documents.
            condensed = [[d for d in runs[name][t] if d in qrels[t]] for t in topics]
            rr = [next((1 / i for i, d in enumerate(ds, 1) if qrels[t][d] > 0), 0.0) for t, ds in zip(topics, condensed)]
            assert got[name, "RR"]["condensed"] == pytest.approx(sum(rr) / len(rr), abs=1e-12)
            # The leave-one-run-out hole, from the lists themselves: the share of each top `depth` that no other
            # run has in its own, averaged over the topics.
            others = [lists for other, lists in runs.items() if other != name]
            shares = [sum(all(doc not in o[t][:depth] for o in others) for doc in runs[name][t][:depth]) /
                      len(runs[name][t][:depth]) for t in topics]
            assert row["outside"] == pytest.approx(sum(shares) / len(shares), abs=1e-12)
            assert row["spread"] == pytest.approx(row["condensed"] - row["value"], abs=1e-15)
