"""Property: whatever a RAG pipeline's judged statements (verdicts=) hold, Faithfulness and ContextRecall equal a
plain computation of the same rows (the mean verdict of the query's answer statements, of its reference
statements), or a SqlmetricsError naming the row: never another exception, never a NaN, never a guess. The rows mix
valid values with hostile ones: NULL, empty and differently cased query ids, statement_of values that are not
answer, reference or context, verdicts other than 1 and 0 (NaN, 2, -1, 0.5, NULL)."""
import math
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import SqlmetricsError

QUERY = st.sampled_from(["q1", "q2"] * 12 + ["Q1", "q9", "", None])
OF = st.sampled_from(["answer", "reference", "context"] * 8 + ["Answer", "", None])
VERDICT = st.sampled_from([0.0, 1.0] * 12 + [math.nan, 2.0, -1.0, 0.5, None])
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}}
RUN = {"q1": {"d1": 1.0, "d3": 0.5}, "q2": {"d2": 0.7}}
MEASURES = ["Faithfulness", "ContextRecall"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow  # hypothesis, 100 tables; test_rag.py has a fast case of each refusal
@SETTINGS
@given(st.lists(st.tuples(QUERY, OF, VERDICT), min_size=1, max_size=10))
def test_verdicts_give_the_plain_means_or_a_clear_error(rows):
    table = pa.table({"query_id": pa.array([r[0] for r in rows], pa.string()),
                      "statement": [f"s{i}" for i in range(len(rows))],
                      "statement_of": pa.array([r[1] for r in rows], pa.string()),
                      "verdict": pa.array([r[2] for r in rows], pa.float64())})
    valid = all(q and of in ("answer", "reference", "context") and v in (0.0, 1.0) for q, of, v in rows)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rows of queries the qrels do not judge (q9, Q1): a warning says so
            results = sqlmetrics.evaluate(QRELS, RUN, MEASURES, verdicts=table)
    except SqlmetricsError as e:
        assert not valid, f"refused valid rows: {e}"
        return
    assert valid, f"accepted {rows}"
    got = {m: dict(zip(results.per_query.column("query_id").to_pylist(), results.per_query.column(m).to_pylist()))
           for m in MEASURES}
    for measure, of in zip(MEASURES, ("answer", "reference")):
        for q in QRELS:
            verdicts = [v for qq, o, v in rows if qq == q and o == of]
            want = sum(verdicts) / len(verdicts) if verdicts else None
            assert (got[measure][q] is None) == (want is None) and (want is None or math.isclose(got[measure][q], want)), \
                (measure, q, got[measure][q], want)
