"""trec_eval 10.0's judgment-group (-R qrels_jg) and preference (-R prefs, -R qrels_prefs) measures: every
number of its own test files, and small cases worked out by hand.

The inputs and expected outputs sit in ../shared/data/trec_eval_10_test (its README gives the trec_eval
command behind each file). Lines are `measure<TAB>query-or-all<TAB>value`, 4 decimals: we allow half a
unit in the last place. Measures are passed under trec_eval's names.
"""
import functools

import pytest

import sqlmetrics
from conftest import trec_eval_printed
from sqlmetrics import SqlmetricsError

TOLERANCE = 0.00005 + 1e-9  # trec_eval prints 4 decimals (rounded); the hair absorbs float noise

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# `-m qrels_jg`: trec_eval's judgment-group measures, with their default parameters.
QRELS_JG = ["map_avgjg", *[f"P_avgjg_{k}" for k in CUTOFFS], *[f"Rprec_mult_avgjg_{x / 10:.2f}" for x in range(2, 21, 2)]]

# `-m all_prefs`, in the order trec_eval prints them.
PREFS = ["prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
         "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
         "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp"]

# Printed, not compared here: the lead's command-line tests cover them.
SKIPPED = {"runid": "the run's name, not a measure", "num_q": "the number of queries (command line)"}

# Expected file -> evaluate() arguments equivalent to its trec_eval command, and the measures compared.
# trec_eval without -c averages over the queries in both files: queries="intersection".
FILES = {
    "out.test.qrels_jg": (dict(qrels="qrels.123", run="results.test", queries="intersection",
                               qrels_format="qrels_jg"), QRELS_JG),
    # trec_eval's preference code breaks score ties by document id ascending (form_prefs_counts.c), unlike
    # its other measures: ties="docid_asc" (results.test has ties that change prefs_simp in the 7th place).
    "out.test.prefs": (dict(qrels="prefs.test", run="prefs.results.test", queries="intersection",
                            qrels_format="prefs", ties="docid_asc"), PREFS),
    "out.test.qrels_prefs": (dict(qrels="qrels.test", run="results.test", queries="intersection",
                                  qrels_format="qrels_prefs", ties="docid_asc"), PREFS),
}


@functools.lru_cache(maxsize=None)
def _evaluated(folder, expected_file):
    args, measures = FILES[expected_file]
    args = dict(args, qrels=str(folder / args["qrels"]), run=str(folder / args["run"]))
    return sqlmetrics.evaluate(measures=measures, **args)


def _cases():
    return [(f, m) for f, (_, measures) in FILES.items() for m in measures]


# Every value of the three files, within TOLERANCE: the full suite's. The fast suite holds the same files byte for
# byte through `sqlmetrics trec_eval` (test_trec_eval_cli.py).
@pytest.mark.slow
@pytest.mark.parametrize("expected_file,measure", _cases())
def test_every_value_matches(trec_eval_10_dir, expected_file, measure):
    printed = trec_eval_printed(trec_eval_10_dir / expected_file)[measure]
    res = _evaluated(trec_eval_10_dir, expected_file)
    per_query = {row["query_id"]: row[measure] for row in res.per_query.to_pylist()}
    assert set(per_query) | {"all"} == set(printed), "the queries differ"
    for qid, text in printed.items():
        value = res.aggregate[measure] if qid == "all" else per_query[qid]
        assert abs(value - float(text)) <= TOLERANCE, f"{measure} {qid}: {value} vs trec_eval {text}"


@pytest.mark.parametrize("expected_file", FILES)
def test_every_printed_measure_is_accounted_for(trec_eval_10_dir, expected_file):
    compared = set(FILES[expected_file][1])
    printed = set(trec_eval_printed(trec_eval_10_dir / expected_file))
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


def test_judgment_groups_with_positions(tmp_path):
    # rows: positions per group. NERR9(max_rel=2)@3 on d1 d2 d3: group a's gains 1/2, 0, 1 give P = 1, 1/4, 1/6 and
    # (1/2 + 1/6) / (17/12) = 8/17; group b's 0, 1/2, 0 give P = 1, 1/2, 1/6 and (1/4) / (5/3) = 3/20.
    qrels = _write(tmp_path, "qrels_jg", ["q1 a d1 1", "q1 a d3 2", "q1 b d1 0", "q1 b d2 1"])
    run = _write(tmp_path, "run", ["q1 Q0 d1 1 0.9 r", "q1 Q0 d2 2 0.8 r", "q1 Q0 d3 3 0.7 r"])
    res = sqlmetrics.evaluate(qrels, run, ["NERR9(max_rel=2)@3"], qrels_format="qrels_jg")
    assert res.aggregate["NERR9(max_rel=2)@3"] == pytest.approx((8 / 17 + 3 / 20) / 2, abs=1e-12)


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


