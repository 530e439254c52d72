"""Property: whatever scores and ids two runs hold, fuse() gives the fused scores of a plain computation of the same
rows (sql/fusion/'s definitions, written out in Python below), or a SqlmetricsError naming the problem (never another
exception, never a NaN or an infinite score). The runs mix valid rows with hostile ones: NULL, NaN and infinite
scores, scores so large that their sum overflows, empty and NULL ids, a document ranked twice for one query."""
import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sqlmetrics import SqlmetricsError, fuse

HOSTILE_SCORES = [None, math.nan, math.inf, -math.inf, 1e308, -1e308]
SCORE = st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 3.5, -1.0] * 6 + HOSTILE_SCORES)
DOC = st.sampled_from(["d1", "d2", "d3", "d4", "d5"] * 6 + ["", None])
QUERY = st.sampled_from(["q1", "q2"] * 12 + [None])
RUN = st.lists(st.tuples(QUERY, DOC, SCORE), min_size=1, max_size=8)
METHODS = ["RRF", "CombSUM", "CombMNZ", "CombMAX"]
NORMS = ["none", "min-max", "rank"]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOOR = 1e-9  # sql/fusion/_shared.sql: a normalisation's denominator below this is this


def _valid(run: list) -> bool:
    """Ids present and not empty, each document once per query, every score a finite number."""
    pairs = [(q, d) for q, d, _ in run]
    return (all(q and d and s is not None and math.isfinite(s) for q, d, s in run)
            and len(set(pairs)) == len(pairs))


def _plain(runs: list, method: str, norm: str) -> dict:
    """{(query, doc): fused score}, as sql/fusion/ defines it: each run's list ranked by score descending, ties by
    document id descending; the score normalised per list; the method's aggregate over the document's rows."""
    rows: dict = {}
    for run in runs:
        for q in {q for q, _, _ in run}:
            lst = sorted(((d, s) for qq, d, s in run if qq == q), key=lambda r: (-r[1], _desc(r[0])))
            scores = [s for _, s in lst]
            low, high, n = min(scores), max(scores), len(scores)
            for rnk, (d, s) in enumerate(lst, 1):
                if norm == "min-max":
                    s = (s - low) / (high - low if high - low > FLOOR else FLOOR)
                elif norm == "rank":
                    s = 1 - (rnk - 1) / n
                rows.setdefault((q, d), []).append((s, rnk))
    fused = {}
    for key, values in rows.items():
        if method == "RRF":
            fused[key] = sum(1 / (60 + rnk) for _, rnk in values)
        elif method == "CombSUM":
            fused[key] = sum(s for s, _ in values)
        elif method == "CombMNZ":
            fused[key] = sum(s for s, _ in values) * len(values)
        else:
            fused[key] = max(s for s, _ in values)
    return fused


def _desc(doc: str):
    """A sort key putting document ids in descending byte order (sorted() ascending on it)."""
    return tuple(-b for b in doc.encode()) + (1,)


def _table(run: list) -> pa.Table:
    return pa.table({"query_id": pa.array([r[0] for r in run], pa.string()),
                     "doc_id": pa.array([r[1] for r in run], pa.string()),
                     "score": pa.array([r[2] for r in run], pa.float64())})


@pytest.mark.slow  # hypothesis, 120 pairs of runs; test_fusion.py's test_bad_input has a case of each class
@SETTINGS
@given(RUN, RUN, st.sampled_from(METHODS), st.sampled_from(NORMS))
@example([("q1", "d1", 1e308)], [("q1", "d1", 1e308)], "CombSUM", "none")  # fused to infinity in silence, once
@example([("q1", "d1", 1e308), ("q1", "d2", -1e308)], [("q1", "d1", 1.0)], "CombMNZ", "min-max")
def test_fuse_gives_the_plain_scores_or_a_clear_error(run_a, run_b, method, norm):
    valid = _valid(run_a) and _valid(run_b)
    if valid:
        want = _plain([run_a, run_b], method, norm)
        overflows = not all(math.isfinite(v) for v in want.values())
    try:
        got = fuse([_table(run_a), _table(run_b)], method, norm=norm)
    except SqlmetricsError as e:
        assert not valid or overflows, f"refused valid runs: {e}"
        return
    assert valid, f"accepted {run_a} and {run_b}"
    assert not overflows, f"fused scores that overflow a double into {got.to_pylist()}"
    rows = got.to_pylist()
    assert {(r["query_id"], r["doc_id"]) for r in rows} == set(want)
    for r in rows:
        assert math.isclose(r["score"], want[r["query_id"], r["doc_id"]], rel_tol=1e-12, abs_tol=1e-12), r
    for q in {r["query_id"] for r in rows}:  # ranked by the fused score, from 1
        ranked = sorted((r for r in rows if r["query_id"] == q), key=lambda r: r["rank"])
        assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
        assert all(a["score"] >= b["score"] for a, b in zip(ranked, ranked[1:]))
