"""Every output format takes every segment type (issue 42): a log whose segment columns hold a DATE, TIMESTAMP,
TIMESTAMPTZ, DECIMAL, BOOLEAN, INTEGER, HUGEINT and UBIGINT beyond 2^53, DOUBLE (with NaN and -inf), text (unicode,
empty) and NULL, through `eval`, `compare`, `decide` and `report` in each of their formats. Text formats show each
value as its text, JSON writes strict JSON (non-finite numbers as null, dates and times as ISO 8601 text, decimals
as their digits in text), typed formats (Parquet, a DuckDB table) keep the type and the value.

The values expected are the ones the log was built from and means counted by hand: in every segment, each arm
has three sessions (the same three ids: paired lists) of two documents; control's click is at position 1 in one
session of three (P@1 = 1/3), treatment's in two (P@1 = 2/3)."""
import argparse
import contextlib
import datetime
import decimal
import html
import io
import json
import math
import pathlib
import re

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics import compare, evaluate
from sqlmetrics.cli import main
from sqlmetrics.cli.main import build_parser
from sqlmetrics.local.output import arrow_column
from sqlmetrics.stats.html import build_report

NAN = math.nan
# column -> (DuckDB type, [value of segment 0, value of segment 1]); segment 2 is NULL in every column.
COLUMNS = {
    "day": ("DATE", [datetime.date(2024, 6, 1), datetime.date(2024, 6, 2)]),
    "stamp": ("TIMESTAMP", [datetime.datetime(2024, 6, 1, 12, 34, 56, 789000),
                            datetime.datetime(1999, 12, 31, 23, 59, 59)]),
    "stamp_tz": ("TIMESTAMPTZ", [datetime.datetime(2024, 6, 1, 10, 34, 56, tzinfo=datetime.timezone.utc),
                              datetime.datetime(2024, 6, 2, tzinfo=datetime.timezone.utc)]),
    "amount": ("DECIMAL(12,2)", [decimal.Decimal("1.50"), decimal.Decimal("12345678.99")]),
    "flag": ("BOOLEAN", [True, False]),
    "small": ("INTEGER", [7, -3]),
    "huge": ("HUGEINT", [2 ** 127 - 1, 2 ** 53 + 1]),  # 39 digits: past DECIMAL(38, 0)'s, in its 128 bits
    "ubig": ("UBIGINT", [2 ** 64 - 1, 2 ** 53 + 1]),
    "ratio": ("DOUBLE", [0.1, 1e300]),
    "odd": ("DOUBLE", [NAN, -math.inf]),
    "words": ("VARCHAR", ['é 😀 "q",x', ""]),
}
SEGS = list(COLUMNS)
SEGMENTS = [tuple(values[i] for _, values in COLUMNS.values()) for i in range(2)] + [(None,) * len(SEGS)]
MEANS = {"control": 1 / 3, "treatment": 2 / 3}
LOG_FLAGS = ["--column", "query_id=session", "--column", "doc_id=doc", "--column", "rank_position=position",
             "--column", "run_name=arm", "--label", "clicked", "--ties", "rank",
             *(f for c in SEGS for f in ("--group-by", c)), "-m", "P@1"]


def _literal(value, sql_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"CAST('{value}' AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return f"CAST('{value}' AS {sql_type})"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> str:
    """log.duckdb:log, the log of the module's docstring (a DuckDB table: Parquet has no HUGEINT)."""
    path = tmp_path_factory.mktemp("segments") / "log.duckdb"
    rows = []
    for segment in SEGMENTS:
        values = ", ".join(_literal(v, t) for v, (t, _) in zip(segment, COLUMNS.values()))
        for arm, clicked_first in (("control", {0}), ("treatment", {0, 1})):
            for s in range(3):
                for position in (1, 2):
                    clicked = int((position == 1) == (s in clicked_first))
                    rows.append(f"({values}, '{arm}', 's{s}', 'd{position}', {position}, {clicked})")
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE log AS SELECT * FROM (VALUES {', '.join(rows)}) "
                f"t({', '.join(SEGS)}, arm, session, doc, position, clicked)")
    con.close()
    return f"{path}:log"


