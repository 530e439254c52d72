"""The RAG measures (`kind: rag`): RAGAS's formulas over the judged statements (verdicts=, `rows: verdicts`) and
the question embeddings (embeddings=, `rows: embeddings`) a RAG pipeline writes, checked against the formulas
computed here in plain Python and numpy from the same rows.

RAGAS itself is not a test dependency: installing it (0.4.3) would downgrade `rich`, which the project keeps, and
its measures call a language model through async prompts whose parsed answers are the verdicts this table holds
(tests/test_ragas_oracle.py runs it in a venv of its own, with a scripted model).
What RAGAS computes after the model has judged is the share of true verdicts per question (faithfulness:
supported claims / the answer's claims; context recall: attributed claims / the reference's claims; context
relevancy: relevant sentences / the context's sentences), NaN when there is nothing to judge: `ragas_share` below;
answer relevancy is the mean cosine of embeddings it is given, zeroed when every generation is noncommittal:
`ragas_answer_relevancy` below.
"""
from __future__ import annotations

import math
import re
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics.cli.main import main
from sqlmetrics.demo import make_rag
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
    with pytest.raises(SqlmetricsError, match=r"pass verdicts=, a table of query_id"):
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


# ---------------------------------------------------------------------------------------------- AnswerRelevancy


def random_embeddings(seed: int, dims: int = 5) -> list:
    """(query, generated, vector, noncommittal): the question asked and 0..3 generated questions per query, values
    exact in float32 (multiples of 1/8), never an all-zero vector; sometimes every generation noncommittal."""
    rnd = random.Random(seed)
    rows = []
    for q in QRELS:
        all_noncommittal = rnd.random() < 0.25
        for g in range(rnd.choice([0, 1, 3, 4])):
            vector = [rnd.randint(-16, 16) / 8 for _ in range(dims)]
            vector[rnd.randrange(dims)] = rnd.choice([-1, 1]) * rnd.randint(1, 16) / 8
            rows.append((q, g, vector, int(all_noncommittal or rnd.random() < 0.3) if g else 0))
    return rows


def ragas_answer_relevancy(rows, query: str):
    """RAGAS's formula with numpy: the mean cosine of the generated questions' embeddings with the question's,
    times 0 when every generation is noncommittal; NaN (here None) without generated questions."""
    asked = [np.asarray(v) for q, g, v, _ in rows if q == query and g == 0]
    generated = [(np.asarray(v), n) for q, g, v, n in rows if q == query and g > 0]
    if not asked or not generated:
        return None
    cosines = [float(v @ asked[0] / (np.linalg.norm(v) * np.linalg.norm(asked[0]))) for v, _ in generated]
    return float(np.mean(cosines)) * int(not all(n for _, n in generated))


def as_arrays(rows, item_type=None) -> pa.Table:
    vectors = [r[2] for r in rows]
    return pa.table({"query_id": [r[0] for r in rows], "generated": [r[1] for r in rows],
                     "embedding": pa.array(vectors, item_type) if item_type else vectors,
                     "noncommittal": [r[3] for r in rows]})


def as_long(rows) -> pa.Table:
    flat = [(q, g, i, x, n) for q, g, v, n in rows for i, x in enumerate(v, 1)]
    return pa.table({c: [r[i] for r in flat] for i, c in
                     enumerate(("query_id", "generated", "dimension", "value", "noncommittal"))})


# Ten random collections in the full suite; the fast suite's first three put the same four forms to the test.
@pytest.mark.parametrize("seed", [pytest.param(seed, marks=[pytest.mark.slow] if seed >= 3 else []) for seed in range(10)])
def test_answer_relevancy_is_ragas_formula_with_the_vector_function_and_the_portable_sums(seed):
    """DuckDB's list_cosine_similarity over lists (DOUBLE[], FLOAT[], fixed DOUBLE[5]) and the portable sums over
    the long form (what other engines run) agree with each other and with RAGAS's formula."""
    rows = random_embeddings(seed)
    forms = {"double[]": as_arrays(rows), "float[]": as_arrays(rows, pa.list_(pa.float32())),
             "double[5]": as_arrays(rows, pa.list_(pa.float64(), 5)), "long": as_long(rows)}
    got = {form: sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table) for form, table in forms.items()}
    for form, res in got.items():
        for row in res.per_query.to_pylist():
            want = ragas_answer_relevancy(rows, row["query_id"])
            assert (row["AnswerRelevancy"] is None) == (want is None), (form, row)
            assert want is None or math.isclose(row["AnswerRelevancy"], want, abs_tol=1e-12), (form, row, want)


