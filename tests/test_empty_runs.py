"""A run that retrieved nothing is a run, not an error (trec_eval -c and ir_measures give every judged query
0; pytrec_eval, averaging only the queries in both, gives nothing). Hand-computed: the qrels judge q1 and q2."""
import warnings

import pytest

import sqlmetrics

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
MEASURES = ["P@1", "AP", "nDCG@10", "RR"]


def evaluate(run, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sqlmetrics.SqlmetricsWarning)
        res = sqlmetrics.evaluate(QRELS, run, MEASURES, **kw)
    return res, [str(w.message) for w in caught]


@pytest.mark.parametrize("name, text", [("run.txt", ""), ("run.csv", ""), ("run.csv", "query_id,doc_id,score\n"),
                                        ("run.jsonl", ""), ("run.tsv", "\n")])
def test_an_empty_run_file_scores_every_judged_query_0(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    res, said = evaluate(tmp_path / name)
    assert res.aggregate == dict.fromkeys(MEASURES, 0.0)
    assert res.per_query.column("query_id").to_pylist() == ["q1", "q2"]
    assert any("has no ranking for 2 qrels queries ('q1', 'q2'); they score 0" in s for s in said), said


def test_an_empty_run_averaging_only_the_queries_in_both_is_empty_and_says_so():
    res, said = evaluate({}, queries="intersection")
    assert res.aggregate == dict.fromkeys(MEASURES) and res.per_query.num_rows == 0
    assert any("ranks no judged query: with queries='intersection' there is nothing to average" in s for s in said)


def test_a_dict_whose_lists_are_empty_is_one_run():
    """{"q1": {}} is a ranx/pytrec_eval run whose list for q1 is empty, not a dict of runs named q1."""
    res, _ = evaluate({"q1": {}})
    assert res.aggregate == dict.fromkeys(MEASURES, 0.0)
    # the empty list decides nothing; q2's list shows the shape: one run, q1 retrieved nothing, q2 found d3 first
    res, _ = evaluate({"q1": {}, "q2": {"d3": 1.0}})
    assert res.aggregate == {"P@1": 0.5, "AP": 0.5, "nDCG@10": 0.5, "RR": 0.5}
    # a dict of runs is still one: run 'b' is empty
    res, _ = evaluate({"a": {"q2": {"d3": 1.0}}, "b": {}})
    assert res.aggregate == {"a": {"P@1": 0.5, "AP": 0.5, "nDCG@10": 0.5, "RR": 0.5},
                             "b": dict.fromkeys(MEASURES, 0.0)}


def test_empty_qrels_stay_an_error(tmp_path):
    (tmp_path / "qrels.csv").write_text("")
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"qrels.csv': has no rows. Qrels are needed"):
        sqlmetrics.evaluate(tmp_path / "qrels.csv", {"q1": {"d1": 1.0}}, ["P@1"])
