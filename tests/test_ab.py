"""A/B tests on logs: compare() with segments, log labels, behaviour-derived relevance and engines; unpaired
tests (Welch, Mann-Whitney, bootstrap), summaries, effect sizes, a baseline and corrections over the whole
report, every statistic against scipy.stats on the same numbers."""
from __future__ import annotations

import math
import sqlite3
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.stats as st

import sqlmetrics
from sqlmetrics.cli import main as cli_main
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.stats.compare import analyse, analyse_lists
from sqlmetrics.stats.draws import poisson_weight, resample_hash
from sqlmetrics.stats.significance import adjust, mann_whitney, t_quantile, unpaired, welch

LOG = "sqlmetrics/demo/search_log.parquet"
LOG_COLUMNS = {"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"}
AB = dict(columns=LOG_COLUMNS, ties="rank", relevance="2*purchased + clicked", group_by=["date"])
RNG = np.random.default_rng(20241125)


def _samples():
    """Two unpaired samples of different sizes, continuous and with ties (rounded)."""
    x = RNG.normal(0.55, 0.2, 37)
    y = RNG.normal(0.45, 0.3, 52)
    return {"continuous": (list(x), list(y)), "ties": (list(np.round(x, 1)), list(np.round(y, 1)))}


SAMPLES = _samples()


# ---------------------------------------------------------------------------------------------- the statistics


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_welch_and_mann_whitney_from_sql_aggregates_equal_scipy(name):
    x, y = SAMPLES[name]
    moments, pairs = unpaired([x, y], [(0, 1)], seed=7, n_resamples=10, confidence=0.95, test="mannwhitney")
    mx, my = moments
    assert (mx["n"], my["n"]) == (len(x), len(y))
    assert mx["mean"] == pytest.approx(np.mean(x), rel=1e-12) and mx["var"] == pytest.approx(np.var(x, ddof=1), rel=1e-12)
    t, p, df = welch(mx["n"], mx["mean"], mx["var"], my["n"], my["mean"], my["var"])
    ref = st.ttest_ind(x, y, equal_var=False)
    assert t == pytest.approx(ref.statistic, rel=1e-10) and p == pytest.approx(ref.pvalue, rel=1e-9)
    assert df == pytest.approx(ref.df, rel=1e-10)
    u, p = mann_whitney(len(x), len(y), pairs[0]["rank_sum_x"], pairs[0]["tie_term"])
    ref = st.mannwhitneyu(x, y, method="asymptotic")
    assert u == pytest.approx(ref.statistic, rel=1e-12) and p == pytest.approx(ref.pvalue, rel=1e-9)
    _, (swapped,) = unpaired([y, x], [(0, 1)], seed=7, n_resamples=10, confidence=0.95, test="mannwhitney")
    ref = st.mannwhitneyu(y, x, method="asymptotic")  # the other way round: U of y, the same p
    assert mann_whitney(len(y), len(x), swapped["rank_sum_x"], swapped["tie_term"]) == pytest.approx(
        (ref.statistic, ref.pvalue), rel=1e-9)


def _snapped(*samples):
    """The samples with values within 1e-12 (relative to the larger, or to 1 below 1) of the one before them in
    sorted order replaced by their group's smallest value: Mann-Whitney's tie rule (ranks.py), so that scipy,
    which ties only equal values, ranks them as sqlmetrics does."""
    first, last = {}, None
    for v in sorted(v for s in samples for v in s):
        if last is None or v - last > 1e-12 * max(1.0, abs(v)):
            start = v
        first[v], last = start, v
    return [[first[v] for v in s] for s in samples]


