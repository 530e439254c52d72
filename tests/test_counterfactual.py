"""Counterfactual estimates: IPS / SNIPS of a new ranker's click-through and team-draft interleaving credit,
on simulated logs (seeded) whose true value and winner are known, against numpy and scipy on the same rows."""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.stats as st

import sqlmetrics
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.stats.counterfactual import sign_test


def _bandit_log(seed: int, n: int = 20000):
    """Contexts (queries) with 5 candidate results at the top slot; the logging ranker samples one from a
    softmax of noisy scores (its propensity is logged), the click probability depends on (context, action),
    the new ranker deterministically shows its own top pick. True CTR of the new ranker: the mean, over the
    uniform contexts, of the click probability of its pick."""
    rng = np.random.default_rng(seed)
    contexts, k = 50, 5
    ctr = rng.uniform(0.02, 0.4, (contexts, k))
    logging_scores = ctr * 5 + rng.normal(0, 1, (contexts, k))
    policy = np.exp(logging_scores) / np.exp(logging_scores).sum(axis=1, keepdims=True)
    new_pick = np.argmax(ctr + rng.normal(0, 0.05, (contexts, k)), axis=1)
    truth = ctr[np.arange(contexts), new_pick].mean()
    ctx = rng.integers(0, contexts, n)
    action = np.array([rng.choice(k, p=policy[c]) for c in ctx])
    click = (rng.random(n) < ctr[ctx, action]).astype(np.int8)
    log = pa.table({"query": [f"q{c}" for c in ctx], "shown": [f"d{a}" for a in action], "clicked": click,
                    "p": policy[ctx, action], "new_top": [f"d{new_pick[c]}" for c in ctx]})
    return log, truth


COLUMNS = {"action": "shown", "click": "clicked", "propensity": "p", "new_action": "new_top"}


def test_ips_and_snips_equal_numpy_on_the_same_rows_and_cover_the_truth(tmp_path):
    log, truth = _bandit_log(7)
    est = sqlmetrics.ips(log, columns=COLUMNS)
    w = (np.asarray(log["shown"]) == np.asarray(log["new_top"])) / np.asarray(log["p"])
    r = np.asarray(log["clicked"], dtype=float)
    n = len(r)
    assert est["n"] == n and est["matches"] == int(np.sum(w > 0))
    assert est["ips"].value == pytest.approx(np.mean(w * r), rel=1e-12)
    assert est["ips"].se == pytest.approx(st.sem(w * r), rel=1e-9)
    snips = np.sum(w * r) / np.sum(w)
    assert est["snips"].value == pytest.approx(snips, rel=1e-12)
    assert est["snips"].se == pytest.approx(np.sqrt(np.sum(w ** 2 * (r - snips) ** 2)) / np.sum(w), rel=1e-9)
    z = st.norm.ppf(0.975)
    assert est["ips"].ci_low == pytest.approx(est["ips"].value - z * est["ips"].se, rel=1e-12)
    for name in ("ips", "snips"):
        assert est[name].ci_low <= truth <= est[name].ci_high, (name, truth, est[name])
    # the logging policy's own CTR is lower: the estimate is not just the logged mean
    assert np.mean(r) < est["snips"].ci_low
    # the same log as a Parquet file
    path = tmp_path / "bandit.parquet"
    pq.write_table(log, path)
    assert sqlmetrics.ips(str(path), columns=COLUMNS) == est


@pytest.mark.slow  # a simulation; test_ips_and_snips_equal_numpy_on_the_same_rows_and_cover_the_truth is the fast case
def test_ips_intervals_cover_the_truth_at_about_their_level():
    hits = {"ips": 0, "snips": 0}
    for seed in range(20):
        log, truth = _bandit_log(100 + seed, n=4000)
        est = sqlmetrics.ips(log, columns=COLUMNS, confidence=0.9)
        for name in hits:
            hits[name] += est[name].ci_low <= truth <= est[name].ci_high
    assert hits["ips"] >= 15 and hits["snips"] >= 15