def cli(capsys, *argv) -> str:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, which are not JSON."""
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


# A HUGEINT read from a DuckDB file reaches the results as a DECIMAL(38, 0) (DuckDB's Arrow export of it), and is
# written as a decimal is.
AS_DECIMAL = {"huge"}


def as_json(value, column: str):
    """What the package's JSON holds for a segment value: null for NULL and a non-finite number, ISO text for a
    date or time, a decimal's digits as text, the value itself otherwise."""
    if column in AS_DECIMAL and value is not None:
        return str(value)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def json_segments(records: list) -> set:
    return {tuple(r[c] for c in SEGS) for r in records}


EXPECTED_JSON = {tuple(as_json(v, c) for v, c in zip(seg, SEGS)) for seg in SEGMENTS}


# ---------------------------------------------------------------------------------------------- the reported case

def test_compare_json_takes_typed_segments(log, capsys):
    """`compare ... --group-by day --baseline A -f json` exited 1 with "Object of type date is not JSON serializable".
    Its report is strict JSON, each segment written as json_value() says, the means those counted by hand."""
    report = strict_json(cli(capsys, "compare", "none", log, *LOG_FLAGS, "--baseline", "control", "-f", "json"))
    assert json_segments([s["segment"] for s in report["segments"]]) == EXPECTED_JSON
    for s in report["segments"]:
        assert s["means"]["P@1"] == pytest.approx(MEANS[s["run"]])
    assert len(report["comparisons"]) == 3  # one per segment: the NaN segment is one


# ---------------------------------------------------------------------------------------------- format x type

def finite_only(segment: tuple) -> tuple:
    """A segment as JSON can hold it: a NaN or an infinity is null."""
    return tuple(None if isinstance(v, float) and not math.isfinite(v) else v for v in segment)


def identity(value):
    return value


def check_segments(rows: list, parse: dict, segments=SEGMENTS, per_run=2, means=True) -> None:
    """Each segment's values back from `rows` ({column: the value as the file has it}, `parse` turning it back
    into the column's value), `per_run` rows each; with `means`, each row's mean (P@1, or a pair's run_mean) the
    hand-counted one of its run."""
    got = []
    for r in rows:
        got.append(tuple(None if r[c] is None else parse.get(c, identity)(r[c]) for c in SEGS))
        if not means:
            continue
        if "P@1" in r:
            assert float(r["P@1"]) == pytest.approx(MEANS[r["run"]]), r
        else:  # a pair of runs
            assert [float(r["run_mean"]), float(r["baseline_mean"])] == pytest.approx(
                [MEANS[r["run"]], MEANS[r["baseline"]]]), r
    assert len(got) == len(segments) * per_run
    for want in segments:
        assert sum(all(same(g, w) for g, w in zip(values, want)) for values in got) == per_run, (want, got)


