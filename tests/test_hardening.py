"""Inputs that once gave a plausible wrong number (issue 13): each now gives the right number or a clear error.
NULL segments are in test_logs.py (test_a_null_segment_is_a_segment_of_its_own)."""
import tempfile
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli import main

QRELS = "q1 0 d1 1\nq1 0 d2 1\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_run_given_as_qrels_is_refused(tmp_path, capsys):
    """Six TREC fields where qrels have four: once every run scored a perfect 1.0 against itself."""
    run = write(tmp_path, "run.txt", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    with pytest.raises(SqlmetricsError, match=r"run.txt', line 1: a qrels line has 4 fields .* passed as qrels"):
        sqlmetrics.evaluate(run, run, ["AP"])
    assert main(["eval", str(run), str(run), "-m", "map"]) == 2
    assert "Is this a run (query Q0 doc rank score tag) passed as qrels?" in capsys.readouterr().err
    with pytest.raises(SqlmetricsError, match="line 2: a qrels line has 4 fields"):
        sqlmetrics.evaluate(write(tmp_path, "q.txt", "q1 0 d1 1\nq1 0 d2 1 extra\n"), run, ["AP"])


@pytest.mark.parametrize("name", ["r[1].txt", "star*.txt", "a?.txt", "{a,b}.txt"])
def test_file_names_are_literal(tmp_path, name):
    """DuckDB reads a file name as a glob: `r[1].txt` once read `r1.txt`, `star*.txt` every starX.txt."""
    qrels = write(tmp_path, "qrels.txt", QRELS)
    for decoy in ("r1.txt", "starA.txt", "ab.txt", "a.txt", "b.txt"):
        write(tmp_path, decoy, "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\n")
    run = write(tmp_path, name, "q1 Q0 d9 1 1.0 t\n")  # one unjudged document: P@1 = 0, one row
    res = sqlmetrics.evaluate(qrels, run, ["P@1", "NumRet"])
    assert res.aggregate == {"P@1": 0.0, "NumRet": 1.0}
    csv = write(tmp_path, name.replace(".txt", ".csv"), "query_id,doc_id,score\nq1,d1,1.0\n")
    assert sqlmetrics.evaluate(qrels, csv, ["NumRet", "P@1"]).aggregate == {"NumRet": 1.0, "P@1": 1.0}
    assert not list(Path(tempfile.gettempdir()).glob("sqlmetrics-input-*"))  # the links are gone


def test_csv_ids_are_compared_as_written(tmp_path):
    """`1.50` and `007` are ids, not numbers: they match the same text in the qrels, `7` and `1.5` do not,
    and whether they match no longer depends on which other runs are evaluated beside them."""
    qrels = write(tmp_path, "qrels.csv", "query_id,doc_id,relevance\n1.0,1.50,1\n1.0,007,1\n1.0,0.10,1\n")
    run = write(tmp_path, "run.csv", "query_id,doc_id,score\n1.0,1.50,3\n1.0,7,2\n1.0,0.1,1\n")
    other = write(tmp_path, "other.csv", "query_id,doc_id,score\n1.0,x,1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        alone = sqlmetrics.evaluate(qrels, run, ["P@1", "P@3"]).aggregate
        beside = sqlmetrics.evaluate(qrels, {"run": run, "other": other}, ["P@1", "P@3"]).aggregate["run"]
    # Only `1.50` is judged as written: P@1 = 1, P@3 = 1/3 (`7` is not `007`, `0.1` is not `0.10`).
    assert alone == beside == {"P@1": 1.0, "P@3": pytest.approx(1 / 3, abs=1e-15)}


def test_positions_are_whole_numbers():
    """ties='rank' once truncated positions 0.6 and 1.2 to whole numbers without a word."""
    run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "rank": [0.6, 1.2]})
    with pytest.raises(SqlmetricsError, match=r"row 1: column 'rank' holds '0.6', which is not an integer position"):
        sqlmetrics.evaluate({"q1": {"a": 1}}, run, ["P@1"], ties="rank")


def test_a_parameter_given_twice_and_no_measure_are_errors():
    with pytest.raises(SqlmetricsError, match="parameter 'k' is given twice"):
        sqlmetrics.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["P(k=5,k=3)"])
    with pytest.raises(SqlmetricsError, match="no measure was given"):
        sqlmetrics.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, [])


def test_command_line_slips(tmp_path, capsys):
    qrels = write(tmp_path, "qrels.txt", QRELS)
    run = write(tmp_path, "run.txt", "q1 Q0 d1 1 2.0 t\n")
    # `-m ''` once ran the default measures; now it is a usage error.
    assert main(["eval", str(qrels), str(run), "-m", ""]) == 2
    assert "-m/--measure was given without a measure" in capsys.readouterr().err
    # An abbreviated long option is refused (`--relevance-lev` is not --relevance-level).
    with pytest.raises(SystemExit) as exit_:
        main(["eval", str(qrels), str(run), "--relevance-lev", "2"])
    assert exit_.value.code == 2
    capsys.readouterr()
    # Bare `sqlmetrics` prints the help.
    assert main([]) == 0
    assert "usage: sqlmetrics" in capsys.readouterr().out


def test_negative_zero_is_never_printed(tmp_path, capsys):
    """DCG with a negative gain sum is clamped at 0 by the template; a -0.0 must still print as 0."""
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 -1\n")
    run = write(tmp_path, "run.txt", "q1 Q0 d1 1 2.0 t\n")
    for fmt in ("table", "csv", "json"):
        assert main(["eval", str(qrels), str(run), "-m", "DCG,nDCG", "-f", fmt]) == 0
        assert "-0" not in capsys.readouterr().out
