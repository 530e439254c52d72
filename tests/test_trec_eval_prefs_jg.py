"""trec_eval 10.0's judgment-group measures (-R qrels_jg): every number of its own test files.

The inputs and expected outputs sit in ../shared/data/trec_eval_10_test (its README gives the trec_eval
command behind each file). Lines are `measure<TAB>query-or-all<TAB>value`, 4 decimals: we allow half a
unit in the last place. Measures are passed under trec_eval's names.
"""
import functools

import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

TOLERANCE = 0.00005 + 1e-9  # trec_eval prints 4 decimals (rounded); the hair absorbs float noise

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# `-m qrels_jg`: trec_eval's judgment-group measures, with their default parameters.
QRELS_JG = ["map_avgjg", *[f"P_avgjg_{k}" for k in CUTOFFS], *[f"Rprec_mult_avgjg_{x / 10:.2f}" for x in range(2, 21, 2)]]

# Printed, not compared here: the lead's command-line tests cover them.
SKIPPED = {"runid": "the run's name, not a measure", "num_q": "the number of queries (command line)"}

# Expected file -> evaluate() arguments equivalent to its trec_eval command, and the measures compared.
# trec_eval without -c averages over the queries in both files: queries="intersection".
FILES = {
    "out.test.qrels_jg": (dict(qrels="qrels.123", run="results.test", queries="intersection",
                               qrels_format="qrels_jg"), QRELS_JG),
}


@functools.lru_cache(maxsize=None)
def _printed(path):
    """{measure: {query id or 'all': value text}} from one trec_eval output file."""
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split("\t")
        out.setdefault(measure.strip(), {})[qid] = value
    return out


@functools.lru_cache(maxsize=None)
def _evaluated(folder, expected_file):
    args, measures = FILES[expected_file]
    args = dict(args, qrels=str(folder / args["qrels"]), run=str(folder / args["run"]))
    return sqlmetrics.evaluate(measures=measures, **args)


def _cases():
    return [(f, m) for f, (_, measures) in FILES.items() for m in measures]


@pytest.mark.parametrize("expected_file,measure", _cases())
def test_every_value_matches(trec_eval_10_dir, expected_file, measure):
    printed = _printed(trec_eval_10_dir / expected_file)[measure]
    res = _evaluated(trec_eval_10_dir, expected_file)
    per_query = {row["query_id"]: row[measure] for row in res.per_query.to_pylist()}
    assert set(per_query) | {"all"} == set(printed), "the queries differ"
    for qid, text in printed.items():
        value = res.aggregate[measure] if qid == "all" else per_query[qid]
        assert abs(value - float(text)) <= TOLERANCE, f"{measure} {qid}: {value} vs trec_eval {text}"


@pytest.mark.parametrize("expected_file", FILES)
def test_every_printed_measure_is_accounted_for(trec_eval_10_dir, expected_file):
    compared = set(FILES[expected_file][1])
    printed = set(_printed(trec_eval_10_dir / expected_file))
    assert printed - compared == set(SKIPPED) & printed, sorted(printed - compared - set(SKIPPED))
    assert compared <= printed, sorted(compared - printed)


# --- judgment groups by hand ---------------------------------------------------------------------------

def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_judgment_groups_are_averaged_by_hand(tmp_path):
    # q1 is ranked d1 d2 d3. Group a judges d1 and d3 relevant: AP = (1/1 + 2/3) / 2 = 5/6, P@2 = 1/2.
    # Group b judges d2 relevant (d1 non-relevant, d3 unjudged): AP = 1/2, P@2 = 1/2. Their means: 2/3, 1/2.
    # Group c judges nothing relevant: AP 0, P@2 0; with it the means are (5/6 + 1/2 + 0) / 3 = 4/9, 1/3.
    qrels = _write(tmp_path, "qrels_jg", ["q1 a d1 1", "q1 a d3 2", "q1 b d1 0", "q1 b d2 1", "q2 a d9 1"])
    run = _write(tmp_path, "run", ["q1 Q0 d1 1 0.9 r", "q1 Q0 d2 2 0.8 r", "q1 Q0 d3 3 0.7 r"])
    res = sqlmetrics.evaluate(qrels, run, ["map_avgjg", "P_avgjg_2"], queries="intersection", qrels_format="qrels_jg")
    assert res.aggregate["map_avgjg"] == pytest.approx(2 / 3)
    assert res.aggregate["P_avgjg_2"] == pytest.approx(1 / 2)
    with_c = _write(tmp_path, "qrels_jg_c", ["q1 a d1 1", "q1 a d3 2", "q1 b d1 0", "q1 b d2 1", "q1 c d2 0"])
    res = sqlmetrics.evaluate(with_c, run, ["map_avgjg", "P_avgjg_2"], qrels_format="qrels_jg")
    assert res.aggregate["map_avgjg"] == pytest.approx(4 / 9)
    assert res.aggregate["P_avgjg_2"] == pytest.approx(1 / 3)
    # queries="qrels": q2 (judged by group a, not ranked) scores 0 and is averaged.
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="no ranking"):
        res = sqlmetrics.evaluate(qrels, run, ["map_avgjg"], qrels_format="qrels_jg")
    assert res.aggregate["map_avgjg"] == pytest.approx(1 / 3)
    # Read as ordinary qrels, the second field is ignored: d1 is judged twice for q1, which is refused.
    with pytest.raises(SqlmetricsError, match="more than once"):
        sqlmetrics.evaluate(qrels, run, ["map"])


def test_judgment_groups_from_a_table(tmp_path):
    import pandas as pd

    qrels = pd.DataFrame({"query_id": ["q1"] * 4, "jg": ["a", "a", "b", "b"], "doc_id": ["d1", "d3", "d1", "d2"],
                          "relevance": [1, 2, 0, 1]})
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [0.9, 0.8, 0.7]})
    res = sqlmetrics.evaluate(qrels, run, ["AP", "P@2"], qrels_format="qrels_jg")
    assert res.aggregate["AP"] == pytest.approx(2 / 3)
    assert res.aggregate["P@2"] == pytest.approx(1 / 2)
    with pytest.raises(SqlmetricsError, match="judgment_group"):
        sqlmetrics.evaluate(qrels.drop(columns="jg"), run, ["AP"], qrels_format="qrels_jg")
    with pytest.raises(SqlmetricsError, match="judgment group 'a'"):
        sqlmetrics.evaluate(pd.concat([qrels, qrels.head(1)]), run, ["AP"], qrels_format="qrels_jg")