def same(got, want) -> bool:
    """The value back is the value in: the same type (a HUGEINT may come back as DECIMAL(38, 0), which it is in
    the results), the same value, NaN as NaN."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, int) and not isinstance(want, bool) and isinstance(got, decimal.Decimal):
        return got == want
    return type(got) is type(want) and got == want


# Text back to a column's value (CSV, TSV; and JSON's text values: dates and times in ISO 8601, decimals).
FROM_TEXT = {"day": datetime.date.fromisoformat, "stamp": datetime.datetime.fromisoformat,
             "stamp_tz": datetime.datetime.fromisoformat, "amount": decimal.Decimal,
             "flag": {"true": True, "false": False}.__getitem__, "small": int, "huge": int, "ubig": int,
             "ratio": float, "odd": float, "words": str}
FROM_JSON = {c: FROM_TEXT[c] for c in ("day", "stamp", "stamp_tz", "amount", "huge")}


def json_rows(text: str, lines: bool) -> list:
    if lines:
        return [strict_json(line) for line in text.splitlines()]
    data = strict_json(text)
    if isinstance(data, dict):  # compare's and decide's report: one row per segment and run
        return [{**s["segment"], "run": s["run"], "P@1": s["means"]["P@1"]} for s in data["segments"]]
    return data


def csv_rows(path, delimiter: str) -> list:
    """Read by DuckDB, which tells an empty field (NULL) from a quoted empty one ('')."""
    rel = duckdb.read_csv(str(path), all_varchar=True, delimiter=delimiter, header=True, quotechar='"',
                          allow_quoted_nulls=False)
    return [dict(zip(rel.columns, row)) for row in rel.fetchall()]


# The DuckDB type of each column in a typed file: the log's own (a HUGEINT, read from a DuckDB file, is a
# DECIMAL(38, 0) in the results); compare's rows have the Python values' types, of the same kind.
TYPES = {"day": "DATE", "stamp": "TIMESTAMP", "stamp_tz": "TIMESTAMP WITH TIME ZONE", "amount": "DECIMAL",
         "flag": "BOOLEAN", "small": "INT", "huge": "DECIMAL", "ubig": "UBIGINT", "ratio": "DOUBLE",
         "odd": "DOUBLE", "words": "VARCHAR"}


def typed_rows(target: str) -> list:
    con = duckdb.connect()
    if target.endswith(".parquet"):
        source = f"read_parquet('{target}')"
    else:
        con.execute(f"ATTACH '{target.rsplit(':', 1)[0]}' AS out (READ_ONLY)")
        source = "out.res"
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})").fetchall())
    for c in SEGS:
        assert types[c].startswith(TYPES[c]) or TYPES[c] == "INT" and types[c].endswith("INT"), (c, types[c])
    rel = con.sql(f"SELECT * FROM {source}")
    rows = [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    con.close()
    return rows


def check_text(text: str, fmt: str) -> None:
    """Each segment value shown as its text: a double as Python prints it (1e+300, nan, -inf; not 1e300's 301
    digits with four decimals), NULL as –, HTML-escaped in HTML."""
    escape = html.escape if fmt == "html" else identity
    for want in SEGMENTS:
        for c, v in zip(SEGS, want):
            shown = "–" if v is None else str(v.astimezone() if c == "stamp_tz" else v)
            assert escape(shown) in text, (c, shown)
    assert "10000000000000000" not in text


def read_back(fmt: str, out: str, target) -> tuple:
    """(rows, how a column's value there turns back into the log's, the segments expected) of a table format's
    output: `out` (text) or `target` (the file written)."""
    if fmt in ("json", "jsonl"):
        return json_rows(out, fmt == "jsonl"), FROM_JSON, [finite_only(s) for s in SEGMENTS]
    if fmt in ("csv", "tsv"):
        target.write_text(out)
        return csv_rows(target, "," if fmt == "csv" else "\t"), FROM_TEXT, SEGMENTS
    return typed_rows(str(target)), {}, SEGMENTS


def check_output(fmt: str, out: str, target, per_run=2) -> None:
    """The output of one format, read back with a reader of its own, checked."""
    if fmt in ("table", "markdown", "latex", "html"):
        check_text(out, fmt)
    else:
        check_segments(*read_back(fmt, out, target), per_run=per_run)


SUFFIX = {"parquet": ".parquet", "duckdb": ".duckdb:res", "csv": ".csv", "tsv": ".tsv"}
EVAL_FORMATS = ("table", "csv", "tsv", "json", "jsonl", "markdown", "html", "parquet", "duckdb")
COMPARE_FORMATS = ("table", "markdown", "latex", "html", "json", "csv", "tsv", "jsonl", "parquet", "duckdb")
# The fast tier's covering sample, every type in each (the log's columns are all segments): the table writer's
# text (CSV), a typed table of compare's Python values, compare's HTML; with the JSON and hostile ones below.
FAST = {("eval", "csv"), ("compare", "duckdb"), ("compare", "html")}
CASES = [pytest.param(cmd, fmt, marks=() if (cmd, fmt) in FAST else pytest.mark.slow, id=f"{cmd}-{fmt}")
         for cmd, formats in (("eval", EVAL_FORMATS), ("compare", COMPARE_FORMATS)) for fmt in formats]


def run_format(capsys, tmp_path, argv: list, fmt: str) -> tuple:
    """The command's output in `fmt`: standard output, or (Parquet, DuckDB) the file -o wrote."""
    target = tmp_path / f"out{SUFFIX.get(fmt, '.txt')}"
    if fmt in ("parquet", "duckdb"):
        cli(capsys, *argv, "-o", target)
        return "", target
    return cli(capsys, *argv, "-f", fmt), target


@pytest.mark.parametrize("command, fmt", CASES)
def test_every_format_takes_every_segment_type(command, fmt, log, capsys, tmp_path):
    argv = [command, "none", log, *LOG_FLAGS] + (["--baseline", "control"] if command == "compare" else [])
    out, target = run_format(capsys, tmp_path, argv, fmt)
    pairs = command == "compare" and fmt in ("csv", "tsv", "jsonl", "parquet", "duckdb")  # a row per pair of runs
    check_output(fmt, out, target, per_run=1 if pairs else 2)


