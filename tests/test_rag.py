"""The RAG measures (templates with `rows: verdicts`, `kind: rag`): RAGAS's formulas over the judged statements a
RAG pipeline writes (verdicts=), checked against the formulas computed here in plain Python from the same rows.

RAGAS itself is not a test dependency: installing it (0.4.3) would downgrade `rich`, which the project keeps, and
its measures call a language model through async prompts whose parsed answers are the verdicts this table holds.
What RAGAS computes after the model has judged is the share of true verdicts per question (faithfulness:
supported claims / the answer's claims; context recall: attributed claims / the reference's claims; context
relevancy: relevant sentences / the context's sentences), NaN when there is nothing to judge: `ragas_share` below.
"""
from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics.cli.main import main
from sqlmetrics.errors import SqlmetricsError

OF = {"Faithfulness": "answer", "ContextRecall": "reference", "ContextRelevancy": "context"}
QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d3": 0.7}, "q3": {"d9": 0.2}}


def verdicts_table(rows) -> pa.Table:
    return pa.table({"query_id": [r[0] for r in rows], "statement": [f"s{i}" for i in range(len(rows))],
                     "statement_of": [r[1] for r in rows], "verdict": [r[2] for r in rows]})


def random_verdicts(seed: int) -> list:
    rnd = random.Random(seed)
    return [(q, of, rnd.choice([0, 1])) for q in QRELS for of in OF.values() for _ in range(rnd.choice([0, 1, 2, 5]))]


def ragas_share(rows, query: str, of: str):
    """RAGAS's score of one question: the true verdicts over the statements judged; NaN (here None) without any."""
    verdicts = [v for q, o, v in rows if q == query and o == of]
    return sum(verdicts) / len(verdicts) if verdicts else None


@pytest.mark.parametrize("seed", range(12))
def test_per_query_values_and_means_are_ragas_shares(seed):
    rows = random_verdicts(seed)
    res = sqlmetrics.evaluate(QRELS, RUN, list(OF), verdicts=verdicts_table(rows))
    for row in res.per_query.to_pylist():
        for measure, of in OF.items():
            want = ragas_share(rows, row["query_id"], of)
            assert (row[measure] is None) == (want is None) and (want is None or math.isclose(row[measure], want))
    for measure, of in OF.items():
        values = [v for v in (ragas_share(rows, q, of) for q in QRELS) if v is not None]
        want = sum(values) / len(values) if values else None
        got = res.aggregate[measure]
        assert (got is None) == (want is None) and (want is None or math.isclose(got, want)), measure


def test_verdicts_are_the_querys_whatever_the_run_retrieved():
    """A judged query the run did not answer still has its statements' value (the pipeline answered it); a
    ranking measure beside them is unchanged by the verdicts."""
    rows = [("q1", "answer", 1), ("q2", "answer", 0), ("q2", "answer", 1)]
    run = {"q1": {"d1": 0.9}}
    with pytest.warns(sqlmetrics.SqlmetricsWarning):
        res = sqlmetrics.evaluate(QRELS, run, ["Faithfulness", "P@1"], verdicts=verdicts_table(rows))
    values = {r["query_id"]: (r["Faithfulness"], r["P@1"]) for r in res.per_query.to_pylist()}
    assert values == {"q1": (1.0, 1.0), "q2": (0.5, 0.0), "q3": (None, 0.0)}


def test_context_utilization_is_context_precision_over_answer_verdicts():
    """The chunks judged useful to the answer, given as qrels: RAGAS's formula by hand, 1e-10 smoothing aside."""
    useful = {"q1": {"c1": 0, "c2": 1, "c3": 1, "c4": 0, "c5": 1}}
    run = {"q1": {f"c{i}": 1 - i / 10 for i in range(1, 6)}}
    ranks = [i for i in range(1, 6) if useful["q1"][f"c{i}"]]
    want = sum((j + 1) / r for j, r in enumerate(ranks)) / len(ranks)  # precision@rank at each useful chunk
    res = sqlmetrics.evaluate(useful, run, ["ContextUtilization", "ContextPrecision"])
    assert math.isclose(res.aggregate["ContextUtilization"], want)
    assert res.aggregate["ContextUtilization"] == res.aggregate["ContextPrecision"]


def test_the_cli_reads_verdicts_from_a_file(tmp_path, capsys):
    rows = [("q1", "answer", 1), ("q1", "answer", 0), ("q2", "context", 1), ("q2", "context", 0), ("q2", "context", 0)]
    path = tmp_path / "verdicts.csv"
    path.write_text("query_id,statement,statement_of,verdict\n"
                    + "".join(f"{q},claim {i},{of},{v}\n" for i, (q, of, v) in enumerate(rows)), encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d3 1\n", encoding="utf-8")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 0.9 r\nq2 Q0 d3 1 0.7 r\n", encoding="utf-8")
    code = main(["eval", str(qrels), str(run), "-m", "Faithfulness", "-m", "ContextRelevancy",
                 "--verdicts", str(path), "-f", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split(",")[-2:] == ["Faithfulness", "ContextRelevancy"]
    assert lines[1].split(",")[-2:] == ["0.5", str(1 / 3)]


# ---------------------------------------------------------------------------------------------- bad input


def test_a_rag_measure_without_verdicts_says_how_to_pass_them():
    with pytest.raises(SqlmetricsError, match=r"pass verdicts= \(--verdicts"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"])
    with pytest.raises(SqlmetricsError, match="verdicts="):
        sqlmetrics.render(["ContextRecall"], dialect="postgres")


def test_several_runs_are_refused():
    """Verdicts are one pipeline's answers, keyed by query: two runs would silently share them."""
    with pytest.raises(SqlmetricsError, match="one run at a time"):
        sqlmetrics.evaluate(QRELS, {"a": RUN, "b": RUN}, ["Faithfulness"], verdicts=verdicts_table([("q1", "answer", 1)]))


@pytest.mark.parametrize("row, message", [
    (("q1", "claim", 1), "statement_of is not one of answer, reference, context"),
    (("q1", "answer", 2), "the verdict is not 1 or 0"),
    (("", "answer", 1), "the query id is empty"),
])
def test_a_bad_verdict_row_is_named(row, message):
    rows = [("q1", "answer", 1), ("q2", "reference", 0), row]
    with pytest.raises(SqlmetricsError, match=rf"verdicts \(Arrow table\), row 3: {message}"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=verdicts_table(rows))


def test_a_verdicts_table_without_its_columns_is_named():
    table = verdicts_table([("q1", "answer", 1)])
    with pytest.raises(SqlmetricsError, match=r"verdicts \(Arrow table\): no column 'statement_of'"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=table.drop_columns(["statement_of"]))
    with pytest.raises(SqlmetricsError, match=r"verdicts \(Arrow table\).*'verdict'"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=table.rename_columns(
            ["query_id", "statement", "statement_of", "judgement"]))
