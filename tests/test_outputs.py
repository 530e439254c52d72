"""Typed outputs (issue 16): every file evaluate(output=...) and `-o` write is read back with an independent
reader (pyarrow.parquet, csv, json, duckdb) and checked, types and values, against evaluate()'s results and
against numbers computed here by hand; every refusal; and atomicity (a failed write leaves the old file or
table as it was)."""
import csv
import datetime
import io
import json
import math
import os
import sqlite3
import sys

import duckdb
import jinja2
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli import main
from sqlmetrics.dialects import DIALECTS

# q1 ranks its one relevant document second (AP 1/2, P@1 0), q2 first (AP 1, P@1 1).
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d3 1 1.0 t\n"
BY_HAND = {"q1": {"AP": 0.5, "P@1": 0.0}, "q2": {"AP": 1.0, "P@1": 1.0}}
MEASURES = ["AP", "P@1"]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return tmp_path


@pytest.fixture
def log(tmp_path):
    """A log with a DATE segment column: two days, one session a day, the judgment in the `grade` column."""
    table = pa.table({
        "day": pa.array([datetime.date(2026, 1, 1)] * 2 + [datetime.date(2026, 1, 2)] * 2, pa.date32()),
        "session": ["s1", "s1", "s2", "s2"], "doc": ["a", "b", "a", "b"], "position": [1, 2, 1, 2],
        "grade": [0, 1, 1, 0]})
    path = tmp_path / "log.parquet"
    pq.write_table(table, path)
    return path


LOG_KW = dict(group_by=["day"], label="grade", ties="rank",
              columns={"query_id": "session", "doc_id": "doc", "rank_position": "position"})


def run_cli(capsys, *argv):
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------------------------- evaluate(output=)

def _per_query(results) -> dict:
    return {r["query_id"]: {m: r[m] for m in MEASURES} for r in results.per_query.to_pylist()}


def test_python_parquet_is_typed_and_equals_the_results(files):
    results = sqlmetrics.evaluate("qrels.txt", "run.txt", MEASURES, output="out.parquet")
    table = pq.read_table("out.parquet")
    assert table.schema.field("query_id").type == pa.string()
    assert all(table.schema.field(m).type == pa.float64() for m in MEASURES)
    got = {r["query_id"]: {m: r[m] for m in MEASURES} for r in table.to_pylist()}
    assert got == BY_HAND == _per_query(results)


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_python_delimited(files, suffix):
    sqlmetrics.evaluate("qrels.txt", "run.txt", MEASURES, output="out" + suffix)
    with open("out" + suffix, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="," if suffix == ".csv" else "\t"))
    assert {r["query_id"]: {m: float(r[m]) for m in MEASURES} for r in rows} == BY_HAND


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_python_json(files, suffix):
    sqlmetrics.evaluate("qrels.txt", "run.txt", MEASURES, output="out" + suffix)
    text = open("out" + suffix).read()
    records = json.loads(text) if suffix == ".json" else [json.loads(line) for line in text.splitlines()]
    assert {r["query_id"]: {m: r[m] for m in MEASURES} for r in records} == BY_HAND
    assert all(isinstance(r["AP"], float) for r in records)


def _awkward_table() -> pa.Table:
    """Values whose JSON spelling is easy to get wrong: doubles of every magnitude (random bit patterns too), NaN,
    infinities, -0.0, a float32, integers at int64's and uint64's ends, booleans, dates, NULLs, strings with
    quotes, backslashes, escapes, non-ASCII text and U+2028."""
    import random
    import struct

    rng = random.Random(4)
    doubles = [0.0, -0.0, 1.0, 0.1, 1e-05, 1e16, 1e15, 123456789012345678.0, 5e-324, 1.5e300, math.nan, math.inf,
               -math.inf, None, 1 / 3]
    doubles += [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(2000)]
    texts = ['a"b', "back\\slash", "nl\nx", "tab\t", "\x01 \x7f \x08\x0c\r", "é 😀 \u2028", "/", None, ""]
    n = len(doubles)
    return pa.table({
        "query_id": [texts[i % len(texts)] for i in range(n)],
        "score": doubles,
        "f32": pa.array([0.1 if i % 3 else None for i in range(n)], pa.float32()),
        "i64": pa.array([(-1) ** i * (2 ** 63 - 1 - i) if i % 5 else None for i in range(n)], pa.int64()),
        "u64": pa.array([2 ** 64 - 1 - i for i in range(n)], pa.uint64()),
        "flag": [None if i % 7 == 0 else bool(i % 2) for i in range(n)],
        "day": pa.array([datetime.date(1 + i % 9999, 1 + i % 12, 1 + i % 28) for i in range(n)], pa.date32()),
    })


