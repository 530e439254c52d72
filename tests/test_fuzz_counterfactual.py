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
from sqlmetrics.stats.counterfactual import interleaving, ips, pbm_ips

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


NEW_PROPENSITY = st.sampled_from([0.0, 0.2, 0.5, 1.0] * 6 + [-0.5, 1.5] + HOSTILE)
PREDICTION = st.sampled_from([0.0, 0.3, 0.6, 1.0] * 6 + HOSTILE)
CLIP = st.sampled_from([None, None, 0.5, 2.0, 1e300])


@pytest.mark.slow  # as above
@SETTINGS
@given(st.lists(st.tuples(CLICK, PROPENSITY, NEW_PROPENSITY, PREDICTION, PREDICTION), min_size=1, max_size=12), CLIP)
@example([(0.0, 0.5, 0.5, 0.3, 1e308)], None)  # one row: a huge prediction has no spread to overflow
@example([(0.0, 0.5, 0.5, 0.3, 1e308), (1.0, 0.5, 0.5, 0.3, 0.0)], None)  # two: its spread overflows
@example([(1.0, 1e-300, 1.0, 0.3, 0.3)], 2.0)  # a weight near 1e300, clipped to 2
def test_stochastic_ips_dm_dr_give_the_plain_estimates_or_a_clear_error(rows, clip):
    """A stochastic new policy (new_propensity) and a reward model (reward_hat, new_reward_hat), clipped or not."""
    column = lambda i: pa.array([r[i] for r in rows], pa.float64())  # noqa: E731
    log = pa.table({"click": column(0), "propensity": column(1), "new_propensity": column(2),
                    "reward_hat": column(3), "new_reward_hat": column(4)})
    finite = lambda v: v is not None and math.isfinite(v)  # noqa: E731
    valid = all(finite(r[0]) and finite(r[1]) and 0 < r[1] <= 1 and finite(r[2]) and 0 <= r[2] <= 1
                and finite(r[3]) and finite(r[4]) for r in rows)
    if valid:
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.minimum(np.array([r[2] / r[1] for r in rows]), math.inf if clip is None else clip)
            r = np.array([r[0] for r in rows])
            dr = np.array([row[4] for row in rows]) + w * (r - np.array([row[3] for row in rows]))
            dm = np.array([row[4] for row in rows])
            # the sums IPS and SNIPS take; DM's and DR's means and (from two rows on) standard deviations
            overflows = not all(np.isfinite([w.sum(), (w * r).sum(), (w * r * w * r).sum(), (w * w * r).sum(),
                                             (w * w).sum(), dr.mean(), dm.mean()]
                                            + ([dr.std(ddof=1), dm.std(ddof=1)] if len(rows) > 1 else [])))
    try:
        got = ips(log, clip=clip)
    except SqlmetricsError as e:
        assert not valid or overflows, f"refused a valid log: {e}"
        return
    assert valid and not overflows, f"accepted {rows}"
    assert math.isclose(got["ips"].value, (w * r).sum() / len(rows), rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(got["dm"].value, sum(row[4] for row in rows) / len(rows), rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(got["dr"].value, dr.sum() / len(rows), rel_tol=1e-9, abs_tol=1e-9)
    assert all(_finite(got[name], len(rows)) for name in ("ips", "dm", "dr"))


@pytest.mark.slow  # as above
@SETTINGS
@given(st.lists(st.tuples(IMPRESSION, st.sampled_from([1, 2, 3]), CLICK, PROPENSITY, NEW_PROPENSITY),
                min_size=1, max_size=12))
@example([("i1", 1, 1e308, 1.0, 0.2)])  # one list: no spread to overflow
@example([("i1", 1, 1e308, 1.0, 0.2), ("i2", 1, 0.0, 1.0, 0.2)])
def test_position_based_ips_gives_the_plain_estimate_or_a_clear_error(rows):
    log = pa.table({"impression": [r[0] for r in rows], "position": [r[1] for r in rows],
                    "click": pa.array([r[2] for r in rows], pa.float64()),
                    "propensity": pa.array([r[3] for r in rows], pa.float64()),
                    "new_propensity": pa.array([r[4] for r in rows], pa.float64())})
    finite = lambda v: v is not None and math.isfinite(v)  # noqa: E731
    valid = (all(r[0] is not None and finite(r[2]) and finite(r[3]) and 0 < r[3] <= 1 and finite(r[4])
                 and 0 <= r[4] <= 1 for r in rows) and len({(r[0], r[1]) for r in rows}) == len(rows))
    if valid:
        sums = {}
        for impression, _, click, p, q in rows:
            sums[impression] = sums.get(impression, 0.0) + q / p * click
        values = np.array(list(sums.values()))
        with np.errstate(over="ignore", invalid="ignore"):  # the mean, and from two lists on the spread
            spread = [values.std(ddof=1)] if len(values) > 1 else []
            overflows = not all(np.isfinite([*values, values.mean(), *spread]))
    try:
        got = pbm_ips(log)
    except SqlmetricsError as e:
        assert not valid or overflows, f"refused a valid log: {e}"
        return
    assert valid and not overflows, f"accepted {rows}"
    assert got["impressions"] == len(sums) and got["n"] == len(rows)
    assert math.isclose(got["ips"].value, sum(sums.values()) / len(sums), rel_tol=1e-9, abs_tol=1e-12)
    assert _finite(got["ips"], len(sums))