# --- preferences by hand ---------------------------------------------------------------------------------

def test_preferences_by_hand(tmp_path):
    # Group A: d1 > d2 (subgroup s1) and d2 > d3 (s2), so d1 > d3 by transitivity: 3 preferences. Group B:
    # d3 > d1. The run ranks d3, d1, d2: A's d1 > d2 is fulfilled, d2 > d3 and d1 > d3 are not (1/3); B's is.
    prefs = _write(tmp_path, "prefs", ["q1 A s1 d1 2", "q1 A s1 d2 1", "q1 A s2 d2 2", "q1 A s2 d3 1",
                                       "q1 B s1 d3 1", "q1 B s1 d1 0"])
    run = _write(tmp_path, "run", ["q1 Q0 d3 1 0.9 r", "q1 Q0 d1 2 0.8 r", "q1 Q0 d2 3 0.7 r"])
    res = sqlmetrics.evaluate(prefs, run, PREFS, qrels_format="prefs").aggregate
    assert res["prefs_num_prefs_poss"] == 4 and res["prefs_num_prefs_ful"] == 2
    assert res["prefs_simp"] == pytest.approx(2 / 4)
    assert res["prefs_avgjg"] == pytest.approx((1 / 3 + 1) / 2)
    # Pairs: {d1, d2} 1 (d1 above, A agrees), {d2, d3} 0, {d1, d3}: d3 above, B agrees and A does not, 1/2.
    assert res["prefs_pair"] == pytest.approx((1 + 0 + 1 / 2) / 3)
    # Rnonrel: A has R = 3 relevant, N = 0: (1 + 3 x 3) / (3 + 3 x 3); B has R = N = 1: 1/1.
    assert res["prefs_avgjg_Rnonrel"] == pytest.approx((10 / 12 + 1) / 2)


def test_preferences_from_tables_and_formats(tmp_path):
    import pandas as pd

    prefs = pd.DataFrame({"query_id": ["q1"] * 6, "jg": ["A", "A", "A", "A", "B", "B"],
                          "jsg": ["s1", "s1", "s2", "s2", "s1", "s1"], "doc_id": ["d1", "d2", "d2", "d3", "d3", "d1"],
                          "relevance": [2, 1, 2, 1, 1, 0]})
    run = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d3", "d1", "d2"], "score": [0.9, 0.8, 0.7]})
    res = sqlmetrics.evaluate(prefs, run, ["prefs_avgjg", "prefs_pair"], qrels_format="prefs").aggregate
    assert res["prefs_avgjg"] == pytest.approx(2 / 3) and res["prefs_pair"] == pytest.approx(1 / 2)
    with pytest.raises(SqlmetricsError, match="judgment_subgroup"):
        sqlmetrics.evaluate(prefs.drop(columns="jsg"), run, ["prefs_simp"], qrels_format="prefs")
    # Preferences are not graded judgments, and the other way round.
    with pytest.raises(SqlmetricsError, match="needs graded judgments"):
        sqlmetrics.evaluate(prefs, run, ["prefs_simp", "map"], qrels_format="prefs")
    with pytest.raises(SqlmetricsError, match="qrels_jg"):
        sqlmetrics.evaluate(prefs, run, ["prefs_simp"], qrels_format="qrels_jg")
    # Ordinary qrels: each query is one group of one subgroup, beside the ranked measures in one statement.
    qrels = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [2, 1, 0]})
    res = sqlmetrics.evaluate(qrels, run, ["prefs_simp", "P@1"]).aggregate
    assert res["prefs_simp"] == pytest.approx(1 / 3) and res["P@1"] == 0  # d3 above d1 and d2, d2 below d1