def test_mann_whitney_ties_values_a_last_bit_apart():
    """0.1 + 0.2 and 0.3 are one value summed in two orders: tied, as scipy ties the equal values."""
    x, y = [0.1 + 0.2, 0.5, 0.7, 0.9], [0.3, 0.3, 0.6, 1.1 - 1e-9]
    assert _snapped(x, y) == [[0.3, 0.5, 0.7, 0.9], [0.3, 0.3, 0.6, 1.1 - 1e-9]]
    _, (pair,) = unpaired([x, y], [(0, 1)], seed=7, n_resamples=10, confidence=0.95, test="mannwhitney")
    ref = st.mannwhitneyu([0.3, 0.5, 0.7, 0.9], [0.3, 0.3, 0.6, 1.1], method="asymptotic")
    assert mann_whitney(4, 4, pair["rank_sum_x"], pair["tie_term"]) == pytest.approx((ref.statistic, ref.pvalue),
                                                                                      rel=1e-12)


def test_degenerate_unpaired_samples():
    assert welch(3, 1.0, 0.0, 4, 1.0, 0.0)[:2] == (0.0, 1.0)
    assert welch(3, 2.0, 0.0, 4, 1.0, 0.0)[:2] == (math.inf, 0.0)
    assert all(math.isnan(v) for v in welch(1, 2.0, math.nan, 4, 1.0, 0.1))
    moments, pairs = unpaired([[0.5] * 4, [0.5] * 6], [(0, 1)], 1, 10, 0.95, "mannwhitney")
    assert mann_whitney(4, 6, pairs[0]["rank_sum_x"], pairs[0]["tie_term"])[1] == 1.0


