"""The diversity measures (ndeval's, over subtopic qrels: qrels_format='subtopics') against ir_measures' pyndeval
provider, the TREC Web track's ndeval.c compiled, on generated qrels and runs: per-query values to 1e-9.

The generated data has several queries with one to four subtopics, graded and binary judgments (negative grades
too), unjudged documents in the runs, a query with no relevant subtopic and one that is judged but not ranked;
no score ties (pyndeval breaks them by document id ascending, this package by default descending). ir_measures
0.4.3 hands its run to each pyndeval invocation from one iterator, so every measure after the first of one call
scores 0: it is called once per measure here.
"""
from __future__ import annotations

import math
import random

import ir_measures
import pyarrow as pa
import pyndeval
import pytest
from ir_measures import Qrel, ScoredDoc

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.catalogue import parse
from sqlmetrics.cli import main
from sqlmetrics.dialects import render
from sqlmetrics.plan import plan_measures

# The generated runs skip a judged query and rank one without judgments, which evaluate() warns about.
pytestmark = pytest.mark.filterwarnings("ignore::sqlmetrics.SqlmetricsWarning")
TOLERANCE = 1e-9
# ir_measures' spellings, which are ours too; cutoffs 1 (ERR-IA's unnormalised first rank), 2, 5, 10, 20.
MEASURES = [
    *(f"alpha_nDCG@{k}" for k in (1, 2, 5, 10, 20)), "alpha_nDCG(alpha=0.3)@10", "alpha_nDCG(alpha=0.9)@5",
    *(f"ERR_IA@{k}" for k in (1, 2, 5, 20)), *(f"nERR_IA@{k}" for k in (1, 3, 10, 20)),
    *(f"P_IA@{k}" for k in (1, 5, 20)), *(f"StRecall@{k}" for k in (1, 5, 20)),
    "NRBP", "NRBP(alpha=0.7,beta=0.3)", "AP_IA",
    *(f"alpha_DCG@{k}" for k in (1, 2, 5, 20)), "alpha_DCG(alpha=0.3)@10",
]
# nNRBP follows its greedy ideal ranking 34 positions deep at beta 0.5 (plan.py): a deeper statement, apart.
NNRBP = ["nNRBP", "nNRBP(alpha=0.7,beta=0.3)"]


def generated(seed: int, grades: tuple) -> tuple[list, list]:
    """(qrels rows (query, subtopic, doc, grade), run rows (query, doc, score))."""
    rnd = random.Random(seed)
    qrels, run = [], []
    for qi in range(7):
        q = f"q{qi}"
        docs = [f"{q}_d{i:02d}" for i in range(16)] + ["shared_a", "shared_b"]  # ids two queries both judge
        for s in range(rnd.randint(1, 4)):
            for d in docs:
                if rnd.random() < 0.35:
                    grade = rnd.choice((-1, 0)) if q == "q1" else rnd.choice(grades)  # q1: no relevant subtopic
                    qrels.append((q, f"st{s}", d, grade))
        if q == "q2":
            continue  # judged, not ranked
        ranked = rnd.sample(docs, 12) + [f"{q}_unjudged{i}" for i in range(4)]
        scores = rnd.sample(range(1000), len(ranked))  # no ties
        run += [(q, d, s / 10) for d, s in zip(ranked, scores)]
    run += [("q_unjudged", "x1", 1.0), ("q_unjudged", "x2", 0.5)]
    return qrels, run


def qrels_table(qrels) -> pa.Table:
    return pa.table({"query_id": [r[0] for r in qrels], "subtopic": [r[1] for r in qrels],
                     "doc_id": [r[2] for r in qrels], "relevance": [r[3] for r in qrels]})


def run_table(run) -> pa.Table:
    return pa.table({"query_id": [r[0] for r in run], "doc_id": [r[1] for r in run], "score": [r[2] for r in run]})


def ir_measures_values(measure: str, qrels, run) -> dict:
    """{query: value} from ir_measures' pyndeval provider, one measure per call."""
    parsed = ir_measures.parse_measure(measure)
    qrels = [Qrel(q, d, g, s) for q, s, d, g in qrels]  # ir_measures keeps the subtopic in `iteration`
    run = [ScoredDoc(q, d, score) for q, d, score in run]
    return {m.query_id: m.value for m in ir_measures.pyndeval.iter_calc([parsed], qrels, run)}


def ours(measures, qrels, run, **options) -> dict:
    per_query = sqlmetrics.evaluate(qrels_table(qrels), run_table(run), measures, qrels_format="subtopics",
                                    **options).per_query.to_pylist()
    return {m: {row["query_id"]: row[m] for row in per_query} for m in measures}


