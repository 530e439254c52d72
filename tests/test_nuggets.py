"""The nugget measures (nuggets=, assignments=): hand-computed values beside a ranking measure, by run name; alone
(the nuggets' topics, one column per run assigned); compare, report and the command line over them; and hostile
inputs, each refused naming the table, the row and what to do. The values against nuggetizer and random tables:
test_fuzz_nuggets.py (slow); the templates' own examples: test_catalogue.py."""
import csv
import math

import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.cli.main import main
from sqlmetrics.demo import make_nuggets
from sqlmetrics.stats.html import build_report

# t1: vital n1, okay n2; t2: okay m1 only (no vital nugget).
NUGGETS = {"topic": ["t1", "t1", "t2"], "nugget_id": ["n1", "n2", "m1"], "importance": ["vital", "okay", "okay"]}
# A supports n1 and partially m1 (n2 unlisted: not_support); B partially supports n1 and n2, fully m1.
ASSIGNMENTS = {"topic": ["t1", "t2", "t1", "t1", "t2"], "run": ["A", "A", "B", "B", "B"],
               "nugget_id": ["n1", "m1", "n1", "n2", "m1"],
               "assignment": ["support", "partial_support", "partial_support", "partial_support", "support"]}


def _tables(nuggets=None, assignments=None):
    return pa.table({**NUGGETS, **(nuggets or {})}), pa.table({**ASSIGNMENTS, **(assignments or {})})


@pytest.mark.slow  # a ranking measure's statement beside the nuggets' (~0.3 s); the catalogue's examples are fast
def test_beside_a_ranking_measure_each_run_by_its_name():
    n, a = _tables()
    qrels = {"t1": {"d1": 1}, "t2": {"d1": 1}}
    runs = {"B": {"t1": {"d1": 1.0}, "t2": {"d2": 1.0}}, "A": {"t1": {"d1": 1.0}, "t2": {"d1": 1.0}}}
    r = sqlmetrics.evaluate(qrels, runs, ["P@1", "NuggetAll", "NuggetVital", "NuggetWeightedStrict"],
                            nuggets=n, assignments=a)
    # A: All t1 (1 + 0)/2 = 1/2, t2 0.5/1 -> mean 1/2; Vital t1 1/1 = 1, t2 none: 0 -> 1/2;
    #    WeightedStrict t1 (1*1 + 0.5*0)/1.5 = 2/3, t2 0 -> 1/3.
    # B: All t1 (0.5 + 0.5)/2 = 1/2, t2 1 -> 3/4; Vital t1 0.5, t2 0 -> 1/4; WeightedStrict t1 0, t2 1 -> 1/2.
    want = {"A": (1.0, 0.5, 0.5, 1 / 3), "B": (0.5, 0.75, 0.25, 0.5)}
    for run, values in want.items():
        got = r.aggregate[run]
        assert [got[m] for m in ("P@1", "NuggetAll", "NuggetVital", "NuggetWeightedStrict")] == pytest.approx(values,
                                                                                                            abs=1e-12)
    with pytest.warns(UserWarning, match=r"no nuggets for 1 judged query \('t7'\)"):
        r = sqlmetrics.evaluate({"t1": {"d1": 1}, "t7": {"d1": 1}}, {"A": {"t1": {"d1": 1.0}, "t7": {"d1": 1.0}}},
                                ["NuggetAll"], nuggets=n, assignments=a)
    assert r.aggregate["A"]["NuggetAll"] == 0.5  # t1 alone: (1 + 0) / 2; t7 has no value


def test_alone_compare_and_the_command_line(tmp_path, capsys):
    n, a = _tables()
    r = sqlmetrics.evaluate(measures=["NuggetRecall"], nuggets=n, assignments=a)
    # A: t1 1/2, t2 1 -> 3/4; B: t1 1, t2 1 -> 1.
    assert r.aggregate == {"A": {"NuggetRecall": 0.75}, "B": {"NuggetRecall": 1.0}}
    nuggets, assignments = tmp_path / "n.csv", tmp_path / "a.csv"
    nuggets.write_text("qid,nugget,importance\nt1,n1,vital\nt1,n2,okay\nt2,m1,okay\n")
    assignments.write_text("qid,run,nugget,assignment\nt1,A,n1,support\nt2,A,m1,partial_support\n"
                           "t1,B,n2,support\nt2,B,m1,support\n")
    assert main(["eval", "--nuggets", str(nuggets), "--assignments", str(assignments), "-m", "NuggetAll", "-f",
                 "csv"]) == 0
    # A: t1 (1 + 0) / 2, t2 0.5 -> 1/2; B: t1 (0 + 1) / 2, t2 1 -> 3/4
    assert capsys.readouterr().out.splitlines()[1:3] == ["A,,0.5", "B,,0.75"]
    assert main(["compare", "--nuggets", str(nuggets), "--assignments", str(assignments), "-m", "NuggetAll", "-f",
                 "csv"]) == 0  # compare() over the runs the assignments name: B against A
    pair = next(csv.reader(capsys.readouterr().out.splitlines()[1:2]))
    assert pair[:3] == ["NuggetAll", "B", "A"] and [float(v) for v in pair[3:6]] == pytest.approx([0.75, 0.5, 0.25])