@pytest.mark.parametrize("correction, method", [("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(correction, method):
    """Bonferroni, Holm and Benjamini-Hochberg = statsmodels' multipletests, on p-values with ties, ones and NaN (a
    comparison without a p-value takes no part)."""
    from statsmodels.stats.multitest import multipletests

    p = [*np.random.default_rng(3).uniform(0, 0.2, 30), 0.04, 0.04, 1.0, math.nan, 1e-12]
    valid = [v for v in p if not math.isnan(v)]
    want = iter(multipletests(valid, method=method)[1])
    got = adjust(p, correction)
    assert math.isnan(got[33])
    assert [g for g in got if not math.isnan(g)] == pytest.approx(list(want), rel=1e-12, abs=0)


@pytest.mark.parametrize("q, df", [(0.975, 1), (0.975, 4), (0.995, 7.3), (0.9, 120), (0.975, 10_000)])
def test_t_quantile_equals_scipy(q, df):
    assert t_quantile(q, df) == pytest.approx(st.t.ppf(q, df), rel=1e-10)


def test_corrections_equal_scipy_and_hand_values():
    p = [0.01, 0.04, 0.03, 0.5, 0.002, math.nan, 0.04]
    valid = [v for v in p if not math.isnan(v)]
    bh = adjust(p, "bh")
    assert math.isnan(bh[5])
    assert [v for v in bh if not math.isnan(v)] == pytest.approx(list(st.false_discovery_control(valid, method="bh")))
    # by hand, sorted p: 0.002 0.01 0.03 0.04 0.04 0.5 (m = 6): p * m / rank, then the running minimum from the top
    assert bh[4] == pytest.approx(0.012) and bh[0] == pytest.approx(0.03) and bh[2] == pytest.approx(0.048)
    assert bh[1] == bh[6] == pytest.approx(0.048) and bh[3] == pytest.approx(0.5)
    assert adjust(p, "bonferroni")[0] == pytest.approx(0.06) and adjust(p, "holm")[4] == pytest.approx(0.012)


def test_unpaired_bootstrap_is_the_hashed_resampling_and_agrees_with_scipy():
    """The interval in SQL equals a numpy replay of the same hashed Poisson(1) weights (x's values in ascending order
    weighed by slots 0..nx-1, y's by slots nx..nx+ny-1), and is close to scipy.stats.bootstrap's percentile interval
    of the difference of means."""
    x, y = SAMPLES["continuous"]
    x, y = x[:12], y[:15]
    seed, n_res = 11, 400
    _, (res,) = unpaired([x, y], [(0, 1)], seed, n_res, 0.9, test="bootstrap")
    nx, ny = len(x), len(y)
    diffs = []
    for b in range(n_res):
        wx = [poisson_weight(resample_hash(seed, b, pos)) for pos in range(nx)]
        wy = [poisson_weight(resample_hash(seed, b, nx + pos)) for pos in range(ny)]
        diffs.append(np.average(np.sort(x), weights=wx) - np.average(np.sort(y), weights=wy))
    diffs = np.asarray(diffs)
    assert res["ci_low"] == pytest.approx(np.quantile(diffs, 0.05), rel=1e-9)
    assert res["ci_high"] == pytest.approx(np.quantile(diffs, 0.95), rel=1e-9)
    obs = np.mean(x) - np.mean(y)
    hits = np.sum(np.abs(diffs - obs) >= abs(obs) - 1e-9 * (abs(np.mean(x)) + abs(np.mean(y))))
    assert res["p"] == pytest.approx((hits + 1) / (n_res + 1))
    _, (big,) = unpaired([SAMPLES["continuous"][0], SAMPLES["continuous"][1]], [(0, 1)], seed, 5000, 0.95, "bootstrap")
    ref = st.bootstrap(SAMPLES["continuous"], lambda a, b: np.mean(a) - np.mean(b), method="percentile",
                       n_resamples=5000, confidence_level=0.95, random_state=np.random.default_rng(3)).confidence_interval
    assert big["ci_low"] == pytest.approx(ref.low, abs=0.02) and big["ci_high"] == pytest.approx(ref.high, abs=0.02)


def test_bootstrap_interval_covers_the_true_difference():
    """Simulated A/B arms with a known difference of means (seeded): the 95% interval covers it, and over 40
    seeded experiments it covers it about 95% of the time."""
    rng = np.random.default_rng(5)
    groups, pairs = [], []
    for _ in range(40):
        groups += [list(rng.normal(0.6, 0.25, 60)), list(rng.normal(0.5, 0.25, 45))]
        pairs.append((len(groups) - 2, len(groups) - 1))
    _, out = unpaired(groups, pairs, 42, 2000, 0.95, "bootstrap")
    covered = sum(r["ci_low"] <= 0.1 <= r["ci_high"] for r in out)
    assert out[0]["ci_low"] <= 0.1 <= out[0]["ci_high"]
    assert 34 <= covered <= 40


# ---------------------------------------------------------------------------------------------- compare() on logs


@pytest.fixture(scope="module")
def per_list():
    """Per-list values from evaluate() on the demo log, the oracle's input."""
    res = sqlmetrics.evaluate(None, LOG, ["nDCG@5", "RR"], **AB)
    return res.per_query.to_pylist()


def _values(rows, date, arm, measure):
    return [r[measure] for r in rows if r["date"] == date and r["run"] == arm]


@pytest.mark.parametrize("test", ["welch", "mannwhitney"])
def test_compare_arms_per_day_equals_scipy(per_list, test):
    rep = sqlmetrics.compare(None, LOG, ["nDCG@5", "RR"], baseline="control", correction="holm", max_p=0.05,
                             n_resamples=500, test="student" if test == "welch" else "wilcoxon", **AB)
    assert not rep.paired and rep.test == test and rep.baseline == "control"
    assert rep.segments == [("2024-06-01",), ("2024-06-02",), ("2024-06-03",)]
    assert len(rep.comparisons) == 6 and all((c.run, c.baseline) == ("treatment", "control") for c in rep.comparisons)
    raw = []
    for c in rep.comparisons:
        b = _values(per_list, c.segment[0], "treatment", c.measure)
        a = _values(per_list, c.segment[0], "control", c.measure)
        ref = st.ttest_ind(b, a, equal_var=False) if test == "welch" else st.mannwhitneyu(*_snapped(b, a),
                                                                                           method="asymptotic")
        assert c.statistic == pytest.approx(ref.statistic, rel=1e-9) and c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
        assert c.difference == pytest.approx(np.mean(b) - np.mean(a), rel=1e-12)
        pooled = ((len(b) - 1) * np.var(b, ddof=1) + (len(a) - 1) * np.var(a, ddof=1)) / (len(a) + len(b) - 2)
        assert c.effect_size == pytest.approx((np.mean(b) - np.mean(a)) / np.sqrt(pooled), rel=1e-9)
        assert c.n == len(a) + len(b) and c.wins is None
        if test == "welch":  # Welch's t interval at 1 - max_p, from the moments: never a resampling
            ci = ref.confidence_interval(0.95)
            assert (c.ci_low, c.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-9)
            # the relative difference and its interval (the delta method on the log of the ratio): tea-tasting's
            import pandas as pd
            import tea_tasting as tt

            frame = pd.DataFrame({"arm": ["b"] * len(b) + ["a"] * len(a), "v": b + a})
            rel = tt.Mean("v", confidence_level=0.95).analyze(frame, control="a", treatment="b", variant="arm")
            assert (c.rel_difference, c.rel_ci_low, c.rel_ci_high) == pytest.approx(
                (rel.rel_effect_size, rel.rel_effect_size_ci_lower, rel.rel_effect_size_ci_upper), rel=1e-9)
        else:  # Mann-Whitney's U tests ranks: no interval of the difference of means
            assert math.isnan(c.ci_low) and math.isnan(c.ci_high)
        raw.append(ref.pvalue)
    # Holm over the whole report: 3 days x 2 measures, by hand
    order = np.argsort(raw)
    holm = np.maximum.accumulate([min(1, (6 - k) * raw[i]) for k, i in enumerate(order)])
    for k, i in enumerate(order):
        assert rep.comparisons[i].p_adjusted == pytest.approx(holm[k], rel=1e-9)
        assert rep.comparisons[i].significant == (holm[k] < 0.05)
    for s in rep.summary:
        v = _values(per_list, s.segment[0], s.run, s.measure)
        lo, hi = st.t.interval(0.95, len(v) - 1, loc=np.mean(v), scale=st.sem(v))
        assert (s.n, s.mean, s.sd, s.se) == pytest.approx((len(v), np.mean(v), np.std(v, ddof=1), st.sem(v)), rel=1e-9)
        assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), rel=1e-9)


@pytest.mark.parametrize("test", ["wilcoxon", "bootstrap"])  # unpaired: Mann-Whitney's ranks, the bootstrap
def test_the_tests_own_queries_keep_to_the_callers_resources(monkeypatch, test):
    """An A/B compare of a large log ran its tests' DuckDB queries without the caller's memory_limit (8.7 GB for
    20,000 sessions under --memory-limit 1GB): they take the call's resources now."""
    from sqlmetrics.stats import significance

    seen, real = [], significance.connect
    monkeypatch.setattr(significance, "connect", lambda **kw: seen.append(kw) or real(**kw))
    rep = sqlmetrics.compare(None, LOG, ["RR"], test=test, n_resamples=50, memory_limit="300MB", threads=1, **AB)
    assert not rep.paired and seen
    assert all(kw == {"memory_limit": "300MB", "threads": 1, "temp_directory": None} for kw in seen)


def test_baseline_marks_improvements_and_degradations():
    """Hand-made lists: 'good' is far above the baseline, 'bad' far below, 'same' equal; unpaired sessions."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0.4, 0.6, 30)
    lists = {(): {"base": {f"b{i}": [v] for i, v in enumerate(base)},
                  "good": {f"g{i}": [v + 0.3] for i, v in enumerate(rng.uniform(0.4, 0.6, 30))},
                  "bad": {f"x{i}": [v - 0.3] for i, v in enumerate(rng.uniform(0.4, 0.6, 30))},
                  "same": {f"s{i}": [v] for i, v in enumerate(base)}}}
    rep = analyse_lists(["base", "good", "bad", "same"], {"m": ("higher", "mean")}, lists, baseline="base",
                        correction="bh", n_resamples=200)
    assert not rep.paired and [c.run for c in rep.comparisons] == ["good", "bad", "same"]
    assert [rep.markers(r, "m") for r in rep.runs] == ["", "▲", "▼", ""]
    table = rep.to_table()
    assert "0.5" in table and "▲" in table and "▼" in table and "better/worse than base" in table
    assert "\\blacktriangledown" in rep.to_latex()
    lower = analyse_lists(["base", "good", "bad", "same"], {"m": ("lower", "mean")}, lists, baseline="base")
    assert [lower.markers(r, "m") for r in lower.runs] == ["", "▼", "▲", ""]


def test_pairing_is_decided_from_shared_queries_and_can_be_forced():
    rng = np.random.default_rng(2)
    q = [f"q{i}" for i in range(20)]
    a = rng.uniform(0, 1, 20)
    b = a + rng.normal(0.05, 0.02, 20)
    values = {"m": [list(a), list(b)]}
    paired = analyse(["a", "b"], {"m": ("higher", "mean")}, q, values)
    assert paired.paired and paired.test == "student"
    c = paired.comparisons[0]
    d = b - a
    assert c.effect_size == pytest.approx(np.mean(d) / np.std(d, ddof=1), rel=1e-9)  # d_z
    assert c.p_value == pytest.approx(st.ttest_rel(b, a).pvalue, rel=1e-9)
    forced = analyse(["a", "b"], {"m": ("higher", "mean")}, q, values, pairing="unpaired")
    assert not forced.paired and forced.test == "welch"
    assert forced.comparisons[0].p_value == pytest.approx(st.ttest_ind(b, a, equal_var=False).pvalue, rel=1e-9)
    # a third of the queries shared: unpaired under 'auto'
    lists = {(): {"a": {f"q{i}": [v] for i, v in enumerate(a)}, "b": {f"q{i + 13}": [v] for i, v in enumerate(b)}}}
    assert not analyse_lists(["a", "b"], {"m": ("higher", "mean")}, lists).paired
    assert analyse_lists(["a", "b"], {"m": ("higher", "mean")}, lists, pairing="paired").comparisons[0].n == 7


@pytest.mark.slow  # test_ab_engine.py's engine_aggregates cases are the fast ones
def test_compare_on_an_engine_equals_local(tmp_path):
    log = pq.read_table(LOG)
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TABLE log ({', '.join(log.column_names)})")
    con.executemany(f"INSERT INTO log VALUES ({', '.join('?' * log.num_columns)})",
                    [tuple(r.values()) for r in log.to_pylist()])
    # the bootstrap draws the same resamples on the engine (aggregates.py); every test: test_ab_engine.py
    kw = dict(baseline="control", correction="bh", max_p=0.05, n_resamples=300, test="bootstrap", **AB)
    there = sqlmetrics.compare(None, "log", ["nDCG@5", "RR"], engine=con, **kw)
    here = sqlmetrics.compare(None, LOG, ["nDCG@5", "RR"], **kw)
    assert len(there.comparisons) == len(here.comparisons) == 6
    for a, b in zip(there.comparisons, here.comparisons):
        assert (a.segment, a.measure, a.run, a.baseline, a.n) == (b.segment, b.measure, b.run, b.baseline, b.n)
        assert a.p_value == b.p_value and a.significant == b.significant
        for key in ("difference", "ci_low", "ci_high", "p_adjusted"):
            assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-12, abs=1e-12), key


def test_label_and_qrels_logs_compare_too():
    rep = sqlmetrics.compare(None, LOG, ["nDCG@5"], label="rating", columns=LOG_COLUMNS, ties="rank",
                             group_by=["market"], n_resamples=200)
    assert rep.segment_names == ("market",) and len(rep.comparisons) == 2
    res = sqlmetrics.evaluate(None, LOG, ["nDCG@5"], label="rating", columns=LOG_COLUMNS, ties="rank",
                              group_by=["market"])
    for row in res.per_group.to_pylist():
        assert rep.segment_means[(row["market"],)][row["run"]]["nDCG@5"] == pytest.approx(row["nDCG@5"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(baseline="nope"), "baseline='nope' is not one of the runs"),
    (dict(test="fisher"), "test='fisher' needs paired runs"),
    (dict(test="welch", pairing="paired"), "unpaired test"),
    (dict(pairing="sometimes"), "pairing='sometimes' is not valid"),
    (dict(correction="fdr"), "correction='fdr' is not valid"),
])
def test_bad_comparison_options_are_named(kwargs, message):
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.compare(None, LOG, ["RR"], n_resamples=50, **{**AB, **kwargs})


def test_one_table_with_several_runs_needs_one_run_argument():
    with pytest.raises(SqlmetricsError, match="pass one table"):
        sqlmetrics.compare(None, [LOG, LOG], ["RR"], **AB)
    one_arm = pa.table({"arm": ["a", "a"], "session": ["s1", "s2"], "doc": ["d", "d"], "position": [1, 1],
                        "clicked": [1, 0], "purchased": [0, 0], "date": ["x", "x"]})
    with pytest.raises(SqlmetricsError, match="at least two runs, got 1 in the run_name column"):
        sqlmetrics.compare(None, one_arm, ["RR"], **AB)


# ---------------------------------------------------------------------------------------------- the command line

DEMO_COMMAND = ["compare", "none", LOG, "--column", "query_id=session", "--column", "doc_id=doc",
                "--column", "rank_position=position", "--column", "run_name=arm", "--ties", "rank",
                "--relevance", "2*purchased + clicked", "--group-by", "date", "-m", "nDCG@5", "-m", "RR",
                "--baseline", "control", "--correction", "holm", "--max-p", "0.05"]


def test_command_line_answers_b_vs_a_per_day(capsys):
    """The README's command: one row per day and arm, summaries with 95% intervals, Welch's p and Holm's."""
    code = cli_main(DEMO_COMMAND)
    out = capsys.readouterr().out
    assert code == 0
    rep = sqlmetrics.compare(None, LOG, ["nDCG@5", "RR"], baseline="control", correction="holm", max_p=0.05, **AB)
    assert out == rep.to_table()
    for day in ("2024-06-01", "2024-06-02", "2024-06-03"):
        assert sum(line.startswith(day) for line in out.splitlines()) == 2 + 4 + 2
    assert "p (holm)" in out and "95% interval" in out and "Welch's t-test" in out


def test_command_line_refuses_log_mistakes(capsys):
    assert cli_main([*DEMO_COMMAND[:3], "--column", "run_name=arm", "-m", "RR"]) == 2
    assert "QRELS 'none'" in capsys.readouterr().err
    assert cli_main([*DEMO_COMMAND[:3], LOG, *DEMO_COMMAND[3:]]) == 2
    assert "give one RUN" in capsys.readouterr().err


def test_segmented_pairs_and_deltas_are_written_per_segment(tmp_path):
    """compare -o pairs.parquet / -q -o deltas.parquet with --group-by: one row per segment, each segment's
    means and per-query differences as evaluate() gives them on its own."""
    qrels = pa.table({"query_id": ["q1", "q1", "q2", "q3"], "doc_id": ["d1", "d2", "d1", "d3"],
                      "relevance": [1, 1, 1, 1]})

    def run(scores):
        return pa.table({"query_id": ["q1", "q1", "q2", "q2", "q3", "q3"], "doc_id": ["d1", "d2", "d1", "d3", "d3", "d1"],
                         "score": scores, "day": ["mon", "mon", "mon", "mon", "tue", "tue"]})

    a, b = run([0.9, 0.1, 0.2, 0.8, 0.9, 0.1]), run([0.1, 0.9, 0.9, 0.2, 0.1, 0.9])
    for path in (tmp_path / "a.parquet", tmp_path / "b.parquet"):
        pq.write_table(a if path.stem == "a" else b, path)
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\nq3 0 d3 1\n")
    args = [str(tmp_path / "qrels.txt"), str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--group-by", "day",
            "-m", "P@1", "--baseline", "a"]
    assert cli_main(["compare", *args, "-o", str(tmp_path / "pairs.parquet")]) == 0
    assert cli_main(["compare", *args, "-q", "-o", str(tmp_path / "deltas.parquet")]) == 0
    expected = sqlmetrics.evaluate(qrels, {"a": a, "b": b}, ["P@1"], group_by="day").per_query.to_pylist()
    value = {(r["run"], r["day"], r["query_id"]): r["P@1"] for r in expected}
    pairs = pq.read_table(tmp_path / "pairs.parquet").to_pylist()
    assert [(p["day"], p["run"], p["baseline"]) for p in pairs] == [("mon", "b", "a"), ("tue", "b", "a")]
    for p in pairs:
        for side in ("run", "baseline"):
            mine = [v for (r, d, _), v in value.items() if r == p[side] and d == p["day"]]
            assert p[f"{side}_mean"] == pytest.approx(sum(mine) / len(mine), abs=1e-12)
    deltas = pq.read_table(tmp_path / "deltas.parquet").to_pylist()
    assert {(d["day"], d["query_id"]): d["difference"] for d in deltas} == {
        (d, q): value["b", d, q] - value["a", d, q] for (r, d, q) in value if r == "a"}


# ---------------------------------------------------------------------------------------------- sample ratio mismatch

def _broken_split(tmp_path):
    """The demo log with half the treatment arm's sessions lost (a logging bug): 150 control sessions, 75
    treatment ones, where the assignment was 50/50."""
    log = pq.read_table(LOG)
    sessions = sorted({s for s, arm in zip(log["session"].to_pylist(), log["arm"].to_pylist()) if arm == "treatment"})
    lost = set(sessions[::2])
    path = tmp_path / "broken.parquet"
    pq.write_table(log.filter(pa.array([s not in lost for s in log["session"].to_pylist()])), path)
    return path, 150, 150 - len(lost)


def test_chi_square_survival_equals_scipy():
    from sqlmetrics.stats.significance import chi2_sf

    for df in (1, 2, 3, 7, 40):
        for x in (1e-9, 0.3, 1.0, 3.84, 10.8, 60.0, 900.0):
            assert chi2_sf(x, df) == pytest.approx(st.chi2.sf(x, df), rel=1e-10, abs=1e-300)


def test_a_broken_split_is_warned_about_everywhere(tmp_path, capsys):
    path, control, treatment = _broken_split(tmp_path)
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"sample ratio mismatch: the arms have control 150, "
                                                           rf"treatment {treatment} lists where a 50/50 split"):
        rep = sqlmetrics.compare(None, path, ["RR"], baseline="control", **AB)
    ref = st.chisquare([control, treatment])
    ratio = rep.sample_ratio
    assert ratio["lists"] == {"control": control, "treatment": treatment} and ratio["mismatch"]
    assert (ratio["statistic"], ratio["p_value"]) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-9)
    assert rep.to_table().startswith("WARNING: sample ratio mismatch") and rep.to_dict()["sample_ratio"]["mismatch"]
    # the command line: the warning on standard error, and on top of the table
    code = cli_main(["compare", "none", str(path), *DEMO_COMMAND[3:]])
    captured = capsys.readouterr()
    assert code == 0 and "sqlmetrics: warning: sample ratio mismatch" in captured.err
    assert captured.out.startswith("WARNING: sample ratio mismatch")
    # the HTML report: an alert on top
    from sqlmetrics.stats.html import build_report

    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="sample ratio mismatch"):
        page = build_report(None, path, ["RR"], baseline="control", **AB).to_html()
    assert page.index('class="mismatch" role="alert"') < page.index("<table")


