"""decide() trusts no row it is given: the rows of render_compare()'s statement, exported from a warehouse, read back
by name (any case, any column order) and held against what the statement promises. A dropped, repeated or insane
row is a SqlmetricsError that names it (kind, run, segment, measure), never a number computed from it; a re-cased,
re-ordered or re-typed export gives the same report. tests/test_fuzz_decide.py edits the rows at random."""
from __future__ import annotations

import functools
import json

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli import main as cli_main

LOG = "sqlmetrics/demo/search_log.parquet"
OPTIONS = dict(qrels=None, columns={"query_id": "session", "doc_id": "doc", "rank_position": "position",
                                    "run_name": "arm"}, ties="rank", relevance="2*purchased + clicked",
               group_by=["date"], test="welch", max_p=0.05)
FIX = "export every row of the statement as it gave them"


@functools.lru_cache(maxsize=None)
def _rows() -> tuple:
    """The Welch statement's rows on the demo log, per day: 2 arms x 3 days of lists rows, 2 measures' moments and
    rank sums (24 rows), as DuckDB gives them."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW log AS SELECT * FROM '{LOG}'")
    rows = con.sql(sqlmetrics.render_compare(["nDCG@5", "RR"], "duckdb", run="log", **OPTIONS)).to_arrow_table()
    return tuple(rows.to_pylist())


def rows() -> list:
    return [dict(r) for r in _rows()]


def at(kind: str, rx: str = "control", date: str = "2024-06-02", m: int = 0) -> int:
    """The index of one row."""
    return next(i for i, r in enumerate(_rows()) if (r["kind"], r["rx"], r["date"], r["m"]) == (kind, rx, date, m))


def edited(i: int, **values) -> list:
    out = rows()
    out[i] = {**out[i], **values}
    return out


def _decide(rows, **kw):
    return sqlmetrics.decide(rows, baseline="control", **kw).to_dict()


def test_the_untouched_rows_give_the_arms_as_the_log_has_them():
    """The reference of the tests below: 50 sessions per arm and day in the log (counted here from it)."""
    log = pq.read_table(LOG).to_pylist()
    sessions = {(r["arm"], r["session"]) for r in log}
    report = sqlmetrics.decide(rows(), baseline="control")
    assert len(_rows()) == 24 and {r["n_rows"] for r in _rows()} == {24}
    assert report.sample_ratio["lists"] == {a: sum(arm == a for arm, _ in sessions) for a in ("control", "treatment")}
    assert [c.segment for c in report.comparisons] == [(d,) for d in ("2024-06-01", "2024-06-02", "2024-06-03")
                                                       for _ in range(2)]


@pytest.mark.parametrize("kind, expected", [
    ("moments", "missing the moments row of run 'control', date='2024-06-02', nDCG@5 (own lists)"),
    ("lists", "missing the lists row of run 'control', date='2024-06-02'"),  # once: control 100 lists, not 150
    ("ranks", "missing the ranks row of 'control' and 'treatment', date='2024-06-02', nDCG@5"),
])
def test_a_dropped_row_is_named(kind, expected):
    dropped = rows()
    del dropped[at(kind)]
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"the statement gave 24 rows and these are 23: "
                       + expected.replace("(", r"\(").replace(")", r"\)") + r"\. Export every row"):
        sqlmetrics.decide(dropped)


@pytest.mark.parametrize("values, expected", [
    ({"n": -5}, "n = -5, where the statement gives a count of at least 1"),
    ({"n": 0}, "n = 0, where the statement gives a count of at least 1"),
    ({"v1": float("nan")}, "v1 is empty (NULL or NaN), where the statement gives a finite number"),  # once TypeError
    ({"v1": None}, "v1 is empty (NULL or NaN), where the statement gives a finite number"),
    ({"v2": -1.0}, "v2 is -1.0, where the statement gives a finite number not negative"),  # once math domain error
    ({"v3": float("inf")}, "v3 is inf, where the statement gives a finite number"),
    ({"n": 51}, "counts 51 values, where its runs' rows allow 50"),
])
def test_an_insane_moments_row_is_named(values, expected):
    i = at("moments")
    named = (f"row {i + 1}, the moments row of run 'control', date='2024-06-02', nDCG@5 (own lists): "
             if "allow" not in expected else "the moments row of run 'control', date='2024-06-02', nDCG@5 (own lists) ")
    with pytest.raises(sqlmetrics.SqlmetricsError) as e:
        sqlmetrics.decide(edited(i, **values))
    assert named + expected in str(e.value) and FIX in str(e.value)


def test_repeated_mixed_and_unknown_rows_are_refused():
    i = at("moments")
    with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"row 25 repeats row {i + 1}: the moments row of run "
                       r"'control', date='2024-06-02', nDCG@5 \(own lists\)"):
        sqlmetrics.decide(rows() + [rows()[i]])
    with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"row {i + 1}: n 2.5 is not an integer"):
        sqlmetrics.decide(edited(i, n=2.5))
    with pytest.raises(sqlmetrics.SqlmetricsError, match="the rows disagree on n_rows: 24 on row 1, 23 on row 2"):
        sqlmetrics.decide(edited(1, n_rows=23))
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"row 3: kind 'moment' is not one of this statement's"):
        sqlmetrics.decide(edited(2, kind="moment"))
    with pytest.raises(sqlmetrics.SqlmetricsError, match="measure m = 1 is 'RR' on row .* and 'AP' on row"):
        sqlmetrics.decide(edited(at("moments", m=1), measure="AP"))
    i = at("moments")  # a segment value edited: that segment has no lists row
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"date='2024-06-09', nDCG@5 \(own lists\) has no lists row"):
        sqlmetrics.decide(edited(i, date="2024-06-09"))


def test_the_segments_are_found_by_name_whatever_the_order_case_and_types():
    """JSON Lines exports sort the keys (kind after date once lost the segment: a segment silently disappeared);
    Snowflake upper-cases the unquoted names; BigQuery's JSON gives INT64 as text; a column added on the way is not
    read; Decimal and float counts are counts."""
    from decimal import Decimal

    plain = _decide(rows())
    assert _decide([dict(sorted(r.items())) for r in rows()]) == plain
    assert _decide([{(k.upper() if k != "date" else k): v for k, v in r.items()} for r in rows()]) == plain
    retyped = [{**r, "n": str(r["n"]), "m": float(r["m"]), "sc": Decimal(r["sc"]), "seed": str(r["seed"]),
                "exported_at": "2024-07-01"} for r in rows()]
    assert _decide(retyped) == plain
    assert _decide(pa.Table.from_pylist(rows()).to_pandas()) == plain
    with pytest.raises(sqlmetrics.SqlmetricsError, match="the rows have no column 'date', a segment of the statement"):
        sqlmetrics.decide([{k: v for k, v in r.items() if k != "date"} for r in rows()])
    twice = [{**{k: v for k, v in r.items() if k != "kind"}, "KIND": r["kind"], "Kind": r["kind"]} for r in rows()]
    with pytest.raises(sqlmetrics.SqlmetricsError, match="2 columns named 'kind' but for their case"):
        sqlmetrics.decide(twice)
    old = [{k: v for k, v in r.items() if k not in ("group_by", "n_rows")} for r in rows()]
    with pytest.raises(sqlmetrics.SqlmetricsError, match="older sqlmetrics' statement. Render it again"):
        sqlmetrics.decide(old)


def test_a_null_segment_is_the_same_segment_from_a_list_and_from_pandas():
    """pandas' string dtype turns a NULL segment (None) into NaN: once read as the segment 'nan', a segment the list
    of the same rows calls None (hypothesis found it, re-casing the names of a pandas frame)."""
    import pandas as pd

    nulled = [{**r, "date": None if r["date"] == "2024-06-02" else r["date"]} for r in rows()]
    plain = _decide(nulled)
    assert [c["segment"]["date"] for c in plain["comparisons"]].count(None) == 2  # nDCG@5 and RR
    frame = pd.DataFrame.from_records(nulled).astype({"date": pd.StringDtype(na_value=float("nan"))})
    assert frame["date"].isna().sum() == 8 and frame["date"].to_list().count(None) == 0
    assert _decide(frame) == plain


def test_a_segment_named_like_a_column_in_any_case_is_refused():
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"group_by= 'Kind': .* \(in any case\)"):
        sqlmetrics.render_compare(["RR"], "duckdb", run="log", **{**OPTIONS, "group_by": ["Kind"]})


def test_the_command_line_reads_a_sorted_json_lines_file_and_refuses_bad_options(tmp_path, capsys):
    path = tmp_path / "stats.jsonl"
    path.write_text("".join(json.dumps(dict(sorted(r.items()))) + "\n" for r in rows()))
    assert cli_main(["decide", str(path), "--baseline", "control"]) == 0
    assert capsys.readouterr().out == sqlmetrics.decide(rows(), baseline="control").to_table()
    assert cli_main(["decide", str(path), "--split", "control=0", "--split", "treatment=1"]) == 2  # once ZeroDivision
    err = capsys.readouterr().err
    assert "--split gives 'control' the share 0.0; a share is a positive number" in err and len(err.splitlines()) == 1
    with pytest.raises(sqlmetrics.SqlmetricsError, match="correction='holmes' is not valid"):  # once ignored
        sqlmetrics.decide(rows(), correction="holmes")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows()[:-1]))
    assert cli_main(["decide", str(path)]) == 2
    err = capsys.readouterr().err
    assert "the statement gave 24 rows and these are 23: missing the ranks row" in err and len(err.splitlines()) == 1


@pytest.mark.slow  # two more statements (the bootstrap's, unit='s); test_fuzz_decide.py found both
def test_rows_that_name_an_unknown_run_or_segment_are_named():
    """Found by tests/test_fuzz_decide.py: a bootstrap row of a run that is not in the statement, or a units row
    moved to a segment of no units, was read as the missing pair's or segment's, and gave nan or another number."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW log AS SELECT * FROM '{LOG}'")
    sql = sqlmetrics.render_compare(["RR"], "duckdb", run="log", **{**OPTIONS, "test": "bootstrap", "n_resamples": 20})
    boot = con.sql(sql).to_arrow_table().to_pylist()
    i = next(i for i, r in enumerate(boot) if r["kind"] == "boot")
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"the boot row of 'nobody' against .* names run 'nobody', "
                                                         "which has no lists row in any segment"):
        sqlmetrics.decide([*boot[:i], {**boot[i], "rx": "nobody"}, *boot[i + 1:]])
    con.execute("CREATE VIEW visits AS SELECT *, arm || ':' || query AS visitor FROM log")  # the arm's users
    sql = sqlmetrics.render_compare(["RR"], "duckdb", run="visits", unit="visitor", **OPTIONS)
    units = con.sql(sql).to_arrow_table().to_pylist()
    assert {r["kind"] for r in units} == {"unit_count", "unit_lists", "units"}
    i = next(i for i, r in enumerate(units) if r["kind"] == "units")
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"the units row of run '\w+', date='2099-01-01', RR counts "
                                                         r"\d+ units, but it has no unit_lists row"):
        sqlmetrics.decide([*units[:i], {**units[i], "date": "2099-01-01"}, *units[i + 1:]])


