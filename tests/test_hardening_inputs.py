"""In-memory and database inputs that once leaked, downloaded, crashed or merged silently: each now gives
the right (hand-computed) number or a one-line error naming the input and the fix."""
import json
import sqlite3

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

SECRET = "TOPSECRET-7f3a"


# 1. A DuckDB file is read apart: read-only, no file or network access, no extensions, settings locked.

@pytest.fixture
def hostile_duckdb(tmp_path):
    """A DuckDB file whose views read a file outside it (the secret is where a grade would be, so that an
    error about the grade would show it), beside an ordinary table."""
    secret = tmp_path / "secret.csv"
    secret.write_text(f"query_id,doc_id,relevance\nq1,d1,{SECRET}\n")
    path = tmp_path / "eval.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE VIEW by_text AS SELECT 'q1' AS query_id, 'd1' AS doc_id, content AS relevance "
                f"FROM read_text('{secret}')")
    con.execute(f"CREATE VIEW by_csv AS SELECT * FROM read_csv('{secret}', all_varchar = true)")
    con.execute("CREATE MACRO sneaky() AS TABLE SELECT * FROM read_csv('" + str(secret) + "', all_varchar = true)")
    con.execute("CREATE VIEW by_macro AS SELECT * FROM sneaky()")
    con.execute("CREATE TABLE run AS SELECT 'q1' AS query_id, 'd' || i AS doc_id, 10.0 - i AS score FROM range(1, 4) t(i)")
    con.close()
    return path


@pytest.mark.parametrize("view", ["by_text", "by_csv", "by_macro"])
def test_a_view_in_a_duckdb_file_cannot_read_other_files(hostile_duckdb, view, cli):
    with pytest.raises(SqlmetricsError, match=rf"qrels table '{view}' in .*eval.duckdb': it reads something outside "
                                              r"the database \(Cannot access file .*secret.csv.*\).*CREATE TABLE") as e:
        sqlmetrics.evaluate(f"{hostile_duckdb}:{view}", f"{hostile_duckdb}:run", ["RR"])
    assert SECRET not in str(e.value) and "\n" not in str(e.value)
    code, out, err = cli("eval", f"{hostile_duckdb}:{view}", f"{hostile_duckdb}:run", "-m", "RR")
    assert code == 2 and SECRET not in out + err and "it reads something outside the database" in err


def test_a_duckdb_file_is_read_and_then_let_go(tmp_path):
    """A DuckDB file named .db works as before. Hand-computed: q1 ranks d1 (9), d2 (8), d3 (7); d2 is the one
    relevant document: P@1 = 0, RR = 1/2, AP = 1/2."""
    path = tmp_path / "eval.db"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE qrels AS SELECT 'q1' AS query_id, 'd2' AS doc_id, 1 AS relevance")
    con.execute("CREATE TABLE run AS SELECT 'q1' AS qid, 'd' || i AS docno, 10.0 - i AS score FROM range(1, 4) t(i)")
    con.close()
    before = path.read_bytes()
    res = sqlmetrics.evaluate(f"{path}:qrels", f"{path}:run", ["P@1", "RR", "AP"])
    assert res.aggregate == {"P@1": 0.0, "RR": 0.5, "AP": 0.5}
    assert path.read_bytes() == before  # opened read-only
    # Nothing holds the file afterwards: its owner can open it for writing again.
    duckdb.connect(str(path)).execute("INSERT INTO qrels VALUES ('q1', 'd1', 1)").close()
    with pytest.raises(SqlmetricsError, match=r"run table 'nope' in .*eval.db': no such table or view "
                                              r"\(it has: qrels, run\)\."):
        sqlmetrics.evaluate(f"{path}:qrels", f"{path}:nope", ["RR"])