def test_noncommittal_is_optional_and_zeroes_only_when_every_generation_says_so():
    rows = [("q1", 0, [1.0, 0.0], 0), ("q1", 1, [1.0, 1.0], 1), ("q1", 2, [0.0, 1.0], 0),
            ("q2", 0, [1.0, 0.0], 0), ("q2", 1, [1.0, 0.0], 1)]
    table = as_arrays(rows)
    with_flag = sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table)
    without = sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table.drop_columns(["noncommittal"]))
    values = {r["query_id"]: r["AnswerRelevancy"] for r in with_flag.per_query.to_pylist()}
    assert math.isclose(values["q1"], (1 / math.sqrt(2) + 0) / 2) and values["q2"] == 0 and values["q3"] is None
    assert {r["query_id"]: r["AnswerRelevancy"] for r in without.per_query.to_pylist()}["q2"] == 1


def test_the_cli_reads_embeddings_from_parquet(tmp_path, capsys):
    import pyarrow.parquet as pq

    rows = [("q1", 0, [3.0, 4.0], 0), ("q1", 1, [4.0, 3.0], 0), ("q1", 2, [3.0, 4.0], 0)]
    pq.write_table(as_arrays(rows), tmp_path / "embeddings.parquet")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 0.9 r\n", encoding="utf-8")
    code = main(["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "-m", "AnswerRelevancy",
                 "--embeddings", str(tmp_path / "embeddings.parquet"), "-f", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert math.isclose(float(out.splitlines()[1].split(",")[-1]), (24 / 25 + 1) / 2)


def test_answer_relevancy_without_embeddings_says_how_to_pass_them():
    with pytest.raises(SqlmetricsError, match=r"pass embeddings=, a table of query_id"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"])


@pytest.mark.parametrize("rows, message", [
    ([("q1", 1, [1.0, 0.0], 0)], "query 'q1', question 1 has no question asked"),
    ([("q1", 0, [1.0, 0.0], 0), ("q1", 1, [1.0, 0.0, 1.0], 0)], "query 'q1', question 1 has other dimensions"),
    ([("q1", 0, [0.0, 0.0], 0), ("q1", 1, [1.0, 0.0], 0)], "query 'q1', question 0 is all zeros"),
    ([("q1", 0, [1.0, 0.0], 0), ("q1", 0, [1.0, 1.0], 0)], "query 'q1', question 0 has a dimension twice"),
    ([("q1", 0, [1.0, 0.0], 0), ("q1", -1, [1.0, 0.0], 0)], r"row 2: generated is not 0"),
    ([("q1", 0, [1.0, 0.0], 0), ("q1", 1, [1.0, 0.0], 2)], r"row 2: noncommittal is not 1 or 0"),
    ([("q1", 0, [1.0, 0.0], 0), ("q1", 1, [], 0)], r"row 2: the embedding is empty"),
])
def test_bad_embeddings_are_named(rows, message):
    with pytest.raises(SqlmetricsError, match=rf"embeddings \(Arrow table\)[:,] {message}"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=as_arrays(rows, pa.list_(pa.float64())))


def test_long_embeddings_with_missing_dimensions_are_named():
    table = as_long([("q1", 0, [1.0, 0.0, 2.0], 0), ("q1", 1, [1.0, 0.0, 1.0], 0)])
    table = table.filter(pa.array([True, True, True, True, False, True]))  # question 1 lacks dimension 2
    with pytest.raises(SqlmetricsError, match="question 1 has other dimensions than the question asked"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table)
    with pytest.raises(SqlmetricsError, match=r"embeddings \(Arrow table\): no list column 'embedding'"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table.drop_columns(["value"]))


# ---------------------------------------------------------------------------------------------- judge= and embed=


def letter_counts(texts: list) -> list:
    """A deterministic embedding for the tests: how often each of a, e, i, o, u appears."""
    return [[t.count(c) for c in "aeiou"] for t in texts]


def supported(rows: list) -> list:
    """A deterministic judge for the tests: a claim is supported when each of its words is in the row's context."""
    return [all(w in row["context"].split() for w in row["statement"].split()) for row in rows]


def test_judge_gives_the_verdicts():
    table = pa.table({"query_id": ["q1", "q1", "q2"], "statement": ["paris is big", "rome is old", "oslo is cold"],
                      "statement_of": ["answer", "answer", "answer"],
                      "context": ["paris is big and old", "paris is big and old", "oslo is cold"]})
    res = sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=table, judge=supported)
    assert {r["query_id"]: r["Faithfulness"] for r in res.per_query.to_pylist()} == {"q1": 0.5, "q2": 1.0, "q3": None}


def test_judge_reads_the_rows_by_their_roles_names():
    """The rows judge= gets name the roles as documented (query_id), whatever the files call them (question_id)."""
    qrels = pa.table({"question_id": ["q1", "q2"], "doc_id": ["d1", "d3"], "relevance": [1, 1]})
    table = pa.table({"question_id": ["q1", "q2"], "statement": ["paris is big", "oslo is cold"],
                      "statement_of": ["answer", "answer"], "context": ["paris is big", "oslo is warm"]})
    seen = []

    def judge(rows):
        seen.extend(rows)
        return supported(rows)
    res = sqlmetrics.evaluate(qrels, RUN, ["Faithfulness"], verdicts=table, judge=judge,
                              qrels_columns={"query_id": "question_id"})
    assert [sorted(r) for r in seen] == [["context", "query_id", "statement", "statement_of"]] * 2
    assert {r["query_id"]: r["Faithfulness"] for r in res.per_query.to_pylist()} == {"q1": 1.0, "q2": 0.0}


def test_embed_gives_the_vectors():
    questions = {("q1", 0): "where is paris", ("q1", 1): "where is rome", ("q1", 2): "what is paris"}
    table = pa.table({"query_id": [q for q, _ in questions], "generated": [g for _, g in questions],
                      "question": list(questions.values())})
    res = sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table, embed=letter_counts)
    rows = [(q, g, v, 0) for ((q, g), v) in zip(questions, letter_counts(list(questions.values())))]
    assert math.isclose(res.aggregate["AnswerRelevancy"], ragas_answer_relevancy(rows, "q1"))


@pytest.mark.parametrize("judge, message", [
    (lambda rows: [1], r"judge= returned 1 results for 2 statements"),
    (lambda rows: ["yes", "no"], r"judge= returned 'yes': a verdict is 1 or 0"),
    (lambda rows: 1 / 0, r"judge= failed on 2 statements: ZeroDivisionError"),
])
def test_a_bad_judge_is_named(judge, message):
    table = pa.table({"query_id": ["q1", "q2"], "statement": ["a", "b"], "statement_of": ["answer", "context"]})
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=table, judge=judge)