@pytest.mark.parametrize("lines", [True, False], ids=["jsonl", "json"])
def test_json_written_by_duckdb_is_pythons_json_byte_for_byte(tmp_path, lines):
    """The JSON writer formats the rows in DuckDB (millions of rows without a Python loop); its bytes are those of
    Python's json encoder on the same rows, awkward values included, for JSON Lines and the indented array; an
    empty table too. A control character that DuckDB would escape in capitals is written by Python instead."""
    from sqlmetrics.local.output import _json_in_python, _json_in_sql

    for table in (_awkward_table(), _awkward_table().slice(0, 0)):
        assert _json_in_sql(table, str(tmp_path / "sql"), lines)
        _json_in_python(table, str(tmp_path / "py"), lines)
        assert (tmp_path / "sql").read_bytes() == (tmp_path / "py").read_bytes()
    small = pa.table({"q": ["q1", "q2"], "v": [0.5, math.nan]})
    assert _json_in_sql(small, str(tmp_path / "small"), lines)
    assert (tmp_path / "small").read_text() == ('{"q": "q1", "v": 0.5}\n{"q": "q2", "v": null}\n' if lines else
                                                 '[\n  {\n    "q": "q1",\n    "v": 0.5\n  },\n  {\n    "q": "q2",\n'
                                                 '    "v": null\n  }\n]\n')
    assert not _json_in_sql(pa.table({"q": ["unit\x1fseparator"]}), str(tmp_path / "no"), lines)


def test_python_segments_keep_their_dates(files, log):
    results = sqlmetrics.evaluate(None, log, ["RR"], output="seg.parquet", **LOG_KW)
    table = pq.read_table("seg.parquet")
    assert table.schema.field("day").type == pa.date32() and table.schema.field("RR").type == pa.float64()
    # s1 (day 1) has its relevant document second, s2 (day 2) first
    assert sorted((r["day"], r["RR"]) for r in table.to_pylist()) == [
        (datetime.date(2026, 1, 1), 0.5), (datetime.date(2026, 1, 2), 1.0)]
    assert table.to_pylist() == results.per_query.to_pylist()
    sqlmetrics.evaluate(None, log, ["RR"], output="seg.duckdb:rr", **LOG_KW)
    con = duckdb.connect("seg.duckdb")
    assert dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_name = 'rr'").fetchall())["day"] == "DATE"


def _table(path, name="res"):
    con = duckdb.connect(str(path), read_only=True)
    try:
        types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?",
                                 [name]).fetchall())
        rows = con.execute(f'SELECT * FROM "{name}" ORDER BY ALL').fetchall()
        return types, rows
    finally:
        con.close()


def test_python_duckdb_table_modes(files):
    (files / "other.txt").write_text("q1 Q0 d1 1 2.0 o\nq2 Q0 d3 1 1.0 o\n")  # AP 1 on both
    target = "res.duckdb:res"
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    types, rows = _table("res.duckdb")
    assert types == {"query_id": "VARCHAR", "AP": "DOUBLE"} and rows == [("q1", 0.5), ("q2", 1.0)]
    with pytest.raises(SqlmetricsError, match="exists already.*into_mode='replace'.*into_mode='append'.*"
                                              "into_mode='merge'"):
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    with pytest.raises(SqlmetricsError, match="exists already"):  # DuckDB's names ignore case
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output="res.duckdb:RES")
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target, into_mode="append")
    assert _table("res.duckdb")[1] == [("q1", 0.5), ("q1", 0.5), ("q2", 1.0), ("q2", 1.0)]
    sqlmetrics.evaluate("qrels.txt", "other.txt", ["AP"], output=target, into_mode="replace")
    assert _table("res.duckdb")[1] == [("q1", 1.0), ("q2", 1.0)]
    # merge: the rows of the same query are replaced, none added
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target, into_mode="merge")
    assert _table("res.duckdb")[1] == [("q1", 0.5), ("q2", 1.0)]


def test_python_merge_keys_on_run_and_query(files):
    (files / "other.txt").write_text("q1 Q0 d1 1 2.0 o\nq2 Q0 d3 1 1.0 o\n")
    target = "res.duckdb:res"
    sqlmetrics.evaluate("qrels.txt", {"a": "run.txt", "b": "other.txt"}, ["AP"], output=target)
    sqlmetrics.evaluate("qrels.txt", {"b": "run.txt", "c": "run.txt"}, ["AP"], output=target, into_mode="merge")
    rows = duckdb.connect("res.duckdb", read_only=True).execute("SELECT run, query_id, AP FROM res ORDER BY ALL").fetchall()
    # a kept, b's rows replaced by run.txt's values, c added
    assert rows == [("a", "q1", 0.5), ("a", "q2", 1.0), ("b", "q1", 0.5), ("b", "q2", 1.0), ("c", "q1", 0.5),
                    ("c", "q2", 1.0)]


def test_duckdb_failure_is_rolled_back(files):
    """merge deletes the old rows and then inserts: an insert that fails leaves the deleted rows in place."""
    con = duckdb.connect("res.duckdb")
    con.execute("CREATE TABLE res (query_id VARCHAR, AP DOUBLE CHECK (AP < 0.9))")
    con.execute("INSERT INTO res VALUES ('q1', 0.1), ('q2', 0.2)")
    con.close()
    with pytest.raises(SqlmetricsError, match="was not written .* it is as it was"):
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output="res.duckdb:res", into_mode="merge")
    assert _table("res.duckdb")[1] == [("q1", 0.1), ("q2", 0.2)]