def test_hostile_inputs_are_refused_by_name(tmp_path):
    """Once: a list holding a non-row raised TypeError, a count past any engine's range OverflowError, a CSV saved
    with a byte order mark (a spreadsheet's) had no kind column, and max_excluded=2 was taken."""
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"row 25 is a NoneType, not a row: give a dict"):
        sqlmetrics.decide(rows() + [None])
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"row 1: n 1(0){36}\.\.\. is out of "
                                                         "a count's range"):
        sqlmetrics.decide(edited(0, n=10**400))
    path = tmp_path / "stats.csv"
    duckdb.connect().execute(f"COPY (SELECT * FROM ({_sql_of(rows())})) TO '{path}' (HEADER)")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert _decide(str(path)) == _decide(rows())
    for run in (lambda: sqlmetrics.decide(rows(), max_excluded=2),
                lambda: sqlmetrics.compare(None, LOG, ["RR"], max_excluded=2, **{k: v for k, v in OPTIONS.items()
                                                                                  if k != "qrels"})):
        with pytest.raises(sqlmetrics.SqlmetricsError, match=r"max_excluded=2: give the largest share \(0 \.\. 1\)"):
            run()


def _sql_of(rows: list) -> str:
    """The rows as a DuckDB query (VALUES), to write them as a warehouse would."""
    names = list(rows[0])
    values = ", ".join("(" + ", ".join("NULL" if v is None else repr(v) for v in r.values()) + ")" for r in rows)
    return f"SELECT * FROM (VALUES {values}) AS t({', '.join(names)})"