def test_ips_hand_computed():
    """Four decisions: the new ranker agrees on rows 1 and 3 (propensities 0.5 and 0.25, clicks 1 and 0).
    w = 2, 0, 4, 0: IPS = (2*1 + 4*0) / 4 = 0.5; SNIPS = 2 / 6 = 1/3."""
    log = pa.table({"action": ["a", "b", "a", "c"], "click": [1, 1, 0, 1], "propensity": [0.5, 0.5, 0.25, 0.8],
                    "new_action": ["a", "a", "a", "a"]})
    est = sqlmetrics.ips(log)
    assert est["ips"].value == pytest.approx(0.5) and est["snips"].value == pytest.approx(1 / 3)
    assert est["matches"] == 2


def test_the_estimates_keep_to_the_callers_resources(monkeypatch, tmp_path, capsys):
    """ips() and interleaving() open a DuckDB database with the caller's memory_limit, threads and temp_directory
    (the command line's --memory-limit ...), as evaluate() does."""
    from sqlmetrics.cli import main as cli_main
    from sqlmetrics.stats import counterfactual

    seen, real = [], counterfactual.connect
    monkeypatch.setattr(counterfactual, "connect", lambda **kw: seen.append(kw) or real(**kw))
    log = pa.table({"action": ["a", "b"], "click": [1, 0], "propensity": [0.5, 0.5], "new_action": ["a", "a"]})
    sqlmetrics.ips(log, memory_limit="300MB", threads=1)
    pq.write_table(log, tmp_path / "log.parquet")
    assert cli_main(["ips", str(tmp_path / "log.parquet"), "--memory-limit", "200MB", "--temp-directory",
                     str(tmp_path)]) == 0
    clicks = pa.table({"impression": ["i1", "i1"], "team": ["A", "B"], "click": [1, 0]})
    sqlmetrics.interleaving(clicks, threads=1)
    assert seen == [{"memory_limit": "300MB", "threads": 1, "temp_directory": None},
                    {"memory_limit": "200MB", "threads": None, "temp_directory": str(tmp_path)},
                    {"memory_limit": None, "threads": 1, "temp_directory": None}]


def _interleaved_log(seed: int, n: int, p_a: float, p_b: float, k: int = 2):
    """Impressions of 2k documents, k from each team (the team-draft picks), each clicked independently with
    its team's probability. True delta = P(B gets more clicks) - P(A gets more clicks), from the binomials."""
    rng = np.random.default_rng(seed)
    rows = {"impression": [], "team": [], "clicked": []}
    for i in range(n):
        for team, p in (("A", p_a), ("B", p_b)):
            for _ in range(k):
                rows["impression"].append(f"i{i}")
                rows["team"].append(team)
                rows["clicked"].append(int(rng.random() < p))
    ca, cb = st.binom.pmf(np.arange(k + 1), k, p_a), st.binom.pmf(np.arange(k + 1), k, p_b)
    joint = np.outer(ca, cb)  # [a clicks, b clicks]
    truth = np.sum(np.triu(joint, 1)) - np.sum(np.tril(joint, -1))
    return pa.table(rows), truth


@pytest.mark.slow  # a simulation; test_command_line_ips_and_interleaving and the hand cases are fast
def test_team_draft_credit_finds_the_true_winner_and_covers_the_true_delta():
    log, truth = _interleaved_log(3, 3000, 0.2, 0.3)
    res = sqlmetrics.interleaving(log, columns={"click": "clicked"})
    assert res["teams"] == ("A", "B") and res["impressions"] == 3000
    assert res["delta"].ci_low <= truth <= res["delta"].ci_high
    assert res["delta"].ci_low > 0 and res["p_value"] < 0.001  # B, the true winner
    # the same counts by hand from the rows
    imp = np.asarray(log["impression"])
    team = np.asarray(log["team"])
    clk = np.asarray(log["clicked"])
    outcome = []
    for i in np.unique(imp):
        m = imp == i
        a, b = clk[m & (team == "A")].sum(), clk[m & (team == "B")].sum()
        outcome.append(np.sign(b - a))
    outcome = np.asarray(outcome)
    assert res["wins"] == {"A": int(np.sum(outcome < 0)), "B": int(np.sum(outcome > 0))}
    assert res["ties"] == int(np.sum(outcome == 0))
    assert res["delta"].value == pytest.approx(outcome.mean()) and res["delta"].se == pytest.approx(st.sem(outcome))
    assert res["p_value"] == pytest.approx(st.binomtest(res["wins"]["B"], res["wins"]["A"] + res["wins"]["B"]).pvalue,
                                           rel=1e-9)


