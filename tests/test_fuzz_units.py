"""Property: whatever the users of a log are — in one arm or both, with an id or none (NULL, empty, spaces; a tab or a
leading space is an id) — compare(unit=) gives what a plain computation of the same sessions gives: the units in
more than one arm and the lists without an id left out and counted, a warning when there are any, a refusal when
either is more than max_excluded of the whole, and otherwise each arm's units and the difference of the kept lists'
means; and render_compare() run on DuckDB, then decide(), gives the same (the counts travel in its rows)."""
from __future__ import annotations

import functools
import os
import warnings

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError, SqlmetricsWarning
from test_units_assignment import OPTIONS, RR, _kept, _log, json_close

USER = st.sampled_from(["u1", "u2", "u3", "u4", "u5", " u1", "\tu2", "", " ", "   ", None])
SESSION = st.tuples(USER, st.sampled_from(["A", "B"]), st.sampled_from(sorted(RR)))
SETTINGS = settings(max_examples=int(os.environ.get("SQLMETRICS_FUZZ", "60")), deadline=None,
                    derandomize=not os.environ.get("SQLMETRICS_FUZZ_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow])


@functools.lru_cache(maxsize=None)
def _sql() -> str:
    return sqlmetrics.render_compare(["RR"], "duckdb", qrels=None, run="log", unit="user", test="welch", max_p=0.05,
                                     **OPTIONS)


def _plain(sessions: list, threshold: float) -> dict:
    """What the log's sessions say by hand: who is left out, whether that is refused, each arm's kept units and
    lists."""
    def no_id(user) -> bool:
        return user is None or not user.strip(" ")

    arms: dict = {}
    for user, arm, _ in sessions:
        if not no_id(user):
            arms.setdefault(user, set()).add(arm)
    mixed = {u for u, of in arms.items() if len(of) > 1}
    kept = [s for s in sessions if not no_id(s[0]) and s[0] not in mixed]
    lost = sum(no_id(s[0]) for s in sessions)
    return {"excluded": {"multiple_arms": len(mixed), "multiple_arms_lists": sum(s[0] in mixed for s in sessions),
                         "no_id_lists": lost},
            "refused": len(mixed) > threshold * len(arms) or lost > threshold * len(sessions)
                       or {s[1] for s in kept} != {"A", "B"},  # an arm without a unit left: nothing to compare
            "units": {a: len({s[0] for s in kept if s[1] == a}) for a in ("A", "B")},
            "lists": {a: [s[2] for s in kept if s[1] == a] for a in ("A", "B")}}


@pytest.mark.slow  # hypothesis: 60 logs, each compared here and through the statement on DuckDB
@SETTINGS
@given(st.lists(SESSION, min_size=2, max_size=14).filter(lambda s: {a for _, a, _ in s} == {"A", "B"}),
       st.sampled_from([0.0, 0.01, 0.2, 0.5, 1.0]))
def test_units_in_both_arms_and_lists_without_an_id_are_left_out_and_counted(sessions, threshold):
    expected = _plain(sessions, threshold)
    log = _log(sessions)
    con = duckdb.connect()
    con.register("log", log)
    runs = (lambda: sqlmetrics.compare(None, log, ["RR"], unit="user", baseline="A", max_p=0.05,
                                       max_excluded=threshold, **OPTIONS),
            lambda: sqlmetrics.decide(con.sql(_sql()).to_arrow_table(), baseline="A", max_excluded=threshold))
    reports = []
    for run in runs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                reports.append(run())
            except SqlmetricsError as e:
                assert expected["refused"], (sessions, str(e))
                assert "more than max_excluded" in str(e) or "is left once the units in more than one arm" in str(e)
                continue
        assert not expected["refused"], sessions
        left_out = [w for w in caught if issubclass(w.category, SqlmetricsWarning) and "left out" in str(w.message)]
        assert bool(left_out) == any(expected["excluded"].values()), (sessions, [str(w.message) for w in caught])
    if expected["refused"]:
        return
    here, there = reports
    assert json_close(_kept(there), _kept(here)) and there.excluded == here.excluded == expected["excluded"]
    assert here.sample_ratio is None or here.sample_ratio["lists"] == expected["units"]
    a, b = expected["lists"]["A"], expected["lists"]["B"]
    (c,) = here.comparisons
    assert c.difference == pytest.approx(sum(b) / len(b) - sum(a) / len(a), abs=1e-12), sessions
    assert c.n == expected["units"]["A"] + expected["units"]["B"]