@pytest.mark.parametrize("embed, message", [
    (lambda texts: [[1.0]], r"embed= returned 1 results for 2 questions"),
    (lambda texts: [["x"], ["y"]], r"embed= returned something other than a list of numbers"),
])
def test_a_bad_embed_is_named(embed, message):
    table = pa.table({"query_id": ["q1", "q1"], "generated": [0, 1], "question": ["a", "b"]})
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table, embed=embed)
    with pytest.raises(SqlmetricsError, match="give a question column and no embedding column"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table.drop_columns(["question"]),
                            embed=letter_counts)


def test_what_judge_and_embed_cannot_take_is_named(tmp_path):
    """A verdict column beside judge=, a question without text for embed=, and a RAG input without even its columns."""
    table = pa.table({"query_id": ["q1"], "statement": ["a"], "statement_of": ["answer"], "verdict": [1]})
    with pytest.raises(SqlmetricsError, match="has a verdict column; judge= judges statements without one"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=table, judge=supported)
    questions = pa.table({"query_id": ["q1", "q1"], "generated": [0, 1], "question": ["where is paris", None]})
    with pytest.raises(SqlmetricsError, match=r"row 2: the question is empty; embed= needs its text"):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=questions, embed=letter_counts)
    empty = tmp_path / "verdicts.jsonl"
    empty.write_text("")
    with pytest.raises(SqlmetricsError, match=r"is empty, without even its columns \(query_id, statement"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=empty)


# ---------------------------------------------------------------------------------------------- the demo