def test_no_difference_is_not_a_winner():
    log, truth = _interleaved_log(4, 1500, 0.25, 0.25)
    res = sqlmetrics.interleaving(log, columns={"click": "clicked"})
    assert truth == 0 and res["delta"].ci_low <= 0 <= res["delta"].ci_high and res["p_value"] > 0.05


@pytest.mark.parametrize("k, n", [(0, 0), (3, 10), (5, 10), (7, 10), (40, 100), (480, 1000), (1, 1)])
def test_sign_test_equals_scipy_binomtest(k, n):
    want = st.binomtest(k, n).pvalue if n else 1.0
    assert sign_test(k, n) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("call, log, message", [
    ("ips", pa.table({"action": ["a"], "click": [1], "propensity": [0.0], "new_action": ["a"]}), "propensity outside"),
    ("ips", pa.table({"action": ["a"], "click": [None], "propensity": [0.5], "new_action": ["a"]}), "no click"),
    ("ips", pa.table({"action": ["a"], "click": [1], "propensity": [0.5]}), "no column 'new_action'"),
    ("ips", pa.table({"action": ["a"], "click": [1], "propensity": ["x"], "new_action": ["a"]}), "do not fit"),
    ("ips", {"a": 1}, "cannot read a dict"),
    ("ips", "nope.parquet", "no such file"),
    ("interleaving", pa.table({"impression": ["i"] * 3, "team": ["A", "B", "C"], "click": [1, 0, 0]}), "exactly two"),
    # a click that is not a number is neither a click nor none: never counted for a team, never a NaN estimate
    ("ips", pa.table({"action": ["a", "a"], "click": [1.0, float("nan")], "propensity": [0.5, 0.5],
                      "new_action": ["a", "a"]}), r"1 row\(s\) have no click \(NULL, NaN or infinite\)"),
    ("ips", pa.table({"action": ["a"], "click": [float("inf")], "propensity": [0.5], "new_action": ["a"]}), "no click"),
    ("ips", pa.table({"action": ["a"], "click": [1], "propensity": [float("nan")], "new_action": ["a"]}), "propensity"),
    ("interleaving", pa.table({"impression": ["i", "i"], "team": ["A", "B"], "click": [float("nan"), 0.0]}),
     r"interleaving: 1 row\(s\) have no click"),
    ("interleaving", pa.table({"impression": ["i", "i"], "team": ["A", "B"], "click": [None, 1]}), "have no click"),
    # what the rankers showed, or which list a document was in, unknown: agreement or pooling would be a guess
    ("ips", pa.table({"action": [None, "a"], "click": [1, 0], "propensity": [0.5, 0.5], "new_action": ["a", "a"]}),
     r"1 row\(s\) have no action or new_action"),
    ("ips", pa.table({"action": ["a"], "click": [1e308], "propensity": [0.1], "new_action": ["a"]}), "overflow a double"),
    ("interleaving", pa.table({"impression": ["i", "i"], "team": ["A", "B"], "click": [2, 0]}), "neither 0 nor 1"),
    ("interleaving", pa.table({"impression": ["i", None], "team": ["A", "B"], "click": [1, 0]}), "have no impression"),
])
def test_bad_logs_are_named(call, log, message):
    with pytest.raises(SqlmetricsError, match=message):
        getattr(sqlmetrics, call)(log)


def test_bad_confidence_and_roles():
    log = pa.table({"action": ["a"], "click": [1], "propensity": [0.5], "new_action": ["a"]})
    with pytest.raises(SqlmetricsError, match="confidence=1.5"):
        sqlmetrics.ips(log, confidence=1.5)
    with pytest.raises(SqlmetricsError, match="unknown role"):
        sqlmetrics.ips(log, columns={"reward": "click"})
    assert math.isnan(sqlmetrics.ips(log)["ips"].se)  # one row: no spread to estimate


