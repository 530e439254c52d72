"""Every output format takes every segment type (issue 42): a log whose segment columns hold a DATE, TIMESTAMP,
TIMESTAMPTZ, DECIMAL, BOOLEAN, INTEGER, HUGEINT and UBIGINT beyond 2^53, DOUBLE (with NaN and -inf), text (unicode,
empty) and NULL, through `eval`, `compare`, `decide` and `report` in each of their formats. Text formats show each
value as its text, JSON writes strict JSON (non-finite numbers as null, dates and times as ISO 8601 text, decimals
as their digits in text), typed formats (Parquet, a DuckDB table) keep the type and the value.

The values expected are the ones the log was built from and means counted by hand: in every segment, each arm
has three sessions (the same three ids: paired lists) of two documents; control's click is at position 1 in one
session of three (P@1 = 1/3), treatment's in two (P@1 = 2/3)."""
import csv
import datetime
import decimal
import io
import json
import math

import duckdb
import pyarrow.parquet as pq
import pytest

from sqlmetrics.cli import main

NAN = math.nan
# column -> (DuckDB type, [value of segment 0, value of segment 1]); segment 2 is NULL in every column.
COLUMNS = {
    "day": ("DATE", [datetime.date(2024, 6, 1), datetime.date(2024, 6, 2)]),
    "stamp": ("TIMESTAMP", [datetime.datetime(2024, 6, 1, 12, 34, 56, 789000), datetime.datetime(1999, 12, 31, 23, 59, 59)]),
    "stamp_tz": ("TIMESTAMPTZ", [datetime.datetime(2024, 6, 1, 10, 34, 56, tzinfo=datetime.timezone.utc),
                              datetime.datetime(2024, 6, 2, tzinfo=datetime.timezone.utc)]),
    "amount": ("DECIMAL(12,2)", [decimal.Decimal("1.50"), decimal.Decimal("12345678.99")]),
    "flag": ("BOOLEAN", [True, False]),
    "small": ("INTEGER", [7, -3]),
    "huge": ("HUGEINT", [2 ** 100 + 1, 2 ** 53 + 1]),
    "ubig": ("UBIGINT", [2 ** 64 - 1, 2 ** 53 + 1]),
    "ratio": ("DOUBLE", [0.1, 1e300]),
    "odd": ("DOUBLE", [NAN, -math.inf]),
    "words": ("VARCHAR", ['é 😀 "q",x', ""]),
}
SEGS = list(COLUMNS)
SEGMENTS = [tuple(values[i] for _, values in COLUMNS.values()) for i in range(2)] + [(None,) * len(SEGS)]
MEANS = {"control": 1 / 3, "treatment": 2 / 3}
LOG_FLAGS = ["--column", "query_id=session", "--column", "doc_id=doc", "--column", "rank_position=position",
             "--column", "run_name=arm", "--label", "clicked", "--ties", "rank", *(f for c in SEGS for f in ("--group-by", c)), "-m", "P@1"]


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


# ---------------------------------------------------------------------------------------------- NaN is one segment

ODD_KW = dict(columns={"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"},
              label="clicked", ties="rank", group_by=["odd"])


def test_a_nan_segment_is_one_segment_in_compare_and_report(log):
    """compare split a NaN segment into one segment per list (NaN != NaN as a dict key): six comparisons of one
    list each, where DuckDB's GROUP BY, and eval, have one. The column `odd` holds NaN, -inf and NULL: three
    segments of three paired lists each, the means those counted by hand."""
    from sqlmetrics import compare
    from sqlmetrics.stats.html import build_report

    report = compare(None, log, ["P@1"], baseline="control", **ODD_KW)
    assert len(report.comparisons) == 3 and [c.n for c in report.comparisons] == [3, 3, 3]
    assert sorted(map(repr, (c.segment[0] for c in report.comparisons))) == ["-inf", "None", "nan"]
    for means in report.segment_means.values():
        assert {r: means[r]["P@1"] for r in MEANS} == pytest.approx(MEANS)
    page = build_report(None, log, ["P@1"], baseline="control", **ODD_KW)
    assert [(s.segment[0], s.n) for s in page.segments["P@1"]].count((page.comparison.comparisons[0].segment[0], 3)) \
        == 2  # both arms, three lists each
    assert len(page.segments["P@1"]) == 6 and {s.n for s in page.segments["P@1"]} == {3}


def test_a_nan_segment_is_one_segment_in_eval(log):
    from sqlmetrics import evaluate

    res = evaluate(None, log, ["P@1"], **ODD_KW)
    rows = res.per_group.to_pylist()
    assert len(rows) == 6 and {r["num_lists"] for r in rows} == {3}
    assert sum(1 for r in rows if isinstance(r["odd"], float) and math.isnan(r["odd"])) == 2


def test_a_report_finds_a_nan_segment_by_any_nan(log):
    from sqlmetrics import compare

    report = compare(None, log, ["P@1"], baseline="control", **ODD_KW)
    nan = float("nan")  # another NaN object than the report's
    assert report.comparison("P@1", "treatment", "control", (nan,)).n == 3
    assert report.best("P@1", segment=(nan,)) == {"treatment"}