@pytest.mark.slow  # the same writer as eval's segment tables (eval-csv, eval-parquet in the fast tier)
@pytest.mark.parametrize("suffix", [".parquet", ".duckdb:res", ".csv", ".tsv", ".json", ".jsonl"])
def test_python_output_takes_every_segment_type(suffix, log, tmp_path):
    """evaluate(output=...): a row per list (3 segments x 2 runs x 3 lists), each segment's values back."""
    target = tmp_path / f"out{suffix}"
    evaluate(None, log, ["P@1"], output=str(target), group_by=SEGS, label="clicked", ties="rank",
             columns={"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"})
    fmt = {".duckdb:res": "duckdb"}.get(suffix, suffix[1:])
    out = "" if fmt in ("parquet", "duckdb") else (tmp_path / f"out{suffix}").read_text()
    check_segments(*read_back(fmt, out, target), per_run=6, means=False)


@pytest.mark.slow  # the rows of each list, in each format that writes rows
@pytest.mark.parametrize("command, fmt", [(c, f) for c in ("eval", "compare")
                                          for f in ("csv", "tsv", "jsonl", "parquet", "duckdb")])
def test_every_per_list_format_takes_every_segment_type(command, fmt, log, capsys, tmp_path):
    """-q: a row per list (eval: 2 runs x 3 lists a segment) or per list both runs have (compare: 3 a segment)."""
    argv = [command, "none", log, *LOG_FLAGS, "-q"] + (["--baseline", "control"] if command == "compare" else [])
    out, target = run_format(capsys, tmp_path, argv, fmt)
    check_segments(*read_back(fmt, out, target), per_run=6 if command == "eval" else 3, means=False)