def test_the_intended_split_is_checked_instead(tmp_path):
    path, control, treatment = _broken_split(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: 150/75 is what a 2:1 split gives
        rep = sqlmetrics.compare(None, path, ["RR"], baseline="control", split={"control": 2, "treatment": 1}, **AB)
    ref = st.chisquare([control, treatment], [2 / 3 * (control + treatment), 1 / 3 * (control + treatment)])
    assert rep.sample_ratio["p_value"] == pytest.approx(ref.pvalue, rel=1e-9) and not rep.sample_ratio["mismatch"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        balanced = sqlmetrics.compare(None, LOG, ["RR"], baseline="control", **AB)  # the demo: 150 and 150
    assert balanced.sample_ratio["statistic"] == 0 and balanced.sample_ratio["p_value"] == 1
    with pytest.raises(SqlmetricsError, match="split= must give a share to each arm, 'control', 'treatment'; it "
                                              "names 'b', which is not one; it leaves out 'treatment'"):
        sqlmetrics.compare(None, path, ["RR"], split={"control": 1, "b": 1}, **AB)
    with pytest.raises(SqlmetricsError, match="split= gives 'treatment' the share -1"):
        sqlmetrics.compare(None, path, ["RR"], split={"control": 1, "treatment": -1}, **AB)
    # paired runs (the same queries) have no split to check
    qrels, runs = sqlmetrics.demo.paths()
    assert sqlmetrics.compare(qrels, runs, ["RR"]).sample_ratio is None


@pytest.mark.parametrize("test, max_p", [("welch", 0.05), ("welch", 0.01), ("student", 0.1)])
def test_minimum_detectable_effect_has_80_percent_power_as_statsmodels_computes_it(test, max_p):
    """The MDE (Student's, Welch's) is the absolute difference at which statsmodels' NormalIndPower gives the test
    80% power, from the difference's standard error (computed here with numpy); statsmodels' own solver agrees to
    its tolerance. Sequential intervals give none."""
    from statsmodels.stats.power import NormalIndPower

    rng = np.random.default_rng(5)
    a, b = rng.normal(0.4, 0.3, 120), rng.normal(0.45, 0.4, 200 if test == "welch" else 120)
    paired = test == "student"
    ids = [f"q{i}" for i in range(len(b))]
    lists = {(): {"A": {(q if paired else f"a{q}"): [v] for q, v in zip(ids, a)},
                  "B": {(q if paired else f"b{q}"): [v] for q, v in zip(ids, b)}}}
    rep = analyse_lists(["A", "B"], {"m": ("higher", "mean")}, lists, test=test, max_p=max_p, baseline="A")
    (c,) = rep.comparisons
    if paired:
        se, n1, ratio = np.std(b - a, ddof=1) / math.sqrt(len(a)), len(a), 0  # one sample: NormalIndPower's ratio 0
        standardised = c.mde / se / math.sqrt(n1)
    else:
        se = math.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b))
        n1, ratio = len(a), len(b) / len(a)
        standardised = c.mde / se / math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    power = NormalIndPower()
    assert power.power(effect_size=standardised, nobs1=n1, alpha=max_p, ratio=ratio) == pytest.approx(0.8, abs=1e-12)
    assert standardised == pytest.approx(power.solve_power(nobs1=n1, alpha=max_p, ratio=ratio, power=0.8), rel=1e-4)
    assert rep.to_dict()["comparisons"][0]["mde"] == c.mde
    sequential = analyse_lists(["A", "B"], {"m": ("higher", "mean")}, lists, test=test, max_p=max_p, baseline="A",
                               sequential=1000)
    assert math.isnan(sequential.comparisons[0].mde) and "mde" not in sequential.to_dict()["comparisons"][0]
