"""Property: whatever a segment column holds (a DATE, TIMESTAMP, TIMESTAMPTZ, DECIMAL, BOOLEAN, BIGINT, HUGEINT,
UBIGINT, DOUBLE or text value, among them NaN, +-inf, -0.0, NULL, empty text, unicode, control characters, the
ends of each integer type's range), every output format of `eval` and `compare` writes it: JSON strict (a
non-finite number null), Parquet, a DuckDB table, CSV and TSV each read back by a reader of its own to the values
the log holds, the text formats one line per row. Never an internal error."""
import datetime
import decimal
import json
import math

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.cli import main

TEXTS = st.one_of(st.sampled_from(["", " ", "null", "NaN", "a,b", 'q"uote', "tab\there", "new\nline", "\x1b[0m",
                                   "\u2028", "é", "😀", "a|b*c_d", "\\", "–", "0.1"]),
                  st.text(min_size=0, max_size=6))
DAYS = st.dates(min_value=datetime.date(1, 1, 1), max_value=datetime.date(9999, 12, 31))
STAMPS = st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30))
# DuckDB type -> its values, as Python values
KINDS = {
    "DATE": DAYS,
    "TIMESTAMP": STAMPS,
    "TIMESTAMPTZ": STAMPS.map(lambda t: t.replace(tzinfo=datetime.timezone.utc)),
    "DECIMAL(18,3)": st.decimals(min_value=-10 ** 14, max_value=10 ** 14, places=3, allow_nan=False),
    "BOOLEAN": st.booleans(),
    "BIGINT": st.one_of(st.sampled_from([-2 ** 63, 2 ** 63 - 1, 2 ** 53 + 1, 0]), st.integers(-2 ** 63, 2 ** 63 - 1)),
    "HUGEINT": st.one_of(st.sampled_from([-(2 ** 127 - 1), 2 ** 127 - 1, 2 ** 64, -2 ** 63 - 1]),
                         st.integers(-(2 ** 127 - 1), 2 ** 127 - 1)),
    "UBIGINT": st.one_of(st.sampled_from([2 ** 64 - 1, 2 ** 63, 2 ** 53 + 1, 0]), st.integers(0, 2 ** 64 - 1)),
    "DOUBLE": st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308, 0.1]),
                        st.floats(allow_nan=True, allow_infinity=True)),
    "VARCHAR": TEXTS,
}
FORMATS = {"eval": ("table", "csv", "tsv", "json", "jsonl", "markdown", "html", "parquet", "duckdb"),
           "compare": ("table", "markdown", "latex", "html", "json", "csv", "tsv", "jsonl", "parquet", "duckdb")}
CASE = st.sampled_from(list(KINDS)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.lists(st.one_of(st.none(), KINDS[kind]), min_size=1, max_size=3)))
COMMAND_FORMAT = st.sampled_from([(c, f) for c, formats in FORMATS.items() for f in formats])
FLAGS = ["--column", "query_id=session", "--column", "doc_id=doc", "--column", "rank_position=position", "--column",
         "run_name=arm", "--label", "clicked", "--ties", "rank", "--group-by", "seg", "-m", "P@1", "--quiet"]


def build_log(path, kind: str, values: list) -> list:
    """log.duckdb's table `log`: for each value of the segment column, two arms of two sessions (control clicks the
    second document, treatment the first). Returns the segments as DuckDB holds them (equal values are one)."""
    con = duckdb.connect(str(path))
    con.execute(f"CREATE OR REPLACE TABLE log (seg {kind}, arm VARCHAR, session VARCHAR, doc VARCHAR, "
                "position INTEGER, clicked INTEGER)")
    rows = []
    for i, v in enumerate(values):
        text = None if v is None else v if isinstance(v, str) else repr(v) if isinstance(v, float) else \
            v.isoformat() if isinstance(v, (datetime.date, datetime.datetime)) else str(v).lower() \
            if isinstance(v, bool) else str(v)
        for arm in ("control", "treatment"):
            rows += [(text, arm, f"s{i}-{s}", f"d{p}", p, int((p == 1) == (arm == "treatment")))
                     for s in range(2) for p in (1, 2)]
    cast = "CAST(? AS DOUBLE)" if kind == "DOUBLE" else f"CAST(? AS {kind})" if kind != "VARCHAR" else "?"
    con.executemany(f"INSERT INTO log VALUES ({cast}, ?, ?, ?, ?, ?)", rows)
    held = [r[0] for r in con.execute("SELECT DISTINCT seg FROM log").fetchall()]
    con.close()
    return held


