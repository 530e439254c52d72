"""Property: whatever happens to the rows of render_compare()'s statement between the warehouse and decide() — a row
dropped, repeated or edited to a value no statement gives, the names re-cased, the rows and their columns re-ordered,
the numbers re-typed as text, Decimals or floats, a pyarrow table or a pandas frame of them — decide() returns the
report of the untouched rows, or raises a SqlmetricsError that names what is wrong: never another exception, never a
NaN (nor any other number) where the untouched rows gave another. The rows are those of real statements on DuckDB:
Welch's, Student's (paired) and the bootstrap's (paired and not), with and without segments, and unit= with and
without CUPED over a log with a unit in both arms and lists without a unit id (tests/test_ab_engine.py's)."""
from __future__ import annotations

import functools
import math
import os
import re
import warnings
from decimal import Decimal

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError
from test_ab_engine import LOG_COLUMNS, _tables

LOG = dict(qrels=None, run="log", columns=LOG_COLUMNS, ties="rank", relevance="2*purchased + clicked")
RUNS = dict(qrels="qrels", run="runs", columns={"run_name": "run_name"})
CASES = {  # name: (measures, render_compare()'s options, decide()'s)
    "welch per day": (["nDCG@5", "RR"], dict(LOG, group_by=["date"], test="welch"), {}),
    "welch": (["RR", "P@3"], dict(LOG, test="welch"), {}),
    "student paired per part": (["AP", "nDCG@10"], dict(RUNS, group_by=["part"], test="student"), {}),
    "bootstrap per day": (["RR"], dict(LOG, group_by=["date"], test="bootstrap", n_resamples=40), {}),
    "bootstrap paired": (["AP"], dict(RUNS, test="bootstrap", n_resamples=40), {}),
    "units per day": (["RR", "P@3"], dict(LOG, group_by=["date"], test="welch", unit="visitor"),
                      {"max_excluded": 0.05}),
    "units cuped": (["RR"], dict(LOG, test="welch", unit="visitor", pre_period="log"), {"max_excluded": 0.05}),
}
SETTINGS = settings(max_examples=int(os.environ.get("SQLMETRICS_FUZZ", "60")), deadline=None,
                    derandomize=not os.environ.get("SQLMETRICS_FUZZ_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NUMBER_COLUMNS = ("sc", "m", "n", "v1", "v2", "v3", "v4", "v5")
TEXT_COLUMNS = ("kind", "rx", "ry", "measure")
LABEL_COLUMNS = ("test", "max_p", "n_resamples", "seed", "pairing", "unit", "group_by", "n_rows")
# Values no statement gives in that column (a number that could be right, such as another mean, is no edit to find)
INSANE = {"n": [None, math.nan, math.inf, -5, 2.5, "abc"], "sc": [None, -1, 7, 2.5, "x"],
          "m": [None, -1, 7, 0.5, "x"], **{f"v{j}": [None, math.nan, math.inf, -math.inf, "abc"] for j in range(1, 6)},
          "kind": [None, "", "moment", "lists", "moments", "ranks", "diffs", "boot", "unit_count", "units",
                   "units_pre", "units_cross"],
          "rx": [None, "", "nobody", 7], "ry": [None, "", "nobody", 7], "measure": [None, "", "AP", "no such"],
          "segment": [None, "", "2099-01-01", "odd", "nobody"],
          **{c: [None, "bogus", -1, 0.5, '["x"]'] for c in LABEL_COLUMNS}}


@functools.lru_cache(maxsize=None)
def _case(name: str) -> tuple:
    """(the statement's rows, decide()'s options, its report as a dict) of one case, computed once."""
    measures, options, decided = CASES[name]
    con = duckdb.connect()
    for table, data in _tables().items():
        con.register(table, data)
    rows = con.sql(sqlmetrics.render_compare(measures, "duckdb", **options)).to_arrow_table().to_pylist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = sqlmetrics.decide(rows, baseline=_baseline(rows), **decided).to_dict()
    return tuple(rows), decided, report


def _baseline(rows) -> str:
    return min(r["rx"] for r in rows)


def _retyped(value, how: str):
    """The same value as an export may type it."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return {"text": repr(value), "decimal": Decimal(repr(value)), "float": float(value)}.get(how, value)
    if isinstance(value, str) and how == "bytes":
        return value.encode("utf-8")
    return value


def _mutate(rows: list, segs: list, data) -> tuple:
    """The rows after 1 to 3 drawn changes; (rows, the changes, whether one of them may change the numbers)."""
    changes, harmless = [], True
    for _ in range(data.draw(st.integers(1, 3))):
        what = data.draw(st.sampled_from(["drop", "repeat", "edit", "edit", "edit", "recase", "shuffle", "retype",
                                          "reorder"]))
        i = data.draw(st.integers(0, len(rows) - 1))
        if what == "drop":
            rows = rows[:i] + rows[i + 1:]
            harmless = False
        elif what == "repeat":
            rows = rows + [dict(rows[i])]
            harmless = False
        elif what == "edit":
            column = data.draw(st.sampled_from([*NUMBER_COLUMNS, *TEXT_COLUMNS, *LABEL_COLUMNS, *segs]))
            key = next((k for k in rows[i] if k.casefold() == column.casefold()), column)
            value = data.draw(st.sampled_from(INSANE["segment" if column in segs else column]))
            rows = rows[:i] + [{**rows[i], key: value}] + rows[i + 1:]
            what = f"edit row {i} {column}={value!r}"
            harmless = False
        elif what == "recase":
            how = data.draw(st.sampled_from([str.upper, str.lower, str.swapcase, str.title]))
            rows = [{how(k): v for k, v in r.items()} for r in rows]
        elif what == "shuffle":
            rows = data.draw(st.permutations(rows))
        elif what == "reorder":
            rows = [dict(sorted(r.items(), reverse=data.draw(st.booleans()))) for r in rows]
        else:
            how = data.draw(st.sampled_from(["text", "decimal", "float", "bytes"]))
            every = data.draw(st.booleans())
            rows = [{k: _retyped(v, how) for k, v in r.items()} if every or j == i else r for j, r in enumerate(rows)]
            what = f"retype {'all' if every else f'row {i}'} as {how}"
        changes.append(what)
    return rows, changes, harmless


def _same(x, y) -> bool:
    """Equal reports: every number the same (the re-typed ones are read back exactly), NaN where NaN."""
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
        return math.isnan(y)
    return x == y and type(x) is type(y)


@pytest.mark.slow  # hypothesis: 60 mutations of each of 7 statements' rows (the statements run once each)
@pytest.mark.parametrize("case", sorted(CASES))
@SETTINGS
@given(data=st.data())
def test_decide_gives_the_untouched_report_or_names_what_is_wrong(case, data):
    base, decided, expected = _case(case)
    segs = CASES[case][1].get("group_by", [])
    rows, changes, harmless = _mutate([dict(r) for r in base], segs, data)
    given_as = data.draw(st.sampled_from(["list", "list", "arrow", "pandas"]))
    if given_as == "arrow":
        try:
            rows = pa.Table.from_pylist(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column of mixed types: a table cannot hold it
            given_as = "list"
    elif given_as == "pandas":
        rows = pd.DataFrame.from_records(rows)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the sample ratio and the units left out warn on the untouched rows too
            report = sqlmetrics.decide(rows, baseline=_baseline(base), **decided).to_dict()
    except SqlmetricsError as e:
        message = str(e)
        event("refused: " + re.sub(r"\d+|'[^']*'", "_", " ".join(message.split()[1:5])))
        assert not harmless or given_as == "pandas" and "n_rows" in message, (changes, given_as, message)
        assert message.startswith("decide()") or "measure" in message.lower(), (changes, message)
        if changes[0] == "drop" and len(changes) == 1:
            assert f"the statement gave {len(base)} rows and these are {len(base) - 1}: missing the" in message
        return
    event("the same report")
    assert _same(report, expected), (changes, given_as)