@pytest.fixture(scope="module")
def stats(log, tmp_path_factory) -> str:
    """compare's statistics for decide: `sqlmetrics sql --compare welch` run on DuckDB where the log is, its rows
    saved as Parquet."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["sql", "--compare", "welch", "--qrels", "none", "--run", "log", *LOG_FLAGS]) == 0
    path = tmp_path_factory.mktemp("stats") / "stats.parquet"
    con = duckdb.connect(log.rsplit(":", 1)[0], read_only=True)
    con.execute(f"COPY ({text.getvalue().strip().rstrip(';')}) TO '{path}'")
    con.close()
    return str(path)


@pytest.mark.slow  # the output side is compare's, fast in test_every_format_takes_every_segment_type
@pytest.mark.parametrize("fmt", COMPARE_FORMATS)
def test_decide_takes_every_segment_type(fmt, stats, capsys, tmp_path):
    """decide reads the segments as text (compare.analyse_aggregates, as for an engine's rows); each format writes
    them, JSON strict. A HUGEINT is a DOUBLE in the Parquet file (DuckDB writes it so)."""
    out, target = run_format(capsys, tmp_path, ["decide", stats, "--baseline", "control"], fmt)
    shown = {str(v) for seg in SEGMENTS[:2] for c, v in zip(SEGS, seg) if c not in ("huge", "stamp_tz", "words")}
    if fmt in ("json", "jsonl", "csv", "tsv", "parquet", "duckdb"):
        if fmt in ("csv", "tsv"):
            target.write_text(out)
            rows = csv_rows(target, "," if fmt == "csv" else "\t")
        else:
            rows = json_rows(out, fmt == "jsonl") if fmt in ("json", "jsonl") else typed_rows_as_text(str(target))
        got = {tuple(r[c] for c in SEGS) for r in rows}
        assert len(got) == 3 and (None,) * len(SEGS) in got  # the NULL segment, and the NaN one is one
        assert shown <= {v for seg in got for v in seg if v is not None}
    else:
        for value in shown:
            assert value in (html.unescape(out) if fmt == "html" else out)


def typed_rows_as_text(target: str) -> list:
    con = duckdb.connect()
    if target.endswith(".parquet"):
        source = f"read_parquet('{target}')"
    else:
        con.execute(f"ATTACH '{target.rsplit(':', 1)[0]}' AS out (READ_ONLY)")
        source = "out.res"
    rel = con.sql(f"SELECT * FROM {source}")
    assert all(t == "VARCHAR" for c, t in zip(rel.columns, map(str, rel.types)) if c in SEGS)
    rows = [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    con.close()
    return rows


@pytest.mark.slow  # matplotlib draws the page's charts
def test_the_html_report_takes_every_segment_type(log, capsys, tmp_path):
    """The page's per-segment table: each value as its text (HTML-escaped), the NaN segment one row per run."""
    page_path = tmp_path / "page.html"
    cli(capsys, "report", "none", log, *LOG_FLAGS, "--baseline", "control", "-o", page_path)
    page = page_path.read_text()
    check_text(page, "html")
    section = page[page.index('id="segments"'):]
    assert section.count("<tr>") == 1 + 6 + 1 + 3  # a header, 3 segments x 2 arms; a header, a test per segment


# ---------------------------------------------------------------------------------------------- strict JSON

def test_json_is_written_only_by_the_one_helper():
    """Every JSON the package writes goes through results.json_text() (non-finite numbers as null, dates as ISO
    text, never NaN or Infinity): no other module of the package imports json (a reader of JSON would have to be
    let in here by name): caches.py keeps its own entries as JSON for itself (written with allow_nan=False too), and
    stats/rows.py reads the JSON Lines of decide()'s statistics."""
    root = pathlib.Path(sqlmetrics.__file__).parent
    imports = re.compile(r"^\s*(import json\b|from json import)", re.MULTILINE)
    found = [str(path.relative_to(root)) for path in root.rglob("*.py")
             if str(path.relative_to(root)) not in ("results.py", "caches.py", "stats/rows.py")
             and imports.search(path.read_text())]
    assert not found


ODD_FLAGS = [*LOG_FLAGS[:LOG_FLAGS.index("--group-by")], "--group-by", "odd", "-m", "P@1"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    """Inputs that lead each JSON writer to a value JSON cannot spell as Python would: ips logs whose rankers never
    agree (SNIPS NaN), an interleaving log, two runs to fuse and convert."""
    folder = tmp_path_factory.mktemp("hostile")
    pq.write_table(pa.table({"action": ["a", "b"], "click": [1, 0], "propensity": [0.5, 0.5],
                             "new_action": ["z", "z"]}), folder / "ips.parquet")
    pq.write_table(pa.table({"impression": [1, 1], "position": [1, 2], "action": ["a", "b"], "click": [1, 0],
                             "propensity": [0.5, 0.5], "new_action": ["a", "z"]}), folder / "pbm.parquet")
    pq.write_table(pa.table({"impression": [1, 1], "team": ["A", "B"], "click": [1, 0]}), folder / "il.parquet")
    pq.write_table(pa.table({"market": [math.nan, math.nan, -math.inf, -math.inf], "session": [1, 1, 2, 2],
                             "query": ["q"] * 4, "doc": ["a", "b", "a", "b"], "position": [1, 2, 1, 2],
                             "clicked": [1, 0, 0, 1]}), folder / "clicks.parquet")  # NaN and -inf segments
    (folder / "a.run").write_text("q1 Q0 d1 1 2.5 a\nq1 Q0 d2 2 1e-300 a\n")
    (folder / "b.run").write_text("q1 Q0 d2 1 1e300 b\nq1 Q0 d3 2 -0.0 b\n")
    # agreement: q1 holds one label on both sides, so its kappa and alpha are null
    (folder / "a.qrels").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 0\nq2 0 d2 1\n")
    (folder / "b.qrels").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\nq2 0 d2 1\n")
    (folder / "qrels.txt").write_text("q1 0 d2 1\nq1 0 d3 -1\nq2 0 d1 1\n")  # for pool and holes: q2 in no run
    # ppi's: q1 and q2 human-labelled, q3 the LLM's alone; the runs rank q1 only (every LLM value of b - a is 0)
    (folder / "llm.qrels").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\nq3 0 d3 1\n")
    (folder / "human.qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d9 1\n")
    return {name: str(folder / name) for name in HOSTILE_FILES}


HOSTILE_FILES = ("ips.parquet", "pbm.parquet", "il.parquet", "clicks.parquet", "a.run", "b.run", "a.qrels", "b.qrels",
                 "qrels.txt", "llm.qrels", "human.qrels")


def json_writers(log, stats, hostile) -> dict:
    """(command, format) -> its arguments, for every command that writes JSON or JSON Lines."""
    runs = [hostile["a.run"], hostile["b.run"]]
    return {
        # odd with a timestamp: written by Python's encoder; odd alone (-q), by DuckDB (local/output.py)
        ("eval", "json"): ["eval", "none", log, *ODD_FLAGS, "--group-by", "stamp_tz", "-f", "json"],
        ("eval", "jsonl"): ["eval", "none", log, *ODD_FLAGS, "-q", "-f", "jsonl"],
        ("compare", "json"): ["compare", "none", log, *ODD_FLAGS, "-f", "json"],
        ("compare", "jsonl"): ["compare", "none", log, *ODD_FLAGS, "-f", "jsonl"],
        ("decide", "json"): ["decide", stats, "-f", "json"],
        ("decide", "jsonl"): ["decide", stats, "-f", "jsonl"],
        ("demo", "json"): ["demo", "-f", "json", "-m", "AP"],
        ("demo", "jsonl"): ["demo", "-f", "jsonl", "-m", "AP", "-q"],
        ("list", "json"): ["list", "-f", "json"],
        ("ips", "json"): ["ips", hostile["ips.parquet"], "-f", "json"],
        ("pbm-ips", "json"): ["pbm-ips", hostile["pbm.parquet"], "-f", "json"],
        ("interleaving", "json"): ["interleaving", hostile["il.parquet"], "-f", "json"],
        ("fuse", "json"): ["fuse", "--method", "combsum", "--norm", "zmuv", *runs, "-o", "{out}.json"],
        ("fuse", "jsonl"): ["fuse", "--method", "rrf", *runs, "-o", "{out}.jsonl"],
        ("convert", "jsonl"): ["convert", "run", runs[1], "-o", "{out}.jsonl"],
        ("clicks", "json"): ["clicks", hostile["clicks.parquet"], "--model", "sdbn", "--group-by", "market", "-o",
                             "{out}.json"],
        ("clicks", "jsonl"): ["clicks", hostile["clicks.parquet"], "--model", "sdbn", "--group-by", "market", "-f",
                              "jsonl"],
        ("agreement", "json"): ["agreement", hostile["a.qrels"], hostile["b.qrels"], "--per-query", "-o", "{out}.json"],
        ("agreement", "jsonl"): ["agreement", hostile["a.qrels"], hostile["b.qrels"], "--per-query", "-f", "jsonl"],
        ("pool", "json"): ["pool", *runs, "--depth", "2", "--qrels", hostile["qrels.txt"], "-f", "json"],
        ("pool", "jsonl"): ["pool", *runs, "--depth", "2", "--topics", "-o", "{out}.jsonl"],
        ("holes", "json"): ["holes", hostile["qrels.txt"], *runs, "-m", "P@2", "-m", "RR", "--depth", "2", "-f", "json"],
        ("holes", "jsonl"): ["holes", hostile["qrels.txt"], *runs, "-m", "P@2", "-q", "-o", "{out}.jsonl"],
        ("ppi", "json"): ["ppi", hostile["llm.qrels"], hostile["human.qrels"], *runs, "-m", "P@1", "-o", "{out}.json"],
        ("ppi", "jsonl"): ["ppi", hostile["llm.qrels"], hostile["human.qrels"], *runs, "-m", "P@1", "-f", "jsonl"],
    }


def test_every_command_writing_json_is_walked(log, tmp_path):
    """The commands whose --format or --output takes JSON are exactly those json_writers() runs."""

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    found = set()
    for name, parser in sub.choices.items():
        for action in parser._actions:
            formats = set(action.choices or ()) if "--format" in action.option_strings else set()
            said = action.help or "" if "--output" in action.option_strings else ""
            found |= {(name, f) for f in ("json", "jsonl") if f in formats or f".{f}," in said or f".{f};" in said}
    assert found == set(json_writers(log, "", {k: "" for k in HOSTILE_FILES}))


STRICT_FAST = {("eval", "json"), ("eval", "jsonl"), ("ips", "json")}


@pytest.mark.parametrize("writer", [
    pytest.param(w, marks=() if w in STRICT_FAST else pytest.mark.slow, id="-".join(w)) for w in [
        ("eval", "json"), ("eval", "jsonl"), ("compare", "json"), ("compare", "jsonl"), ("decide", "json"),
        ("decide", "jsonl"), ("demo", "json"), ("demo", "jsonl"), ("list", "json"), ("ips", "json"),
        ("pbm-ips", "json"), ("interleaving", "json"), ("fuse", "json"), ("fuse", "jsonl"), ("convert", "jsonl"),
        ("clicks", "json"), ("clicks", "jsonl"), ("agreement", "json"), ("agreement", "jsonl"), ("pool", "json"),
        ("pool", "jsonl"), ("holes", "json"), ("holes", "jsonl"), ("ppi", "json"), ("ppi", "jsonl")]])
def test_every_json_the_commands_write_is_strict(writer, log, hostile, capsys, tmp_path, request):
    """Each command's JSON on input holding NaN and -inf (a segment column; compare's statistics of lists that do
    not vary; ips's SNIPS when the rankers never agree) loads under a parser that refuses NaN and Infinity, and
    holds null where the value was not finite."""
    stats = request.getfixturevalue("stats") if writer[0] == "decide" else ""  # built only for decide
    argv = [a.replace("{out}", str(tmp_path / "out")) if isinstance(a, str) else a
            for a in json_writers(log, stats, hostile)[writer]]
    out = cli(capsys, *argv)
    if "-o" in argv:
        out = pathlib.Path(argv[argv.index("-o") + 1]).read_text()
    values = [strict_json(line) for line in out.splitlines()] if writer[1] == "jsonl" else [strict_json(out)]
    if writer in (("eval", "json"), ("eval", "jsonl"), ("ips", "json"), ("clicks", "json"), ("clicks", "jsonl"),
                  ("agreement", "json"), ("agreement", "jsonl"), ("holes", "jsonl")):
        assert "null" in out  # the NaN and -inf segments; SNIPS; a query's undefined kappa; a topic in no run
    assert values


@pytest.mark.slow  # eval -f json and -f jsonl are the same writers in the fast tier
def test_python_json_outputs_are_strict(log, tmp_path):
    """evaluate(output=...) as JSON and JSON Lines, by DuckDB (doubles, text) and by Python (timestamps, decimals,
    with NaN and -inf beside them), and Report.to_json()."""
    for suffix in (".json", ".jsonl"):
        for group_by in (["odd"], ["odd", "stamp_tz", "amount"]):
            evaluate(None, log, ["P@1"], output=tmp_path / f"out{suffix}", **{**ODD_KW, "group_by": group_by})
            text = (tmp_path / f"out{suffix}").read_text()
            rows = [strict_json(line) for line in text.splitlines()] if suffix == ".jsonl" else strict_json(text)
            assert len(rows) == 18 and {r["odd"] for r in rows} == {None}  # NaN, -inf and NULL: 3 x 6 lists
    strict_json(compare(None, log, ["P@1"], **ODD_KW).to_json())


# ---------------------------------------------------------------------------------------------- NaN is one segment

ODD_KW = dict(columns={"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"},
              label="clicked", ties="rank", group_by=["odd"])


@pytest.mark.slow  # test_compare_json_takes_typed_segments counts the NaN segment once in the fast tier
def test_a_nan_segment_is_one_segment_in_compare_and_report(log):
    """compare split a NaN segment into one segment per list (NaN != NaN as a dict key): six comparisons of one
    list each, where DuckDB's GROUP BY, and eval, have one. The column `odd` holds NaN, -inf and NULL: three
    segments of three paired lists each, the means those counted by hand."""
    report = compare(None, log, ["P@1"], baseline="control", **ODD_KW)
    assert len(report.comparisons) == 3 and [c.n for c in report.comparisons] == [3, 3, 3]
    assert sorted(map(repr, (c.segment[0] for c in report.comparisons))) == ["-inf", "None", "nan"]
    for means in report.segment_means.values():
        assert {r: means[r]["P@1"] for r in MEANS} == pytest.approx(MEANS)
    page = build_report(None, log, ["P@1"], baseline="control", **ODD_KW)
    assert [(s.segment[0], s.n) for s in page.segments["P@1"]].count((page.comparison.comparisons[0].segment[0], 3)) \
        == 2  # both arms, three lists each
    assert len(page.segments["P@1"]) == 6 and {s.n for s in page.segments["P@1"]} == {3}


@pytest.mark.slow  # evaluate() had it right: DuckDB's GROUP BY
def test_a_nan_segment_is_one_segment_in_eval(log):
    res = evaluate(None, log, ["P@1"], **ODD_KW)
    rows = res.per_group.to_pylist()
    assert len(rows) == 6 and {r["num_lists"] for r in rows} == {3}
    assert sum(1 for r in rows if isinstance(r["odd"], float) and math.isnan(r["odd"])) == 2


def test_a_report_finds_a_nan_segment_by_any_nan(log):
    report = compare(None, log, ["P@1"], baseline="control", **ODD_KW)
    nan = float("nan")  # another NaN object than the report's
    assert report.comparison("P@1", "treatment", "control", (nan,)).n == 3
    assert report.best("P@1", segment=(nan,)) == {"treatment"}



# ---------------------------------------------------------------------------------------------- hostile values

@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory) -> str:
    """A log whose text segment holds a newline, a terminal escape sequence and Markdown's own characters, whose
    HUGEINT segment holds the ends of its range (39 digits, past DECIMAL(38)'s), and a DOUBLE segment 1e300."""
    path = tmp_path_factory.mktemp("hostile_log") / "log.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE log (words VARCHAR, huge HUGEINT, ratio DOUBLE, arm VARCHAR, session VARCHAR, "
                "doc VARCHAR, position INTEGER, clicked INTEGER)")
    for words, huge in (("two\nlines", 2 ** 127 - 1), ("\x1b[31mred", -(2 ** 127 - 1)), ("a|b*c_d", 0)):
        for arm in ("control", "treatment"):
            for s in range(2):
                con.executemany("INSERT INTO log VALUES (?, CAST(? AS HUGEINT), 1e300, ?, ?, ?, ?, ?)",
                                [(words, str(huge), arm, f"s{s}", f"d{p}", p, int(p == 1)) for p in (1, 2)])
    con.close()
    return f"{path}:log"


