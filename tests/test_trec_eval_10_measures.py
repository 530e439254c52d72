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


# trec_eval 10.0's dcg and ideal_dcg (m_ndcg.c), which its own suite never prints: what the 10.0 binary printed
# (built from usnistgov/trec_eval's "version 10.0" commit), kept as literals since CI has no trec_eval. The small
# case is checked by hand below; qrels.test's rows are the suite's inputs, with -c over results.trunc (302 ranked
# nothing: dcg 0, its ideal DCG still). Without -c, 10.0 stops at q2 (judged, not ranked), so every command has -c.
# (10.0 aborts on a double free when dcg, ideal_dcg or ndcg are asked together and one has gains: one at a time.)
SMALL_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq1 0 d4 1\nq2 0 d9 1\n"
SMALL_RUN = "q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d5 3 0.7 r\nq1 Q0 d3 4 0.6 r\n"
# q1 ranks d1 (1), d2 (0), d5 (unjudged), d3 (2): dcg 1 + 2/log2(5) = 1.8614; ideal 2, 1, 1: 2 + 1/log2(3) + 1/2 =
# 3.1309. q2: dcg 0, ideal 1. Gains 0=1,2=5: 1 + 1/log2(3) + 5/log2(5) = 3.7843 (q2's d9 is not ranked: 0). Gains
# 1=3,2=1: ideal 3, 3, 1 = 3 + 3/log2(3) + 1/2 = 5.3928, q2 3. Gain 1=-1: (-1 + 2/log2(5) + 0) / 2 = -0.0693.
# Gain 0=1: ideal (3.1309 + 1/log2(5) + 1) / 2 = 2.2808.
DCG_COMMANDS = [
    ("small", "-q -c -m dcg -m ideal_dcg", "dcg                   \tq1\t1.8614\nideal_dcg             \tq1\t3.1309\n"
     "dcg                   \tq2\t0.0000\nideal_dcg             \tq2\t1.0000\n"
     "dcg                   \tall\t0.9307\nideal_dcg             \tall\t2.0655\n"),
    ("small", "-q -c -m dcg.0=1,2=5", "dcg_0=1,2=5           \tq1\t3.7843\ndcg_0=1,2=5           \tq2\t0.0000\n"
     "dcg_0=1,2=5           \tall\t1.8922\n"),
    ("small", "-q -c -m ideal_dcg.1=3,2=1", "ideal_dcg_1=3,2=1     \tq1\t5.3928\nideal_dcg_1=3,2=1     \tq2\t3.0000\n"
     "ideal_dcg_1=3,2=1     \tall\t4.1964\n"),
    ("small", "-c -m dcg.1=-1", "dcg_1=-1              \tall\t-0.0693\n"),
    ("small", "-c -m ideal_dcg.0=1", "ideal_dcg_0=1         \tall\t2.2808\n"),
    ("suite", "-q -c -m dcg -m ideal_dcg qrels.test results.trunc",
     "dcg                   \t301\t10.7146\nideal_dcg             \t301\t67.6459\n"
     "dcg                   \t302\t0.0000\nideal_dcg             \t302\t17.3927\n"
     "dcg                   \t303\t2.1489\nideal_dcg             \t303\t4.5436\n"
     "dcg                   \tall\t4.2879\nideal_dcg             \tall\t29.8607\n"),
    ("suite", "-q -l2 -m dcg -m ideal_dcg qrels.rel_level results.test",
     "dcg                   \t301\t11.0775\nideal_dcg             \t301\t79.3480\n"
     "dcg                   \t302\t34.5255\nideal_dcg             \t302\t52.1780\n"
     "dcg                   \t303\t2.9008\nideal_dcg             \t303\t7.9069\n"
     "dcg                   \tall\t16.1679\nideal_dcg             \tall\t46.4776\n"),
    ("suite", "-m dcg.1=3,2=9,4=4.5 qrels.test results.test", "dcg_1=3,2=9,4=4.5     \tall\t23.9781\n"),
    # A gain in an exponent's notation, as trec_eval's atof reads it: 100 + 2/log2(5).
    ("small", "-q -c -m dcg.1=1e2", "dcg_1=1e2             \tq1\t100.8614\ndcg_1=1e2             \tq2\t0.0000\n"
     "dcg_1=1e2             \tall\t50.4307\n"),
]


@pytest.mark.parametrize("inputs,args,expected", DCG_COMMANDS, ids=[args for _, args, _ in DCG_COMMANDS])
def test_dcg_and_ideal_dcg_print_trec_eval_10s_bytes(cli, tmp_path, trec_eval_10_dir, inputs, args, expected):
    if inputs == "small":
        (tmp_path / "qrels").write_text(SMALL_QRELS)
        (tmp_path / "run").write_text(SMALL_RUN)
        files = ["qrels", "run"]
    else:
        files = [trec_eval_10_dir / name for name in args.split()[-2:]]
        args = " ".join(args.split()[:-2])
    code, out, err = cli("trec_eval", *args.split(), *files)
    assert code == 0, err
    assert out == expected
