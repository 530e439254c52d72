"""The text-file readers (TREC, CSV, TSV, JSON Lines, JSON, gzip and zstd): every bad or unusual file gives
the right number or one clear error naming the file and the line (issue 13). Each number is computed by
hand in the comment beside it."""
import gzip
import json
import re
import warnings

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

QRELS = "q1 0 d1 1\nq1 0 d2 1\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d3 2 2.0 t\nq1 Q0 d2 3 1.0 t\n"  # P@1 = 1, P@3 = 2/3


def write(folder, name, data):
    path = folder / name
    (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)
    return path


def aggregate(qrels, run, measures, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        return sqlmetrics.evaluate(qrels, run, measures, **kw).aggregate


def refused(qrels, run, pattern, **kw):
    with pytest.raises(SqlmetricsError) as info:
        aggregate(qrels, run, ["P@1"], **kw)
    message = str(info.value)
    assert re.search(pattern, message), message
    assert "\n" not in message and "Error:" not in message, message  # one line, not DuckDB's message
    return message


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


# ------------------------------------------------------------------------------------ 1, 2, 3: JSON


def test_json_ids_are_text_as_written(tmp_path):
    """`1.50` written as a JSON number is the id "1.50" (DuckDB's reader made it the double 1.5, so P@1
    was 0); `0.1` is not `0.10`, `7` is not `007`, `1e3` is "1e3"."""
    qrels = write(tmp_path, "q.jsonl", jsonl([{"query_id": "1", "doc_id": d, "relevance": 1}
                                              for d in ("1.50", "007", "0.10", "1e3")]))
    # Written by hand: the numbers must reach the file with their own spelling.
    run = write(tmp_path, "r.jsonl", '{"query_id": 1, "doc_id": 1.50, "score": 4}\n'
                                     '{"query_id": 1, "doc_id": 7, "score": 3}\n'
                                     '{"query_id": 1, "doc_id": 0.1, "score": 2}\n'
                                     '{"query_id": 1, "doc_id": 1e3, "score": 1.0}\n')
    # d 1.50 (judged), 7 (not 007), 0.1 (not 0.10), 1e3 (judged): P@1 = 1, P@4 = 2/4, RR = 1
    assert aggregate(qrels, run, ["P@1", "P@4"]) == {"P@1": 1.0, "P@4": 0.5}
    as_array = write(tmp_path, "r.json", "[" + run.read_text().strip().replace("\n", ",\n") + "]\n")
    assert aggregate(qrels, as_array, ["P@1", "P@4"]) == {"P@1": 1.0, "P@4": 0.5}


def test_json_number_ids_with_escapes_or_nested_keys(tmp_path):
    """A line with a backslash, or a key written again in a nested object, takes the slower way (every
    number quoted): the id is still the top-level one, as written."""
    qrels = write(tmp_path, "q.jsonl", jsonl([{"query_id": "q1", "doc_id": "1.50", "relevance": 1}]))
    run = write(tmp_path, "r.jsonl",
                '{"query_id": "q1", "meta": {"doc_id": 1.5}, "doc_id": 1.50, "score": 2}\n'
                '{"query_id": "q1", "title": "a \\"quoted\\" \\\\ 9", "doc_id": 1.5, "score": 1}\n')
    # 1.50 first and judged: P@1 = 1; 1.5 is another document: P@2 = 1/2
    assert aggregate(qrels, run, ["P@1", "P@2"]) == {"P@1": 1.0, "P@2": 0.5}


def test_a_json_array_file_is_read(tmp_path):
    """A .json holding one array of objects once failed with "no column for 'query_id'"."""
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "run.json", json.dumps([{"query_id": "q1", "doc_id": d, "score": s}
                                                  for d, s in (("d3", 2.0), ("d1", 1.0))], indent=2))
    assert aggregate(qrels, run, ["P@1", "RR"]) == {"P@1": 0.0, "RR": 0.5}  # d3 (unjudged), then d1
    bad = write(tmp_path, "bad.json", '[{"query_id": "q1", "doc_id": "d1", "score": 1}, 5]')
    refused(qrels, bad, r"bad\.json', object 2: not a JSON object: '5'")


def test_json_types_may_change_after_duckdbs_sample(tmp_path):
    """DuckDB guesses JSON types from the first 20,480 lines; a later value of another type once failed
    the whole read with a traceback."""
    qrels = write(tmp_path, "q.txt", "q1 0 x 1\n")
    rows = [{"query_id": "q1", "doc_id": i, "score": 1 + i} for i in range(25_000)]
    rows.append({"query_id": "q1", "doc_id": "x", "score": 10 ** 6})
    run = write(tmp_path, "r.jsonl", jsonl(rows))
    assert aggregate(qrels, run, ["P@1", "NumRet"]) == {"P@1": 1.0, "NumRet": 25_001.0}  # x has the top score
    rows[-1]["score"] = "high"
    run = write(tmp_path, "r2.jsonl", jsonl(rows))
    refused(qrels, run, r"r2\.jsonl', line 25001: column 'score' holds 'high', which is not a finite number")