def test_a_duckdb_file_open_in_this_program_says_what_to_do(tmp_path):
    path = tmp_path / "eval.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE run AS SELECT 'q1' AS query_id, 'd1' AS doc_id, 1.0 AS score")
    with pytest.raises(SqlmetricsError, match=r"cannot open it as a DuckDB database, read-only .* pass that "
                                              r"connection's table instead, con.table\(name\)"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, f"{path}:run", ["RR"])
    assert sqlmetrics.evaluate({"q1": {"d1": 1}}, con.table("run"), ["RR"]).aggregate == {"RR": 1.0}
    con.close()


def test_an_error_inside_a_duckdb_view_is_one_line(tmp_path):
    """The view fails while its rows are streamed (at the 3rd row): DuckDB's reason, unwrapped."""
    path = tmp_path / "eval.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE VIEW run AS SELECT 'q1' AS query_id, 'd' || i AS doc_id, "
                "CAST(CASE WHEN i = 2 THEN 'x' ELSE '1' END AS INT) AS score FROM range(3) t(i)")
    con.close()
    with pytest.raises(SqlmetricsError, match=r"^run table 'run' in .*: cannot be read \(Could not convert string "
                                              r"'x' to INT32\)\.$"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, f"{path}:run", ["RR"])


# 2. A SQLite file is read by Python's sqlite3, read-only: DuckDB would download its sqlite extension.

@pytest.fixture
def sqlite_file(tmp_path):
    path = tmp_path / "eval.db"
    con = sqlite3.connect(path)
    # SQLite keeps a type per value: query ids 1 (a number) and 'q2', document ids '007' and 3.
    con.execute("CREATE TABLE qrels (query_id, doc_id, relevance INTEGER)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", [(1, "007", 1), (1, 3, 1), ("q2", "a", 1)])
    con.execute("CREATE TABLE run (qid TEXT, docno, score REAL)")
    con.executemany("INSERT INTO run VALUES (?, ?, ?)",
                    [("1", "007", 1.0), ("1", "7", 2.0), ("1", "3", 0.5), ("q2", "a", 1)])
    con.execute("CREATE VIEW run_view AS SELECT * FROM run")
    con.commit()
    con.close()
    return path


def test_a_sqlite_table_gives_the_right_number(sqlite_file, tmp_path, cli):
    """Hand-computed. Query 1 ranks '7' (2.0, unjudged: '7' is not '007'), '007' (1.0, relevant), '3' (0.5,
    relevant, written 3 in the qrels): P@1 = 0, RR = 1/2, AP = (1/2 + 2/3) / 2 = 7/12. Query q2 ranks its
    relevant 'a' first: 1, 1, 1. Means: P@1 = 1/2, RR = 3/4, AP = 19/24."""
    before = sqlite_file.read_bytes()
    for run in ("run", "run_view"):
        res = sqlmetrics.evaluate(f"{sqlite_file}:qrels", f"{sqlite_file}:{run}", ["P@1", "RR", "AP"])
        assert res.aggregate == pytest.approx({"P@1": 0.5, "RR": 0.75, "AP": 19 / 24})
    assert sqlite_file.read_bytes() == before
    other = tmp_path / "judged.sqlite3"  # the suffixes .sqlite and .sqlite3 name a SQLite file too
    other.write_bytes(before)
    code, out, err = cli("eval", f"{other}:qrels", f"{sqlite_file}:run", "-m", "RR", "-f", "json")
    assert code == 0 and json.loads(out)["runs"]["run"]["aggregate"] == {"RR": 0.75}


def test_a_missing_sqlite_table_names_the_tables(sqlite_file):
    with pytest.raises(SqlmetricsError, match=r"^qrels table 'judgments' in .*eval.db': no such table or view "
                                              r"\(it has: qrels, run, run_view\)\.$"):
        sqlmetrics.evaluate(f"{sqlite_file}:judgments", f"{sqlite_file}:run", ["RR"])


def test_a_sqlite_file_that_is_damaged_is_one_line(tmp_path):
    path = tmp_path / "eval.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(SqlmetricsError, match=r"^run table 'run' in .*eval.sqlite': cannot be read"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, f"{path}:run", ["RR"])


# 3. pandas, Arrow streams and DuckDB relations: ids are text, compared as written.

