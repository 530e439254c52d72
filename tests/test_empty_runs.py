"""A run without a single ranked document is an error naming it (issue 43: scoring it 0 on every query hid
broken pipelines; trec_eval refuses one too), everywhere: files of every format, dicts, a dict of runs with one
empty, evaluate(), eval, compare. A run that ranks some queries is not empty. Hand-computed: the qrels judge q1
and q2."""
import pytest

import sqlmetrics
from sqlmetrics.cli import main

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
MEASURES = ["P@1", "AP", "nDCG@10", "RR"]
EMPTY = "has no rows, not one ranked document"


@pytest.mark.parametrize("name, text", [("run.txt", ""), ("run.csv", ""), ("run.csv", "query_id,doc_id,score\n"),
                                        ("run.jsonl", ""), ("run.tsv", "\n")])
def test_an_empty_run_file_is_an_error_naming_it(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"{name}': {EMPTY}"):
        sqlmetrics.evaluate(QRELS, tmp_path / name, MEASURES)


@pytest.mark.parametrize("run", [{}, {"q1": {}}, {"q1": {}, "q2": {}}])
def test_an_empty_dict_is_an_error(run):
    for queries in ("qrels", "intersection"):
        with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"run \(dict\): {EMPTY}"):
            sqlmetrics.evaluate(QRELS, run, MEASURES, queries=queries)


def test_a_run_with_some_lists_is_not_empty():
    """{"q1": {}, "q2": {...}}: q1 retrieved nothing (scores 0), q2 found d3 first (scores 1)."""
    res = sqlmetrics.evaluate(QRELS, {"q1": {}, "q2": {"d3": 1.0}}, MEASURES)
    assert res.aggregate == {"P@1": 0.5, "AP": 0.5, "nDCG@10": 0.5, "RR": 0.5}


def test_one_empty_run_of_several_is_named():
    with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"run 'b' \(dict\): {EMPTY}"):
        sqlmetrics.evaluate(QRELS, {"a": {"q2": {"d3": 1.0}}, "b": {}}, MEASURES)


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_the_commands_exit_2_naming_the_file(command, tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d3 2\n")
    (tmp_path / "a.txt").write_text("q1 Q0 d1 1 1.0 a\n")
    (tmp_path / "empty.txt").write_text("")
    runs = [tmp_path / "a.txt", tmp_path / "empty.txt"] if command == "compare" else [tmp_path / "empty.txt"]
    assert main([command, str(tmp_path / "qrels.txt"), *map(str, runs), "-m", "P@1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"'{tmp_path / 'empty.txt'}': {EMPTY}" in err and "Traceback" not in err, err


def test_empty_qrels_stay_an_error(tmp_path):
    (tmp_path / "qrels.csv").write_text("")
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"qrels.csv': has no rows. Qrels are needed"):
        sqlmetrics.evaluate(tmp_path / "qrels.csv", {"q1": {"d1": 1.0}}, ["P@1"])