def test_json_lines_that_are_not_objects(tmp_path):
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "r.jsonl", '{"query_id": "q1", "doc_id": "d1", "score": 1}\n\n{"query_id": "q1", "doc_')
    refused(qrels, run, r"r\.jsonl', line 3: not a JSON object: '\{\"query_id\": \"q1\", \"doc_'")
    twice = write(tmp_path, "t.jsonl", '{"query_id": "q1", "doc_id": "d1", "score": 1, "score": 2}\n')
    refused(qrels, twice, r"t\.jsonl', line 1: the key 'score' is written twice")


# ------------------------------------------------------------------------------------ 4: not UTF-8

LATIN1 = {
    "trec run (fast path)": ("run.txt", b"q1 Q0 d1 1 3.0 t\nq1 Q0 d3 2 2.0 t\nq1 Q0 d\xe92 3 1.0 t\n", 3, 41),
    "trec run (general path)": ("run.txt", b"q1 Q0 d1 1 3.0 t\nq1\tQ0 d3 2 2.0 t\nq1 Q0 d\xe92 3 1.0 t\n", 3, 41),
    "csv": ("run.csv", b"query_id,doc_id,score\nq1,d1,1\nq1,d\xe92,2\n", 3, 34),
    "tsv": ("run.tsv", b"query_id\tdoc_id\tscore\nq1\td1\t1\nq1\td\xe92\t2\n", 3, 34),
    "jsonl": ("run.jsonl", b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d\xe9"}\n',
              2, 78),
    "gzip'd trec": ("run.txt.gz", gzip.compress(b"q1 Q0 d1 1 3.0 t\nq1 Q0 d\xe92 3 1.0 t\n"), 2, 24),
}


@pytest.mark.parametrize("case", sorted(LATIN1))
def test_bytes_that_are_not_utf8(tmp_path, case, cli):
    name, data, line, byte = LATIN1[case]
    qrels, run = write(tmp_path, "q.txt", QRELS), write(tmp_path, name, data)
    refused(qrels, run, rf"{re.escape(name)}', line {line}, byte {byte}: not UTF-8; re-encode the file as UTF-8 "
                        r"\(e\.g\. iconv -f latin1 -t utf-8\)")
    code, out, err = cli("eval", "q.txt", name, "-m", "P@1")
    assert code == 2 and f"line {line}, byte {byte}: not UTF-8" in err and err.count("\n") == 1


def test_a_nul_byte_is_named(tmp_path):
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "run.txt", b"q1 Q0 d1 1 3.0 t\nq1 Q0 d\x002 3 1.0 t\n")
    refused(qrels, run, r"run\.txt', line 2, byte 24: a NUL byte \(0x00\)")


# ------------------------------------------------------------------------------------ 5: compression


def test_gzip_is_found_by_its_first_bytes(tmp_path):
    """gzip data without .gz is read as gzip; a .gz file of plain text is read as plain text."""
    qrels = write(tmp_path, "q", gzip.compress(QRELS.encode()))
    run = write(tmp_path, "run.txt", gzip.compress(RUN.encode()))
    assert aggregate(qrels, run, ["P@1", "P@3"]) == {"P@1": 1.0, "P@3": pytest.approx(2 / 3, abs=1e-15)}
    plain = write(tmp_path, "plain.txt.gz", RUN)
    assert aggregate(qrels, plain, ["P@1", "P@3"]) == {"P@1": 1.0, "P@3": pytest.approx(2 / 3, abs=1e-15)}
    csv = write(tmp_path, "run.csv", gzip.compress(b"query_id,doc_id,score\nq1,d3,2\nq1,d2,1\n"))
    assert aggregate(qrels, csv, ["P@1", "P@2"]) == {"P@1": 0.0, "P@2": 0.5}  # d3 unjudged, d2 judged
    jl = write(tmp_path, "run.jsonl.gz", gzip.compress(jsonl([{"query_id": "q1", "doc_id": "d2", "score": 1}]).encode()))
    assert aggregate(qrels, jl, ["P@1"]) == {"P@1": 1.0}


def test_the_run_tag_of_gzip_data_without_gz(tmp_path, cli):
    """trec_eval's runid line shows the run's tag, read from gzip data whatever the file's name."""
    write(tmp_path, "q.txt", QRELS)
    write(tmp_path, "run.txt", gzip.compress(RUN.replace(" t\n", " mytag\n").encode()))
    code, out, err = cli("eval", "q.txt", "run.txt", "-m", "P@1", "-f", "trec")
    assert code == 0 and out.split("\n")[0].split() == ["runid", "all", "mytag"], err


