"""Properties of the nugget measures (nuggets=, assignments=).

- Against nuggetizer 0.0.5's own scoring (calculate_nugget_scores: All, Vital, strict and partial), per topic and
  run, to 1e-12, on random nugget tables and assignments (nuggets the run does not assign are not_support to both).
- The weighted scores and nugget recall against a plain computation from their definitions written here.
- Hostile tables (NULLs, unknown labels, repeated nuggets, weights <= 0 or NaN, topics and nuggets missing from the
  nuggets table): a SqlmetricsError naming the table and row, or values; never another exception, never NaN.
"""
import importlib.util
import math
import os
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError

pytestmark = pytest.mark.slow

MEASURES = ["NuggetAll", "NuggetAllStrict", "NuggetVital", "NuggetVitalStrict", "NuggetWeighted",
            "NuggetWeightedStrict", "NuggetRecall"]
NUGGETIZER = {"NuggetAll": "all_score", "NuggetAllStrict": "strict_all_score", "NuggetVital": "vital_score",
              "NuggetVitalStrict": "strict_vital_score"}
LABELS = ("support", "partial_support", "not_support")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def nuggetizer_scores():
    """nuggetizer's calculate_nugget_scores (its metrics module is stdlib-only), or skip (fail under CI)."""
    if importlib.util.find_spec("nuggetizer") is None:
        reason = "nuggetizer is not installed: pip install --no-deps nuggetizer==0.0.5"
        if os.environ.get("SQLMETRICS_REQUIRE_SHARED") == "1":
            pytest.fail(f"{reason} (SQLMETRICS_REQUIRE_SHARED=1)", pytrace=False)
        pytest.skip(reason)
    from nuggetizer.core.metrics import calculate_nugget_scores

    return calculate_nugget_scores


# A topic: its nuggets, each (importance, weight, {run: assignment or None (not listed)}).
NUGGET = st.tuples(st.sampled_from(["vital", "okay"]), st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0]),
                   st.fixed_dictionaries({"A": st.sampled_from([*LABELS, None]),
                                          "B": st.sampled_from([*LABELS, None])}))
TOPICS = st.lists(st.lists(NUGGET, min_size=1, max_size=8), min_size=1, max_size=6)


def _tables(topics, weighted: bool):
    nuggets, assignments = [], []
    for t, topic in enumerate(topics):
        for n, (importance, weight, by_run) in enumerate(topic):
            nuggets.append((f"t{t}", f"n{n}", importance, weight))
            assignments += [(f"t{t}", run, f"n{n}", label) for run, label in by_run.items() if label is not None]
    columns = ["topic", "nugget_id", "importance", *(["weight"] if weighted else [])]
    n = pa.table({c: [row[i] for row in nuggets] for i, c in enumerate(columns)})
    a = pa.table({c: [row[i] for row in assignments] for i, c in enumerate(["topic", "run", "nugget_id", "assignment"])},
                 schema=pa.schema([(c, pa.string()) for c in ["topic", "run", "nugget_id", "assignment"]]))
    return n, a


def _plain(topic, run: str, weighted: bool) -> dict:
    """The weighted scores and recall of one topic for one run, from their definitions: sum w_i s_i / sum w_i (w: the
    weight column, else vital 1 and okay 0.5; s: support 1, partial 0.5, else 0; strict: only support counts) and
    the share of nuggets with support or partial support."""
    w = [weight if weighted else (1.0 if imp == "vital" else 0.5) for imp, weight, _ in topic]
    label = [by_run[run] or "not_support" for _, _, by_run in topic]
    s = [{"support": 1.0, "partial_support": 0.5}.get(x, 0.0) for x in label]
    strict = [1.0 if x == "support" else 0.0 for x in label]
    return {"NuggetWeighted": sum(a * b for a, b in zip(w, s)) / sum(w),
            "NuggetWeightedStrict": sum(a * b for a, b in zip(w, strict)) / sum(w),
            "NuggetRecall": sum(x != "not_support" for x in label) / len(label)}


@SETTINGS
@given(TOPICS, st.booleans())
def test_nugget_scores_equal_nuggetizer_and_the_definitions(topics, weighted):
    calculate = nuggetizer_scores()
    n, a = _tables(topics, weighted)
    runs = sorted({r for r in a.column("run").to_pylist()})
    if not runs:
        with pytest.raises(SqlmetricsError):  # no run to score: said, not an empty result
            sqlmetrics.evaluate(measures=MEASURES, nuggets=n, assignments=a)
        return
    results = sqlmetrics.evaluate(measures=MEASURES, nuggets=n, assignments=a)
    rows = {(r["run"], r["query_id"]): r for r in results.per_query.to_pylist()}
    assert sorted(rows) == sorted((run, f"t{t}") for run in runs for t in range(len(topics)))
    for (run, topic), row in rows.items():
        nuggets = [{"importance": imp, "assignment": by_run[run] or "not_support"}
                   for imp, _, by_run in topics[int(topic[1:])]]
        theirs = calculate(topic, nuggets)
        for ours, field in NUGGETIZER.items():
            assert abs(row[ours] - getattr(theirs, field)) <= 1e-12, (run, topic, ours, row[ours], theirs)
        for measure, value in _plain(topics[int(topic[1:])], run, weighted).items():
            assert abs(row[measure] - value) <= 1e-12, (run, topic, measure, row[measure], value)


TOPIC = st.sampled_from(["t1", "t1", "t2", "T1", "", None])
NUGGET_ID = st.sampled_from(["n1", "n2", "n3", "N1", "", None])
IMPORTANCE = st.sampled_from(["vital", "okay", "vital", "okay", "Vital", " okay", "", None])
WEIGHT = st.sampled_from([1.0, 0.5, 2.0, 1.0, 0.0, -1.0, math.nan, math.inf, None])
LABEL = st.sampled_from([*LABELS, *LABELS, "Support", "partial", "", None])
RUN = st.sampled_from(["A", "A", "B", "", None])


@SETTINGS
@given(st.lists(st.tuples(TOPIC, NUGGET_ID, IMPORTANCE, WEIGHT), min_size=1, max_size=6),
       st.lists(st.tuples(TOPIC, RUN, NUGGET_ID, LABEL), min_size=1, max_size=8), st.booleans())
def test_hostile_nuggets_give_values_or_a_clear_error(nuggets, assignments, weighted):
    columns = ["topic", "nugget_id", "importance", *(["weight"] if weighted else [])]
    n = pa.table({c: [row[i] for row in nuggets] for i, c in enumerate(columns)})
    a = pa.table({c: pa.array([row[i] for row in assignments], pa.string())
                  for i, c in enumerate(["topic", "run", "nugget_id", "assignment"])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            results = sqlmetrics.evaluate(measures=MEASURES, nuggets=n, assignments=a)
        except SqlmetricsError as e:
            text = str(e)
            assert "nuggets" in text or "assignments" in text, text  # the table is named
            assert "Traceback" not in text and "Binder Error" not in text, text
            return
    for row in results.per_query.to_pylist():
        for m in MEASURES:
            assert row[m] is not None and 0 <= row[m] <= 1 and not math.isnan(row[m]), row