def test_a_pandas_id_column_mixing_numbers_and_text():
    """doc_id [1, 'd2', 3] has no Arrow type; as text it is ['1', 'd2', '3']. Hand-computed: the relevant
    '3' (a number in the frame) is ranked third: RR = 1/3, P@3 = 1/3."""
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": [1, "d2", 3], "score": [3.0, 2.0, 1.0]})
    res = sqlmetrics.evaluate({"q1": {"3": 1}}, run, ["RR", "P@3"])
    assert res.aggregate == pytest.approx({"RR": 1 / 3, "P@3": 1 / 3})
    # A score column mixing types becomes text too; its bad value is named with its row.
    bad = run.assign(score=[3.0, "high", 1])
    with pytest.raises(SqlmetricsError, match=r"run \(pandas DataFrame\), row 2: column 'score' holds 'high'"):
        sqlmetrics.evaluate({"q1": {"3": 1}}, bad, ["RR"])


def test_number_ids_match_text_ids_by_their_written_form():
    """int64 7 is '7'. A float id is compared as DuckDB writes it: 1.5 is '1.5' (matches), 2.0 is '2.0',
    which does not match '2' (documented: a float id column is usually an int column that met a NaN)."""
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": np.array([7, 8], dtype="int64"), "relevance": [1, 0]})
    run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["8", "7"], "score": [2.0, 1.0]})
    assert sqlmetrics.evaluate(qrels, run, ["RR"]).aggregate == {"RR": 0.5}
    floats = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": [2.0, 1.5], "score": [2.0, 1.0]})
    res = sqlmetrics.evaluate({"q1": {"1.5": 1, "2": 1}}, floats, ["P@1", "RR"])
    assert res.aggregate == {"P@1": 0.0, "RR": 0.5}  # '2.0' is not '2'; '1.5' is found at rank 2


@pytest.mark.parametrize("column, values", [("doc_id", ["d1", np.nan, "d3"]), ("doc_id", [1.0, np.nan, 3.0]),
                                            ("query_id", ["q1", None, "q1"]), ("doc_id", [1, np.nan, "d3"])])
def test_a_missing_pandas_id_names_its_row(column, values):
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    run[column] = values
    with pytest.raises(SqlmetricsError, match=r"^run \(pandas DataFrame\), row 2: the query id or document id is empty"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, run, ["RR"])


def test_an_arrow_stream_is_read_once_and_checked_like_a_table():
    """A RecordBatchReader can be read once, and the checks read the run again to name a bad row.
    Hand-computed: d1 (2.0) then the relevant d2 (1.0): RR = 1/2."""
    run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    assert sqlmetrics.evaluate({"q1": {"d2": 1}}, run.to_reader(), ["RR"]).aggregate == {"RR": 0.5}
    repeated = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "score": [2.0, 1.0]})
    with pytest.raises(SqlmetricsError, match=r"run \(Arrow stream\): document 'd1' appears more than once for "
                                              r"query 'q1' \(rows 1 and 2\)"):
        sqlmetrics.evaluate({"q1": {"d2": 1}}, repeated.to_reader(), ["RR"])
    relation = duckdb.sql("SELECT 'q1' AS query_id, 'd' || i AS doc_id, 10.0 - i AS score FROM range(1, 4) t(i)")
    assert sqlmetrics.evaluate({"q1": {"d2": 1}}, relation, ["RR"]).aggregate == {"RR": 0.5}


# 4. dict keys that become one id.

def test_dict_keys_written_alike_are_an_error_not_a_merge():
    with pytest.raises(SqlmetricsError, match=r"^qrels \(dict\): query ids 1 and '1' both become '1' \(ids are "
                                              r"compared as text\); keep one of them"):
        sqlmetrics.evaluate({1: {"d1": 1}, "1": {"d2": 1}}, {"1": {"d1": 1.0, "d2": 0.5}}, ["RR"])
    with pytest.raises(SqlmetricsError, match=r"^run \(dict\): query 'q': document ids 1 and '1' both become '1'"):
        sqlmetrics.evaluate({"q": {"1": 1}}, {"q": {1: 2.0, "1": 1.0}}, ["RR"])
    # One spelling per input is fine, and matches the other input's: 1 is '1'.
    assert sqlmetrics.evaluate({1: {2: 1}}, {"1": {"2": 1.0}}, ["RR"]).aggregate == {"RR": 1.0}