def test_command_line_ips_and_interleaving(tmp_path, capsys):
    """`sqlmetrics ips` and `sqlmetrics interleaving` on Parquet logs: the numbers numpy gives on the same rows,
    --column in either order, a readable table, and bad input as one line and exit status 2."""
    from sqlmetrics.cli.main import main

    log, truth = _bandit_log(11, 5000)
    pq.write_table(log, tmp_path / "bandit.parquet")
    mapping = [a for role, name in COLUMNS.items() for a in ("--column", f"{role}={name}")]
    assert main(["ips", str(tmp_path / "bandit.parquet"), *mapping, "-f", "json", "--confidence", "0.9"]) == 0
    got = json.loads(capsys.readouterr().out)
    w = (np.asarray(log["shown"]) == np.asarray(log["new_top"])) / np.asarray(log["p"])
    r = np.asarray(log["clicked"], dtype=float)
    assert got["n"] == len(r) and got["ips"]["value"] == pytest.approx(np.mean(w * r), rel=1e-12)
    assert got["snips"]["value"] == pytest.approx(np.sum(w * r) / np.sum(w), rel=1e-12)
    z = st.norm.ppf(0.95)
    assert got["ips"]["ci_high"] == pytest.approx(np.mean(w * r) + z * st.sem(w * r), rel=1e-9)
    assert main(["ips", str(tmp_path / "bandit.parquet"), *mapping]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["estimate", "value", "se", "95%", "interval"]
    assert lines[1].split()[:2] == ["ips", f"{np.mean(w * r):.4f}"] and lines[2].startswith("snips")

    log, truth = _interleaved_log(5, 400, 0.2, 0.35)
    pq.write_table(log, tmp_path / "interleaved.parquet")
    assert main(["interleaving", str(tmp_path / "interleaved.parquet"), "--column", "clicked=click", "-f", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    imp, team, clk = (np.asarray(log[c]) for c in ("impression", "team", "clicked"))
    outcome = np.array([np.sign(clk[(imp == i) & (team == "B")].sum() - clk[(imp == i) & (team == "A")].sum())
                        for i in np.unique(imp)])
    assert got["wins"] == {"A": int(np.sum(outcome < 0)), "B": int(np.sum(outcome > 0))}
    assert got["delta"]["value"] == pytest.approx(outcome.mean(), rel=1e-12)
    assert got["p_value"] == pytest.approx(st.binomtest(got["wins"]["B"], got["wins"]["A"] + got["wins"]["B"]).pvalue,
                                           rel=1e-9)
    out_file = tmp_path / "credit.txt"
    assert main(["interleaving", str(tmp_path / "interleaved.parquet"), "--column", "click=clicked",
                 "-o", str(out_file)]) == 0
    assert out_file.read_text().startswith(f"400 impressions: A wins {got['wins']['A']}, B wins {got['wins']['B']}")

    assert main(["interleaving", str(tmp_path / "interleaved.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no column 'click' for the role 'click'" in err and "Traceback" not in err
    assert main(["ips", str(tmp_path / "bandit.parquet"), *mapping, "--confidence", "1.5"]) == 2
    assert "confidence=1.5" in capsys.readouterr().err


def test_json_is_valid_and_a_nan_click_in_parquet_is_refused(tmp_path, capsys):
    """-f json prints null where an estimate is not a number (JSON has no NaN); a NaN in a Parquet file, which
    DuckDB's isnan() alone misses there (the file's statistics leave NaN out), is a missing click."""
    from sqlmetrics.cli.main import main
    never = tmp_path / "never.parquet"  # the new ranker never agrees: SNIPS has nothing to say
    pq.write_table(pa.table({"action": ["a", "b"], "click": [1.0, 0.0], "propensity": [0.5, 0.5],
                             "new_action": ["c", "c"]}), never)
    capsys.readouterr()
    assert main(["ips", str(never), "-f", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # strict: NaN would fail here
    assert printed["snips"] == {"value": None, "se": None, "ci_low": None, "ci_high": None}
    nan = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"action": ["a", "a"], "click": [1.0, float("nan")], "propensity": [0.5, 0.5],
                             "new_action": ["a", "a"]}), nan)
    assert main(["ips", str(nan), "-f", "json"]) == 2
    assert "1 row(s) have no click (NULL, NaN or infinite)" in capsys.readouterr().err
