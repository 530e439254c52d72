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


def _softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _stochastic_log(seed: int, n: int = 4000):
    """As _bandit_log, but the new policy is stochastic (a sharper softmax of other noisy scores) and a reward model
    predicts every (context, action) with an error. Also the arrays obp takes (the new policy's probabilities and the
    model's predictions of every action). True CTR: the mean over contexts of sum_a new(a) * ctr(a)."""
    rng = np.random.default_rng(seed)
    contexts, k = 40, 4
    ctr = rng.uniform(0.05, 0.5, (contexts, k))
    logging = _softmax(ctr * 3 + rng.normal(0, 1, (contexts, k)))
    new = _softmax(ctr * 8 + rng.normal(0, 0.5, (contexts, k)))
    model = np.clip(ctr + rng.normal(0, 0.05, (contexts, k)), 0, 1)
    truth = float(np.sum(new * ctr, axis=1).mean())
    ctx = rng.integers(0, contexts, n)
    action = np.array([rng.choice(k, p=logging[c]) for c in ctx])
    click = (rng.random(n) < ctr[ctx, action]).astype(np.int8)
    log = pa.table({"query": [f"q{c}" for c in ctx], "shown": [f"d{a}" for a in action], "clicked": click,
                    "p": logging[ctx, action], "new_p": new[ctx, action], "q_logged": model[ctx, action],
                    "q_new": np.sum(new * model, axis=1)[ctx]})
    arrays = {"action": action, "reward": click.astype(float), "pscore": logging[ctx, action],
              "action_dist": new[ctx], "q_hat": model[ctx]}
    return log, truth, arrays


STOCHASTIC = {"click": "clicked", "propensity": "p", "new_propensity": "new_p", "reward_hat": "q_logged",
              "new_reward_hat": "q_new"}


def _slate_log(seed: int, n: int = 1500):
    """Ranked lists of 3 of 4 documents: per context, the logging and the new policy each draw one of the 24 lists
    from a softmax of their own scores; a document at position l is clicked with probability examination[l] *
    relevance (the position-based model). Rows: one per impression and position, with both policies' marginal
    probabilities of that document at that position (summed over the lists). True clicks per list under the new
    policy: the mean over contexts of sum over lists of new(list) * sum_l examination[l] * relevance(list[l])."""
    import itertools
    rng = np.random.default_rng(seed)
    contexts, lists = 10, list(itertools.permutations(range(4), 3))
    examination = np.array([0.9, 0.5, 0.3])
    relevance = rng.uniform(0.1, 0.7, (contexts, 4))
    logging = _softmax(rng.normal(0, 1, (contexts, len(lists))))
    at = np.zeros((len(lists), 4, 3))  # at[list, document, position] = 1 when the list shows it there
    for j, ranked in enumerate(lists):
        for pos, doc in enumerate(ranked):
            at[j, doc, pos] = 1
    value = np.array([[sum(examination[pos] * relevance[c, doc] for pos, doc in enumerate(ranked)) for ranked in lists]
                      for c in range(contexts)])
    new = _softmax(value * 4 + rng.normal(0, 0.5, value.shape))  # it prefers the lists that get more clicks
    truth = float(np.sum(new * value, axis=1).mean())
    marginal = {"p": np.einsum("cj,jdl->cdl", logging, at), "new_p": np.einsum("cj,jdl->cdl", new, at)}
    rows = {"impression": [], "position": [], "doc": [], "clicked": [], "p": [], "new_p": []}
    for i in range(n):
        c = rng.integers(contexts)
        for pos, doc in enumerate(lists[rng.choice(len(lists), p=logging[c])]):
            rows["impression"].append(f"i{i}")
            rows["position"].append(pos + 1)
            rows["doc"].append(f"d{doc}")
            rows["clicked"].append(int(rng.random() < examination[pos] * relevance[c, doc]))
            rows["p"].append(marginal["p"][c, doc, pos])
            rows["new_p"].append(marginal["new_p"][c, doc, pos])
    return pa.table(rows), truth


