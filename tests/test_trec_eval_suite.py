"""trec_eval 9.0.8's own test suite: reproduce every number it prints that has a counterpart in METRICS.md.

The inputs and expected outputs sit in ../shared/data/trec_eval_test (see its README for the exact
trec_eval command behind each file). Output lines are `measure<TAB>query-or-all<TAB>value`, the measure
name padded with spaces; values are printed with 4 decimals, so we allow half a unit in the last place.
Measures are passed under their trec_eval names, which the package must accept as aliases.
"""

import pytest

import sqlmetrics
from conftest import trec_eval_printed

TOLERANCE = 0.00005 + 1e-9  # trec_eval prints 4 decimals (rounded); the hair absorbs float noise

# trec_eval's default cutoffs for P_k, recall_k, map_cut_k, ndcg_cut_k and relative_P_k.
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
IPREC = [f"iprec_at_recall_{i / 10:.2f}" for i in range(11)]  # iprec_at_recall_0.00 ... _1.00

# `trec_eval qrels results` with no -m prints the "official" measures (out.test).
OFFICIAL = ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
            *IPREC, *[f"P_{k}" for k in CUTOFFS]]
# `-m all_trec` adds these (the rest of all_trec has no counterpart: see SKIPPED).
ALL_TREC = [*OFFICIAL, *[f"{m}_{k}" for m in ("recall", "map_cut", "ndcg_cut") for k in CUTOFFS], "ndcg",
            "set_P", "set_recall", "set_F", "success_1", "success_5", "success_10", "gm_bpref", "11pt_avg",
            "set_map", "set_relative_P", "num_nonrel_judged_ret", *[f"relative_P_{k}" for k in CUTOFFS],
            *[f"Rprec_mult_{x / 10:.2f}" for x in range(2, 21, 2)], "infAP", "utility", "binG", "G", "ndcg_rel", "Rndcg"]

# Printed by trec_eval but not compared, because METRICS.md's catalogue has no such measure.
# Every measure in an expected file must be in ALL_TREC or here (test_every_printed_measure_is_accounted_for),
# so a measure added to the files, or dropped from the catalogue, cannot go unchecked silently.
SKIPPED = {
    "runid": "the run's name, not a measure",
    "relstring": "a string of the top-10 relevance grades, not a number",
    "relstring_20": "relstring for the top 20 (out.test.aql asks for it with -mrelstring.20)",
}

SUMMED = {"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}  # their 'all' row is a sum, not a mean

# Expected file -> the evaluate() arguments equivalent to the trec_eval command that produced it, and the
# measures it prints that we compare.
# trec_eval without -c averages over the queries in both files: queries="intersection". For out.test(.aq/.aql)
# that is the same as "qrels" (qrels.test, qrels.rel_level and results.test all hold 301-303), but
# results.trunc lacks topic 302, so out.test.aqc (-c) is where queries="qrels" matters.
FILES = {
    "out.test": (dict(qrels="qrels.test", run="results.test", queries="intersection"), OFFICIAL),
    "out.test.aq": (dict(qrels="qrels.test", run="results.test", queries="intersection"), ALL_TREC),
    # results.trunc also carries junk after the 6th field, which must be ignored as trec_eval does.
    "out.test.aqc": (dict(qrels="qrels.test", run="results.trunc", queries="qrels"), ALL_TREC),
    # -l2: grade 1 is judged non-relevant (nDCG's gains stay the grades, as in trec_eval).
    "out.test.aql": (dict(qrels="qrels.rel_level", run="results.test", queries="intersection",
                          relevance_level=2), ALL_TREC),
}


@pytest.fixture(scope="module")
def evaluated(trec_eval_dir):
    """expected file name -> Results, evaluating each distinct input once with every compared measure."""
    cache = {}

    def get(expected_file):
        args, _ = FILES[expected_file]
        key = tuple(sorted(args.items()))
        if key not in cache:
            options = {k: v for k, v in args.items() if k not in ("qrels", "run")}
            cache[key] = sqlmetrics.evaluate(trec_eval_dir / args["qrels"], trec_eval_dir / args["run"],
                                             ALL_TREC, compat="trec_eval-9.0.8", **options)  # 9.0.8's suite
        return cache[key]

    return get


@pytest.mark.parametrize("expected_file,measure", [(f, m) for f, (_, measures) in FILES.items() for m in measures])
def test_matches_trec_eval(expected_file, measure, trec_eval_dir, evaluated):
    printed = trec_eval_printed(trec_eval_dir / expected_file)[measure]
    results = evaluated(expected_file)
    per_query = {row["query_id"]: row[measure] for row in results.per_query.to_pylist()}
    wrong = {}
    for qid, text in printed.items():
        # 'all' is the aggregate: a mean, a sum for num_*, the geometric mean for gm_map. trec_eval prints
        # per-query rows only for queries in the run (so none for 302 in out.test.aqc) and never for
        # num_q or gm_map.
        ours = results.aggregate[measure] if qid == "all" else per_query.get(qid)
        if ours is None or abs(ours - float(text)) > TOLERANCE:
            wrong[qid] = (ours, text)
    assert not wrong, f"{measure} in {expected_file}, {{query: (ours, trec_eval)}}: {wrong}"
    if measure in SUMMED:
        # The aggregate of a count is the sum of its per-query values (queries missing from the run included).
        assert results.aggregate[measure] == pytest.approx(sum(per_query.values()), abs=1e-9)


@pytest.mark.parametrize("expected_file", FILES)
def test_every_printed_measure_is_accounted_for(expected_file, trec_eval_dir):
    printed = set(trec_eval_printed(trec_eval_dir / expected_file))
    compared = set(FILES[expected_file][1])
    unaccounted = printed - compared - set(SKIPPED)
    assert unaccounted == set(), "new trec_eval measure: compare it, or add it to SKIPPED with why"
    assert compared - printed == set(), "a compared measure is not in the file"
    assert compared.isdisjoint(SKIPPED)


# out.test.meas_params: trec_eval with parameterised measures (`-m P.5,7,3`, `-m ndcg_cut.10,20,23.4`, ...).
# The ones with a counterpart here; trec_eval truncates the cutoff 23.4 to 23.
MEAS_PARAMS = ["P_3", "P_5", "P_7", "recall_20", "recall_2000", "success_2", "success_5", "success_20",
               "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23", *(f"iprec_at_recall_{r}" for r in
                                                              ("0.10", "0.20", "0.25", "0.50", "0.75")),
               "utility_2,-1,0,0", "ndcg_1=3,2=9,4=4.5"]


def test_parameterised_measures(trec_eval_dir):
    printed = trec_eval_printed(trec_eval_dir / "out.test.meas_params")
    assert set(MEAS_PARAMS) <= set(printed)
    res = sqlmetrics.evaluate(trec_eval_dir / "qrels.test", trec_eval_dir / "results.test", MEAS_PARAMS,
                              queries="intersection", compat="trec_eval-9.0.8")
    rows = {r["query_id"]: r for r in res.per_query.to_pylist()}
    for measure in MEAS_PARAMS:
        for qid, text in printed[measure].items():
            ours = res.aggregate[measure] if qid == "all" else rows[qid][measure]
            assert abs(ours - float(text)) <= 0.00005 + 1e-9, (measure, qid, ours, text)