def test_preferences_of_logs_are_each_lists_labels():
    import pandas as pd

    # Labels in the run (qrels=None): each list's labelled rows are its one judgment group. Without segments
    # that is the qrels made of the labels; with them, each segment's list has its own preferences.
    log = pd.DataFrame({"query_id": ["q1"] * 4 + ["q2"] * 3, "doc_id": ["a", "b", "c", "d", "a", "b", "c"],
                        "score": [4, 3, 2, 1, 3, 2, 1], "label": [0, 2, None, 1, 1, 0, 0],
                        "day": ["x", "x", "x", "y", "x", "x", "x"]})
    measures = ["prefs_num_prefs_poss", "prefs_simp", "prefs_pair", "prefs_avgjg_Rnonrel"]
    qrels = log.dropna(subset=["label"]).rename(columns={"label": "relevance"})[["query_id", "doc_id", "relevance"]]
    logged = sqlmetrics.evaluate(None, log, measures, label="label").aggregate
    assert logged == pytest.approx(sqlmetrics.evaluate(qrels, log[["query_id", "doc_id", "score"]], measures).aggregate)
    per_day = sqlmetrics.evaluate(None, log, measures, label="label", group_by="day").per_query.to_pylist()
    # Day x, q1: b (2) > a (0), ranked below it: 0 of 1. Day y, q1: d alone, no preference.
    assert [(r["day"], r["query_id"], r["prefs_num_prefs_poss"], r["prefs_simp"]) for r in per_day] == \
        [("x", "q1", 1, 0), ("x", "q2", 2, 1), ("y", "q1", 0, 0)]


# --- prefs_avgjg_Rnonrel with negative grades: the exact value, and trec_eval's quirk in `sqlmetrics trec_eval` ---

# -R qrels_prefs (`qid jg docno grade`). q1: R = 2 < N = 5 with grades 0, -1, -2; q2: R = 3 >= N = 2; q3: two
# groups, R = 1 < N, lowest grade -1 (each lowest class holds at least R documents: trec_eval is defined there).
NEGATIVE_QRELS = ["q1 g d1 2", "q1 g d2 1", "q1 g d3 0", "q1 g d4 -1", "q1 g d5 -2", "q1 g d6 -2", "q1 g d7 0",
                  "q2 g d1 2", "q2 g d2 1", "q2 g d3 1", "q2 g d4 -1", "q2 g d5 -2",
                  "q3 A d1 1", "q3 A d2 0", "q3 A d3 -1", "q3 A d4 -1", "q3 B d2 2", "q3 B d1 -1", "q3 B d5 0"]
NEGATIVE_RUN = [f"{q} Q0 {d} {i} {s} r" for q, docs in (("q1", "d5 d1 d3 d4 d2 d6"), ("q2", "d5 d1 d4 d2"),
                                                        ("q3", "d1 d2 d3 d5"))
                for i, (d, s) in enumerate(zip(docs.split(), (0.9, 0.8, 0.7, 0.6, 0.5, 0.4)), start=1)]


def test_rnonrel_exact_with_negative_grades(tmp_path):
    # Non-relevant: grade <= 0; with R < N the first R of them (trec_eval's order: retrieved by rank, then by id)
    # are kept, whatever their grades; the count is trec_eval's: the preferences between relevant documents,
    # plus every document of the group against each kept one (fulfilled: retrieved above it).
    # q1: order d5 d1 d3 d4 d2 d6, then d7. Kept: d5, d3. d1 > d2 fulfilled (1/1); the 7 documents against d5
    #     fulfil 0 of 7, against d3 2 of 7 (d5, d1): (1 + 0 + 2) / (1 + 7 + 7) = 1/5.
    #     _ret: R = 2, N = 4 retrieved; kept d5, d3; the 6 retrieved against them: (1 + 0 + 2) / (1 + 6 + 6) = 3/13.
    # q2: R = 3 >= N = 2, no cut: 9 preferences, 3 fulfilled (d1 > d2, d3, d4), rel_ret = 2:
    #     (3 + 2 x 1) / (9 + 3 x 1) = 5/12; _ret: R = N = 2: 2 of the 6 with both retrieved, 1/3.
    # q3 (order d1 d2 d3 d5, then d4): A keeps d2 (first of d2, d3, d4): 4 documents against it, d1 above: 1/4;
    #     _ret 1/3 (3 retrieved). B keeps d1 (first of d1, d5): nothing above it, 0/3; _ret 0/3.
    #     (1/4 + 0) / 2 = 1/8; _ret (1/3 + 0) / 2 = 1/6.
    qrels = _write(tmp_path, "qrels_prefs", NEGATIVE_QRELS)
    run = _write(tmp_path, "run", NEGATIVE_RUN)
    res = sqlmetrics.evaluate(qrels, run, ["prefs_avgjg_Rnonrel", "prefs_avgjg_Rnonrel_ret"], qrels_format="qrels_prefs",
                              ties="docid_asc")
    per_query = {r["query_id"]: (r["prefs_avgjg_Rnonrel"], r["prefs_avgjg_Rnonrel_ret"]) for r in res.per_query.to_pylist()}
    assert per_query == {"q1": pytest.approx((1 / 5, 3 / 13)), "q2": pytest.approx((5 / 12, 1 / 3)),
                         "q3": pytest.approx((1 / 8, 1 / 6))}
    # nonrel=trec_eval is trec_eval's value (the lines below): q1 keeps d5 and d6 (grade -2) and all the rest,
    # 11/23; q3's A keeps d3 (grade -1) and counts d1 > d2: 3/5, B counts d2 > d5: 1/4.
    res = sqlmetrics.evaluate(qrels, run, ["PrefsAvgJGRnonrel(nonrel=trec_eval)"], qrels_format="qrels_prefs",
                              ties="docid_asc")
    assert [r["PrefsAvgJGRnonrel(nonrel=trec_eval)"] for r in res.per_query.to_pylist()] == \
        pytest.approx([11 / 23, 5 / 12, (3 / 5 + 1 / 4) / 2])


