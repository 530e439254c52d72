"""Property: whatever a click log holds, compare() on it gives, per day and arm, the count and mean of a plain
computation of the same rows (RR of each session: 1 / the position of its first label >= 1, else 0; a NULL label is
unjudged, and a session with no other is not evaluated; a NULL day is a day of its own) and their difference against the baseline, or a SqlmetricsError naming the
problem: never another exception, never a NaN, never a guess. The logs mix valid sessions with hostile ones: a NULL
or empty arm, a NaN label, negative and graded labels."""
import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError

ARM = st.sampled_from(["A", "B"] * 12 + [None, ""])
DAY = st.sampled_from(["d1", "d2"] * 8 + [None])
LABEL = st.sampled_from([0.0, 1.0] * 8 + [2.0, -1.0, None, math.nan])
SESSION = st.tuples(ARM, DAY, st.lists(LABEL, min_size=1, max_size=4))
COLUMNS = {"query_id": "session", "doc_id": "item", "rank_position": "pos", "run_name": "arm"}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _log(sessions: list) -> pa.Table:
    rows = [(f"s{i}", arm, day, f"i{p}", p, label) for i, (arm, day, labels) in enumerate(sessions)
            for p, label in enumerate(labels, 1)]
    return pa.table({"session": [r[0] for r in rows], "arm": pa.array([r[1] for r in rows], pa.string()),
                     "day": pa.array([r[2] for r in rows], pa.string()), "item": [r[3] for r in rows],
                     "pos": [r[4] for r in rows], "clicked": pa.array([r[5] for r in rows], pa.float64())})


def _judged(labels: list) -> bool:
    return any(label is not None for label in labels)


def _rr(labels: list) -> float:
    return next((1 / p for p, label in enumerate(labels, 1) if label is not None and label >= 1), 0.0)


@pytest.mark.slow  # hypothesis, 60 logs; test_logs.py and test_ab.py have a fast case of each refusal
@SETTINGS
@given(st.lists(SESSION, min_size=1, max_size=12))
def test_compare_on_a_log_gives_the_plain_means_or_a_clear_error(sessions):
    valid = all(arm and not any(label is not None and math.isnan(label) for label in labels)
                for arm, _, labels in sessions)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a day with one arm only: nothing to compare there, and it says so
            rep = sqlmetrics.compare(None, _log(sessions), ["RR"], label="clicked", ties="rank", group_by=["day"],
                                     columns=COLUMNS, baseline="A", test="student", n_resamples=200)
    except SqlmetricsError as e:
        assert not valid or {arm for arm, _, labels in sessions if _judged(labels)} != {"A", "B"}, \
            f"refused a valid log: {e}"
        return
    assert valid, f"accepted {sessions}"
    plain: dict = {}
    for arm, day, labels in sessions:
        if _judged(labels):  # a session without a judgment is not evaluated (a query without judgments)
            plain.setdefault((day, arm), []).append(_rr(labels))
    got = {(s.segment[0], s.run): s for s in rep.summary if s.measure == "RR" and s.n}
    assert set(got) == set(plain)
    for key, values in plain.items():
        assert got[key].n == len(values) and math.isclose(got[key].mean, sum(values) / len(values), abs_tol=1e-12)
    for c in rep.comparisons:
        if (c.segment[0], "A") not in plain or (c.segment[0], "B") not in plain:
            continue  # a day with one arm: nothing to compare
        a, b = plain[c.segment[0], "A"], plain[c.segment[0], "B"]
        assert math.isclose(c.difference, sum(b) / len(b) - sum(a) / len(a), abs_tol=1e-12)
        assert c.p_value is None or math.isnan(c.p_value) or 0 <= c.p_value <= 1