# 5. A NULL group_by value is a segment of its own, everywhere.

LOG = [  # arm, market, query, doc, rank
    ("a", "x", "q1", "d1", 1), ("a", "x", "q1", "d2", 2),
    (None, "x", "q2", "d1", 1), (None, "x", "q2", "d2", 2),
    (None, None, "q3", "d1", 2), (None, None, "q3", "d2", 1),
]
JUDGED = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d1", 1)]
# Hand-computed: q1 ranks its relevant d1 first (P@1 = RR = 1); q2 and q3 rank theirs second (0, 1/2).
BY_ARM_MARKET = [{"arm": "a", "market": "x", "P@1": 1.0, "RR": 1.0, "num_lists": 1},
                 {"arm": None, "market": "x", "P@1": 0.0, "RR": 0.5, "num_lists": 1},
                 {"arm": None, "market": None, "P@1": 0.0, "RR": 0.5, "num_lists": 1}]
BY_ARM = [{"arm": "a", "P@1": 1.0, "RR": 1.0, "num_lists": 1}, {"arm": None, "P@1": 0.0, "RR": 0.5, "num_lists": 2}]


def _log_db(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE log (arm TEXT, market TEXT, query_id TEXT, doc_id TEXT, rank INTEGER)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", LOG)
    con.execute("CREATE TABLE qrels (query_id TEXT, doc_id TEXT, relevance INTEGER)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", JUDGED)
    con.commit()
    return con


def test_null_segments_on_the_sqlite_engine_and_from_a_sqlite_file(tmp_path):
    con = _log_db(tmp_path / "log.db")
    options = dict(ties="rank", columns={"rank_position": "rank"})
    for segments, expected in ((["arm", "market"], BY_ARM_MARKET), ("arm", BY_ARM)):
        on_engine = sqlmetrics.evaluate("qrels", "log", ["P@1", "RR"], engine=con, group_by=segments, **options)
        from_file = sqlmetrics.evaluate(f"{tmp_path / 'log.db'}:qrels", f"{tmp_path / 'log.db'}:log", ["P@1", "RR"],
                                        group_by=segments, **options)
        for res in (on_engine, from_file):
            assert res.per_group.to_pylist() == expected
            assert res.aggregate == pytest.approx({"P@1": 1 / 3, "RR": 2 / 3})
    con.close()


def test_null_segments_on_the_command_line(tmp_path, cli):
    _log_db(tmp_path / "log.db").close()
    code, out, err = cli("eval", "log.db:qrels", "log.db:log", "-m", "P@1", "-m", "RR", "--group-by", "arm",
                         "--ties", "rank", "--column", "rank_position=rank", "-f", "json")
    assert code == 0, err
    assert [{k: v for k, v in row.items() if k != "run"} for row in json.loads(out)] == BY_ARM


def test_two_runs_whose_names_are_alike_as_text():
    """{1: run, '1': run}: the results name runs by text, so the two would be one name twice."""
    run = {"q1": {"d1": 1.0}}
    with pytest.raises(SqlmetricsError, match=r"the runs 1 and '1' are both named '1' in the results"):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, {1: run, "1": run}, ["P@1"])


def test_a_run_name_mapping_on_trec_text_says_it_has_no_such_column(tmp_path):
    """TREC text's columns are fixed and its tag is not read: mapping run_name to it was a KeyError from deep inside."""
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 2.0 sysA\nq1 Q0 d2 2 1.0 sysB\n")
    with pytest.raises(SqlmetricsError, match=r"r\.txt.*maps run_name to 'tag'.*one run per file"):
        sqlmetrics.evaluate(qrels, run, ["P@1"], columns={"run_name": "tag"})