def test_rnonrel_exact_with_negative_levels_in_subgroups(tmp_path):
    # -R prefs, group A with two subgroups: d1 (1) > d2 (0) in s1; d1 (1) > d2 (0) > d3, d4 (-1) in s2: 5
    # preferences. Grades <= 0: d2, d3, d4: R = 1 < N = 3. The run ranks d3, d1, d2 (d4 unretrieved): the
    # first non-relevant is d3, so d2 and d4 go, leaving d1 > d3: not fulfilled, 0/1. trec_eval counts only
    # grade 0 as non-relevant (N = 1 = R, no cut): d1 > d2, d1 > d4, d2 > d4 fulfilled, 3/5 (trec_eval 10.0
    # -R prefs prints 0.6000).
    prefs = _write(tmp_path, "prefs", ["q1 A s1 d1 1", "q1 A s1 d2 0", "q1 A s2 d2 0", "q1 A s2 d3 -1",
                                       "q1 A s2 d1 1", "q1 A s2 d4 -1"])
    run = _write(tmp_path, "run", ["q1 Q0 d3 1 0.9 r", "q1 Q0 d1 2 0.8 r", "q1 Q0 d2 3 0.7 r"])
    res = sqlmetrics.evaluate(prefs, run, ["prefs_avgjg_Rnonrel", "PrefsAvgJGRnonrel(nonrel=trec_eval)"],
                              qrels_format="prefs", ties="docid_asc").aggregate
    assert res["prefs_avgjg_Rnonrel"] == 0
    assert res["PrefsAvgJGRnonrel(nonrel=trec_eval)"] == pytest.approx(3 / 5)


# trec_eval 10.0's output on NEGATIVE_QRELS / NEGATIVE_RUN, computed by running it (built from source; it
# cannot be built inside the suite):
#   trec_eval -R qrels_prefs -q -m prefs_avgjg_Rnonrel -m prefs_avgjg_Rnonrel_ret qrels_prefs run
# (valgrind-clean on this input; 9.0.8's m_prefs_avgjg_Rnonrel*.c compute the same).
TREC_EVAL_10_NEGATIVE = (
    "prefs_avgjg_Rnonrel   \tq1\t0.4783\n"
    "prefs_avgjg_Rnonrel_ret\tq1\t0.5000\n"
    "prefs_avgjg_Rnonrel   \tq2\t0.4167\n"
    "prefs_avgjg_Rnonrel_ret\tq2\t0.3333\n"
    "prefs_avgjg_Rnonrel   \tq3\t0.4250\n"
    "prefs_avgjg_Rnonrel_ret\tq3\t0.5000\n"
    "prefs_avgjg_Rnonrel   \tall\t0.4400\n"
    "prefs_avgjg_Rnonrel_ret\tall\t0.4444\n")


@pytest.mark.parametrize("compat", ["trec_eval-10.0", "trec_eval-9.0.8"])
def test_trec_eval_command_keeps_trec_eval_rnonrel_quirk(tmp_path, capsys, compat):
    from sqlmetrics.cli.main import main

    qrels = _write(tmp_path, "qrels_prefs", NEGATIVE_QRELS)
    run = _write(tmp_path, "run", NEGATIVE_RUN)
    assert main(["trec_eval", "--compat", compat, "-R", "qrels_prefs", "-q", "-m", "prefs_avgjg_Rnonrel",
                 "-m", "prefs_avgjg_Rnonrel_ret", qrels, run]) == 0
    assert capsys.readouterr().out == TREC_EVAL_10_NEGATIVE
    # `eval` prints the exact values (test_rnonrel_exact_with_negative_grades) on the same files.
    assert main(["eval", "-q", "-m", "prefs_avgjg_Rnonrel", "--qrels-format", "qrels_prefs", "--ties", "docid_asc",
                 qrels, run]) == 0
    assert "0.2000" in capsys.readouterr().out