HOSTILE_FLAGS = [*LOG_FLAGS[:LOG_FLAGS.index("--group-by")], "--group-by", "words", "--group-by", "huge",
                 "--group-by", "ratio", "-m", "P@1"]


def test_control_characters_in_a_segment_are_shown_escaped(hostile_log, capsys):
    """A newline in a segment value would break the table's row, an escape sequence would reach the terminal: the
    text formats show them escaped (\\n, \\x1b), one line per row. A DOUBLE segment is its value (1e+300), not
    a measure's four decimals (301 digits)."""
    table = cli(capsys, "eval", "none", hostile_log, *HOSTILE_FLAGS)
    assert "two\\nlines" in table and "\\x1b[31mred" in table and "\x1b" not in table
    assert len(table.splitlines()) == 1 + 6  # the header, 3 segments x 2 runs
    assert "1e+300" in table and "100000000000000" not in table


@pytest.mark.slow  # test_control_characters_in_a_segment_are_shown_escaped is the fast case
@pytest.mark.parametrize("command", ["eval", "compare"])
def test_markdown_escapes_its_own_characters_in_a_segment(command, hostile_log, capsys):
    md = cli(capsys, command, "none", hostile_log, *HOSTILE_FLAGS, "-f", "markdown",
             *(["--baseline", "control"] if command == "compare" else []))
    assert "a\\|b\\*c\\_d" in md and "\x1b" not in md and "two\\nlines" in md


