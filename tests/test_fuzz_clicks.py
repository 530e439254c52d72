"""Property: whatever a click log holds, fit_clicks() gives every model's parameters finite and inside [0, 1], the counts
behind them consistent and a finite log-likelihood, or a SqlmetricsError (never another exception, never a NaN). The
logs mix valid sessions with hostile rows: gaps, repeats, NULLs, clicks of 2 or -1, every or no row clicked, one
position, ids of mixed types, odd segment values (NULL, empty, unicode)."""
import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError, SqlmetricsWarning

CLICK = st.sampled_from([0, 1] * 40 + [None, 2, -1, "1", "x"])
DOC = st.sampled_from(["a", "b", "c", "d"] * 20 + [None, "", "é"])
SEGMENT = st.sampled_from(["de", "fr"] * 4 + [None, "", "ü", " "])
SEGMENT_NAME = st.sampled_from(["market"] * 4 + ["seg", "SEG", "seg_1", "séance"])  # the fit's own inner names too
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def logs(draw):
    """Sessions of 1-4 positions; now and then a position skipped or repeated, a session id of another type."""
    rows = []
    for s in range(draw(st.integers(1, 5))):
        session = draw(st.sampled_from([f"s{s}"] * 30 + [s, None]))
        query, segment = draw(st.sampled_from(["q1", "q2"])), draw(SEGMENT)
        positions = list(range(1, draw(st.integers(1, 4)) + 1))
        if draw(st.integers(0, 9)) == 0:
            positions = draw(st.permutations(positions + [draw(st.integers(0, 6))]))
        for p in positions:
            rows.append((str(session) if draw(st.booleans()) and session is not None else session, query,
                         draw(DOC), p, draw(CLICK), segment))
    return rows


def _table(rows):
    """The rows as columns; a column of mixed Python types (1 and '1') as text, as a CSV would hold it."""
    names = ("session", "query", "doc", "position", "clicked", "market")
    columns = {}
    for i, name in enumerate(names):
        values = [r[i] for r in rows]
        kinds = {type(v) for v in values if v is not None}
        columns[name] = pa.array([None if v is None else str(v) for v in values] if len(kinds) > 1 else values)
    return pa.table(columns)


@pytest.mark.slow  # hypothesis, 100 logs x 6 models; test_clicks.py's test_hostile_logs has a case of each class
@SETTINGS
@given(logs(), st.sampled_from(["cascade", "sdbn", "pbm", "ubm", "dcm", "dbn"]), st.booleans(), SEGMENT_NAME)
def test_a_fit_is_finite_and_in_range_or_a_clear_error(rows, model, segmented, segment):
    log = _table(rows).rename_columns(["session", "query", "doc", "position", "clicked", segment])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SqlmetricsWarning)  # not converged: said, and still a finite fit
            fit = sqlmetrics.fit_clicks(log, model=model, group_by=segment if segmented else None,
                                        **({"iterations": 15} if model in ("pbm", "ubm", "dcm", "dbn") else {}))
    except SqlmetricsError as e:
        assert str(e) and "\n" not in str(e)
        event(f"refused: {str(e).split(': ', 2)[-1][:40]}")
        return
    event("fitted")
    for name, table in fit.parameters.items():
        values = table[name].to_pylist()
        assert all(v is not None and math.isfinite(v) and 0 <= v <= 1 for v in values), (name, values)
        counts = table.to_pylist()
        if name in ("satisfaction", "continuation"):
            assert all(0 < r["clicks"] and 0 <= r["last_clicks"] <= r["clicks"] for r in counts)
        else:
            assert all(0 < r["impressions"] and 0 <= r["clicks"] <= r["impressions"] for r in counts)
    summary = fit.summary.to_pylist()
    if segmented:  # each segment under its own name, its values as the log holds them
        assert {r[segment] for r in summary} == set(log[segment].to_pylist())
    assert sum(r["rows"] for r in summary) == log.num_rows
    assert all(math.isfinite(r["log_likelihood"]) and r["log_likelihood"] <= 1e-12 for r in summary)
