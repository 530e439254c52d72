"""Measures with no trec_eval counterpart, checked against values worked by hand.

One query (max grade in the qrels is 3): judgments a=3, b=0, c=1, d=-1; run a .9, x .8, c .7, b .6, d .5.
Relevant (grade >= 1): a at rank 1, c at rank 3. x is unjudged, d is "pooled, not judged" (-1).
"""
import sqlite3
import warnings

import pyarrow as pa
import pytest

import sqlmetrics

QRELS = {"q": {"a": 3, "b": 0, "c": 1, "d": -1}}
RUN = {"q": {"a": 0.9, "x": 0.8, "c": 0.7, "b": 0.6, "d": 0.5}}

EXPECTED = {
    # r_i = (2^g - 1) / 2^gmax, gmax = the qrels' max grade 3: a 7/8, c 1/8; ERR = 7/8 + (1/3)(1/8)(1 - 7/8)
    "ERR(gmax='max')@5": 7 / 8 + (1 / 3) * (1 / 8) * (1 / 8),
    "ERR(gmax='max')@2": 7 / 8,
    # the default gmax = 4 (gdeval's, ir_measures' ERR@k): a 7/16, c 1/16
    "ERR@5": 7 / 16 + (1 / 3) * (1 / 16) * (9 / 16),
    "ERR(gmax=4)@5": 7 / 16 + (1 / 3) * (1 / 16) * (9 / 16),
    "ERR@2": 7 / 16,
    "Judged@3": 2 / 3,  # a, x, c: two have a qrels row
    "Judged@5": 4 / 5,  # d's -1 is a qrels row
    "Judged@10": 4 / 5,  # divided by min(k, n) = 5
    "ContextPrecision@5": (1 + 2 / 3) / 2,  # precision at a (1/1) and at c (2/3), over the 2 retrieved
    "ContextPrecision@2": 1.0,
    "RBP(p=0.5)": 0.5 * (1 + 0.5 ** 2),  # binary gains at ranks 1 and 3
    "RBP(p=0.5)@2": 0.5 * 1,
    "RBP(p=0.5,gain='graded')": 0.5 * (3 / 3 + (1 / 3) * 0.5 ** 2),  # grade / max grade
    "FirstRank": 1.0,
    "CG@3": 3 + 0 + 1,
    "CG(gain='exp')@3": 7 + 0 + 1,
    "DCG@3": 3 + 1 / 2,  # log2(4) = 2
    "F1@2": 2 * 1 / (2 + 2),  # 2 * hits / (k + R)
    "SetF(beta=0.5)": 1.5 * 2 / (0.5 * 2 + 5),  # (1+b) hits / (b R + n)
}


@pytest.mark.parametrize("measure", list(EXPECTED))
def test_hand_computed(measure):
    res = sqlmetrics.evaluate(QRELS, RUN, [measure])
    assert res.aggregate[measure] == pytest.approx(EXPECTED[measure], abs=1e-12)


def test_first_rank_mean_skips_queries_without_a_relevant_document():
    qrels = {"q": {"a": 1}, "r": {"b": 1}, "s": {"c": 1}}
    run = {"q": {"z": 2.0, "a": 1.0}, "r": {"z": 1.0}, "s": {"c": 1.0}}
    res = sqlmetrics.evaluate(qrels, run, ["FirstRank", "RR"])
    assert res.aggregate["FirstRank"] == pytest.approx((2 + 1) / 2)
    assert res.aggregate["RR"] == pytest.approx((1 / 2 + 0 + 1) / 3)


# trec_eval -M N -J cuts each ranking at N first, then drops its unjudged documents (form_res_rels.c). q1's run, in
# score order: d2, d3 (unjudged), d1 (relevant), d5 (judged non-relevant). At -M2 nothing judged is left: trec_eval
# prints num_ret 0 and P_2 0.0000. At -M3, d1 alone: num_ret 1, P@2 0.5, AP 1.
CUT_QRELS = [("q1", "d1", 1), ("q1", "d5", 0)]
CUT_RUN = [("q1", "d2", 4.0), ("q1", "d3", 3.0), ("q1", "d1", 2.0), ("q1", "d5", 1.0)]


@pytest.mark.parametrize("depth, expected", [(0, {"num_ret": 0, "P@2": 0.0, "AP": 0.0}),
                                             (2, {"num_ret": 0, "P@2": 0.0, "AP": 0.0}),
                                             (3, {"num_ret": 1, "P@2": 0.5, "AP": 1.0}),
                                             (None, {"num_ret": 2, "P@2": 0.5, "AP": 1.0})])
def test_depth_cuts_before_judged_only_drops(tmp_path, depth, expected):
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in CUT_QRELS))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(CUT_RUN, 1)))
    got = sqlmetrics.evaluate(tmp_path / "q.txt", tmp_path / "r.txt", list(expected), depth=depth, judged_only=True)
    assert got.aggregate == expected
    con = sqlite3.connect(":memory:")  # the rendered statement, on another engine
    con.execute("CREATE TABLE qrels (query_id TEXT, doc_id TEXT, relevance INTEGER)")
    con.execute("CREATE TABLE run (query_id TEXT, doc_id TEXT, score REAL)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", CUT_QRELS)
    con.executemany("INSERT INTO run VALUES (?, ?, ?)", CUT_RUN)
    sql = sqlmetrics.render(list(expected), "sqlite", depth=depth, judged_only=True)
    assert con.execute(sql).fetchall() == [tuple(expected.values())]