def test_the_shipped_demo_is_its_generator_output_and_the_readme_example_holds():
    """sqlmetrics/demo/rag_* are what make_rag writes; the README's example equals RAGAS's formulas there."""
    import pyarrow.parquet as pq

    retrieved, judgments, verdicts, embeddings = make_rag.rows()
    folder = Path(make_rag.__file__).parent
    for name, data in (("rag_retrieved.csv", retrieved), ("rag_judgments.csv", judgments),
                       ("rag_verdicts.csv", verdicts)):
        text = (folder / name).read_text(encoding="utf-8").splitlines()[1:]
        assert text == [",".join(map(str, r)) for r in data], name
    shipped = pq.read_table(folder / "rag_embeddings.parquet").to_pylist()
    assert [(r["query_id"], r["generated"], r["noncommittal"]) for r in shipped] == [(q, g, n) for q, g, _, n in embeddings]
    assert all(np.allclose(r["embedding"], e[2], atol=1e-6) for r, e in zip(shipped, embeddings))  # stored as FLOAT
    results = sqlmetrics.evaluate(folder / "rag_judgments.csv", folder / "rag_retrieved.csv",
                                  ["Faithfulness", "AnswerRelevancy"], verdicts=folder / "rag_verdicts.csv",
                                  embeddings=folder / "rag_embeddings.parquet")
    queries = sorted({q for q, _, _ in judgments})
    judged = [(query, of, verdict) for query, _, of, verdict in verdicts]
    faithfulness = np.mean([ragas_share(judged, q, "answer") for q in queries])
    stored = [(r["query_id"], r["generated"], r["embedding"], r["noncommittal"]) for r in shipped]
    relevancy = np.mean([ragas_answer_relevancy(stored, q) for q in queries])
    assert math.isclose(results.aggregate["Faithfulness"], faithfulness)
    assert math.isclose(results.aggregate["AnswerRelevancy"], relevancy, abs_tol=1e-12)
    assert round(relevancy, 3) == 0.742 and round(faithfulness, 3) == 0.503  # as the README says


def test_rag_rows_matching_no_judged_query_are_warned_about():
    """Verdicts keyed Q1/Q2 against qrels q1/q2 matched nothing, silently: Faithfulness null, exit 0."""
    rows = [("Q1", "answer", 1), ("Q2", "answer", 0), ("Q3", "answer", 1)]
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"verdicts \(Arrow table\) matches none of the 3 judged "
                                                          r"queries by query id \(its ids: 'Q1', 'Q2', 'Q3'; the qrels': "
                                                          r"'q1', 'q2', 'q3'\)"):
        res = sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=verdicts_table(rows))
    assert res.aggregate["Faithfulness"] is None
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"has no rows for 1 of the 3 judged queries \('q3'\); "
                                                          "their Faithfulness is empty"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness"], verdicts=verdicts_table([("q1", "answer", 1),
                                                                                   ("q2", "answer", 0)]))
    # The measures named are those asked for that read the verdicts (it once said Faithfulness whatever was asked)
    partial = verdicts_table([("q1", "reference", 1), ("q2", "answer", 0)])
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"\('q3'\); their ContextRecall is empty") as caught:
        sqlmetrics.evaluate(QRELS, RUN, ["ContextRecall", "nDCG@5"], verdicts=partial)
    assert not any("Faithfulness" in str(w.message) for w in caught)
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"their Faithfulness and ContextRecall are empty"):
        sqlmetrics.evaluate(QRELS, RUN, ["Faithfulness", "ContextRecall"], verdicts=partial)


@pytest.mark.parametrize("form", ["list", "long", "embed="])
def test_a_nan_or_infinite_embedding_is_named_with_its_row(form):
    """Once "AnswerRelevancy overflows a double ... use smaller grades": the input, the row and the real cause."""
    rows = [("q1", 0, [1.0, 0.0], 0), ("q1", 1, [float("nan"), 1.0], 0), ("q2", 0, [1.0, float("inf")], 0)]
    if form == "embed=":
        questions = pa.table({"query_id": ["q1", "q1"], "generated": [0, 1], "question": ["asked", "broken"]})
        with pytest.raises(SqlmetricsError, match=r"embeddings \(embedded by embed=\).*row 2: the embedding holds NaN"):
            sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=questions,
                                embed=lambda texts: [[1.0, 0.0] if t == "asked" else [float("nan"), 0.0] for t in texts])
        return
    table = as_arrays(rows) if form == "list" else as_long(rows)
    where = "row 2: the embedding holds NaN" if form == "list" else "row 3: the value is NaN or infinite"
    with pytest.raises(SqlmetricsError, match=re.escape(where)):
        sqlmetrics.evaluate(QRELS, RUN, ["AnswerRelevancy"], embeddings=table)
