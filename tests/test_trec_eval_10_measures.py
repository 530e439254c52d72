"""trec_eval 10.0's own test suite: every number it prints that has a counterpart in the catalogue, evaluated
with compat="trec_eval-10.0".

The inputs and expected outputs sit in ../shared/data/trec_eval_10_test (its README gives the trec_eval command
behind each file). Lines are `measure<TAB>query-or-all<TAB>value`, values with 4 decimals: we allow half a unit
in the last place. Each printed name is passed as the measure string, so trec_eval's spellings are checked too.
Every printed measure is compared unless NOT_COMPARED says why not.
"""
import warnings

import pytest

import sqlmetrics
from conftest import trec_eval_printed
from sqlmetrics.catalogue import parse

TOLERANCE = 0.00005 + 1e-9  # trec_eval prints 4 decimals (rounded); the hair absorbs float noise

NOT_COMPARED = {
    "runid": "the run's name, not a measure",
    "relstring": "a string of the top-10 relevance grades, not a number",
    "relstring_20": "relstring for the top 20 (out.test.aql asks for it with -mrelstring.20)",
    "11pt_avg_.25,.5,.75": "11pt_avg over custom recall points: the catalogue has the default eleven only "
                           "(`sqlmetrics trec_eval` prints it as the mean of IPrec at those points: test_trec_eval_cli)",
}

SUMMED = {"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}  # their 'all' row is a sum

# Expected file -> the evaluate() arguments equivalent to its trec_eval command (README). Without -c trec_eval
# averages the queries in both files (queries="intersection"); results.trunc lacks topic 302, so out.test.aqc
# (-c) is where queries="qrels" matters: 10.0 evaluates 302 as an empty ranking and prints its row.
FILES = {
    "out.test.aq": dict(qrels="qrels.test", run="results.test", queries="intersection"),
    "out.test.aqc": dict(qrels="qrels.test", run="results.trunc", queries="qrels"),
    "out.test.aql": dict(qrels="qrels.rel_level", run="results.test", queries="intersection", relevance_level=2),
    "out.test.meas_params": dict(qrels="qrels.test", run="results.test", queries="intersection"),
}


def _compared(printed) -> list:
    return [m for m in printed if m not in NOT_COMPARED]


@pytest.mark.parametrize("expected_file", FILES)
def test_matches_trec_eval_10(expected_file, trec_eval_10_dir):
    printed = trec_eval_printed(trec_eval_10_dir / expected_file)
    measures = _compared(printed)
    args = FILES[expected_file]
    options = {k: v for k, v in args.items() if k not in ("qrels", "run")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # out.test.aqc's run misses a judged query: expected
        results = sqlmetrics.evaluate(trec_eval_10_dir / args["qrels"], trec_eval_10_dir / args["run"], measures,
                                      compat="trec_eval-10.0", **options)
    rows = {row["query_id"]: row for row in results.per_query.to_pylist()}
    wrong = []
    for measure in measures:
        for qid, text in printed[measure].items():
            ours = results.aggregate[measure] if qid == "all" else rows[qid][measure]
            if ours is None or abs(ours - float(text)) > TOLERANCE:
                wrong.append(f"  {measure} {qid}: ours={ours!r} trec_eval={text}")
        if measure in SUMMED:
            assert results.aggregate[measure] == pytest.approx(sum(r[measure] for r in rows.values()), abs=1e-9)
    assert not wrong, f"{expected_file}:\n" + "\n".join(wrong)


def test_every_printed_measure_is_accounted_for(trec_eval_10_dir):
    """A printed measure is compared (and must then be a measure string the package reads) or listed in
    NOT_COMPARED with why; a NOT_COMPARED entry no file prints is stale."""
    printed = set()
    for expected_file in FILES:
        names = trec_eval_printed(trec_eval_10_dir / expected_file)
        printed |= set(names)
        for measure in _compared(names):
            parse(measure)  # raises for a measure the catalogue does not have
    assert set(NOT_COMPARED) <= printed, "a NOT_COMPARED entry is printed by no file"