def test_append_needs_the_columns(files):
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output="res.duckdb:res")
    with pytest.raises(SqlmetricsError, match="has no column 'P@1'.*into_mode='replace'"):
        sqlmetrics.evaluate("qrels.txt", "run.txt", MEASURES, output="res.duckdb:res", into_mode="append")
    assert _table("res.duckdb")[1] == [("q1", 0.5), ("q2", 1.0)]


@pytest.mark.parametrize("output, into_mode, message", [
    ("out.xyz", "create", "the extension '.xyz' names no format; name the file .parquet"),
    ("out", "create", "has no extension to say the format"),
    ("out.md", "create", "markdown cannot be written here"),
    ("res.db:t", "create", "tables are written to DuckDB files"),
    ("out.csv", "append", "into_mode='append' says how to write into a DuckDB table"),
    (None, "merge", "give output= too"),
])
def test_python_refusals_before_any_work(files, monkeypatch, output, into_mode, message):
    def no_work(*a, **k):
        raise AssertionError("evaluated before refusing")

    monkeypatch.setattr(sqlmetrics.evaluation, "evaluate_local", no_work)
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=output, into_mode=into_mode)
    assert sorted(p.name for p in files.iterdir()) == ["qrels.txt", "run.txt"]


def test_a_failing_write_leaves_the_previous_file(files, monkeypatch):
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output="out.parquet")
    before = open("out.parquet", "rb").read()

    def half_written(table, where, *a, **k):
        open(where, "wb").write(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", half_written)
    with pytest.raises(SqlmetricsError, match="cannot be written .No space left on device"):
        sqlmetrics.evaluate("qrels.txt", "run.txt", MEASURES, output="out.parquet")
    assert open("out.parquet", "rb").read() == before and leftovers(files) == []


# ---------------------------------------------------------------------------------------------- the command line

@pytest.mark.parametrize("name, check", [
    ("out.csv", lambda text: text.startswith("run,query_id,AP,P@1\n")),
    ("out.tsv", lambda text: text.startswith("run\tquery_id\tAP\tP@1\n")),
    ("out.txt", lambda text: "runid                 \tall\tt\n" in text and text.startswith("map ")),
    ("out.md", lambda text: text.startswith("| query | measure | run |")),
    ("out.json", lambda text: json.loads(text)["runs"]["run"]["per_query"]["q1"] == BY_HAND["q1"]),
    ("out.jsonl", lambda text: json.loads(text.splitlines()[0]) == {"run": "run", "query_id": "q1", **BY_HAND["q1"]}),
])
def test_cli_extension_chooses_the_format(files, capsys, name, check):
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP,P@1", "-q", "-o", name)
    assert code == 0 and out == "", err
    assert check((files / name).read_text())


def test_cli_parquet_is_typed(files, capsys):
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP,P@1", "-q", "-o", "out.parquet")
    assert code == 0, err
    table = pq.read_table("out.parquet")
    assert table.schema == pa.schema([("run", pa.string()), ("query_id", pa.string()), ("AP", pa.float64()),
                                      ("P@1", pa.float64())])
    rows = table.to_pylist()
    assert {r["query_id"]: {m: r[m] for m in MEASURES} for r in rows if r["query_id"]} == BY_HAND
    assert [r for r in rows if r["query_id"] is None] == [{"run": "run", "query_id": None, "AP": 0.75, "P@1": 0.5}]


def test_cli_segments_to_parquet_keep_dates(files, capsys, log):
    code, out, err = run_cli(capsys, "eval", "none", log, "-m", "RR", "--group-by", "day", "--label", "grade",
                             "--ties", "rank", "--column", "query_id=session", "--column", "doc_id=doc",
                             "--column", "rank_position=position", "-o", "seg.parquet")
    assert code == 0, err
    table = pq.read_table("seg.parquet")
    assert table.schema.field("day").type == pa.date32() and table.schema.field("RR").type == pa.float64()
    assert sorted((r["day"], r["RR"], r["num_lists"]) for r in table.to_pylist()) == [
        (datetime.date(2026, 1, 1), 0.5, 1), (datetime.date(2026, 1, 2), 1.0, 1)]


def test_cli_duckdb_table(files, capsys):
    argv = ["eval", "qrels.txt", "run.txt", "-m", "AP", "-q", "-o", "res.duckdb:res"]
    assert run_cli(capsys, *argv)[0] == 0
    types, rows = _table("res.duckdb")
    assert types == {"run": "VARCHAR", "query_id": "VARCHAR", "AP": "DOUBLE"}
    assert rows == [("run", "q1", 0.5), ("run", "q2", 1.0), ("run", None, 0.75)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and "exists already" in err and "--into-mode replace" in err and "--into-mode merge" in err
    assert run_cli(capsys, *argv, "--into-mode", "merge")[0] == 0  # the aggregate row (query_id NULL) too
    assert _table("res.duckdb")[1] == rows


@pytest.mark.parametrize("argv, message", [
    (["-o", "out.csv", "-f", "json"], "--output 'out.csv' names the format csv but -f/--format says json"),
    (["-o", "out.xyz", "-f", "csv"], "the extension '.xyz' names no format and -f/--format says csv"),
    (["-o", "out.tex"], "latex cannot be written here"),
    (["-f", "parquet"], "-f parquet is not text for a terminal"),
    (["-o", "out.csv", "--into-mode", "append"], "--into-mode append says how to write into a DuckDB table"),
])
def test_cli_refusals(files, capsys, argv, message):
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in files.iterdir()) == ["qrels.txt", "run.txt"]


def test_cli_a_failing_write_leaves_the_previous_file(files, capsys, monkeypatch):
    assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", "-o", "out.parquet")[0] == 0
    before = open("out.parquet", "rb").read()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP,P@1", "-o", "out.parquet")
    assert code == 2 and "No space left on device" in err
    assert open("out.parquet", "rb").read() == before and leftovers(files) == []


def test_bare_command_prints_the_help_and_exits_0(capsys):
    code, out, err = run_cli(capsys)
    assert code == 0 and out.startswith("usage: sqlmetrics") and "COMMAND" in out and err == ""


# ---------------------------------------------------------------------------------------------- compare

OTHER = "q1 Q0 d1 1 2.0 o\nq1 Q0 d2 2 1.0 o\nq2 Q0 d3 1 1.0 o\n"  # AP 1 on both queries


@pytest.mark.parametrize("name", ["pairs.parquet", "pairs.csv", "pairs.jsonl", "pairs.duckdb:pairs"])
def test_compare_pairs_are_typed_rows(files, capsys, name):
    (files / "other.txt").write_text(OTHER)
    code, out, err = run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP,P@1", "-o", name)
    assert code == 0 and out == "", err
    if name.endswith(".parquet"):
        table = pq.read_table(name)
        assert table.schema.field("p_value").type == pa.float64() and table.schema.field("wins").type == pa.int64()
        rows = table.to_pylist()
    elif name.endswith(".csv"):
        with open(name, newline="") as f:
            rows = [{k: float(v) if k.endswith("mean") or k == "difference" else v for k, v in r.items()}
                    for r in csv.DictReader(f)]
    elif name.endswith(".jsonl"):
        rows = [json.loads(line) for line in open(name)]
    else:
        con = duckdb.connect("pairs.duckdb", read_only=True)
        rows = [dict(zip(["measure", "run", "baseline", "run_mean", "baseline_mean", "difference"], r)) for r in
                con.execute("SELECT measure, run, baseline, run_mean, baseline_mean, difference FROM pairs").fetchall()]
    # by hand: run has AP 0.75 and P@1 0.5, other 1 and 1; the pair is other against run (the earlier baseline)
    got = {r["measure"]: (r["run"], r["baseline"], r["run_mean"], r["baseline_mean"], r["difference"]) for r in rows}
    assert got == {"AP": ("other", "run", 1.0, 0.75, 0.25), "P@1": ("other", "run", 1.0, 0.5, 0.5)}


def test_compare_text_formats_from_the_extension(files, capsys):
    (files / "other.txt").write_text(OTHER)
    assert run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP", "-o", "cmp.tex")[0] == 0
    assert (files / "cmp.tex").read_text().startswith("\\begin{table}")
    assert run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP", "-o", "cmp.txt")[0] == 0
    assert (files / "cmp.txt").read_text().split()[:2] == ["run", "AP"]
    code, out, err = run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-o", "cmp.json", "-f", "latex")
    assert code == 2 and "names the format json but -f/--format says latex" in err


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_compare_rows_to_standard_output_are_the_files_bytes(files, capsys, fmt):
    (files / "other.txt").write_text(OTHER)
    argv = ("compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP,P@1", "-f", fmt)
    code, printed, err = run_cli(capsys, *argv)
    assert code == 0 and printed, err
    assert run_cli(capsys, *argv, "-o", f"cmp.{fmt}")[0] == 0
    assert printed == (files / f"cmp.{fmt}").read_text() and leftovers(files) == []


# ---------------------------------------------------------------------------------------------- convert

def test_convert_run_round_trips_through_every_format(files, capsys):
    """TREC text -> Parquet (read with pyarrow: typed, the file's values) -> CSV -> JSON Lines -> a DuckDB table
    -> TREC text: the same lines, and evaluate() gives the same numbers on each."""
    steps = [("run.txt", "a.parquet"), ("a.parquet", "b.csv"), ("b.csv", "c.jsonl"), ("c.jsonl", "d.duckdb:run"),
             ("d.duckdb:run", "e.txt")]
    for source, target in steps:
        code, out, err = run_cli(capsys, "convert", "run", source, "-o", target, "--tag", "t")
        assert code == 0 and out == "", err
    table = pq.read_table("a.parquet")
    assert table.schema == pa.schema([("query_id", pa.string()), ("doc_id", pa.string()),
                                      ("rank_position", pa.int64()), ("score", pa.float64())])
    assert [tuple(r.values()) for r in table.to_pylist()] == [
        ("q1", "d1", 2, 1.0), ("q1", "d2", 1, 2.0), ("q2", "d3", 1, 1.0)]
    assert sorted((files / "e.txt").read_text().splitlines()) == sorted(
        line.replace(" 2.0 ", " 2 ").replace(" 1.0 ", " 1 ") for line in RUN.splitlines())
    for path in ["a.parquet", "b.csv", "c.jsonl", "d.duckdb:run", "e.txt"]:
        assert _per_query(sqlmetrics.evaluate("qrels.txt", path, MEASURES)) == BY_HAND


def test_convert_qrels_and_ranks_in_trec_eval_order(files, capsys):
    code, out, err = run_cli(capsys, "convert", "qrels", "qrels.txt", "-o", "q.tsv")
    assert code == 0, err
    with open("q.tsv", newline="") as f:
        assert [tuple(r.values()) for r in csv.DictReader(f, delimiter="\t")] == [
            ("q1", "d1", "1"), ("q1", "d2", "0"), ("q2", "d3", "1")]
    # no rank column: TREC text ranks by score descending, equal scores by document id descending
    (files / "s.csv").write_text("query_id,doc_id,score\nq1,a,1.5\nq1,b,1.5\nq1,c,3\n")
    code, out, err = run_cli(capsys, "convert", "run", "s.csv", "--tag", "x")
    assert code == 0 and out == "q1 Q0 c 1 3 x\nq1 Q0 b 2 1.5 x\nq1 Q0 a 3 1.5 x\n", err


def test_convert_reads_standard_input(files, capsys, monkeypatch):
    """`convert KIND - ...`: the run or qrels piped in, its format told by its first bytes, as eval's '-'."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RUN.encode())))
    code, out, err = run_cli(capsys, "convert", "run", "-", "-o", "piped.parquet")
    assert code == 0 and out == "", err
    assert [tuple(r.values()) for r in pq.read_table("piped.parquet").to_pylist()] == [
        ("q1", "d1", 2, 1.0), ("q1", "d2", 1, 2.0), ("q2", "d3", 1, 1.0)]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"query_id,doc_id,relevance\nq1,d1,1\nq2,d3,2\n")))
    code, out, err = run_cli(capsys, "convert", "qrels", "-")
    assert code == 0 and out == "q1 0 d1 1\nq2 0 d3 2\n", err
    # the run's own tag, read from the piped lines
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(RUN.encode())))
    assert run_cli(capsys, "convert", "run", "-")[1].splitlines()[0] == "q1 Q0 d2 1 2 t"
    # a bad line is named as standard input's, never as the spooled file's
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n")))
    code, out, err = run_cli(capsys, "convert", "run", "-", "-o", "bad.parquet")
    assert code == 2 and "<stdin>, line 2" in err and "stdin-" not in err, err
    assert not (files / "bad.parquet").exists()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, out, err = run_cli(capsys, "convert", "qrels", "-")
    assert code == 2 and "the qrels '-' (standard input) is empty" in err, err


def test_convert_writes_scores_exactly_and_refuses_ids_trec_text_cannot_hold(files, capsys):
    """Every score comes back as the same double (shortest round-trip text; a whole number without '.0', as
    trec_eval's own files); an id or tag with whitespace would split its line, so it is refused, naming it."""
    scores = [0.1, 1e-07, 2.0, -3.0, 1e20, 1 / 3, 0.30000000000000004, 123456789.123, 2.5e-310, 1.7976931348623157e308]
    rows = "".join(f"q1,d{i},{score!r}\n" for i, score in enumerate(scores))
    (files / "s.csv").write_text("query_id,doc_id,score\n" + rows)
    code, out, err = run_cli(capsys, "convert", "run", "s.csv", "-o", "s.txt", "--tag", "t")
    assert code == 0, err
    lines = [line.split(" ") for line in (files / "s.txt").read_text().splitlines()]
    assert {fields[2]: float(fields[4]) for fields in lines} == {f"d{i}": score for i, score in enumerate(scores)}
    assert {fields[2]: fields[4] for fields in lines}["d2"] == "2" and all(len(fields) == 6 for fields in lines)
    for doc in ["d 1", "d\t1"]:
        (files / "spaced.csv").write_text(f"query_id,doc_id,score\nq1,d0,1\nq1,\"{doc}\",2\n")
        (files / "out.txt").write_text("previous")
        code, out, err = run_cli(capsys, "convert", "run", "spaced.csv", "-o", "out.txt")
        assert code == 2 and f"TREC text cannot hold the id {doc!r}" in err, err
        assert (files / "out.txt").read_text() == "previous" and leftovers(files) == []
    code, out, err = run_cli(capsys, "convert", "run", "s.csv", "--tag", "my run")
    assert code == 2 and out == "" and "--tag 'my run'" in err, err


@pytest.mark.parametrize("argv, message", [
    (["run", "bad.txt", "-o", "out.parquet"], "line 2"),
    (["run", "run.txt", "-f", "parquet"], "-f parquet is not text for a terminal"),
    (["run", "run.txt", "-f", "csv"], "-f csv: give the file to write, -o FILE"),
    (["run", "run.txt", "-o", "out.md"], "markdown cannot be written here"),
    (["run", "run.txt", "-o", "out.parquet", "--into-mode", "merge"], "--into-mode merge says how to write into a"),
])
def test_convert_refusals_leave_the_previous_file(files, capsys, argv, message):
    (files / "bad.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n")
    (files / "out.parquet").write_bytes(b"previous")
    code, out, err = run_cli(capsys, "convert", *argv)
    assert code == 2 and out == "" and message in err, err
    assert (files / "out.parquet").read_bytes() == b"previous" and leftovers(files) == []


# ---------------------------------------------------------------------------------------------- sql --dbt

SOURCE, REF = "{{ source('raw', 'qrels') }}", "{{ ref('stg_run') }}"


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_sql_dbt_keeps_references_and_drops_the_semicolon(capsys, dialect):
    code, out, err = run_cli(capsys, "sql", "-m", "AP,nDCG@10", "--dialect", dialect, "--dbt", "--qrels", SOURCE,
                             "--run", REF)
    assert code == 0, err
    assert f"FROM {SOURCE}" in out and f"FROM {REF}" in out
    assert "sqlmetrics_dbt" not in out.lower() and not out.rstrip().endswith(";")


@pytest.mark.parametrize("extra, message", [
    (["--group-by", "day"], "--incremental COLUMN makes a dbt model incremental: give --dbt too"),
    (["--dbt", "--group-by", "arm"], "--incremental day: the model's rows are keyed by the --group-by segments; "
                                     "add --group-by day"),
    (["--dbt", "--group-by", "day", "--compare", "welch", "--column", "run_name=arm"],
     "--compare's statistics are over every row"),
    # dbt-postgres' merge would paste it as "my "mkt"": the model's second build fails
    (["--dbt", "--group-by", "day", "--group-by", 'my "mkt"', "--dialect", "postgres"],
     "--group-by my \"mkt\": dbt's incremental merge on postgres pastes a column's name between quotes"),
    (["--dbt", "--group-by", "day", "--group-by", "a`b", "--dialect", "bigquery"], "--group-by a`b: dbt's"),
    (["--dbt", "--group-by", "day", "--group-by", "SQLMETRICS_KEY"],
     "--group-by sqlmetrics_key: the incremental model adds a column of that name"),
])
def test_sql_incremental_refusals(capsys, extra, message):
    code, out, err = run_cli(capsys, "sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--run", REF,
                             "--incremental", "day", *extra)
    assert code == 2 and message in err and not out


def test_sql_incremental_needs_a_reference_and_keys_by_one_column(capsys):
    code, out, err = run_cli(capsys, "sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--run", "logs",
                             "--group-by", "day", "--dbt", "--incremental", "day")
    assert code == 2 and "--run 'logs' must be a dbt reference" in err
    code, out, err = run_cli(capsys, "sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--run", REF,
                             "--group-by", "day", "--group-by", "market", "--column", "run_name=arm", "-q", "--dbt",
                             "--incremental", "day", "--dialect", "oracle")
    assert code == 0, err
    # one key column, a plain name (dbt pastes unique_key unquoted and compares it with =, never true for NULL)
    assert out.startswith("{{ config(materialized='incremental', unique_key='sqlmetrics_key', "
                          "incremental_strategy='merge') }}\n")
    assert "one row per run_name and day and market and query_id: run_name, day, market, query_id, rr, " \
           "sqlmetrics_key\n" in out
    # the rows from the table's last day on, and those without a day; Oracle takes no AS before a table's alias
    assert (f"FROM (SELECT * FROM {REF}{{% if is_incremental() %}} WHERE day IS NULL OR day >= COALESCE((SELECT "
            "MAX(day) FROM {{ this }}), day){% endif %}) sqlm_run") in out
    # a segment named in quotes is the name inside them: the table's column has no quote
    code, out, err = run_cli(capsys, "sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--run", REF,
                             "--group-by", '"Day"', "--dbt", "--incremental", '"Day"', "--dialect", "postgres")
    assert code == 0 and 'WHERE "Day" IS NULL OR "Day" >= ' in out, err


def test_sql_dbt_compiles_to_the_evaluation(files, capsys):
    """What dbt does with the model (each reference replaced by its table), run on DuckDB: evaluate()'s means."""
    code, out, err = run_cli(capsys, "sql", "-m", "AP,P@1", "--dbt", "--qrels", SOURCE, "--run", REF)
    assert code == 0, err
    con = duckdb.connect()
    con.execute("CREATE SCHEMA raw")
    con.execute("CREATE TABLE raw.qrels (query_id VARCHAR, doc_id VARCHAR, relevance INTEGER)")
    con.executemany("INSERT INTO raw.qrels VALUES (?, ?, ?)", [[f[0], f[2], int(f[3])] for f in map(str.split, QRELS.splitlines())])
    con.execute("CREATE TABLE stg_run (query_id VARCHAR, doc_id VARCHAR, score DOUBLE)")
    con.executemany("INSERT INTO stg_run VALUES (?, ?, ?)", [[f[0], f[2], float(f[4])] for f in map(str.split, RUN.splitlines())])
    compiled = out.replace(SOURCE, "raw.qrels").replace(REF, "stg_run")
    assert con.execute(compiled).fetchall() == [(0.75, 0.5)]  # by hand: the means of BY_HAND


class _Ran(Exception):
    pass


def _compile_as_dbt(model: str) -> str:
    """The model as dbt's Jinja compiles it: each reference a table name; any other call would run something."""
    def ran(*args, **kwargs):
        raise _Ran(args)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"], keep_trailing_newline=True)
    return env.from_string(model).render(source=lambda s, t: f"{s}_{t}", ref=lambda *a, **k: a[-1], run_query=ran,
                                         var=ran, env_var=ran, log=ran, adapter=ran)


# What a user types that Jinja would run, or change, if the model carried it as it is: in a column name, a
# segment, a literal of --relevance, a comment (the header names them all).
INJECTIONS = [
    ["--column", "query_id={{ run_query('DROP TABLE t') }}"],
    ["--column", "doc_id={# hidden #}"],
    ["--group-by", "{% do run_query('DROP TABLE t') %}"],
    ["--relevance", "CASE WHEN score = '{{ 7*7 }}' THEN 1 ELSE 0 END", "--qrels", "none"],
    ["--column", "run_name={%- raw -%}x"],
]


@pytest.mark.parametrize("extra", INJECTIONS, ids=range(len(INJECTIONS)))
@pytest.mark.parametrize("dialect", ["duckdb", "bigquery", "tsql"])
def test_sql_dbt_carries_no_jinja_but_the_references(capsys, extra, dialect):
    qrels_ref = [] if "--qrels" in extra else ["--qrels", SOURCE]
    code, model, err = run_cli(capsys, "sql", "-m", "RR", "--dialect", dialect, "--dbt", *qrels_ref, "--run", REF, *extra)
    assert code == 0, err
    qrels_plain = [] if "--qrels" in extra else ["--qrels", "raw_qrels"]
    code, plain, err = run_cli(capsys, "sql", "-m", "RR", "--dialect", dialect, *qrels_plain, "--run", "stg_run", *extra)
    assert code == 0, err
    assert _compile_as_dbt(model) == plain.rstrip().removesuffix(";") + "\n"


def test_sql_dbt_fusion_keeps_references_and_carries_no_jinja(capsys):
    code, model, err = run_cli(capsys, "sql", "--dbt", "--fuse", "rrf", "--fuse-run", REF, "--fuse-run",
                               "{% do run_query('x') %}")
    assert code == 2 and "other Jinja is not kept" in err and model == ""
    code, model, err = run_cli(capsys, "sql", "--dbt", "--fuse", "rrf", "--fuse-run", REF, "--fuse-run", SOURCE)
    assert code == 0, err
    code, plain, err = run_cli(capsys, "sql", "--fuse", "rrf", "--fuse-run", "stg_run", "--fuse-run", "raw_qrels")
    assert _compile_as_dbt(model) == plain.rstrip().removesuffix(";") + "\n"


@pytest.mark.parametrize("argv, message", [
    (["--run", REF], "is a dbt reference: add --dbt"),
    (["--dbt", "--into", "t"], "dbt writes a model's table itself"),
    (["--dbt", "--run", "{{ ref('a') }}{% do run_query('x') %}{{ ref('b') }}"], "other Jinja is not kept"),
    (["--dbt", "--run", "{{ ref(var('x')) }}"], "other Jinja is not kept"),
])
def test_sql_dbt_refusals(capsys, argv, message):
    code, out, err = run_cli(capsys, "sql", "-m", "AP", *argv)
    assert code == 2 and message in err and out == ""


def test_html_tables_read_back(files, capsys):
    """.html: a table the standard library's parser reads back to the same cells as the text table."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.inside = [], False

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([])
            if tag in ("td", "th"):
                self.inside = True
                self.rows[-1].append("")

        def handle_data(self, data):
            if self.inside:
                self.rows[-1][-1] += data

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.inside = False

    (files / "other.txt").write_text(OTHER)
    assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP,P@1", "-o", "e.html")[0] == 0
    parser = Cells()
    parser.feed((files / "e.html").read_text())
    assert parser.rows == [["measure", "run"], ["AP", "0.7500"], ["P@1", "0.5000"]]
    assert run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP", "-o", "c.html")[0] == 0
    parser = Cells()
    parser.feed((files / "c.html").read_text())
    assert parser.rows == [["", "run", "AP"], ["a", "run", "0.7500"], ["b", "other", "1.0000"]]


def test_compare_per_query_deltas(files, capsys):
    (files / "other.txt").write_text(OTHER)
    code, out, err = run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-m", "AP,P@1", "-q",
                             "-o", "deltas.parquet")
    assert code == 0, err
    table = pq.read_table("deltas.parquet")
    assert table.schema.field("query_id").type == pa.string() and table.schema.field("difference").type == pa.float64()
    # by hand: other scores 1 everywhere; run as BY_HAND
    assert sorted(tuple(r.values()) for r in table.to_pylist()) == sorted(
        (m, "other", "run", q, 1.0, BY_HAND[q][m], 1.0 - BY_HAND[q][m]) for q in BY_HAND for m in MEASURES)
    code, out, err = run_cli(capsys, "compare", "qrels.txt", "run.txt", "other.txt", "-q")
    assert code == 2 and "-q/--per-query writes rows" in err


class _FailingWrites:
    """A DuckDB connection whose table writes fail, as a full disk would make them."""

    def __init__(self, con):
        self.con = con

    def __getattr__(self, name):
        return getattr(self.con, name)

    def execute(self, sql, *args):
        if sql.startswith(("CREATE OR REPLACE TABLE", "INSERT INTO")):
            raise duckdb.IOException("No space left on device")
        return self.con.execute(sql, *args)


@pytest.mark.parametrize("existing", [False, True])
def test_a_failing_duckdb_write_leaves_nothing_new(files, monkeypatch, existing):
    from sqlmetrics.local import output

    if existing:
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output="res.duckdb:res")
    real = duckdb.connect
    monkeypatch.setattr(output.duckdb, "connect", lambda *a, **k: _FailingWrites(real(*a, **k)))
    table = pa.table({"query_id": ["q9"], "AP": [0.25]})
    with pytest.raises(SqlmetricsError, match="was not written .No space left on device.; it is as it was"):
        output.write_table(table, "res.duckdb:res", "duckdb", "output", "append", ("query_id",))
    monkeypatch.setattr(output.duckdb, "connect", real)
    if existing:
        assert _table("res.duckdb")[1] == [("q1", 0.5), ("q2", 1.0)]
    else:  # the file did not exist: none is left behind
        assert sorted(p.name for p in files.iterdir()) == ["qrels.txt", "run.txt"]


def test_cli_a_name_without_extension_takes_f(files, capsys):
    assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", "-o", "out", "-f", "csv")[0] == 0
    assert (files / "out").read_text() == "run,query_id,AP\nrun,,0.75\n"
    assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", "-o", "plain")[0] == 0
    table = (files / "plain").read_text().splitlines()  # the default: table, and its footer
    assert table[0].split() + table[1].split() == ["measure", "run", "AP", "0.7500"] and table[2].startswith("Means")


def test_python_output_with_an_engine(files):
    """output= writes what an engine computed the same way (sqlite3 here)."""
    import sqlite3

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE qrels (query_id TEXT, doc_id TEXT, relevance INTEGER)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", [(f[0], f[2], int(f[3])) for f in map(str.split, QRELS.splitlines())])
    con.execute("CREATE TABLE run (query_id TEXT, doc_id TEXT, score REAL)")
    con.executemany("INSERT INTO run VALUES (?, ?, ?)", [(f[0], f[2], float(f[4])) for f in map(str.split, RUN.splitlines())])
    sqlmetrics.evaluate("qrels", "run", MEASURES, engine=con, output="eng.parquet")
    assert {r["query_id"]: {m: r[m] for m in MEASURES} for r in pq.read_table("eng.parquet").to_pylist()} == BY_HAND
    sqlmetrics.evaluate("qrels", "run", ["AP"], engine=con, output="eng.duckdb:res", into_mode="replace")
    assert _table("eng.duckdb")[1] == [("q1", 0.5), ("q2", 1.0)]


def test_a_sqlite_file_named_duckdb_is_refused_and_nothing_is_fetched(files, capsys, monkeypatch):
    """DuckDB opens a SQLite file through its sqlite extension, which by default it downloads into
    ~/.duckdb/extensions: no connection of the package installs or loads an extension."""
    monkeypatch.setenv("HOME", str(files / "home"))
    (files / "home").mkdir()
    with sqlite3.connect(files / "lite.duckdb") as con:
        con.execute("CREATE TABLE kept (a INTEGER)")
    before = (files / "lite.duckdb").read_bytes()
    for argv in (["eval", "qrels.txt", "run.txt", "-m", "AP", "-o", "lite.duckdb:t"],
                 ["compare", "qrels.txt", "run.txt", "run.txt", "-m", "AP", "-o", "lite.duckdb:t"],
                 ["fuse", "run.txt", "run.txt", "--method", "rrf", "-o", "lite.duckdb:t"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and "is a SQLite database, not a DuckDB one" in err, err
    with pytest.raises(SqlmetricsError, match="is a SQLite database"):
        sqlmetrics.evaluate(files / "qrels.txt", files / "run.txt", ["AP"], output=str(files / "lite.duckdb") + ":t")
    assert list((files / "home").iterdir()) == [] and (files / "lite.duckdb").read_bytes() == before


class _CommitThenSignal:
    """A DuckDB connection whose COMMIT goes through, after which Ctrl-C (or SIGTERM) lands."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args):
        result = self._con.execute(sql, *args)
        if sql == "COMMIT":
            raise KeyboardInterrupt
        return result

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_an_interrupt_after_the_commit_finishes_the_append(files, capsys, monkeypatch):
    """--into-mode append interrupted just after its COMMIT exited 130 "interrupted" with the rows appended: a
    script retrying appended them twice. After the commit the work is done: exit 0, the rows once."""
    from sqlmetrics import embedded
    from sqlmetrics.local import output as local_output
    assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", "-q", "-o", "res.duckdb:res")[0] == 0
    connect = embedded.connect
    monkeypatch.setattr(local_output.embedded, "connect", lambda *a, **k: _CommitThenSignal(connect(*a, **k)))
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "AP", "-q", "-o", "res.duckdb:res",
                             "--into-mode", "append")
    monkeypatch.undo()
    assert code == 0 and err == "", err
    with duckdb.connect(str(files / "res.duckdb"), read_only=True) as con:
        assert con.execute("SELECT COUNT(*) FROM res").fetchall()[0][0] == 2 * 3  # 2 queries + the mean, twice
