"""Inputs that once gave a plausible wrong number (issue 13): each now gives the right number or a clear error.
NULL segments are in test_logs.py (test_a_null_segment_is_a_segment_of_its_own)."""
import csv
import io
import json
import random
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.caches import Kept
from sqlmetrics.cli import main
from sqlmetrics.local import evaluate as local_evaluate

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
def test_file_names_are_literal(tmp_path, name, monkeypatch):
    """DuckDB reads a file name as a glob: `r[1].txt` once read `r1.txt`, `star*.txt` every starX.txt."""
    links = tmp_path / "tmp"
    links.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(links))  # this test's own, so other processes' links don't count
    qrels = write(tmp_path, "qrels.txt", QRELS)
    for decoy in ("r1.txt", "starA.txt", "ab.txt", "a.txt", "b.txt"):
        write(tmp_path, decoy, "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\n")
    run = write(tmp_path, name, "q1 Q0 d9 1 1.0 t\n")  # one unjudged document: P@1 = 0, one row
    res = sqlmetrics.evaluate(qrels, run, ["P@1", "NumRet"])
    assert res.aggregate == {"P@1": 0.0, "NumRet": 1.0}
    csv = write(tmp_path, name.replace(".txt", ".csv"), "query_id,doc_id,score\nq1,d1,1.0\n")
    assert sqlmetrics.evaluate(qrels, csv, ["NumRet", "P@1"]).aggregate == {"NumRet": 1.0, "P@1": 1.0}
    assert not list(links.glob("sqlmetrics-input-*"))  # the links are gone


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
    with pytest.raises(SqlmetricsError, match=r"row 1: column 'rank' holds '0.6', which is not a whole number"):
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