def test_a_truncated_gzip_file(tmp_path, cli):
    write(tmp_path, "q.txt", QRELS)
    data = gzip.compress(("".join(f"q1 Q0 d{i} {i} {1 / i} t\n" for i in range(1, 5000))).encode())
    write(tmp_path, "run.gz", data[: len(data) // 2])
    code, out, err = cli("eval", "q.txt", "run.gz", "-m", "P@1")
    assert code == 2 and "run.gz': truncated or damaged gzip data after line" in err
    assert "Compress the file again (gzip -t tests it), or fetch it again." in err


def test_zstd_is_found_by_its_first_bytes(tmp_path):
    qrels = write(tmp_path, "q.txt", QRELS)
    run = tmp_path / "run.txt"  # zstd data without .zst, compressed by DuckDB (no zstd command needed)
    duckdb.execute(f"COPY (SELECT unnest({RUN.splitlines()!r}) AS line) TO '{run}' "
                   "(FORMAT csv, HEADER false, QUOTE '', ESCAPE '', COMPRESSION zstd)")
    assert run.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert aggregate(qrels, run, ["P@1", "P@3"]) == {"P@1": 1.0, "P@3": pytest.approx(2 / 3, abs=1e-15)}


# ------------------------------------------------------------------------------------ 6: long lines


@pytest.mark.parametrize("name", ["run.txt", "run.csv", "run.jsonl"])
def test_a_line_past_duckdbs_limit_is_read(tmp_path, name):
    """DuckDB's readers stop at lines of 2 MB; one such line (a 3 MB document id) is now read."""
    qrels = write(tmp_path, "q.txt", QRELS)
    long_id = "x" * (3 << 20)
    rows = [("q1", long_id, 3.0), ("q1", "d2", 2.0), ("q1", "d1", 1.0)]
    text = {"run.txt": "".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(rows, 1)),
            "run.csv": "query_id,doc_id,score\n" + "".join(f"{q},{d},{s}\n" for q, d, s in rows),
            "run.jsonl": jsonl([{"query_id": q, "doc_id": d, "score": s} for q, d, s in rows])}[name]
    run = write(tmp_path, name, text)
    assert aggregate(qrels, run, ["P@1", "P@3"]) == {"P@1": 0.0, "P@3": pytest.approx(2 / 3, abs=1e-15)}


# ------------------------------------------------------------------------------------ 7: control bytes


def test_a_unit_separator_inside_a_trec_field(tmp_path):
    """0x1F is no whitespace: part of the field, as for trec_eval. The line reader once split lines at
    0x1F (its delimiter), cutting `q1\\tQ0 d\\x1f2 ...` to `q1\\tQ0 d`: a malformed line."""
    qrels = write(tmp_path, "q.txt", "q1 0 d\x1f2 1\n")
    run = write(tmp_path, "r.txt", "q1\tQ0 d\x1f2 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")  # mixed whitespace: general path
    assert aggregate(qrels, run, ["P@1", "RR"]) == {"P@1": 1.0, "RR": 1.0}
    fast = write(tmp_path, "f.txt", "q1 Q0 d2 1 2.0 t\nq1 Q0 d\x1f2 2 1.0 t\n")
    assert aggregate(qrels, fast, ["P@1", "RR"]) == {"P@1": 0.0, "RR": 0.5}


# ------------------------------------------------------------------------------------ 8: 1_000


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_an_underscore_number_in_trec_fast_path(tmp_path, kind):
    """The fast path's TRY_CAST read `1_000` as 1000 (trec_eval's strtod stops at the `_`)."""
    qrels = write(tmp_path, "q.txt", QRELS if kind == "run" else "q1 0 d1 1\nq1 0 d2 1_0\n")
    run = write(tmp_path, "r.txt", RUN.replace("3.0", "1_000") if kind == "run" else RUN)
    line, column = (1, "score") if kind == "run" else (2, "relevance")
    value = "1_000" if kind == "run" else "1_0"
    refused(qrels, run, rf"line {line}: column '{column}' holds '{value}', which is not")


# ------------------------------------------------------------------------------------ 9: column guesses


@pytest.mark.parametrize("make", ["csv", "arrow"])
def test_two_columns_that_could_be_the_score(tmp_path, make):
    """`score` and `sim` both present: once the score role was skipped and the error said 'no column'."""
    qrels = write(tmp_path, "q.txt", QRELS)
    if make == "csv":
        run = write(tmp_path, "r.csv", "query_id,doc_id,score,sim\nq1,d1,1,2\nq1,d3,2,1\n")
    else:
        run = pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d3"], "score": [1.0, 2.0], "sim": [2.0, 1.0]})
    refused(qrels, run, r"several columns could be 'score' \(score, sim\); say which with columns=\{'score': \.\.\.\}")
    assert aggregate(qrels, run, ["P@1"], columns={"score": "sim"}) == {"P@1": 1.0}  # by sim: d1 first
    assert aggregate(qrels, run, ["P@1"], columns={"score": "score"}) == {"P@1": 0.0}  # by score: d3 first


def test_two_rank_columns_need_a_mapping(tmp_path):
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "r.csv", "query_id,doc_id,rank,position\nq1,d3,1,2\nq1,d1,2,1\n")
    refused(qrels, run, r"several columns could be 'rank_position' \(rank, position\)", ties="rank")
    assert aggregate(qrels, run, ["P@1"], ties="rank", columns={"rank_position": "position"}) == {"P@1": 1.0}


