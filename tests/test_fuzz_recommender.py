"""Property: whatever the training interactions (history=) and the item features (items=) hold, the recommender
measures give finite values (or null where a measure is undefined for a user) for valid inputs and a
SqlmetricsError naming the problem for the others: never another exception, never a NaN, an infinite value or a
guess. The inputs mix valid rows with hostile ones:
NULL and empty ids, an item or an interaction listed twice, vectors with NaN, infinities or NULLs, vectors of
different lengths, empty and all-zero vectors. Where every input is valid, IntraListDiversity by the vectors
equals a plain computation: 1 - the mean cosine of the pairs of the list's items, where an item without a vector,
or with a zero vector, is similar to none (0, as Recommenders fills the similarities it has not)."""
import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError

ITEMS = ["i1", "i2", "i3", "i4"]
ID = st.sampled_from(ITEMS * 6 + ["", None])
USER = st.sampled_from(["u1", "u2"] * 12 + ["", None])
NUMBER = st.sampled_from([0.0, 1.0, 0.5, -2.0, 3.0] * 6 + [math.nan, math.inf, -math.inf, None])
VECTOR = st.one_of(st.lists(NUMBER, min_size=2, max_size=2), st.lists(NUMBER, min_size=0, max_size=3), st.none())
MEASURES = ["CatalogCoverage", "Novelty", "IntraListDiversity(similarity='features')",
            "Serendipity(similarity='features')"]
RUN = pa.table({"query_id": ["u1", "u1", "u1", "u2", "u2"], "doc_id": ["i1", "i2", "i3", "i2", "i4"],
                "score": [3.0, 2.0, 1.0, 2.0, 1.0]})
QRELS = pa.table({"query_id": ["u1", "u2"], "doc_id": ["i1", "i4"], "relevance": [1, 1]})
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid_vectors(items: list) -> bool:
    """Each item named once, with a vector of finite numbers, all of one length."""
    names = [i for i, _ in items]
    return (all(i and v and all(x is not None and math.isfinite(x) for x in v) for i, v in items)
            and len(set(names)) == len(names) and len({len(v) for _, v in items}) == 1)


def _plain_diversity(items: list) -> dict:
    """{user: 1 - mean cosine over the pairs of the user's listed items}."""
    vectors = {i: np.array(v) for i, v in items}
    out = {}
    for user in ("u1", "u2"):
        listed = [d for q, d in zip(RUN["query_id"].to_pylist(), RUN["doc_id"].to_pylist()) if q == user]
        sims = []
        for a, b in itertools.combinations(listed, 2):
            norms = np.linalg.norm(vectors[a]) * np.linalg.norm(vectors[b]) if a in vectors and b in vectors else 0
            sims.append(float(vectors[a] @ vectors[b] / norms) if norms else 0.0)
        out[user] = 1 - sum(sims) / len(sims)
    return out


@pytest.mark.slow  # hypothesis, 100 inputs; test_recsys.py's test_item_vectors_are_one_per_item_and_finite has fast cases
@SETTINGS
@given(st.lists(st.tuples(USER, ID), min_size=1, max_size=8), st.lists(st.tuples(ID, VECTOR), min_size=1, max_size=5))
@example([("u1", "i1")], [("i1", [0.0, 0.0]), ("i2", [1.0, 0.0]), ("i3", [0.0, 1.0])])  # a zero vector
def test_recommender_inputs_give_finite_values_or_a_clear_error(history, items):
    history_table = pa.table({"query_id": pa.array([h[0] for h in history], pa.string()),
                              "doc_id": pa.array([h[1] for h in history], pa.string()),
                              "relevance": pa.array([1] * len(history), pa.int64())})
    items_table = pa.table({"doc_id": pa.array([i[0] for i in items], pa.string()),
                            "vector": pa.array([i[1] for i in items], pa.list_(pa.float64()))})
    valid = _valid_vectors(items) and all(u and i for u, i in history)
    try:
        results = sqlmetrics.evaluate(QRELS, RUN, MEASURES, history=history_table, items=items_table)
    except SqlmetricsError as e:
        assert not valid, f"refused valid inputs: {e}"
        return
    except Exception as e:  # noqa: BLE001 - the property: nothing but a SqlmetricsError escapes
        pytest.fail(f"{type(e).__name__}: {e}")
    assert valid, f"accepted {history} and {items}"
    for measure, value in results.aggregate.items():
        assert value is None or math.isfinite(value), (measure, value)
    for measure in MEASURES:
        assert all(v is None or math.isfinite(v) for v in results.per_query.column(measure).to_pylist()), measure
    got = dict(zip(results.per_query.column("query_id").to_pylist(),
                    results.per_query.column(MEASURES[2]).to_pylist()))
    want = _plain_diversity(items)
    assert {u for u, v in got.items() if v is not None} == set(want)
    assert all(math.isclose(got[u], v, abs_tol=1e-12) for u, v in want.items()), (got, want)