def strict(text: str):
    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def same(got, want, kind: str) -> bool:
    """A value read back is the one written: NaN as NaN, a number of the same value (a HUGEINT may come back as
    DECIMAL(38, 0), what it is in the results), a time the same instant."""
    if want is None or got is None:
        return got is want
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if kind in ("HUGEINT", "UBIGINT", "BIGINT"):
        return int(got) == want and not isinstance(got, float)
    if kind == "DOUBLE":
        return isinstance(got, float) and got == want
    return got == want


def from_text(text, kind: str):
    """A CSV field back to a value of `kind`."""
    if text is None:
        return None
    return {"DATE": datetime.date.fromisoformat, "TIMESTAMP": datetime.datetime.fromisoformat,
            "TIMESTAMPTZ": datetime.datetime.fromisoformat, "DECIMAL(18,3)": decimal.Decimal,
            "BOOLEAN": {"true": True, "false": False}.__getitem__, "BIGINT": int, "HUGEINT": int, "UBIGINT": int,
            "DOUBLE": float, "VARCHAR": str}[kind](text)


def from_json(value, kind: str):
    """A JSON value back to a value of `kind` (json_value()'s inverse): dates and times from ISO text, a decimal
    (and a HUGEINT, a DECIMAL(38, 0) in the results) from its digits."""
    if value is None or kind in ("BOOLEAN", "BIGINT", "UBIGINT", "DOUBLE", "VARCHAR"):
        return value
    return from_text(value, kind)


def as_json(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def segments_read(fmt: str, out: str, target) -> list:
    """The segment column's values in the output of `fmt`, read back by a reader of its own."""
    if fmt in ("json", "jsonl"):
        data = [strict(line) for line in out.splitlines()] if fmt == "jsonl" else strict(out)
        if isinstance(data, dict):  # compare's report
            data = [s["segment"] for s in data["segments"]]
        return [r["seg"] for r in data]
    if fmt in ("csv", "tsv"):
        target.write_text(out)
        rel = duckdb.read_csv(str(target), all_varchar=True, header=True, delimiter="," if fmt == "csv" else "\t",
                              quotechar='"', allow_quoted_nulls=False)
        return [r[rel.columns.index("seg")] for r in rel.fetchall()]
    con = duckdb.connect()
    if fmt == "duckdb":
        con.execute(f"ATTACH '{str(target)[:-len(':res')]}' AS out (READ_ONLY)")
    rows = con.execute(f"SELECT seg FROM {'out.res' if fmt == 'duckdb' else repr(str(target))}").fetchall()
    con.close()
    return [r[0] for r in rows]


@pytest.mark.slow  # hypothesis, 80 logs; tests/test_segment_outputs.py holds the fast cases
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=CASE, command_format=COMMAND_FORMAT)
def test_every_format_writes_any_segment_value(case, command_format, tmp_path_factory, capsys):
    kind, values = case
    command, fmt = command_format
    folder = tmp_path_factory.mktemp("fuzz")
    held = build_log(folder / "log.duckdb", kind, values)
    target = folder / {"parquet": "out.parquet", "duckdb": "out.duckdb:res"}.get(fmt, "out.txt")
    argv = [command, "none", f"{folder / 'log.duckdb'}:log", *FLAGS] + (
        ["--baseline", "control"] if command == "compare" else []) + (
        ["-o", str(target)] if fmt in ("parquet", "duckdb") else ["-f", fmt])
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    if fmt in ("table", "markdown", "latex", "html"):
        rows = 2 * len(held)  # a row per segment and run
        lines = out.splitlines()
        assert all(line.isprintable() for line in lines)  # no control character reaches the terminal
        if fmt in ("table", "markdown") and command == "eval":
            assert len(lines) == 1 + (fmt == "markdown") + rows
        return
    got = segments_read(fmt, out, target)
    back = ([from_json(v, kind) for v in got] if fmt in ("json", "jsonl") else
            [from_text(v, kind) for v in got] if fmt in ("csv", "tsv") else got)
    want = [as_json(v) for v in held] if fmt in ("json", "jsonl") else held
    pairs = command == "compare" and fmt != "json"  # a row per pair of runs: one per segment
    assert len(back) == len(want) * (1 if pairs else 2)
    for w in want:
        assert sum(same(b, w, kind) for b in back) == (1 if pairs else 2) * sum(same(x, w, kind) for x in want), \
            (w, back)