SLATE = {"click": "clicked", "propensity": "p", "new_propensity": "new_p"}


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
    ("ips", pa.table({"action": ["a"], "click": [1], "propensity": ["x"], "new_action": ["a"]}),
     r"column 'propensity' \(the role propensity\) of the log holds text: 'x' in row 1"),
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


# Issue 42: a column of text where a role takes numbers gave DuckDB's Binder Error ("Cannot compare values of type
# VARCHAR and type INTEGER_LITERAL"), naming no column. Each numeric role of ips() and pbm_ips() is checked.
TEXT_CASES = [
    ("ips", "action,click,propensity,new_action\na,1,0.5,a\nb,0,50%,a\n", "propensity", "'50%' in row 2",
     "a probability in (0, 1]"),
    ("ips", "action,click,propensity,new_action\na,0,0.5,a\na,yes,0.5,a\n", "click", "'yes' in row 2", "a number"),
    ("ips", "action,click,propensity,new_propensity\na,1,0.5,half\n", "new_propensity", "'half' in row 1",
     "a probability in [0, 1]"),
    ("ips", "action,click,propensity,new_action,reward_hat,new_reward_hat\na,1,0.5,a,0.1,n/a\n", "new_reward_hat",
     "'n/a' in row 1", "a number"),
    ("ips", "action,click,propensity,new_action,reward_hat,new_reward_hat\na,1,0.5,a,high,0.2\n", "reward_hat",
     "'high' in row 1", "a number"),
    ("pbm_ips", "impression,position,action,click,propensity,new_action\n1,1,a,1,50%,a\n", "propensity",
     "'50%' in row 1", "a probability in (0, 1]"),
    ("pbm_ips", "impression,position,action,click,propensity,new_action\n1,1,a,1,0.5,a\n1,top,b,0,0.5,a\n",
     "position", "'top' in row 2", "a position"),
    ("pbm_ips", "impression,position,action,click,propensity,new_action\n1,1,a,none,0.5,a\n", "click",
     "'none' in row 1", "a number"),
    ("interleaving", "impression,team,click\n1,A,yes\n1,B,0\n", "click", "'yes' in row 1", "a number"),
]