def assert_equal(mine: dict, theirs: dict, measure: str):
    assert theirs, f"{measure}: the oracle evaluated no query"
    # pyndeval evaluates the queries both judged and ranked; a judged query the run misses scores 0 here.
    assert set(theirs) <= set(mine)
    # ndeval's nNRBP of a query with no relevant subtopic is 0/0: NaN there, 0 here, as every diversity measure.
    bad = [f"{q}: ours {mine[q]!r}, pyndeval {theirs[q]!r}" for q in theirs
           if not (mine[q] == 0 if math.isnan(theirs[q]) else abs(mine[q] - theirs[q]) <= TOLERANCE)]
    assert not bad, f"{measure}:\n" + "\n".join(bad)
    assert all(mine[q] == 0 for q in set(mine) - set(theirs)), measure


DATA = {"graded": generated(7, (-1, 0, 1, 1, 2, 3)), "binary": generated(11, (0, 1, 1)),
        "sparse": generated(23, (0, 0, 0, 1))}


# graded and sparse are the fast cases (binary's grades are graded's first two); the full suite runs all three.
@pytest.mark.parametrize("data", [d if d != "binary" else pytest.param(d, marks=pytest.mark.slow) for d in DATA])
def test_equals_pyndeval(data):
    qrels, run = DATA[data]
    mine = ours(MEASURES, qrels, run)
    for measure in MEASURES:
        assert_equal(mine[measure], ir_measures_values(measure, qrels, run), measure)
    assert mine["alpha_nDCG@5"]["q1"] == 0 and mine["AP_IA"]["q2"] == 0  # no relevant subtopic; not ranked


@pytest.mark.parametrize("data", [pytest.param(name, marks=[] if name == "graded" else [pytest.mark.slow])
                                  for name in DATA])
def test_nnrbp_equals_pyndeval(data):
    qrels, run = DATA[data]
    mine = ours(NNRBP, qrels, run)
    for measure in NNRBP:
        assert_equal(mine[measure], ir_measures_values(measure, qrels, run), measure)
    assert math.isnan(ir_measures_values("nNRBP", qrels, run)["q1"]) and mine["nNRBP"]["q1"] == 0


def test_relevance_level_is_ndeval_rel():
    """relevance_level=2: a judgment counts for its subtopic from grade 2 (ir_measures' rel=2)."""
    qrels, run = DATA["graded"]
    measures = ["alpha_nDCG@10", "nERR_IA@5", "ERR_IA@5", "P_IA@5", "StRecall@5", "NRBP", "AP_IA", "alpha_DCG@10"]
    mine = ours(measures, qrels, run, relevance_level=2)
    for measure in measures:
        name, _, at = measure.partition("@")
        theirs = ir_measures_values(f"{name}(rel=2)" + (f"@{at}" if at else ""), qrels, run)
        assert_equal(mine[measure], theirs, measure)


def test_ndeval_spellings_and_alpha_for_err_ia():
    """ndeval's names are aliases; ERR-IA and nERR-IA take ndeval's -alpha (ir_measures fixes 0.5): pyndeval
    itself is the oracle there."""
    qrels, run = DATA["binary"]
    named = ["alpha-nDCG@10", "ERR-IA@10", "nERR-IA@10", "P-IA@5", "strec@5", "MAP-IA", "alpha-DCG@10"]
    mine = ours([*named, "ERR_IA(alpha=0.3)@10", "nERR_IA(alpha=0.3)@10"], qrels, run)
    for alpha, measures in ((0.5, named), (0.3, ["ERR-IA@10", "nERR-IA@10"])):
        evaluator = pyndeval.RelevanceEvaluator(qrels, measures, alpha=alpha)
        theirs = evaluator.evaluate(sorted(run))
        for m in measures:
            column = m if alpha == 0.5 else m.replace("-", "_").replace("@", f"(alpha={alpha})@")
            assert_equal(mine[column], {q: v[m] for q, v in theirs.items()}, column)


def test_ir_measures_other_spellings():
    assert parse("α_nDCG@5").measure.name == "alpha_nDCG" and parse("MAP_IA").measure.name == "AP_IA"
    assert parse("α_DCG@5").measure.name == "alpha_DCG"


def test_other_measures_read_each_documents_highest_grade():
    qrels, run = DATA["graded"]
    highest: dict = {}
    for q, _, d, g in qrels:
        highest.setdefault(q, {})[d] = max(g, highest.get(q, {}).get(d, g))
    plain = sqlmetrics.evaluate(highest, run_table(run), ["nDCG@10", "P@5"]).per_query.to_pylist()
    mine = ours(["nDCG@10", "P@5", "alpha_nDCG@10"], qrels, run)
    assert {r["query_id"]: r["nDCG@10"] for r in plain} == mine["nDCG@10"]
    assert {r["query_id"]: r["P@5"] for r in plain} == mine["P@5"]


