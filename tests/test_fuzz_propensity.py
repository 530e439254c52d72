"""Property: whatever a click log holds, propensities() gives per segment position 1 at 1 and every other estimate
finite and at least 0, each position once, or a SqlmetricsError (never another exception, never a NaN or an
infinity); pivot 1 and the adjacent chain agree at position 2 (both are the ratio over the pairs shown at 1 and 2);
a fit's qrels are finite grades in [0, 1] with at least the impressions asked; and pbm_ips() with those
propensities is a finite estimate or a clear error. The logs are test_fuzz_clicks.py's: valid sessions mixed with
gaps, repeats, NULLs, bad clicks, mixed id types and odd segment values."""
import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError, SqlmetricsWarning
from test_fuzz_clicks import SETTINGS, _table, logs


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)  # positions left out or estimated 0: said
        return call(*args, **kwargs)


@pytest.mark.slow  # hypothesis; test_propensity.py has a hand-picked case of each refusal
@SETTINGS
@given(logs(), st.sampled_from(["pivot", "adjacent", "pbm"]), st.integers(1, 3), st.booleans())
def test_propensities_are_finite_or_a_clear_error(rows, method, pivot, segmented):
    log = _table(rows)
    kwargs = {"iterations": 15} if method == "pbm" else {"pivot": pivot if method == "pivot" else 1}
    try:
        table = _quiet(sqlmetrics.propensities, log, method=method, group_by="market" if segmented else None,
                       **kwargs)
    except SqlmetricsError as e:
        assert str(e) and "\n" not in str(e)
        event(f"refused: {str(e).split(': ', 2)[-1][:40]}")
        return
    event(f"estimated {table.num_rows} positions")
    by_segment = {}
    for r in table.to_pylist():
        key = r["market"] if segmented else None
        assert r["position"] not in by_segment.setdefault(key, {})
        by_segment[key][r["position"]] = r["propensity"]
    for values in by_segment.values():
        assert values[1] == 1.0
        assert all(v is not None and math.isfinite(v) and v >= 0 for v in values.values()), values
    if method == "pivot" and pivot == 1:
        adjacent = _quiet(sqlmetrics.propensities, log, method="adjacent", group_by="market" if segmented else None)
        for r in adjacent.to_pylist():
            if r["position"] == 2:
                key = r["market"] if segmented else None
                assert by_segment[key][2] == pytest.approx(r["propensity"], rel=1e-12)
    _pbm_ips(log, table, segmented)


def _pbm_ips(log, thetas, segmented: bool) -> None:
    """pbm_ips on the click log's rows (each session an impression, the logger deterministic, the new ranker the
    same): finite, or refused when a position has no estimate or one of 0."""
    ips = pa.table({"impression": log["session"], "position": log["position"], "click": log["clicked"],
                    "propensity": [1.0] * log.num_rows, "action": log["doc"], "new_action": log["doc"],
                    **({"market": log["market"]} if segmented else {})})
    try:
        est = sqlmetrics.pbm_ips(ips, propensities=thetas)
    except SqlmetricsError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert math.isfinite(est["ips"].value)


@pytest.mark.slow
@SETTINGS
@given(logs(), st.sampled_from(["cascade", "sdbn", "pbm"]), st.integers(1, 4))
def test_qrels_are_grades_in_range(rows, model, least):
    try:
        fit = _quiet(sqlmetrics.fit_clicks, _table(rows), model=model, group_by="market",
                     **({"iterations": 15} if model == "pbm" else {}))
    except SqlmetricsError:
        return
    impressions = {(r["market"], r["query"], r["doc"]): r["impressions"]
                   for r in fit.parameters["attractiveness"].to_pylist()}
    for parameter in [p for p in fit.parameters if p != "examination"]:
        qrels = fit.qrels(least, parameter)
        assert qrels.column_names == ["market", "query", "doc", "relevance"]
        for r in qrels.to_pylist():
            assert 0 <= r["relevance"] <= 1 and impressions[r["market"], r["query"], r["doc"]] >= least
