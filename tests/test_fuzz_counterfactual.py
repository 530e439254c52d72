"""Property: whatever values a click log holds, ips() and interleaving() give finite estimates that equal a
plain computation of the same rows, or a SqlmetricsError naming the problem (never another exception, never a
NaN or a guess). The logs mix valid values with hostile ones: NULL, NaN, infinities, negative and out-of-range
numbers, a propensity of 0 or one so small that the weighted click overflows."""
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sqlmetrics import SqlmetricsError
from sqlmetrics.stats.counterfactual import interleaving, ips

HOSTILE = [None, math.nan, math.inf, -math.inf, -1.0, 2.0, 1e308]
# Valid values many times over: most logs are valid, or hold one hostile value among valid ones.
CLICK = st.sampled_from([0.0, 1.0] * 12 + [0.5, 3.0] + HOSTILE)
PROPENSITY = st.sampled_from([0.1, 0.25, 0.5, 1.0] * 6 + [0.0, 1e-300] + HOSTILE)
ACTION = st.sampled_from(["a", "b", "c"] * 8 + [None])
BINARY_CLICK = st.sampled_from([0.0, 1.0] * 12 + HOSTILE)
IMPRESSION = st.sampled_from(["i1", "i2", "i3"] * 8 + [None])
TEAM = st.sampled_from(["A", "B"] * 12 + [None])
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _finite(estimate, n: int) -> bool:
    """The value, and from two rows on its standard error and interval (one row has no sample deviation)."""
    return all(math.isfinite(v) for v in (estimate.value, *((estimate.se, estimate.ci_low, estimate.ci_high)
                                                              if n > 1 else ())))


@pytest.mark.slow  # hypothesis, 80 logs; test_counterfactual.py's test_bad_logs_are_named has a case of each class
@SETTINGS
@given(st.lists(st.tuples(ACTION, CLICK, PROPENSITY, ACTION), min_size=1, max_size=12))
@example([("a", 0.0, 1e-300, "a")])  # no click, but the weight's square (SNIPS's variance) overflows
def test_ips_gives_the_plain_estimate_or_a_clear_error(rows):
    log = pa.table({"action": [r[0] for r in rows], "click": pa.array([r[1] for r in rows], pa.float64()),
                    "propensity": pa.array([r[2] for r in rows], pa.float64()), "new_action": [r[3] for r in rows]})
    # A reward is any finite number; a propensity is in (0, 1]; both actions are known.
    valid = all(r[0] is not None and r[3] is not None and r[1] is not None and math.isfinite(r[1])
                and r[2] is not None and 0 < r[2] <= 1 for r in rows)
    if valid:
        w = np.array([(r[0] == r[3]) / r[2] for r in rows])
        reward = np.array([r[1] for r in rows]) * w
        with np.errstate(over="ignore"):
            overflows = not all(np.isfinite([w.sum(), reward.sum(), (reward * reward).sum(), (w * reward).sum(),
                                             (w * w).sum()]))
    try:
        got = ips(log)
    except SqlmetricsError as e:
        assert not valid or overflows, f"refused a valid log: {e}"
        return
    assert valid and not overflows, f"accepted {rows}"
    assert got["n"] == len(rows)
    assert math.isclose(got["ips"].value, reward.sum() / len(rows), rel_tol=1e-9, abs_tol=1e-12)
    if w.sum() > 0:
        assert math.isclose(got["snips"].value, reward.sum() / w.sum(), rel_tol=1e-9, abs_tol=1e-12)
    assert _finite(got["ips"], len(rows))


@pytest.mark.slow  # as above
@SETTINGS
@given(st.lists(st.tuples(IMPRESSION, TEAM, BINARY_CLICK), min_size=1, max_size=12))
def test_interleaving_counts_the_plain_wins_or_gives_a_clear_error(rows):
    log = pa.table({"impression": [r[0] for r in rows], "team": [r[1] for r in rows],
                    "click": pa.array([r[2] for r in rows], pa.float64())})
    valid = (all(r[0] is not None and r[1] is not None and r[2] in (0.0, 1.0) for r in rows)
             and len({r[1] for r in rows}) == 2)
    try:
        got = interleaving(log)
    except SqlmetricsError as e:
        assert not valid, f"refused a valid log: {e}"
        return
    assert valid, f"accepted a log with {rows}"
    clicks = {}
    for impression, team, click in rows:
        clicks.setdefault(impression, {"A": 0, "B": 0})[team] += click
    wins_a = sum(c["A"] > c["B"] for c in clicks.values())
    wins_b = sum(c["B"] > c["A"] for c in clicks.values())
    assert got["wins"] == {"A": wins_a, "B": wins_b} and got["impressions"] == len(clicks)
    assert math.isclose(got["delta"].value, (wins_b - wins_a) / len(clicks), abs_tol=1e-12)