@pytest.mark.slow  # evaluate and the command line over one file; the pyndeval cases stay fast
def test_four_column_file_through_evaluate_and_the_cli(tmp_path, capsys):
    qrels, run = DATA["graded"]
    qrels_file, run_file = tmp_path / "subtopics.qrels", tmp_path / "a.run"
    qrels_file.write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in qrels))
    ranked = sorted(run, key=lambda r: (r[0], -r[2]))
    run_file.write_text("".join(f"{q} Q0 {d} {i} {s} a\n" for i, (q, d, s) in enumerate(ranked)))
    measures = ["alpha_nDCG@10", "ERR_IA@20", "AP_IA"]
    from_file = sqlmetrics.evaluate(str(qrels_file), str(run_file), measures, qrels_format="subtopics")
    expected = ours(measures, qrels, run)
    for m in measures:
        assert {r["query_id"]: r[m] for r in from_file.per_query.to_pylist()} == expected[m]
    assert main(["eval", str(qrels_file), str(run_file), "-R", "subtopics", "-m", "alpha_nDCG@10", "-f", "csv"]) == 0
    out = capsys.readouterr().out
    assert f"{from_file.aggregate['alpha_nDCG@10']:.4f}" in out


def test_a_diversity_measure_needs_subtopic_qrels(tmp_path):
    qrels, run = DATA["binary"]
    with pytest.raises(SqlmetricsError, match=r"alpha_nDCG@10.*subtopic qrels.*qrels_format='subtopics'.*-R subtopics"):
        sqlmetrics.evaluate({"q0": {"q0_d01": 1}}, run_table(run), ["alpha_nDCG@10"])
    with pytest.raises(SqlmetricsError, match="qrels_format='subtopics' needs a 'subtopic' column"):
        sqlmetrics.evaluate({"q0": {"q0_d01": 1}}, run_table(run), ["alpha_nDCG@10"], qrels_format="subtopics")
    twice = tmp_path / "twice.qrels"
    twice.write_text("q0 st0 d1 1\nq0 st1 d1 1\nq0 st0 d1 0\n")
    with pytest.raises(SqlmetricsError, match=r"twice\.qrels.*in subtopic .st0. \(lines 1 and 3\)"):
        sqlmetrics.evaluate(str(twice), run_table(run), ["alpha_nDCG@10"], qrels_format="subtopics")


def deep(seed: int) -> tuple[list, list]:
    """Queries with 40 to 60 subtopics and about 100 documents relevant to one or two of them: nNRBP's greedy ideal
    ranking gains 1 or more at each of its first 40 positions, so all of them weigh (beta^34 is 6e-11)."""
    rnd = random.Random(seed)
    qrels, run = [], []
    for q in ("q0", "q1", "q2"):
        docs = [f"{q}_d{i:03d}" for i in range(150)]
        qrels += [(q, f"st{s}", d, 1) for s in range(rnd.randint(40, 60)) for d in docs if rnd.random() < 0.02]
        run += [(q, d, float(200 - i)) for i, d in enumerate(rnd.sample(docs, 60))]
    return qrels, run


@pytest.mark.slow
def test_nnrbp_follows_a_long_ideal_ranking():
    """nNRBP's ideal is the greedy ranking of every judged document: to 1e-9 of pyndeval's with about 100 of them,
    at beta 0.5 (34 positions followed: 18 would be 1e-6 off), 0.3 and 0.8 (104)."""
    qrels, run = deep(5)
    assert min(len({d for q, _, d, _ in qrels if q == query}) for query in ("q0", "q1", "q2")) > 60
    measures = ["nNRBP", "nNRBP(alpha=0.3,beta=0.3)", "nNRBP(beta=0.8)"]
    mine = ours(measures, qrels, run)
    for measure in measures:
        assert_equal(mine[measure], ir_measures_values(measure, qrels, run), measure)


def test_nnrbp_refuses_a_beta_whose_ideal_ranking_is_too_deep(cli, tmp_path):
    """beta 0.9 would weigh the ideal ranking 219 positions deep: refused, naming the parameter, on the command line
    in one line with exit 2; 0.85 (142 positions) is the largest hundredth taken."""
    qrels, run = DATA["binary"]
    with pytest.raises(SqlmetricsError, match=r"nNRBP\(beta=0.9\)', parameter 'beta'.* 219 positions.*up to 0\.85"):
        ours(["nNRBP(beta=0.9)"], qrels, run)
    assert plan_measures([parse("nNRBP(beta=0.85)")], 1).subtopic_depth == 142
    (tmp_path / "q").write_text("q1 s1 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1.0 r\n")
    code, out, err = cli("eval", "q", "r", "-R", "subtopics", "-m", "nNRBP(beta=0.99)")
    assert code == 2 and out == "" and err.count("\n") == 1 and "'beta'" in err


def test_an_engine_is_told_when_the_greedy_ideal_ranking_is_too_deep_for_it():
    """Spark's analyzer takes 20 greedy positions, SQLite's expression depth 42 (DialectInfo.greedy_depth): a deeper
    statement is refused before the engine sees it, naming the measures, the depth and the way out."""
    with pytest.raises(SqlmetricsError, match=r"ranking of nNRBP is 34 positions deep .* spark takes 20: .*0\.3"):
        render(["nNRBP"], dialect="spark", qrels_format="subtopics")
    with pytest.raises(SqlmetricsError, match=r"alpha_nDCG@43, P_IA@5 is 43 positions deep .* sqlite takes 42"):
        render(["alpha_nDCG@43", "P_IA@5"], dialect="sqlite", qrels_format="subtopics")
