"""compare(): every test statistic and p-value against scipy.stats on fixed data, corrections, markers, Report."""
import json
import math
import warnings

import numpy as np
import pytest
import scipy.stats as st


from sqlmetrics.stats.compare import analyse, compare
from sqlmetrics.stats import significance
from sqlmetrics.local.runs import unique_names
from sqlmetrics.stats.draws import RESAMPLED_TIE, poisson_weight, resample_hash
from sqlmetrics.stats.significance import resample, student, tukey_moments

from sqlmetrics.demo import paths as demo_paths
from sqlmetrics.errors import SqlmetricsError, SqlmetricsWarning

RNG = np.random.default_rng(20240601)

# Fixed per-query difference vectors: continuous, discrete (P@10-like), with zeros and ties, one sign only.
VECTORS = {
    "normal": list(RNG.normal(0.03, 0.15, 40)),
    "discrete": [x / 10 for x in RNG.integers(-3, 4, 30)],
    "zeros_and_ties": [0.0] * 8 + [0.1, -0.1, 0.2, 0.2, -0.05, 0.3, 0.25, 0.0, 0.1, -0.2],
    "all_positive": list(np.abs(RNG.normal(0.2, 0.1, 12)) + 0.01),
    "large_effect": list(RNG.normal(0.5, 0.05, 25)),
}


def _info(m="m", better="higher", aggregate="mean"):
    return {m: (better, aggregate)}


def _pair_report(d, test, **kw):
    """A two-run report whose per-query differences (run b - run a) are exactly d."""
    base = [0.5] * len(d)
    values = {"m": [base, [b + x for b, x in zip(base, d)]]}
    return analyse(["a", "b"], _info(), [f"q{i}" for i in range(len(d))], values, test=test, **kw)


# ---------------------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_student_matches_scipy_ttest_rel(name):
    d = VECTORS[name]
    x = np.asarray(d) + 1.0
    y = np.ones(len(d))
    ref = st.ttest_rel(x, y)
    t, p = student(list(x - y))
    assert t == pytest.approx(ref.statistic, rel=1e-9)
    assert p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)