def test_a_statement_is_reused_only_by_the_same_evaluation(monkeypatch):
    """evaluate() keeps the statements it generated (local/evaluate.py, _statement): each option that changes the
    statement must change which one is taken. Every variant here, evaluated after the others, equals the same
    variant evaluated with nothing kept; and the variants differ, so a statement taken for another would show."""
    qrels = {"q1": {"d1": 2, "d2": 1, "d5": 0, "d7": 1}, "q2": {"d3": 1, "d9": 2}, "q4": {"d1": 1}}
    run = {"q1": {"d1": 0.5, "d2": 0.9, "d3": 0.9, "d5": 0.1, "d7": 0.05}, "q2": {"d3": 0.2, "d4": 0.8},
           "q3": {"d1": 1.0}}
    variants = [{}, {"depth": 2}, {"judged_only": True}, {"relevance_level": 2}, {"ties": "docid_asc"},
                {"queries": "intersection"}]
    measures = ["P@2", "AP", "nDCG@3", "RR", "num_ret"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # q3 has no judgments, q4 no ranking
        warm = [sqlmetrics.evaluate(qrels, run, measures, **v).aggregate for v in variants * 2][len(variants):]
        assert len({tuple(values.items()) for values in warm}) == len(variants)
        for options, values in zip(variants, warm):
            monkeypatch.setattr(local_evaluate, "_STATEMENTS", Kept())
            monkeypatch.setenv("SQLMETRICS_CACHE_DIR", "")  # built again, not read from disk
            assert sqlmetrics.evaluate(qrels, run, measures, **options).aggregate == values, options


@pytest.mark.slow  # five evaluations of 100,000 rows
def test_the_same_input_gives_the_same_bits_with_any_thread_count():
    """Floating-point sums depend on the order their terms are added in; DuckDB's threads once added a
    list's rows in whatever order they finished, so per-query values differed by 1 ULP between runs
    (100,000 rows were enough to see it with 2 threads). Now every sum adds in list order."""
    rng = np.random.default_rng(7)
    queries, depth = 20, 5000
    q = np.repeat(np.arange(queries), depth).astype(str)
    d = np.tile(np.arange(depth), queries).astype(str)
    run = pa.table({"query_id": q, "doc_id": d, "score": rng.random(queries * depth)})
    judged = rng.random(queries * depth) < 0.3
    qrels = pa.table({"query_id": q[judged], "doc_id": d[judged],
                      "relevance": rng.integers(0, 4, judged.sum()).astype(float)})
    seen = set()
    for threads in (1, 2, 4, 2, 4):
        res = sqlmetrics.evaluate(qrels, run, ["AP", "nDCG", "ERR@20", "RBP"], threads=threads)
        seen.add((tuple(res.aggregate.values()), tuple(tuple(c.to_pylist()) for c in res.per_query.columns)))
    assert len(seen) == 1


@pytest.mark.slow  # 6 s: seven evaluations large enough for threads to race (smaller ones show it one time in two)
def test_the_diversity_measures_give_the_same_bits_with_any_thread_count():
    """ndeval's greedy ideal ranking places the document whose subtopics gain most; a gain is a sum of
    (1 - alpha)^c terms, once added in whatever order threads handed them over: with alpha = 0.3 two documents
    tied in one evaluation and not in the next, and alpha_nDCG changed (0.096148 / 0.096174 / 0.096284)."""
    rng = random.Random(1)
    qrels, run = [], []
    for qi in range(60):
        docs = [f"q{qi}_d{i:03d}" for i in range(100)]
        qrels += [(f"q{qi}", f"st{s}", d, rng.choice((0, 1, 2))) for s in range(rng.randint(1, 6))
                  for d in docs if rng.random() < 0.3]
        run += [(f"q{qi}", d, rng.random()) for d in rng.sample(docs, 80)]
    qrels = pa.table(dict(zip(("query_id", "subtopic", "doc_id", "relevance"), map(list, zip(*qrels)))))
    run = pa.table(dict(zip(("query_id", "doc_id", "score"), map(list, zip(*run)))))
    measures = ["alpha_nDCG(alpha=0.3)@10", "alpha_nDCG(alpha=0.8)@10", "nERR_IA@20", "NRBP(alpha=0.7,beta=0.3)"]
    seen = set()
    for threads in (1, 8, 3, 8, 8, 2, 8):
        res = sqlmetrics.evaluate(qrels, run, measures, qrels_format="subtopics", threads=threads)
        seen.add(tuple(tuple(c.to_pylist()) for c in res.per_query.columns))
    assert len(seen) == 1


# ---------------------------------------------------------------------------------------------- numbers
# Each case: files written into the working folder, the command line, and either the expected numbers
# (computed by hand, in the last lines of `-f csv` output: run,query_id,measures...) or the error text.

TREC_RUN = "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.8 t\nq1 Q0 d3 3 0.7 t\n"
NUMBER_CASES = {
    # Python's float() and DuckDB's cast read `1_000` as 1000; trec_eval's strtod stops at the `_`.
    "underscore score in CSV": (
        {"q.txt": QRELS, "r.csv": "query_id,doc_id,score\nq1,d1,1_000\nq1,d2,2\n"},
        ["q.txt", "r.csv", "-m", "P@1"], r"r\.csv', line 2: column 'score' holds '1_000', which is not a finite number"),
    "underscore in a parameter": (
        {"q.txt": QRELS, "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "P(k=1_0)"],
        r"measure 'P\(k=1_0\)', parameter 'k': '1_0' is not a number"),
    "infinite parameter": (
        {"q.txt": QRELS, "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "SetF(beta=1e309)"],
        r"parameter 'beta': must be a positive number, got '1e309', which is not finite"),
    # trec_eval reads a TREC grade as an integer: 0.5 would silently be 0 there.
    "fractional grade in TREC qrels": (
        {"q.txt": "q1 0 d1 0.5\nq1 0 d2 1\n", "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "nDCG"],
        r"q\.txt', line 1: column 'relevance' holds '0\.5', which is not an integer relevance grade"),
    # ... while a CSV grade may be fractional (a graded gain): d1 (gain 0.5) then d2 (gain 1) against the
    # ideal d2, d1: DCG = 0.5 + 1/log2(3), IDCG = 1 + 0.5/log2(3): nDCG = 0.8597187...
    "fractional grade in CSV qrels": (
        {"q.csv": "query_id,doc_id,relevance\nq1,d1,0.5\nq1,d2,1\n", "r.txt": TREC_RUN},
        ["q.csv", "r.txt", "-m", "nDCG"], [["r", "", 0.8597186998521972]]),
    # 2^2000 - 1 is infinite in a double: nDCG would be inf/inf = NaN.
    "exponential gain overflow": (
        {"q.txt": "q1 0 d1 2000\nq1 0 d2 1\n", "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "nDCG(gain='exp')"],
        r"nDCG\(gain='exp'\) overflows a double for query 'q1': .*grades of 1024 or more"),
    "ERR's gain overflow": (
        {"q.txt": "q1 0 d1 2000\nq1 0 d2 1\n", "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "ERR(gmax=max)@10"],
        r"ERR\(gmax=max\)@10 overflows a double for query 'q1'"),
    # beta * R overflowed: SetF(beta=1e308) tends to R = 2/2 (both relevant documents retrieved).
    "huge F beta": (
        {"q.txt": QRELS, "r.txt": TREC_RUN}, ["q.txt", "r.txt", "-m", "SetF(beta=1e308)"], [["r", "", 1.0]]),
    "float32 overflow": (
        {"q.txt": QRELS, "r.txt": "q1 Q0 d1 1 1e39 t\nq1 Q0 d2 2 0.8 t\n"},
        ["q.txt", "r.txt", "-m", "P@1", "--score-precision", "float32"],
        r"r\.txt', line 1: column 'score' holds '1e39', which is not a finite number within the 32-bit float range"),
    "position beyond 64 bits": (
        {"q.txt": QRELS, "r.csv": "query_id,doc_id,rank\nq1,d1,1e19\nq1,d2,1\n"},
        ["q.txt", "r.csv", "-m", "P@1", "--ties", "rank"],
        r"r\.csv', line 2: column 'rank' holds '1e19', which is not a whole number below 2\^63"),
    "infinite label": (
        {"log.csv": "query_id,doc_id,position,rating\nq1,d1,1,inf\nq1,d2,2,1\n"},
        ["none", "log.csv", "-m", "P@1", "--ties", "rank", "--label", "rating"],
        r"log\.csv', line 2: the label column 'rating' is not a finite number there \(1 such row\)"),
    "division by zero in a relevance expression": (
        {"log.csv": "query_id,doc_id,position,clicks,shown\nq1,d1,1,1,0\nq1,d2,2,0,1\n"},
        ["none", "log.csv", "-m", "P@1", "--ties", "rank", "--relevance", "clicks / shown"],
        r"log\.csv', line 2: --relevance 'clicks / shown' is inf there \(1 such row\), not a grade: a division by zero"),
    # CSV columns are read as text (ids as written): the expression's columns are typed from their values.
    # d1: 2*1 + 0 = 2, d2: 0 + 1 = 1, d3: 0: with level 2 only d1 is relevant, at position 2.
    "relevance expression over CSV columns": (
        {"log.csv": "query_id,doc_id,position,bought,clicked\nq1,d2,1,0,1\nq1,d1,2,1,0\nq1,d3,3,0,0\n"},
        ["none", "log.csv", "-m", "RR,NumRel", "--ties", "rank", "--relevance", "2*bought + clicked", "-l", "2"],
        [["log", "", 0.5, 1]]),
    # trec_eval ignores a run's rank field; so do we unless ties='rank' orders by it.
    "words in an ignored TREC rank field": (
        {"q.txt": QRELS, "r.txt": "q1 Q0 d3 first 0.9 t\nq1 Q0 d1 second 0.8 t\n"},
        ["q.txt", "r.txt", "-m", "P@1,RR"], [["r", "", 0.0, 0.5]]),
}


@pytest.mark.parametrize("case", sorted(NUMBER_CASES))
def test_numbers(cli, tmp_path, case):
    files, argv, expected = NUMBER_CASES[case]
    for name, text in files.items():
        write(tmp_path, name, text)
    code, out, err = cli("eval", *argv, "-f", "csv")
    if isinstance(expected, str):
        assert code == 2 and re.search(expected, err), err
        assert out == ""
    else:
        assert code == 0, err
        rows = list(csv.reader(io.StringIO(out)))[-len(expected):]
        for row, want in zip(rows, expected):
            assert row[:2] == want[:2]
            assert [float(v) for v in row[2:]] == pytest.approx(want[2:], abs=1e-12)


def test_a_null_relevance_is_unjudged_with_a_warning(cli, tmp_path):
    """NULLIF(shown, 0) leaves d1 without a grade: unjudged, and said once. d2: 0/1 = 0, d3: 2/2 = 1."""
    write(tmp_path, "log.csv", "query_id,doc_id,position,clicks,shown\nq1,d1,1,1,0\nq1,d2,2,0,1\nq1,d3,3,2,2\n")
    code, out, err = cli("eval", "none", "log.csv", "-m", "RR,Judged@3", "--ties", "rank", "-f", "csv",
                         "--relevance", "clicks / NULLIF(shown, 0)")
    assert code == 0 and "--relevance 'clicks / NULLIF(shown, 0)' is NULL in 1 of 3 rows" in err
    assert out.splitlines()[-1] == f"log,,{1 / 3!r},{2 / 3!r}"


def test_a_query_named_all_is_not_the_summary_row(cli, tmp_path):
    """CSV and JSON Lines give the summary row no query id; a query named `all` keeps its own row."""
    write(tmp_path, "q.txt", "all 0 d1 1\nq1 0 d1 1\n")
    write(tmp_path, "r.txt", "all Q0 d1 1 0.9 t\nq1 Q0 d2 1 0.9 t\n")
    code, out, _ = cli("eval", "q.txt", "r.txt", "-m", "P@1", "-q", "-f", "csv")
    assert code == 0 and out.splitlines() == ["run,query_id,P@1", "r,all,1.0", "r,q1,0.0", "r,,0.5"]
    code, out, _ = cli("eval", "q.txt", "r.txt", "-m", "P@1", "-q", "-f", "jsonl")
    assert [json.loads(line)["query_id"] for line in out.splitlines()] == ["all", "q1", None]


def test_ties_rank_reads_a_trec_rank_field_as_numbers(cli, tmp_path):
    """A clean 1..1000 rank field once drew a 'positions are not 1..n' warning (compared as text)."""
    write(tmp_path, "q.txt", "q1 0 d2 1\nq1 0 d10 1\n")
    write(tmp_path, "r.txt", "".join(f"q1 Q0 d{i} {i} 0 t\n" for i in range(1, 1001)))
    code, out, err = cli("eval", "q.txt", "r.txt", "-m", "P@2,RR", "--ties", "rank", "-f", "csv")
    assert code == 0 and "positions" not in err
    assert out.splitlines()[-1] == "r,,0.5,0.5"  # d1, d2 by rank (not d1, d10 by text): P@2 = 1/2, RR = 1/2


def test_scores_that_are_all_equal_are_said_once(cli, tmp_path):
    write(tmp_path, "q.txt", QRELS)
    write(tmp_path, "r.txt", "q1 Q0 d1 1 0 t\nq1 Q0 d2 2 0 t\nq1 Q0 d3 3 0 t\n")
    code, out, err = cli("eval", "q.txt", "r.txt", "-m", "RR", "-f", "csv")
    # d3, d2, d1 by document id descending: RR = 1/2
    assert code == 0 and out.splitlines()[-1] == "r,,0.5"
    assert err.count("every score is 0, so the order of each list is decided by the tie rule alone") == 1


# ---------------------------------------------------------------------------------------------- engines


def _sqlite():
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE qrels (query_id TEXT, doc_id TEXT, relevance REAL)")
    con.execute("CREATE TABLE run (query_id TEXT, doc_id TEXT, score REAL, points REAL)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", [("q1", "d1", 1), ("q1", "d2", 1)])
    con.executemany("INSERT INTO run VALUES (?, ?, ?, ?)", [("q1", "d1", 2.0, 1.0), ("q1", "d3", 1.0, 2.0)])
    return con


def test_engines_check_every_mapped_column_and_table_first():
    """SQLite once read columns={'score': 'pts'} (no such column) as the string 'pts': every score equal."""
    con = _sqlite()
    assert sqlmetrics.evaluate("qrels", "run", ["RR"], engine=con, columns={"score": "points"}).aggregate == \
        {"RR": 0.5}  # d3 (2.0) then d1 (1.0): the first relevant document at position 2
    with pytest.raises(SqlmetricsError, match=r"^sqlite run table run: no column 'pts' \(its columns: query_id, "
                                              r"doc_id, score, points\); map the role to one of them with columns=\.$"):
        sqlmetrics.evaluate("qrels", "run", ["RR"], engine=con, columns={"score": "pts"})
    with pytest.raises(SqlmetricsError, match=r"^sqlite qrels table qrels: no column 'grade' .* qrels_columns=\.$"):
        sqlmetrics.evaluate("qrels", "run", ["RR"], engine=con, qrels_columns={"relevance": "grade"})
    with pytest.raises(SqlmetricsError, match=r"^sqlite run table runs: cannot be read \(no such table: runs\)"):
        sqlmetrics.evaluate("qrels", "runs", ["RR"], engine=con)


def test_an_engine_error_is_one_line_with_the_tables_columns():
    """Not the engine's message followed by the whole statement (119 lines); the statement stays on .sql."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE qrels AS SELECT 'q1' AS query_id, 'd1' AS doc_id, 1 AS relevance")
    con.execute("CREATE TABLE run AS SELECT 'q1' AS query_id, 'd1' AS doc_id, 'high' AS score")
    with pytest.raises(SqlmetricsError) as error:
        sqlmetrics.evaluate("qrels", "run", ["AP"], engine=con)
    message = str(error.value)
    assert message.startswith("duckdb rejected the evaluation statement: Conversion Error:")
    assert "(tables: run: query_id, doc_id, score; qrels: query_id, doc_id, relevance)" in message
    assert "\n" not in message and "SELECT" not in message
    assert error.value.sql.lstrip().startswith("-- sqlmetrics") and "WITH" in error.value.sql


def test_a_list_without_any_label_is_left_out_and_counted(cli, tmp_path):
    """The rule for NULL labels: a NULL label is an unjudged document; a list whose every label is NULL is
    not averaged (like a query without judgments), and a warning counts such lists. q2 alone: RR = 1/2."""
    write(tmp_path, "log.csv", "query_id,doc_id,position,rating\nq1,d1,1,\nq1,d2,2,\nq2,d3,1,0\nq2,d4,2,1\nq2,d5,3,\n")
    code, out, err = cli("eval", "none", "log.csv", "-m", "RR,Judged@3", "--ties", "rank", "--label", "rating",
                         "-q", "-f", "csv")
    assert code == 0 and "1 list has no labelled row (every label NULL); not averaged" in err
    assert out.splitlines()[1:] == [f"log,q2,0.5,{2 / 3!r}", f"log,,0.5,{2 / 3!r}"]
