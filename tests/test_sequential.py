"""compare(sequential=N): Student's and Welch's tests as asymptotic confidence sequences (always-valid intervals
and p-values), against GrowthBook's gbstats (SequentialTwoSidedTTest, absolute difference) to 1e-9.
tests/oracles/gbstats_oracle.py runs in gbstats' own venv (SQLMETRICS_GBSTATS_PYTHON names its interpreter; gbstats
pins numpy 1.x and pandas 1.x, which the project's would not take)."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sqlmetrics
from sqlmetrics.stats.compare import analyse_lists

from conftest import unavailable

SCRIPT = Path(__file__).parent / "oracles" / "gbstats_oracle.py"
RNG = np.random.default_rng(11)


def _gbstats(cases: list) -> list:
    python = os.environ.get("SQLMETRICS_GBSTATS_PYTHON")
    if not python:
        unavailable("SQLMETRICS_GBSTATS_PYTHON is unset: set it to the python of a venv with pip install "
                    "gbstats==0.8.0 (as .ci/run does)")
    done = subprocess.run([python, str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    if done.returncode:
        pytest.fail(f"{SCRIPT.name} failed under {python}:\n{done.stderr[-3000:]}", pytrace=False)
    return json.loads(done.stdout)


def _moments(values) -> list:
    return [len(values), math.fsum(values), math.fsum(v * v for v in values)]


@pytest.mark.parametrize("tuning, alpha", [(5000, 0.05), pytest.param(200, 0.01, marks=pytest.mark.slow),
                                           pytest.param(50_000, 0.1, marks=pytest.mark.slow)])
def test_always_valid_welch_equals_gbstats(tuning, alpha):
    """Two arms of different sessions (unpaired: Welch), several effect sizes, one of them none."""
    arms = [(RNG.normal(0.40, 0.3, 400), RNG.normal(0.40 + lift, 0.35, 350)) for lift in (0.0, 0.03, 0.1)]
    lists = {(): {"A": {}, "B": {}}}
    for k, (a, b) in enumerate(arms):
        lists[(k,)] = {"A": {f"a{i}": [v] for i, v in enumerate(a)}, "B": {f"b{i}": [v] for i, v in enumerate(b)}}
    del lists[()]
    rep = analyse_lists(["A", "B"], {"m": ("higher", "mean")}, lists, segment_names=("case",), test="student",
                        max_p=alpha, baseline="A", sequential=tuning)
    assert rep.test == "welch" and rep.sequential == tuning
    oracle = _gbstats([{"a": _moments(a), "b": _moments(b), "alpha": alpha, "tuning": tuning} for a, b in arms])
    for c, ref in zip(rep.comparisons, oracle):
        assert c.difference == pytest.approx(ref["estimate"], rel=1e-9)
        assert (c.ci_low, c.ci_high) == pytest.approx(tuple(ref["ci"]), rel=1e-9)
        assert c.p_value == pytest.approx(ref["p"], rel=1e-9, abs=1e-300)
        assert c.significant == (ref["p"] < alpha)


def test_the_always_valid_interval_is_wider_than_the_fixed_one_and_refusals():
    qrels, runs = sqlmetrics.demo.paths()
    fixed = sqlmetrics.compare(qrels, runs, ["AP"]).comparisons[0]
    always = sqlmetrics.compare(qrels, runs, ["AP"], sequential=5000).comparisons[0]
    assert always.difference == fixed.difference and always.statistic == fixed.statistic
    assert always.ci_low < fixed.ci_low and always.ci_high > fixed.ci_high and always.p_value > fixed.p_value
    with pytest.raises(sqlmetrics.SqlmetricsError, match="test='fisher' has no sequential form"):
        sqlmetrics.compare(qrels, runs, ["AP"], test="fisher", sequential=5000)
    with pytest.raises(sqlmetrics.SqlmetricsError, match="sequential=0"):
        sqlmetrics.compare(qrels, runs, ["AP"], sequential=0)


@pytest.mark.slow  # the HTML report, built again (test_report.py's fast cases cover the page)
def test_the_report_states_its_intervals_are_always_valid():
    from sqlmetrics.stats.html import build_report

    qrels, runs = sqlmetrics.demo.paths()
    page = build_report(str(qrels), [str(r) for r in runs], ["AP"], sequential=5000).to_html()
    assert "always valid (sequential, tuned for 5,000)" in page