@pytest.mark.slow  # the fast tier's compare-duckdb case writes 2^127 - 1
def test_hugeint_at_its_ends_reaches_typed_files_exactly(hostile_log, capsys, tmp_path):
    """+-(2^127 - 1): 39 digits, held as DECIMAL(38, 0) (as DuckDB exports a HUGEINT to Arrow), read back exactly;
    pyarrow alone would infer a decimal256, which DuckDB cannot read."""
    want = {2 ** 127 - 1, -(2 ** 127 - 1), 0}
    for target in (tmp_path / "pairs.parquet", f"{tmp_path / 'pairs.duckdb'}:res"):
        cli(capsys, "compare", "none", hostile_log, *HOSTILE_FLAGS, "--baseline", "control", "-o", target)
        con = duckdb.connect()
        source = (f"read_parquet('{target}')" if str(target).endswith(".parquet") else
                  (con.execute(f"ATTACH '{str(target)[:-4]}' AS out (READ_ONLY)"), "out.res")[1])
        assert {int(v) for (v,) in con.execute(f"SELECT huge FROM {source}").fetchall()} == want
        con.close()


def test_arrow_columns_of_python_values_past_int64():
    assert arrow_column([2 ** 64 - 1, None, 0]).type == pa.uint64()
    column = arrow_column([-1, 2 ** 63, None])
    assert column.type == pa.decimal128(38, 0) and column.to_pylist() == [-1, 2 ** 63, None]
    column = arrow_column([decimal.Decimal(2 ** 127 - 1), decimal.Decimal(-5)])  # a HUGEINT read as a decimal
    assert column.type == pa.decimal128(38, 0) and column.to_pylist() == [2 ** 127 - 1, -5]
    assert arrow_column([1.5, None], "float64").type == pa.float64()
