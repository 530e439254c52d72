"""Each bad input of METRICS.md gets a SqlmetricsError that names the place and the fix, never a DuckDB trace."""
import math
import re
import warnings

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq2 Q0 d3 1 0.7 t\n"


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def fails(qrels, run, measures=("P@1",), match=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        with pytest.raises(SqlmetricsError, match=match) as info:
            sqlmetrics.evaluate(qrels, run, list(measures), **kw)
    message = str(info.value)
    assert "Error:" not in message and "Traceback" not in message, message  # not a DuckDB message
    return message


def test_malformed_trec_run_line_names_file_and_line(files):
    run = files("run.txt", RUN.replace("q1 Q0 d2 2 0.5 t", "q1 Q0 d2 2 0.5"))
    msg = fails(files("qrels", QRELS), run, match=r"run file '.*run.txt', line 2: expected 6")
    assert "'q1 Q0 d2 2 0.5'" in msg


@pytest.mark.parametrize("kind,bad", [
    ("run", "q2 Q0 d3  0.7 t"),  # no rank
    ("run", "q2  d3 1 0.7 t"),  # no Q0
    ("qrels", "q2 0  1"),  # no document id
])
def test_line_with_a_field_missing_behind_a_double_delimiter(files, kind, bad):
    # Past the sniffed head, so the single-delimiter fast path reads it. Split on single spaces, the
    # double space gives an empty field and the line looks complete; in whitespace-separated TREC it has
    # a field fewer, which trec_eval (and our general path) rejects.
    filler = {"run": "".join(f"q9 Q0 f{i} {i} 0.1 t\n" for i in range(20000)),
              "qrels": "".join(f"q9 0 f{i} 0\n" for i in range(20000))}[kind]
    text = {"run": RUN, "qrels": QRELS}[kind] + filler + bad + "\n"
    qrels, run = files("qrels", text if kind == "qrels" else QRELS), files("run", text if kind == "run" else RUN)
    line = text.count("\n")
    fields = {"run": 6, "qrels": 4}[kind]
    fails(qrels, run, match=rf"{kind} file .*, line {line}: expected {fields} whitespace-separated fields")


def test_qrels_passed_as_run(files):
    q = files("qrels", QRELS)
    fails(q, q, match="line 1: expected 6 .*qrels file passed as a run")


def test_malformed_qrels_line_counts_blank_lines(files):
    fails(files("qrels", QRELS + "\nq3 0 d9\n"), files("run", RUN), match=r"qrels file .*, line 5: expected 4")


def test_non_numeric_score_names_csv_line_and_column(files):
    run = files("run.csv", "qid,docid,score\nq1,d1,0.9\nq1,d2,high\n")
    fails(files("qrels", QRELS), run, match=r"run file .*run.csv', line 3: column 'score' holds 'high'")


@pytest.mark.parametrize("score", ["high", "nan", "1e999", "0x1G"])
def test_bad_score_in_trec_run_names_line_and_text(files, score):
    run = files("run.txt", RUN.replace("q1 Q0 d2 2 0.5 t", f"q1 Q0 d2 2 {score} t"))
    fails(files("qrels", QRELS), run, match=rf"run file .*run.txt', line 2: column 'score' holds '{score}'")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_or_infinite_score(bad):
    run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, bad]})
    qrels = pa.table({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    fails(qrels, run, match=r"row 2: column 'score' holds '(nan|inf)'")


def test_non_numeric_relevance(files):
    fails(files("qrels", "q1 0 d1 yes\n"), files("run", RUN), match=r"qrels file .*line 1: column 'relevance' holds 'yes'")


def test_empty_qrels(files):
    fails(files("qrels", ""), files("run", RUN), match="qrels file .* has no rows")


def test_missing_and_ambiguous_columns():
    qrels = pa.table({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    run = pa.table({"query_id": ["q1"], "document": ["d1"], "points": [1.0]})
    fails(qrels, run, match=r"no column for 'score' .*columns: query_id, document, points.*columns=\{'score'")
    fails(qrels, run, match="columns= maps 'score' to 'nope'", columns={"score": "nope"})
    both = pa.table({"qid": ["q1"], "topic": ["q1"], "doc_id": ["d1"], "score": [1.0]})
    fails(qrels, both, match="several columns could be 'query_id' .*qid, topic")


def test_duplicate_judgment(files):
    fails(files("qrels", QRELS + "q1 0 d1 0\n"), files("run", RUN),
          match=r"'d1' appears more than once for query 'q1' \(lines 1 and 4\)")


def test_duplicate_run_line(files):
    fails(files("qrels", QRELS), files("run", RUN + "q1 Q0 d1 9 0.1 t\n"), match=r"lines 1 and 4\).*duplicates='max'")


def test_missing_file_and_unknown_objects(files, tmp_path):
    fails(tmp_path / "nope.txt", files("run", RUN), match="qrels file .*nope.txt': no such file")
    fails(files("qrels", QRELS), [1, 2, 3], match="cannot read a list")
    fails(files("qrels", QRELS), {"q1": [1, 2]}, match="run 'q1': cannot read a list")
    fails(files("qrels", QRELS), files("run.parquet", "not parquet"), match="cannot be read as Parquet")


def test_duckdb_file_without_the_table(tmp_path, files):
    path = tmp_path / "x.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE run AS SELECT 1 AS a").close()
    fails(files("qrels", QRELS), f"{path}:missing", match="no such table or view \\(it has: run\\)")


@pytest.mark.parametrize("measure, match", [
    ("nDGC@10", "unknown measure 'nDGC@10'.*Did you mean .*'nDCG'"),
    ("P", "P needs a cutoff, e.g. P@10 \\(or SetP"),
    ("R", "R needs a cutoff"),
    ("P@0", "parameter 'k': must be a positive integer"),
    ("P@2.5", "parameter 'k': must be a positive integer"),
    ("ndcg_cut_-3", "unknown measure"),
    ("RBP(p=1)", "parameter 'p': must be a number strictly between 0 and 1"),
    ("RBP(p=0)", "strictly between 0 and 1"),
    ("nDCG(gain='cubic')@5", "'cubic' is not one of linear, exp"),
    ("nDCG(depth=3)", "nDCG has no parameter 'depth'"),
    ("SetP@5", "SetP takes no @ value"),
])
def test_bad_measure_fails_before_reading_data(measure, match, tmp_path):
    # The files do not exist: the measure error must come first.
    fails(tmp_path / "no-qrels", tmp_path / "no-run", [measure], match=match)


@pytest.mark.parametrize("option, match", [
    ({"ties": "random"}, "ties='random' is not valid"),
    ({"queries": "run"}, "queries='run' is not valid"),
    ({"score_precision": "float16"}, "score_precision='float16' is not valid"),
    ({"relevance_level": "2"}, "relevance_level='2' must be an integer"),
    ({"duplicates": "last"}, "duplicates='last' is not valid"),
])
def test_bad_options(option, match, files):
    fails(files("qrels", QRELS), files("run", RUN), match=match, **option)


def test_run_without_common_queries_scores_zero_with_a_warning(files):
    run = files("run", "q9 Q0 d1 1 0.9 t\n")
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="no ranking for 2 qrels queries"):
        res = sqlmetrics.evaluate(files("qrels", QRELS), run, ["P@1", "NumRel", "NumRet"])
    assert res.aggregate == {"P@1": 0.0, "NumRel": 2.0, "NumRet": 0.0}


def test_only_negative_judgments_scores_zero():
    # pytrec_eval hangs on this input; we must not.
    qrels = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [-1, -1]})
    run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    res = sqlmetrics.evaluate(qrels, run, ["AP", "nDCG", "Bpref", "P@1", "RR", "NumRel", "Judged@2", "FirstRank"])
    assert res.aggregate["NumRel"] == 0 and res.aggregate["Judged@2"] == 1.0
    assert all(res.aggregate[m] == 0 for m in ["AP", "nDCG", "Bpref", "P@1", "RR"])
    assert res.aggregate["FirstRank"] is None or math.isnan(res.aggregate["FirstRank"])


def test_a_parameter_given_in_two_places_is_refused():
    with pytest.raises(SqlmetricsError, match=r"measure 'P\(k=5\)@3': parameter 'k' is given twice"):
        sqlmetrics.catalogue.parse("P(k=5)@3")


@pytest.mark.parametrize("typed, nearest", [("nDGC@10", "ndcg@10"), ("R-Prec", "Rprec"), ("mapp", "map")])
def test_did_you_mean_lists_each_spelling_once_nearest_first(typed, nearest):
    with pytest.raises(SqlmetricsError) as info:
        sqlmetrics.catalogue.parse(typed)
    suggested = re.findall(r"'([^']*)'", str(info.value).split("Did you mean ")[1].split("?")[0])
    assert suggested[0] == nearest and len(suggested) == len(set(suggested)), suggested