# ------------------------------------------------------------------------------------ other lines


def test_csv_lines_are_never_skipped(tmp_path):
    """DuckDB's CSV sniffer may take a later line for the header when the first lines look odd, silently
    dropping the lines above it: the header is line 1, always."""
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "r.csv", "query_id,doc_id,score\nq1,d1,1\nq1,d2,2,9\n")
    refused(qrels, run, r"r\.csv': cannot be read as CSV \(line 3: Expected Number of Columns: 3 Found: 4\)")
    run = write(tmp_path, "r.tsv", "query_id\tdoc_id\tscore\nq1\td1\t1\nq1\td2\n")
    refused(qrels, run, r"r\.tsv': cannot be read as TSV \(line 3: Expected Number of Columns: 3 Found: 2\)")


@pytest.mark.parametrize("text, line", [
    ("query_id,doc_id,score\n\nq1,d1,3\n\nq1,d2,x\n", 5),  # blank lines are no rows, but are lines
    ('query_id,doc_id,score\nq1,"d1\nstill d1",3\nq1,d2,x\n', 4),  # a quoted field spanning two lines
    ("\ufeffquery_id,doc_id,score\r\nq1,d1,3\r\nq1,d2,x\r\n", 3),  # byte-order mark, CRLF
])
def test_a_csv_error_names_the_line_an_editor_shows(tmp_path, text, line):
    qrels = write(tmp_path, "q.txt", QRELS)
    run = write(tmp_path, "r.csv", text.encode())
    refused(qrels, run, rf"r\.csv', line {line}: column 'score' holds 'x'")


def test_a_csv_header_names_each_column_once(tmp_path):
    qrels = write(tmp_path, "q.txt", QRELS)
    refused(qrels, write(tmp_path, "b.csv", "\nquery_id,doc_id,score\nq1,d1,3\n"), r"b\.csv': line 1 is empty")
    refused(qrels, write(tmp_path, "c.csv", "query_id,doc_id,doc_id\nq1,d1,3\n"),
            r"c\.csv', line 1: the header names the column 'doc_id' twice")
    # A quote inside an unquoted field is a character of the id (as the TREC qrels write it).
    qrels = write(tmp_path, "q2.txt", 'q1 0 d"1 1\nq1 0 d2 1\n')
    assert aggregate(qrels, write(tmp_path, "d.tsv", 'query_id\tdoc_id\tscore\nq1\td"1\t3\nq1\td3\t2\n'),
                     ["P@1", "P@2"]) == {"P@1": 1.0, "P@2": 0.5}


@pytest.mark.parametrize("kind", ["run score", "qrels grade", "log label"])
def test_a_nan_in_parquet_is_refused(tmp_path, kind):
    """Parquet's min/max statistics leave NaN out, and DuckDB folded isnan() to false from them: a NaN score
    was ranked (AP 0.8333 here) instead of refused."""
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    values = [float("nan"), 0.5, 0.2]
    if kind == "run score":
        pq.write_table(pa.table({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": values}), path)
        call = lambda: sqlmetrics.evaluate({"q1": {"d1": 1, "d3": 1}}, str(path), ["AP"])  # noqa: E731
        column = "score"
    elif kind == "qrels grade":
        pq.write_table(pa.table({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": values}), path)
        call = lambda: sqlmetrics.evaluate(str(path), {"q1": {"d1": 1.0}}, ["AP"])  # noqa: E731
        column = "relevance"
    else:
        pq.write_table(pa.table({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "position": [1, 2, 3],
                                 "lab": values}), path)
        call = lambda: sqlmetrics.evaluate(None, str(path), ["RR"], ties="rank", label="lab",  # noqa: E731
                                           columns={"rank_position": "position"})
        column = "lab"
    with pytest.raises(SqlmetricsError, match=rf"row 1: .*{column}.*(nan|not a finite number)"):
        call()