@pytest.mark.parametrize("call, text, role, where, wanted", TEXT_CASES)
def test_text_in_a_numeric_role_names_the_column_the_file_and_a_row(call, text, role, where, wanted, tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(SqlmetricsError) as e:
        getattr(sqlmetrics, call)(str(path))
    message = str(e.value)
    assert f"column {role!r} (the role {role}) of {str(path)!r} holds text: {where}" in message, message
    assert wanted in message and "Error:" not in message  # what the role takes; not DuckDB's words


def test_text_in_a_numeric_role_on_the_command_line_is_one_line(tmp_path, capsys):
    from sqlmetrics.cli.main import main

    (tmp_path / "log.csv").write_text("action,click,propensity,new_action\na,1,50%,a\n")
    assert main(["ips", str(tmp_path / "log.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'50%' in row 1" in err and "propensity" in err


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


def test_stochastic_policy_clip_dm_and_dr_hand_computed():
    """Four decisions of a stochastic new policy: w = new_propensity / propensity = 2, 2, 0.5, 0.
    IPS = (2*1 + 2*0 + 0.5*1 + 0*1) / 4 = 0.625, SNIPS = 2.5 / 4.5; DM = mean(0.7, 0.4, 0.3, 0.5) = 0.475;
    DR's terms: 0.7 + 2*(1 - 0.6) = 1.5, 0.4 + 2*(0 - 0.2) = 0, 0.3 + 0.5*(1 - 0.5) = 0.55, 0.5 + 0 = 0.5.
    clip=1.5: w = 1.5, 1.5, 0.5, 0 (two clipped): IPS = 2 / 4, SNIPS = 2 / 3.5, DR's terms 1.3, 0.1, 0.55, 0.5."""
    import statistics
    log = pa.table({"click": [1, 0, 1, 1], "propensity": [0.5, 0.25, 0.8, 0.5], "new_propensity": [1.0, 0.5, 0.4, 0.0],
                    "reward_hat": [0.6, 0.2, 0.5, 0.3], "new_reward_hat": [0.7, 0.4, 0.3, 0.5]})
    est = sqlmetrics.ips(log)
    assert est["n"] == 4 and est["matches"] == 3 and "clipped" not in est
    assert est["ips"].value == pytest.approx(0.625) and est["snips"].value == pytest.approx(2.5 / 4.5)
    assert est["ips"].se == pytest.approx(statistics.stdev([2, 0, 0.5, 0]) / 2)
    assert est["dm"].value == pytest.approx(0.475) and est["dm"].se == pytest.approx(
        statistics.stdev([0.7, 0.4, 0.3, 0.5]) / 2)
    assert est["dr"].value == pytest.approx(2.55 / 4) and est["dr"].se == pytest.approx(
        statistics.stdev([1.5, 0, 0.55, 0.5]) / 2)
    z = st.norm.ppf(0.975)
    assert est["dr"].ci_high == pytest.approx(2.55 / 4 + z * statistics.stdev([1.5, 0, 0.55, 0.5]) / 2)
    clipped = sqlmetrics.ips(log, clip=1.5)
    assert clipped["clipped"] == 2 and clipped["matches"] == 3
    assert clipped["ips"].value == pytest.approx(0.5) and clipped["snips"].value == pytest.approx(2 / 3.5)
    assert clipped["dm"] == est["dm"] and clipped["dr"].value == pytest.approx(2.45 / 4)
    assert sqlmetrics.ips(log, clip=2) == {**est, "clipped": 0}  # no weight above 2: clipping changes nothing
    # a deterministic ranker's columns beside new_propensity are not read: the probability is the weight
    both = log.append_column("action", pa.array(["a"] * 4)).append_column("new_action", pa.array(["b"] * 4))
    assert sqlmetrics.ips(both) == est
    # without a reward model: no dm and dr, as before
    assert set(sqlmetrics.ips(log.drop(["reward_hat", "new_reward_hat"]))) == {"ips", "snips", "n", "matches",
                                                                              "stochastic"}
    assert est["stochastic"] and not sqlmetrics.ips(both.drop(["new_propensity"]))["stochastic"]


def test_a_stochastic_policy_is_estimated_by_ips_snips_and_dr_within_their_intervals():
    """On a simulated log whose truth is known: the intervals cover it, the values equal numpy's on the same rows,
    and DR (a model with errors, corrected by the clicks) is closer to the truth than IPS, with a smaller error."""
    log, truth, a = _stochastic_log(5, 6000)
    est = sqlmetrics.ips(log, columns=STOCHASTIC)
    n = len(a["action"])
    w = a["action_dist"][np.arange(n), a["action"]] / a["pscore"]
    r = a["reward"]
    q_new = np.sum(a["action_dist"] * a["q_hat"], axis=1)
    dr = q_new + w * (r - a["q_hat"][np.arange(n), a["action"]])
    assert est["ips"].value == pytest.approx(np.mean(w * r), rel=1e-12)
    assert est["snips"].value == pytest.approx(np.sum(w * r) / np.sum(w), rel=1e-12)
    assert est["dm"].value == pytest.approx(np.mean(q_new), rel=1e-12)
    assert est["dr"].value == pytest.approx(np.mean(dr), rel=1e-12) and est["dr"].se == pytest.approx(st.sem(dr))
    for name in ("ips", "snips", "dr"):
        assert est[name].ci_low <= truth <= est[name].ci_high, (name, truth, est[name])
    assert est["dr"].se < est["ips"].se
    clipped = sqlmetrics.ips(log, columns=STOCHASTIC, clip=2.0)
    assert clipped["clipped"] == int(np.sum(w > 2)) > 0
    assert clipped["ips"].value == pytest.approx(np.mean(np.minimum(w, 2) * r), rel=1e-12)


def test_position_based_ips_hand_computed_and_on_a_simulated_log():
    """Two lists of two slots: w = 1/0.5, 0.5/0.5 and 0.5/0.25, 0/0.5; clicks 1, 0 and 1, 1: each list's sum
    is 2*1 + 1*0 = 2 and 2*1 + 0*1 = 2, so the estimate is 2 clicks per list (no spread). clip=1.5: 1.5 and
    1.5."""
    log = pa.table({"impression": ["x", "x", "y", "y"], "position": [1, 2, 1, 2], "click": [1, 0, 1, 1],
                    "propensity": [0.5, 0.5, 0.25, 0.5], "new_propensity": [1.0, 0.5, 0.5, 0.0]})
    est = sqlmetrics.pbm_ips(log)
    assert (est["ips"].value, est["ips"].se, est["impressions"], est["n"], est["matches"]) == (2, 0, 2, 4, 3)
    clipped = sqlmetrics.pbm_ips(log, clip=1.5)
    assert clipped["ips"].value == pytest.approx(1.5) and clipped["clipped"] == 2
    # a deterministic new ranking: the documents it would put at each position
    ranked = log.append_column("action", pa.array(["a", "b", "a", "c"])).append_column(
        "new_action", pa.array(["a", "b", "b", "c"])).drop(["new_propensity"])
    # w = 2, 2, 0, 2 (the new ranker moves a out of y's first slot): lists x 2*1 + 2*0, y 0*1 + 2*1
    assert sqlmetrics.pbm_ips(ranked)["ips"].value == pytest.approx((2 + 2) / 2)

    log, truth = _slate_log(8, 3000)
    est = sqlmetrics.pbm_ips(log, columns=SLATE)
    imp = np.asarray(log["impression"])
    terms = np.asarray(log["new_p"]) / np.asarray(log["p"]) * np.asarray(log["clicked"])
    per_list = np.array([terms[imp == i].sum() for i in dict.fromkeys(imp)])
    assert est["impressions"] == 3000 and est["ips"].value == pytest.approx(per_list.mean(), rel=1e-12)
    assert est["ips"].se == pytest.approx(st.sem(per_list), rel=1e-9)
    assert est["ips"].ci_low <= truth <= est["ips"].ci_high
    # the logging policy's own clicks per list differ: the estimate is not the logged mean
    logged = np.asarray(log["clicked"]).sum() / 3000
    assert not est["ips"].ci_low <= logged <= est["ips"].ci_high


OK_LOG = {"click": [1, 0], "propensity": [0.5, 0.5], "new_propensity": [0.5, 1.0], "reward_hat": [0.5, 0.5],
          "new_reward_hat": [0.5, 0.5]}


@pytest.mark.parametrize("change, kwargs, message", [
    ({"new_propensity": [1.5, 0.5]}, {},
     r"ips: 1 row\(s\) have a new_propensity outside \[0, 1\].*column '\"new_propensity\"'"),
    ({"new_propensity": [-0.1, 0.5]}, {}, "new_propensity outside"),
    ({"new_propensity": [float("nan"), 0.5]}, {}, "new_propensity outside"),
    ({"new_propensity": [None, 0.5]}, {}, "new_propensity outside"),
    ({"reward_hat": [float("nan"), 0.5]}, {}, r"1 row\(s\) have no reward_hat .*column '\"reward_hat\"'"),
    ({"new_reward_hat": [None, 0.5]}, {}, r"have no new_reward_hat"),
    ({"new_reward_hat": [float("inf"), 0.5]}, {}, r"have no new_reward_hat"),
    ({"click": [float("nan"), 0.0]}, {}, "have no click"),
    ({"propensity": [1.5, 0.5]}, {}, "propensity outside"),
    ({}, {"clip": 0}, r"clip=0 must be a positive finite number"),
    ({}, {"clip": -1.0}, r"clip=-1.0 must be"),
    ({}, {"clip": float("inf")}, r"clip=inf must be"),
    ({}, {"clip": "10"}, r"clip='10' must be"),
    ({}, {"columns": {"reward": "click"}}, "unknown role"),
    ({}, {"columns": {"new_propensity": "pi"}}, r"no column 'pi' for the role 'new_propensity'"),
])
def test_bad_stochastic_logs_and_parameters_are_named(change, kwargs, message):
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.ips(pa.table({**OK_LOG, **change}), **kwargs)


def test_a_reward_model_needs_both_columns_and_pbm_ips_needs_one_row_per_slot():
    half = pa.table({k: v for k, v in OK_LOG.items() if k != "new_reward_hat"})
    with pytest.raises(SqlmetricsError, match="no column 'new_reward_hat'.*or leave out reward_hat too"):
        sqlmetrics.ips(half)
    slots = {"impression": ["x", "x"], "position": [1, 1], "click": [1, 0], "propensity": [0.5, 0.5],
             "new_propensity": [0.5, 1.0]}
    with pytest.raises(SqlmetricsError, match=r"pbm_ips: 1 row\(s\) repeat an \(impression, position\) pair"):
        sqlmetrics.pbm_ips(pa.table(slots))
    with pytest.raises(SqlmetricsError, match="have no impression or position"):
        sqlmetrics.pbm_ips(pa.table({**slots, "impression": ["x", None], "position": [1, 2]}))
    with pytest.raises(SqlmetricsError, match="pbm_ips: no column 'position'"):
        sqlmetrics.pbm_ips(pa.table({k: v for k, v in slots.items() if k != "position"}))
    with pytest.raises(SqlmetricsError, match="pbm_ips: 1 row\\(s\\) have a new_propensity outside"):
        sqlmetrics.pbm_ips(pa.table({**slots, "position": [1, 2], "new_propensity": [2.0, 1.0]}))
    with pytest.raises(SqlmetricsError, match="clip=0"):
        sqlmetrics.pbm_ips(pa.table({**slots, "position": [1, 2]}), clip=0)


def test_command_line_clip_dm_dr_and_pbm_ips(tmp_path, capsys):
    from sqlmetrics.cli.main import main

    log, truth, a = _stochastic_log(6, 3000)
    pq.write_table(log, tmp_path / "stochastic.parquet")
    mapping = [x for role, name in STOCHASTIC.items() for x in ("--column", f"{role}={name}")]
    assert main(["ips", str(tmp_path / "stochastic.parquet"), *mapping, "--clip", "3", "-f", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    n = len(a["action"])
    w = np.minimum(a["action_dist"][np.arange(n), a["action"]] / a["pscore"], 3)
    dr = (np.sum(a["action_dist"] * a["q_hat"], axis=1)
          + w * (a["reward"] - a["q_hat"][np.arange(n), a["action"]]))
    assert got["clip"] == 3 and got["clipped"] == int(np.sum(a["action_dist"][np.arange(n), a["action"]]
                                                             / a["pscore"] > 3))
    assert got["ips"]["value"] == pytest.approx(np.mean(w * a["reward"]), rel=1e-12)
    assert got["dr"]["value"] == pytest.approx(np.mean(dr), rel=1e-12)
    assert set(got) == {"n", "matches", "clipped", "confidence", "clip", "ips", "snips", "dm", "dr"}
    assert main(["ips", str(tmp_path / "stochastic.parquet"), *mapping, "--clip", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:5]] == ["ips", "snips", "dm", "dr"]
    assert lines[4].split()[1] == f"{np.mean(dr):.4f}" and f"{got['clipped']} weight(s) clipped to 3." in lines[5]
    assert main(["ips", str(tmp_path / "stochastic.parquet"), *mapping, "--clip", "0"]) == 2
    assert "clip=0.0 must be a positive finite number" in capsys.readouterr().err

    log, truth = _slate_log(9, 300)
    pq.write_table(log, tmp_path / "lists.parquet")
    mapping = [x for role, name in SLATE.items() for x in ("--column", f"{role}={name}")]
    assert main(["pbm-ips", str(tmp_path / "lists.parquet"), *mapping, "-f", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["impressions"] == 300 and got["n"] == 900
    assert got["ips"]["value"] == pytest.approx(sqlmetrics.pbm_ips(log, columns=SLATE)["ips"].value, rel=1e-12)
    imp = np.asarray(log["impression"])
    terms = np.asarray(log["new_p"]) / np.asarray(log["p"]) * np.asarray(log["clicked"])
    assert got["ips"]["value"] == pytest.approx(np.mean([terms[imp == i].sum() for i in set(imp)]), rel=1e-12)
    assert main(["pbm-ips", str(tmp_path / "lists.parquet")]) == 2
    assert "pbm_ips: no column 'click' for the role 'click'" in capsys.readouterr().err