SLOW = pytest.mark.slow  # a hostile case test_fuzz_nuggets.py draws too: the fast tier's budget keeps the others
HOSTILE = [
    ({}, {"assignment": ["support", "Support", "support", "support", "support"]},
     "assignments (Arrow table), row 2: the assignment (column 'assignment') is 'Support'; it is one of 'support', "
     "'partial_support', 'not_support'"),
    ({"importance": ["vital", "high", "okay"]}, {}, "nuggets (Arrow table), row 2: the importance"),
    ({}, {"nugget_id": ["n1", "m1", "n1", "n1", "m1"]},
     "assignments (Arrow table), rows 3 and 4: one run's answer is assigned the same nugget twice (query_id 't1', "
     "run 'B', nugget 'n1')"),
    ({}, {"nugget_id": ["n1", "m1", "n1", "n9", "m1"]}, "row 4: nugget 't1 / n9' (topic / nugget) is not in nuggets"),
    ({}, {"topic": ["t1", "t2", "t1", "t1", "t9"]}, "row 5: topic 't9' has no nuggets in nuggets (Arrow table)"),
    pytest.param({"topic": ["t1", None, "t2"]}, {}, "nuggets (Arrow table), row 2: the query_id (column 'topic') is "
                 "empty", marks=SLOW),
    pytest.param({}, {"assignment": [None, "support", "support", "support", "support"]},
                 "row 1: the assignment (column ", marks=SLOW),
    ({"weight": [1.0, 0.0, 2.0]}, {}, "nuggets (Arrow table), row 2: the weight (column 'weight') is '0.0'"),
    ({"weight": [1.0, math.nan, 2.0]}, {}, "row 2: the weight (column 'weight') is 'nan'"),
    pytest.param({"weight": [1.0, 1e308, 2.0]}, {}, "row 2: the weight", marks=SLOW),
    ({"nugget_id": ["n1", "n1", "m1"]}, {}, "nuggets (Arrow table), rows 1 and 2: the same nugget of a topic twice"),
]


@pytest.mark.parametrize("nuggets, assignments, said", HOSTILE)
def test_hostile_inputs_are_named(nuggets, assignments, said):
    n, a = _tables(nuggets, assignments)
    with pytest.raises(SqlmetricsError) as e:
        sqlmetrics.evaluate(measures=["NuggetAll"], nuggets=n, assignments=a)
    assert said in str(e.value)


def test_a_run_the_assignments_do_not_name_and_missing_inputs():
    n, a = _tables()
    qrels, run = {"t1": {"d1": 1}}, {"t1": {"d1": 1.0}}
    with pytest.raises(SqlmetricsError, match=r"has no rows of run 'a' \(its runs: 'A', 'B'\)"):
        sqlmetrics.evaluate(qrels, {"a": run}, ["NuggetAll"], nuggets=n, assignments=a)
    with pytest.raises(SqlmetricsError, match="names 2 runs .* run=\\{name: run\\}"):
        sqlmetrics.evaluate(qrels, run, ["NuggetAll"], nuggets=n, assignments=a)
    with pytest.raises(SqlmetricsError, match="assignments= is missing"):
        sqlmetrics.evaluate(qrels, run, ["NuggetAll"], nuggets=n)
    with pytest.raises(SqlmetricsError, match="nDCG@10 ranks documents"):
        sqlmetrics.evaluate(measures=["nDCG@10"], nuggets=n, assignments=a)


@pytest.mark.slow  # one more statement; the hostile cases below are the fast tier's
def test_awkward_column_names_and_unicode_ids():
    """The topic column mapped by columns= (a space, a semicolon, a quote), the others by columns= too; unicode ids;
    one importance only (no vital nugget: Vital is 0)."""
    n = pa.table({"tópico; \"id\"": ["é1", "é1"], "Nugget Id": ["ν1", "ν2"], "imp": ["okay", "okay"]})
    a = pa.table({"tópico; \"id\"": ["é1"], "system": ["ß"], "Nugget Id": ["ν2"], "label": ["support"]})
    columns = {"query_id": "tópico; \"id\"", "nugget": "Nugget Id", "importance": "imp", "run": "system",
               "assignment": "label"}
    r = sqlmetrics.evaluate(measures=["NuggetAll", "NuggetVital"], nuggets=n, assignments=a, columns=columns)
    assert r.aggregate == {"ß": {"NuggetAll": 0.5, "NuggetVital": 0.0}}


@pytest.mark.slow  # rendering a whole statement with sqlglot (~0.5 s); test_engines runs it on every engine
def test_rendered_for_postgres_by_run_name():
    sql = sqlmetrics.render(["NuggetVitalStrict", "nDCG@10"], "postgres", qrels="qrels", run="runs",
                            columns={"run_name": "tag"}, nuggets="nuggets", assignments="assignments")
    assert "nugget_values" in sql and "DOUBLE PRECISION" in sql


@pytest.mark.slow  # the HTML report evaluates its curves too (~1 s)
def test_report_draws_the_nugget_measures():
    n, a = _tables()
    qrels = {"t1": {"d1": 1}, "t2": {"d1": 1}}
    runs = {"A": {"t1": {"d1": 1.0}, "t2": {"d1": 1.0}}, "B": {"t1": {"d1": 1.0}, "t2": {"d2": 1.0}}}
    page = build_report(qrels, runs, ["nDCG@10", "NuggetVitalStrict"], nuggets=n, assignments=a)
    assert "NuggetVitalStrict" in page.to_html()


@pytest.mark.slow  # reads the demo's two files
def test_the_demo_files_are_what_make_nuggets_writes():
    nuggets, assignments = make_nuggets.rows()
    for name, rows in (("rag_nuggets.csv", nuggets), ("rag_assignments.csv", assignments)):
        with open(make_nuggets.FOLDER / name, newline="", encoding="utf-8") as f:
            assert [tuple(r) for r in list(csv.reader(f))[1:]] == rows, name
    vital = {t for t, _, importance in nuggets if importance == "vital"}
    assert len({t for t, _, _ in nuggets}) == 20 and len(vital) == 15  # every fourth topic has no vital nugget