def test_student_through_analyse_and_extremes():
    d = VECTORS["normal"]
    c = _pair_report(d, "student").comparisons[0]
    ref = st.ttest_rel(np.asarray(d) + 0.5, np.full(len(d), 0.5))
    assert c.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    # tiny p-values keep their relative accuracy (the continued fraction, not 1 - something)
    t, p = student(VECTORS["large_effect"])
    assert p == pytest.approx(st.ttest_rel(VECTORS["large_effect"], [0.0] * 25).pvalue, rel=1e-7)
    assert p < 1e-20
    assert student([0.25, 0.25, 0.25]) == (math.inf, 0.0)  # scipy: inf, 0
    assert student([0.0, 0.0, 0.0]) == (0.0, 1.0)  # scipy: nan; no difference at all is p = 1 here
    assert all(math.isnan(v) for v in student([0.3]))


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_wilcoxon_matches_scipy(name):
    d = VECTORS[name]
    c = _pair_report(d, "wilcoxon").comparisons[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = st.wilcoxon(np.asarray(d) + 0.5, np.full(len(d), 0.5))
    assert c.statistic == pytest.approx(ref.statistic)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_tukey_matches_scipy_tukey_hsd():
    runs = [list(RNG.normal(mu, 0.2, 30)) for mu in (0.40, 0.45, 0.62)]
    rep = analyse(["a", "b", "c"], _info(), [f"q{i}" for i in range(30)], {"m": runs}, test="tukey", max_p=0.05)
    ref = st.tukey_hsd(*runs)
    for c in rep.comparisons:
        i, j = "abc".index(c.baseline), "abc".index(c.run)
        assert c.statistic == pytest.approx(ref.statistic[j, i], rel=1e-12)
        assert c.p_value == pytest.approx(ref.pvalue[j, i], rel=1e-9)
        assert c.p_adjusted == c.p_value
    assert rep.markers("c", "m") == "ab"
    with pytest.raises(SqlmetricsError, match="tukey"):
        analyse(["a", "b"], _info(), ["q"], {"m": [[0.1], [0.2]]}, test="tukey", correction="holm")


def test_tukey_from_moments_matches_scipy_tukey_hsd_on_unequal_groups():
    """The engine's form (each group's n, mean and sum of squared deviations) is scipy's Tukey-Kramer test."""
    groups = [RNG.normal(mu, 0.2, n) for mu, n in ((0.40, 12), (0.45, 30), (0.62, 21), (0.5, 7))]
    statistic, p = tukey_moments([{"n": len(g), "mean": g.mean(), "ss": ((g - g.mean()) ** 2).sum()} for g in groups])
    ref = st.tukey_hsd(*groups)
    np.testing.assert_allclose(statistic, ref.statistic, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(p, ref.pvalue, rtol=1e-9)


# ---------------------------------------------------------------------------------------------- resampling in SQL


def _scipy_paired_permutation(d, n_resamples, seed=0):
    x = np.asarray(d, dtype=float)
    return st.permutation_test((x, np.zeros_like(x)), lambda a, b, axis: np.mean(a - b, axis=axis),
                               permutation_type="samples", n_resamples=n_resamples, vectorized=True,
                               rng=np.random.default_rng(seed)).pvalue


@pytest.mark.parametrize("n", [4, 9, 13])
def test_fisher_exact_equals_scipy_exhaustive_permutation(n):
    # 2^n <= n_resamples: every sign pattern is enumerated, as scipy does, and the p-values are equal
    for d in (list(np.round(RNG.normal(0.05, 0.2, n) * 16) / 16), list(RNG.normal(0.05, 0.2, n))):
        res = resample("fisher", [d], seed=1, n_resamples=10000)[0]
        assert res["exact"] is True
        assert res["p"] == pytest.approx(_scipy_paired_permutation(d, 10000), abs=1e-12)


@pytest.mark.slow  # scipy's 10,000 permutations; the exact Fisher test and the bootstrap's agreement are fast
def test_fisher_monte_carlo_agrees_with_scipy_within_monte_carlo_error():
    d = VECTORS["normal"]  # 2^40 patterns: random sign flips
    ref = _scipy_paired_permutation(d, 200000)
    res = resample("fisher", [d], seed=3, n_resamples=20000)[0]
    assert res["exact"] is False
    se = math.sqrt(ref * (1 - ref) / 20000) + math.sqrt(ref * (1 - ref) / 200000)
    assert abs(res["p"] - ref) < 4 * se


def _replica(test, d, seed, n_resamples):
    """The resampling tests re-done in Python from the same hash, over the values in ascending order (the
    slots are sorted positions): SQL must agree to the last hit."""
    d = sorted(d)
    n, obs = len(d), math.fsum(d)
    tol = RESAMPLED_TIE * math.fsum(abs(x) for x in d)
    hits, means = 0, []
    for b in range(n_resamples):
        h = [resample_hash(seed, b, j) for j in range(n)]
        if test == "fisher":
            t = math.fsum(-x if hj % 2 else x for x, hj in zip(d, h))
            hits += abs(t) >= abs(obs) - tol
        else:  # the Poisson bootstrap: the value at slot j weighs Poisson(1) of h(seed, b, j)
            w = [poisson_weight(hj) for hj in h]
            m = math.fsum(x * wj for x, wj in zip(d, w)) / sum(w) if sum(w) else obs / n
            means.append(m)
            hits += abs(m - obs / n) >= abs(obs / n) - tol / n
    return (hits + 1) / (n_resamples + 1), means


@pytest.mark.parametrize("test", ["fisher", "bootstrap"])
def test_sql_resampling_equals_a_python_replica_of_the_hash(test):
    d = VECTORS["discrete"][:20]
    p, means = _replica(test, d, seed=7, n_resamples=1500)
    res = resample(test, [d], seed=7, n_resamples=1500, confidence=0.9)[0]
    assert res["p"] == p
    if test == "bootstrap":
        lo, hi = np.percentile(means, [5, 95])
        assert res["ci_low"] == pytest.approx(lo, abs=1e-12)
        assert res["ci_high"] == pytest.approx(hi, abs=1e-12)


@pytest.mark.slow  # 2.5 s: resamples large enough for threads to race
def test_the_bootstrap_interval_has_the_same_bits_with_any_thread_count():
    """A resample's mean was a parallel SUM of doubles, whose last bits followed the order DuckDB's threads added
    them in: the interval of one input differed from run to run (M: 7,000 queries, 10,000 resamples). Paired and
    unpaired, it is now the same whatever the threads."""
    rng = np.random.default_rng(5)
    d = (rng.random(3000) - 0.5).tolist()
    seen = set()
    for threads in (1, 2, 4, 2, 4):
        paired = resample("bootstrap", [d, d[:1000]], seed=3, n_resamples=2000, confidence=0.9,
                          resources={"threads": threads})
        _, unpaired = significance.unpaired([d, d[:1000]], [(0, 1)], 3, 2000, 0.9, "bootstrap",
                                            resources={"threads": threads})
        seen.add(tuple((r["ci_low"], r["ci_high"], r["p"]) for r in paired + unpaired))
    assert len(seen) == 1


def test_hash_is_the_same_in_sql_and_python_and_fair():
    import duckdb

    from sqlmetrics.stats.draws import draw_sql, replicates_sql, slots_sql

    con = duckdb.connect()
    grid = (f"SELECT b, slot AS pos, {draw_sql('hb', 'hq')} AS h FROM ({replicates_sql(123, 50)}) AS r, "
            f"({slots_sql('SELECT range AS slot FROM range(7)')}) AS s")
    rows = con.execute(f"SELECT b, pos, h FROM ({grid})").fetchall()
    assert len(rows) == 350
    assert all(h == resample_hash(123, b, pos) for b, pos, h in rows)
    signs = np.array([[resample_hash(5, b, j) % 2 for j in range(20)] for b in range(4000)])
    assert abs(signs.mean() - 0.5) < 0.01
    assert np.abs(np.corrcoef(signs.T) - np.eye(20)).max() < 0.07


@pytest.mark.slow  # resamples; the bootstrap's fast cases are test_compare_all_tests_and_options_run_on_the_demo's
def test_bootstrap_interval_and_p_agree_with_scipy_within_monte_carlo_error():
    """The Poisson bootstrap (each list weighs Poisson(1)) against numpy's generator doing the same with 200,000
    resamples; and against scipy's classic bootstrap (each resample n draws with replacement), which at n = 40
    gives an interval about 0.04 standard errors narrower: the two agree as n grows."""
    d = np.asarray(VECTORS["normal"])
    res = resample("bootstrap", [list(d)], seed=11, n_resamples=20000, confidence=0.95)[0]
    gen = np.random.default_rng(0)
    weights = gen.poisson(1.0, (200000, len(d)))
    draws = (weights @ d) / weights.sum(axis=1)
    sd = d.std(ddof=1) / math.sqrt(len(d))  # the bootstrap distribution's spread
    assert res["ci_low"] == pytest.approx(np.quantile(draws, 0.025), abs=0.05 * sd)
    assert res["ci_high"] == pytest.approx(np.quantile(draws, 0.975), abs=0.05 * sd)
    ref = st.bootstrap((d,), np.mean, method="percentile", confidence_level=0.95, n_resamples=100000,
                       rng=np.random.default_rng(0)).confidence_interval
    assert res["ci_low"] == pytest.approx(ref.low, abs=0.1 * sd)
    assert res["ci_high"] == pytest.approx(ref.high, abs=0.1 * sd)
    # the shifted-null bootstrap p-value: the same statistic over numpy's resamples
    ref_p = (np.sum(np.abs(draws - d.mean()) >= abs(d.mean())) + 1) / (200000 + 1)
    assert abs(res["p"] - ref_p) < 4 * math.sqrt(ref_p * (1 - ref_p) / 20000) + 0.002


def test_resampling_is_deterministic_for_a_seed_and_varies_with_it():
    d = VECTORS["normal"]
    a = resample("fisher", [d, d[:30]], seed=42, n_resamples=3000)
    assert a == resample("fisher", [d, d[:30]], seed=42, n_resamples=3000)
    assert a[0]["p"] != resample("fisher", [d], seed=43, n_resamples=3000)[0]["p"]
    # jobs are independent of their neighbours: a vector gets the same p alone or in a batch
    assert a[1]["p"] == resample("fisher", [d[:30]], seed=42, n_resamples=3000)[0]["p"]


def test_resampling_degenerate_vectors():
    out = resample("fisher", [[0.0] * 20, [], [0.0, 0.0]], seed=1, n_resamples=500)
    assert out[0]["p"] == 1.0 and out[2]["p"] == 1.0 and out[2]["exact"] is True
    assert math.isnan(out[1]["p"])
    boot = resample("bootstrap", [[0.0] * 5], seed=1, n_resamples=200)[0]
    assert boot["p"] == 1.0 and boot["ci_low"] == 0.0 == boot["ci_high"]


# ---------------------------------------------------------------------------------------------- corrections, markers


def test_bonferroni_and_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    assert significance.adjust(p, None) == p
    assert significance.adjust(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    # Holm: sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    assert significance.adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert significance.adjust([0.5, math.nan, 0.6], "bonferroni")[0] == 1.0


def _three_runs():
    n = 40
    base = RNG.uniform(0.2, 0.5, n)
    return {
        "m": [list(base), list(base + RNG.normal(0.15, 0.05, n)), list(base + RNG.normal(0.0, 0.05, n))],
        "rank": [[3.0] * n, [1.0] * n, [3.0 + (i % 2) for i in range(n)]],  # lower is better
    }, n


def test_markers_name_the_runs_each_run_beats_and_respect_lower_is_better():
    values, n = _three_runs()
    info = {"m": ("higher", "mean"), "rank": ("lower", "mean")}
    rep = analyse(["base", "good", "same"], info, [f"q{i}" for i in range(n)], values, test="student", max_p=0.01)
    assert rep.labels == {"base": "a", "good": "b", "same": "c"}
    assert rep.markers("good", "m") == "ac"
    assert rep.markers("base", "m") == "" and rep.markers("same", "m") == ""
    assert rep.markers("good", "rank") == "ac"  # rank 1 beats rank 3 and 3.5
    assert rep.markers("base", "rank") == "c"  # 3 beats 3.5: lower is better
    c = rep.comparison("m", "good", "base")
    assert (c.run, c.baseline, c.winner) == ("good", "base", "good")
    assert c.wins == n and c.ties == c.losses == 0
    assert rep.best("rank") == {"good"}
    # a correction can only remove significance; its family is every test of the report (3 pairs x 2 measures)
    held = analyse(["base", "good", "same"], info, [f"q{i}" for i in range(n)], values, correction="bonferroni")
    for c1, c2 in zip(rep.comparisons, held.comparisons):
        assert c2.p_adjusted == pytest.approx(min(1.0, 6 * c1.p_value))
        assert c2.significant <= c1.significant


def test_geometric_measures_are_tested_on_logs():
    a = list(RNG.uniform(0.0, 0.5, 20))
    b = [v * 1.5 if i % 3 else 0.0 for i, v in enumerate(a)]
    rep = analyse(["a", "b"], {"gm": ("higher", "geometric")}, [str(i) for i in range(20)], {"gm": [a, b]})
    la = np.log(np.maximum(a, 1e-5))
    lb = np.log(np.maximum(b, 1e-5))
    ref = st.ttest_rel(lb, la)
    c = rep.comparisons[0]
    assert c.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert rep.means["a"]["gm"] == pytest.approx(math.exp(la.mean()))
    # Student's t interval of the mean difference (of logs) at the tests' level, 1 - max_p
    ci = ref.confidence_interval(0.99)
    assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_undefined_values_are_left_out_pairwise():
    values = {"fr": [[1.0, None, 3.0, 2.0], [2.0, 4.0, None, 1.0]]}
    rep = analyse(["a", "b"], {"fr": ("lower", "mean")}, ["1", "2", "3", "4"], values)
    c = rep.comparisons[0]
    assert c.n == 2 and c.difference == pytest.approx(0.0)
    assert (c.wins, c.ties, c.losses) == (1, 0, 1)
    assert rep.means["a"]["fr"] == pytest.approx(2.0) and rep.means["b"]["fr"] == pytest.approx(7 / 3)


# ---------------------------------------------------------------------------------------------- compare() end to end


MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@100", "num_ret", "gm_map", "FirstRank"]


@pytest.fixture(scope="module")
def demo_report():
    qrels, runs = demo_paths()
    return compare(qrels, {"bm25": runs[0], "rerank": runs[1]}, MEASURES)


def _demo_oracle():
    """Per-query values of the demo runs from pytrec_eval (trec_eval's C code), and FirstRank straight from
    the files: {run: {measure: {query: value}}}, keyed by the measure strings of MEASURES."""
    import gzip

    import pytrec_eval

    qrels_path, run_paths = demo_paths()
    qrels: dict = {}
    for line in open(qrels_path, encoding="utf-8"):
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    names = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@10": "P_10", "R@100": "recall_100",
             "num_ret": "num_ret", "gm_map": "map"}
    out = {}
    for run_name, path in zip(("bm25", "rerank"), run_paths):
        run: dict = {}
        for line in gzip.open(path, "rt", encoding="utf-8"):
            q, _, d, _, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
        per_query = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
        values = {m: {q: v[name] for q, v in per_query.items()} for m, name in names.items()}
        first = {}
        for q, docs in run.items():  # score descending, then document id descending (trec_eval's order)
            ranked = sorted(docs, key=lambda d: (docs[d], d), reverse=True)
            first[q] = next((i + 1 for i, d in enumerate(ranked) if qrels.get(q, {}).get(d, 0) >= 1), None)
        values["FirstRank"] = first
        out[run_name] = values
    return out


def test_compare_on_the_demo_matches_pytrec_eval_and_scipy(demo_report):
    oracle = _demo_oracle()
    assert demo_report.n_queries == 50
    for run in ("bm25", "rerank"):
        for m in MEASURES:
            per_query = [v for v in oracle[run][m].values() if v is not None]
            if m == "gm_map":  # trec_eval's gm_map: geometric mean of AP floored at 1e-5
                want = math.exp(math.fsum(math.log(max(v, 1e-5)) for v in per_query) / len(per_query))
            elif m == "num_ret":  # a count: summed over queries
                want = math.fsum(per_query)
            else:
                want = math.fsum(per_query) / len(per_query)
            assert demo_report.means[run][m] == pytest.approx(want, rel=1e-9), (run, m)
    queries = sorted(oracle["bm25"]["nDCG@10"])
    ref = st.ttest_rel([oracle["rerank"]["nDCG@10"][q] for q in queries], [oracle["bm25"]["nDCG@10"][q] for q in queries])
    c = demo_report.comparison("nDCG@10", "bm25", "rerank")
    assert c.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-8)
    assert demo_report.markers("rerank", "nDCG@10") == "a"
    assert demo_report.markers("rerank", "RR") == ""  # the demo's one non-significant measure at 0.01


def test_report_formats(demo_report):
    table = demo_report.to_table()
    assert "rerank" in table and "0.5037ᵃ" in table and "paired Student's t-test" in table
    assert "win/tie/loss" in table
    md = demo_report.to_markdown()
    assert md.splitlines()[0].startswith("|  | run | nDCG@10 |") and "**0.5037**ᵃ" in md
    tex = demo_report.to_latex()
    for piece in ("\\toprule", "\\midrule", "\\bottomrule", "\\textbf{0.5037}$^{a}$", "Student's t-test",
                  "$p < 0.01$", "gm\\_map", "\\begin{tabular}{llrrrrrrrr}"):
        assert piece in tex
    d = json.loads(demo_report.to_json())
    assert d == demo_report.to_dict()
    assert d["runs"] == [{"label": "a", "name": "bm25"}, {"label": "b", "name": "rerank"}]
    assert len(d["comparisons"]) == len(MEASURES)
    assert {c["measure"] for c in d["comparisons"] if c["significant"]} >= {"nDCG@10", "AP"}
    frame = demo_report.to_pandas()
    assert frame.shape == (2, len(MEASURES)) and list(frame.index) == ["bm25", "rerank"]
    assert demo_report.to_pandas(pairs=True).shape[0] == len(MEASURES)
    assert str(demo_report) == table


def test_best_is_bold_for_lower_is_better(demo_report):
    tex = demo_report.to_latex()
    line = next(l for l in tex.splitlines() if l.startswith("a & bm25"))
    best = demo_report.best("FirstRank")
    assert len(best) == 1
    assert ("\\textbf" in line.split(" & ")[-1]) == (best == {"bm25"})


def test_compare_all_tests_and_options_run_on_the_demo():
    qrels, runs = demo_paths()
    for test in ("fisher", "bootstrap", "wilcoxon", "tukey"):
        rep = compare(qrels, runs, ["nDCG@10", "P@10"], test=test, n_resamples=2000, max_p=0.05,
                      correction=None if test == "tukey" else "holm")
        assert rep.runs == ["bm25", "rerank"]
        assert all(0 < c.p_value <= 1 for c in rep.comparisons)
        assert rep.markers("rerank", "nDCG@10") == "a"
    rep = compare(qrels, runs, "AP", test="bootstrap", n_resamples=2000)
    c = rep.comparisons[0]
    assert c.ci_low < c.difference < c.ci_high
    assert "99% interval" in rep.to_table()


def test_compare_uses_the_queries_common_to_all_runs(trec_eval_dir):
    q = trec_eval_dir / "qrels.test"
    runs = {"full": trec_eval_dir / "results.test", "trunc": trec_eval_dir / "results.trunc"}
    rep = compare(q, runs, ["map"], queries="intersection")
    assert rep.n_queries == 2  # topic 302 is missing from results.trunc
    with pytest.warns(SqlmetricsWarning):
        rep = compare(q, runs, ["map"])
    assert rep.n_queries == 3 and rep.options["queries"] == "qrels"


@pytest.mark.parametrize("kwargs, message", [
    ({"test": "ttest"}, "test='ttest' is not valid: use one of 'student'"),
    ({"max_p": 0}, "strictly between 0 and 1"),
    ({"max_p": 1.5}, "strictly between 0 and 1"),
    ({"correction": "sidak"}, "correction"),
    ({"seed": -1}, "seed"),
    ({"n_resamples": 0}, "n_resamples"),
    ({"test": "tukey", "correction": "bonferroni"}, "tukey"),
])
def test_compare_rejects_bad_options(kwargs, message):
    qrels, runs = demo_paths()
    with pytest.raises(SqlmetricsError, match=message):
        compare(qrels, runs, ["AP"], **kwargs)


def test_compare_rejects_bad_runs_and_measures():
    qrels, runs = demo_paths()
    with pytest.raises(SqlmetricsError, match="at least two runs"):
        compare(qrels, [runs[0]], ["AP"])
    with pytest.raises(SqlmetricsError, match="unknown measure"):
        compare(qrels, runs, ["APP"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'tie'. Did you mean 'ties'"):
        compare(qrels, runs, ["AP"], tie="rank")


def test_run_names_from_paths():
    assert unique_names(["x/bm25.run.gz", "y/dense.trec", "-", "db.duckdb:tbl"]) == ["bm25", "dense", "stdin", "tbl"]
    assert unique_names(["a/results.test", "a/results.trunc"]) == ["results.test", "results.trunc"]
    assert unique_names(["a/run.txt", "b/run.txt"]) == ["a/run.txt", "b/run.txt"]
    assert unique_names(["run.txt", "run.txt"]) == ["run", "run#2"]  # one file twice keeps its stem
    assert unique_names([{"q": {}}, {"q": {}}]) == ["run1", "run2"]


def test_markdown_escapes_a_pipe_in_a_run_name_once():
    rep = analyse(["x|y", "b_c"], _info(), ["q1", "q2", "q3"], {"m": [[0.1, 0.2, 0.3], [0.2, 0.3, 0.5]]})
    rows = rep.to_markdown().splitlines()
    assert rows[2].startswith("| a | x\\|y | ") and "\\\\|" not in rows[2]  # one backslash: a literal pipe
    assert rows[3].startswith("| b | b\\_c | ")
    assert all(len(r.replace("\\|", "").split("|")) == 5 for r in rows[:4])  # 3 cells in every row


def test_a_p_value_below_the_smallest_double_is_printed_as_such():
    from sqlmetrics.stats.report import _p
    assert (_p(0.0), _p(1e-320), _p(0.00042), _p(0.5)) == ("<1e-300", "1.0e-320", "4.2e-04", "0.5000")