def test_depth_zero_leaves_every_ranking_empty():
    """depth=0 (trec_eval -M0) evaluates each list as empty; with queries='intersection' the lists in both the qrels
    and the run (q, r) are still the ones averaged: NumRel sums their 2 relevant documents, NumRet and P@1 are 0."""
    qrels = {"q": {"a": 1}, "r": {"b": 1}, "s": {"c": 1}}
    run = {"q": {"a": 1.0}, "r": {"x": 1.0}}
    res = sqlmetrics.evaluate(qrels, run, ["NumRet", "NumRel", "P@1"], depth=0, queries="intersection")
    assert res.aggregate == {"NumRet": 0, "NumRel": 2, "P@1": 0.0}


# A measure's own judged_only (ir_measures' AP(judged_only=True)) sees q1's list as trec_eval -J would: d1
# (relevant), d5 (judged non-relevant); the other measures see all four. By hand: AP 1/3 (d1 at rank 3) and
# judged-only 1; P@2 0 and 1/2; at depth 3 the judged-only list is d1 alone (the cut comes first): AP 1, P@2 1/2.
@pytest.mark.parametrize("options, per_list", [
    ({}, {"AP": 1 / 3, "AP(judged_only=True)": 1.0, "P@2": 0.0, "P(judged_only=True)@2": 0.5}),
    ({"depth": 3}, {"AP": 1 / 3, "AP(judged_only=True)": 1.0, "P@2": 0.0, "P(judged_only=True)@2": 0.5}),
    ({"depth": 2}, {"AP": 0.0, "AP(judged_only=True)": 0.0, "P@2": 0.0, "P(judged_only=True)@2": 0.0}),
    ({"queries": "intersection"}, {"AP": 1 / 3, "AP(judged_only=True)": 1.0, "P@2": 0.0,
                                   "P(judged_only=True)@2": 0.5}),
])
def test_a_measures_own_judged_only_drops_unjudged_documents_for_it_alone(options, per_list):
    qrels = {"q1": {"d1": 1, "d5": 0}, "q2": {"d9": 1}}
    runs = {"a": {"q1": {d: s for _, d, s in CUT_RUN}, "q2": {"d8": 1.0}},
            "b": {"q1": {"d1": 1.0}, "q2": {"d9": 2.0, "d8": 1.0}}}
    measures = ["AP", "AP(judged_only=True)", "P@2", "P(judged_only=True)@2"]
    got = sqlmetrics.evaluate(qrels, runs, measures, **options).per_query.to_pylist()
    # q2 of run a: d8, unjudged, alone (judged only, an empty list: 0); of run b: d9 (relevant), then d8.
    assert got == [{"run": "a", "query_id": "q1", **per_list},
                   {"run": "a", "query_id": "q2", **dict.fromkeys(measures, 0.0)},
                   {"run": "b", "query_id": "q1", "AP": 1.0, "AP(judged_only=True)": 1.0, "P@2": 0.5,
                    "P(judged_only=True)@2": 0.5},
                   {"run": "b", "query_id": "q2", "AP": 1.0, "AP(judged_only=True)": 1.0, "P@2": 0.5,
                    "P(judged_only=True)@2": 0.5}]
    # A log, segmented by day: the same lists, each in its day.
    log = pa.table({"query_id": ["q1"] * 4 + ["q2"], "doc_id": [d for _, d, _ in CUT_RUN] + ["d8"],
                    "score": [s for _, _, s in CUT_RUN] + [1.0], "day": ["mon"] * 4 + ["tue"]})
    segmented = sqlmetrics.evaluate(qrels, log, measures, group_by="day", **options).per_query.to_pylist()
    assert segmented == [{"day": "mon", "query_id": "q1", **per_list},
                         {"day": "tue", "query_id": "q2", **dict.fromkeys(measures, 0.0)}]


def test_a_rendered_statement_takes_judged_only_for_all_its_measures():
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"AP\(judged_only=True\): a rendered statement drops "
                                                         r"unjudged documents for all its measures or for none"):
        sqlmetrics.render(["P@2", "AP(judged_only=True)"], "sqlite")
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE qrels (query_id TEXT, doc_id TEXT, relevance INTEGER)")
    con.execute("CREATE TABLE run (query_id TEXT, doc_id TEXT, score REAL)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", CUT_QRELS)
    con.executemany("INSERT INTO run VALUES (?, ?, ?)", CUT_RUN)
    sql = sqlmetrics.render(["AP(judged_only=True)", "P@2"], "sqlite", judged_only=True)
    assert con.execute(sql).fetchall() == [(1.0, 0.5)]


def test_grades_above_errs_gmax_are_warned_about_once():
    """ERR's gmax is 4: a grade of 2000 counts as 4, as it always did, but no longer without a word."""
    run = {"q1": {"d2": 2.0, "d1": 1.0}}
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"ERR@10: the qrels hold grades up to 2000, above gmax=4; "
                                                          r"they count as 4\. ERR\(gmax='max'\)") as caught:
        high = sqlmetrics.evaluate({"q1": {"d1": 2000, "d2": 1}}, run, ["ERR@10", "P@1"]).aggregate["ERR@10"]
    assert len([w for w in caught if "gmax" in str(w.message)]) == 1
    assert high == sqlmetrics.evaluate({"q1": {"d1": 4, "d2": 1}}, run, ["ERR@10"]).aggregate["ERR@10"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # grades within gmax: nothing to say
        sqlmetrics.evaluate({"q1": {"d1": 4, "d2": 1}}, run, ["ERR@10"])
