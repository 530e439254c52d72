"""UBM and DCM (sqlmetrics.clicks.ubm, .dcm): fixed points derived by hand on tiny logs, each EM against an independent
numpy EM written from the update equations (docs/clicks.md), the log-likelihood and predict() against probabilities
computed here from each model's definition (every click pattern of a session enumerated), and hostile logs. Simulated
logs are seeded; more seeds, the consistency checks (1e4 and 1e5 sessions) and EM's monotone likelihood are slow."""
from __future__ import annotations

import itertools
import math
import warnings
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics.clicks import MODELS
from sqlmetrics.clicks.log import checked_log
from sqlmetrics.cli.main import main
from sqlmetrics.errors import SqlmetricsError, SqlmetricsWarning
from sqlmetrics.local.connection import connect
from sqlmetrics.local.readers import load


def _log(sessions: list) -> pa.Table:
    """[(session, query, [(doc, clicked), ...] in position order)] as a click log."""
    rows = [(s, q, d, i, c) for s, q, shown in sessions for i, (d, c) in enumerate(shown, 1)]
    names = ("session", "query", "doc", "position", "clicked")
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


def _values(fit, parameter: str, key=("query", "doc")) -> dict:
    return {tuple(r[k] for k in key): r[parameter] for r in fit.parameters[parameter].to_pylist()}


def _quiet_fit(log, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)
        return sqlmetrics.fit_clicks(log, model=model, **kw)


UBM_LOG = _log([("s1", "q", [("a", 1), ("b", 1), ("d", 1)]), ("s2", "q", [("a", 1), ("b", 1), ("d", 0)]),
                ("s3", "q", [("a", 1), ("b", 0), ("c", 1)]), ("s4", "q", [("a", 1), ("b", 0), ("c", 0)]),
                ("s5", "q", [("a", 1), ("b", 0), ("c", 0)])])
DCM_LOG = _log([("s1", "q", [("a", 1), ("b", 0)]), ("s2", "q", [("a", 1), ("b", 0)]), ("s3", "q", [("a", 0), ("b", 1)]),
                ("s4", "q", [("a", 1), ("b", 1)]), ("s5", "q", [("a", 0), ("b", 0)])])


# ---- fixed points by hand -------------------------------------------------------------------------------------------

@pytest.mark.slow  # ~20 iterations; test_first_iteration_by_hand is its fast sibling
def test_ubm_by_hand():
    """a is clicked at position 1 in all five sessions: alpha_a = gamma_{1,0} = 1 after the first iteration. Every
    other document is shown at one (position, previous_click) only, and nothing else is shown there: b at (2, 1),
    2 clicks of 5; c at (3, 1), 1 of 3; d at (3, 2), 1 of 2. For such a pair, alpha = gamma = x from 0.5 on (the same
    update), x <- [k + (n - k) x (1 - x) / (1 - x^2)] / n = [k + (n - k) x / (1 + x)] / n, whose fixed point solves
    n x (1 + x) = k (1 + x) + (n - k) x, i.e. x^2 = k / n: alpha_b = gamma_{2,1} = sqrt(2/5), c and gamma_{3,1}
    sqrt(1/3), d and gamma_{3,2} sqrt(1/2) (PBM would share position 3 between c and d). The log-likelihood is the
    binomial one of the products k/n: 2 ln(2/5) + 3 ln(3/5) + ln(1/3) + 2 ln(2/3) + 2 ln(1/2)."""
    fit = sqlmetrics.fit_clicks(UBM_LOG, model="ubm", iterations=200, tolerance=1e-13)
    alpha = _values(fit, "attractiveness")
    gamma = _values(fit, "examination", ("position", "previous_click"))
    expected = {"b": ((2, 1), math.sqrt(2 / 5)), "c": ((3, 1), math.sqrt(1 / 3)), "d": ((3, 2), math.sqrt(1 / 2))}
    assert alpha[("q", "a")] == 1.0 and gamma[(1, 0)] == 1.0 and len(gamma) == 4
    for doc, (slot, x) in expected.items():
        assert alpha[("q", doc)] == pytest.approx(x, abs=1e-9) and gamma[slot] == pytest.approx(x, abs=1e-9)
    (summary,) = fit.summary.to_pylist()
    assert summary["converged"] and summary["log_likelihood"] == pytest.approx(
        2 * math.log(2 / 5) + 3 * math.log(3 / 5) + math.log(1 / 3) + 2 * math.log(2 / 3) + 2 * math.log(1 / 2),
        abs=1e-9)
    counts = {(r["position"], r["previous_click"]): (r["impressions"], r["clicks"])
              for r in fit.parameters["examination"].to_pylist()}
    assert counts == {(1, 0): (5, 5), (2, 1): (5, 2), (3, 1): (3, 1), (3, 2): (2, 1)}


@pytest.mark.slow  # ~200 iterations; test_first_iteration_by_hand is its fast sibling
def test_dcm_by_hand():
    """Five sessions: a1 b0 (twice), a0 b1, a1 b1, a0 b0. a is always read (position 1): alpha_a = 3/5. With
    b = alpha_b and l = lambda_1 the rest of the likelihood is
      2 ln(1 - l + l (1 - b))   (a1 b0: stopped after a, or went on and b was not attractive)
      + ln b                    (a0 b1; lambda_2 only ever multiplies 1 - lambda_2 + lambda_2 = 1: not identified)
      + ln l + ln b             (a1 b1)  + ln(1 - b)  (a0 b0).
    d/dl: 1/l - 2b/(1 - lb) = 0 gives lb = 1/3; d/db: 2/b - 2l/(1 - lb) - 1/(1 - b) = 0 with 2l/(2/3) = 1/b gives
    1/b = 1/(1 - b): b = 1/2, l = 2/3, lambda_2 stays at 0.5. (The book's closed form, stopping at the last click,
    would give lambda_1 = 1/3 and alpha_b = 2/3.) Log-likelihood 3 ln(3/5) + 2 ln(2/5) + 3 ln(2/3) + 3 ln(1/2)."""
    fit = sqlmetrics.fit_clicks(DCM_LOG, model="dcm", iterations=1000, tolerance=1e-13)
    alpha, lam = _values(fit, "attractiveness"), _values(fit, "continuation", ("position",))
    assert alpha[("q", "a")] == pytest.approx(3 / 5, abs=1e-9) and alpha[("q", "b")] == pytest.approx(1 / 2, abs=1e-9)
    assert lam[(1,)] == pytest.approx(2 / 3, abs=1e-9) and lam[(2,)] == 0.5
    (summary,) = fit.summary.to_pylist()
    assert summary["converged"] and summary["log_likelihood"] == pytest.approx(
        3 * math.log(3 / 5) + 2 * math.log(2 / 5) + 3 * math.log(2 / 3) + 3 * math.log(1 / 2), abs=1e-9)
    assert {r["position"]: (r["clicks"], r["last_clicks"]) for r in fit.parameters["continuation"].to_pylist()} == {
        1: (3, 2), 2: (2, 2)}


def test_first_iteration_by_hand():
    """The first EM iteration from 0.5 on test_ubm_by_hand's and test_dcm_by_hand's logs.
    UBM: alpha_a = gamma_{1,0} = 1 (every row a click); each other pair x <- [k + (n - k) x / (1 + x)] / n at
    x = 1/2: b (2 of 5) 3/5, c (1 of 3) 5/9, d (1 of 2) 2/3; the largest change 1/2 (a's).
    DCM: a is read in every session: 3/5. b: 2 clicks in 5 impressions; it lies below the last click (a, position 1)
    in s1 and s2, where w = (1/2)(1/2) / (1/2 + (1/2)(1/2)) = 1/3 and each adds (1 - 1/3)(1/2) = 1/3: (2 + 2/3)/5 =
    8/15. lambda_1: 3 clicks at 1, one not the last (s4) and two the last (w = 1/3 each): (1 + 2/3)/3 = 5/9.
    lambda_2: its clicks are each the last at the last position: w = lambda_2, it stays 1/2. Largest change 1/10."""
    ubm = sqlmetrics.fit_clicks(UBM_LOG, model="ubm", iterations=1, tolerance=0.6)
    assert _values(ubm, "attractiveness") == pytest.approx({("q", "a"): 1.0, ("q", "b"): 3 / 5, ("q", "c"): 5 / 9,
                                                            ("q", "d"): 2 / 3}, abs=1e-15)
    assert _values(ubm, "examination", ("position", "previous_click")) == pytest.approx(
        {(1, 0): 1.0, (2, 1): 3 / 5, (3, 1): 5 / 9, (3, 2): 2 / 3}, abs=1e-15)
    assert ubm.summary["last_change"][0].as_py() == 0.5
    dcm = sqlmetrics.fit_clicks(DCM_LOG, model="dcm", iterations=1, tolerance=0.2)
    assert _values(dcm, "attractiveness") == pytest.approx({("q", "a"): 3 / 5, ("q", "b"): 8 / 15}, abs=1e-15)
    assert _values(dcm, "continuation", ("position",)) == pytest.approx({(1,): 5 / 9, (2,): 1 / 2}, abs=1e-15)
    assert dcm.summary["last_change"][0].as_py() == pytest.approx(0.1, abs=1e-15)


# ---- numpy EMs written from the update equations ------------------------------------------------------------------

def _simulated(model: str, seed: int, sessions: int, markets=("de", "fr"), docs: int = 6, positions: int = 5):
    """Sessions of one of 3 queries, `positions` of `docs` documents in a random order, clicked as the model says
    with parameters drawn per market."""
    rng = np.random.default_rng(seed)
    alpha = {(m, q, d): rng.uniform(0.05, 0.9) for m in markets for q in range(3) for d in range(docs)}
    gamma = {m: {(r, p): rng.uniform(0.2, 1.0) for r in range(1, positions + 1) for p in range(r)} for m in markets}
    lam = {m: rng.uniform(0.2, 0.9, positions + 1) for m in markets}
    cols = defaultdict(list)
    for s in range(sessions):
        m, q = markets[rng.integers(len(markets))], int(rng.integers(3))
        previous, reading = 0, True
        for r, d in enumerate(rng.permutation(docs)[:positions], 1):
            a = alpha[(m, q, int(d))]
            if model == "ubm":
                c = int(rng.random() < gamma[m][(r, previous)] * a)
            else:
                c = int(reading and rng.random() < a)
                reading = reading and (not c or rng.random() < lam[m][r])
            previous = r if c else previous
            for column, value in zip(("market", "session", "query", "doc", "position", "clicked"),
                                     (m, f"s{s}", f"q{q}", f"d{d}", r, c)):
                cols[column].append(value)
    return pa.table(dict(cols)), alpha, gamma, lam


def _sessions(log: pa.Table) -> dict:
    """{market: [[(query, doc, clicked) in position order] per session]}."""
    by = defaultdict(list)
    for r in log.to_pylist():
        by[(r.get("market"), r["session"])].append((r["position"], r["query"], r["doc"], r["clicked"]))
    out = defaultdict(list)
    for (market, _), rows in by.items():
        out[market].append([(q, d, c) for _, q, d, c in sorted(rows)])
    return out


def _numpy_ubm(sessions: list, iterations: int):
    """UBM's EM from the book's section 4.2 updates, row by row: alpha_qd and gamma_{r,r'} from 0.5, each the mean over
    its rows of c + (1 - c) P(attractive | not clicked) or P(examined | not clicked)."""
    rows = []
    for shown in sessions:
        previous = 0
        for r, (q, d, c) in enumerate(shown, 1):
            rows.append(((q, d), (r, previous), c))
            previous = r if c else previous
    pairs, slots = sorted({p for p, _, _ in rows}), sorted({s for _, s, _ in rows})
    pi = np.array([pairs.index(p) for p, _, _ in rows])
    si = np.array([slots.index(s) for _, s, _ in rows])
    c = np.array([x[2] for x in rows], dtype=float)
    alpha, gamma = np.full(len(pairs), 0.5), np.full(len(slots), 0.5)
    for _ in range(iterations):
        a, g = alpha[pi], gamma[si]
        attracted = c + (1 - c) * (1 - g) * a / (1 - g * a)
        examined = c + (1 - c) * g * (1 - a) / (1 - g * a)
        alpha = np.bincount(pi, attracted, len(pairs)) / np.bincount(pi, minlength=len(pairs))
        gamma = np.bincount(si, examined, len(slots)) / np.bincount(si, minlength=len(slots))
    p = alpha[pi] * gamma[si]
    ll = float(np.sum(c * np.log(p) + (1 - c) * np.log(1 - p)))
    return dict(zip(pairs, alpha)), dict(zip(slots, gamma)), ll


def _numpy_dcm(sessions: list, iterations: int):
    """DCM's EM on the exact likelihood (docs/clicks.md), session by session: w = P(went on after the last click l)
    = lambda_l S / (1 - lambda_l + lambda_l S), S the product of (1 - alpha) below l; alpha_qd <- [clicks + sum over
    its rows below a last click of (1 - w) alpha_qd] / impressions; lambda_r <- [clicks at r not last + sum of w over
    the sessions last clicked at r] / clicks at r."""
    pairs = sorted({(q, d) for shown in sessions for q, d, _ in shown})
    positions = sorted({r for shown in sessions for r, (_, _, c) in enumerate(shown, 1) if c})
    alpha, lam = dict.fromkeys(pairs, 0.5), dict.fromkeys(positions, 0.5)
    for _ in range(iterations):
        a_num, a_den = dict.fromkeys(pairs, 0.0), dict.fromkeys(pairs, 0)
        l_num, l_den = dict.fromkeys(positions, 0.0), dict.fromkeys(positions, 0)
        for shown in sessions:
            clicked = [r for r, (_, _, c) in enumerate(shown, 1) if c]
            last = clicked[-1] if clicked else None
            w = 1.0
            if last:
                below = np.prod([1 - alpha[(q, d)] for q, d, _ in shown[last:]])
                w = lam[last] * below / (1 - lam[last] + lam[last] * below)
            for r, (q, d, c) in enumerate(shown, 1):
                a_den[(q, d)] += 1
                a_num[(q, d)] += c if last is None or r <= last else (1 - w) * alpha[(q, d)]
                if c:
                    l_den[r] += 1
                    l_num[r] += 1 if r != last else w
        alpha = {p: a_num[p] / a_den[p] for p in pairs}
        lam = {r: l_num[r] / l_den[r] for r in positions}
    return alpha, lam


def _numpy_dcm_ll(sessions: list, alpha: dict, lam: dict) -> float:
    """The log-likelihood from DCM's definition, by the forward pass over 'still reading': P(reading) times the
    click's probability, then reading again with lambda after a click, always after none."""
    total = 0.0
    for shown in sessions:
        reading, p = 1.0, 1.0
        for r, (q, d, c) in enumerate(shown, 1):
            a = alpha.get((q, d), 0.5)
            p *= reading * a if c else (1 - reading) + reading * (1 - a)
            reading = lam.get(r, 0.5) if c else reading * (1 - a) / ((1 - reading) + reading * (1 - a))
        total += math.log(p)
    return total


def _check_against_numpy(model: str, seed: int, sessions: int, iterations: int) -> None:
    log, *_ = _simulated(model, seed, sessions)
    fit = _quiet_fit(log, model, group_by="market", iterations=iterations, tolerance=1e-300)
    summary = {r["market"]: r for r in fit.summary.to_pylist()}
    alpha = _values(fit, "attractiveness", ("market", "query", "doc"))
    other = "examination" if model == "ubm" else "continuation"
    second = _values(fit, other, ("market", "position", "previous_click") if model == "ubm" else ("market", "position"))
    for market, shown in _sessions(log).items():
        assert summary[market]["iterations"] == iterations
        if model == "ubm":
            a, g, ll = _numpy_ubm(shown, iterations)
            assert {k[1:]: v for k, v in second.items() if k[0] == market}.keys() == g.keys()
            for slot, value in g.items():
                assert second[(market, *slot)] == pytest.approx(value, abs=1e-9)
        else:
            a, g = _numpy_dcm(shown, iterations)
            ll = _numpy_dcm_ll(shown, a, g)
            for r, value in g.items():
                assert second[(market, r)] == pytest.approx(value, abs=1e-9)
        assert {k[1:] for k in alpha if k[0] == market} == a.keys()
        for pair, value in a.items():
            assert alpha[(market, *pair)] == pytest.approx(value, abs=1e-9)
        assert summary[market]["log_likelihood"] == pytest.approx(ll, abs=1e-9 * max(1.0, abs(ll)))


@pytest.mark.parametrize("model", ["ubm", "dcm"])
def test_em_equals_a_numpy_em_per_segment(model):
    _check_against_numpy(model, seed=1, sessions=80, iterations=4)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
@pytest.mark.parametrize("model", ["ubm", "dcm"])
def test_em_equals_a_numpy_em_per_segment_more_seeds(model, seed):
    _check_against_numpy(model, seed, sessions=1500, iterations=30)


# ---- predict() and the log-likelihood from the models' definitions ---------------------------------------------------

def _pattern_probability(model: str, clicks: tuple, alpha: list, gamma: dict, lam: dict) -> float:
    """P(a session's clicks are exactly `clicks`) under the model, from its definition (alpha per row, in order)."""
    p, previous = 1.0, 0
    if model == "ubm":
        for r, (c, a) in enumerate(zip(clicks, alpha), 1):
            e = gamma.get((r, previous), 0.5) * a
            p *= e if c else 1 - e
            previous = r if c else previous
        return p
    # DCM: a sum over the latent 'still reading' path (read until a click is not followed by going on)
    states = {True: 1.0}
    for r, (c, a) in enumerate(zip(clicks, alpha), 1):
        nxt = defaultdict(float)
        for read, q in states.items():
            if c:
                if read:
                    nxt[True] += q * a * lam.get(r, 0.5)
                    nxt[False] += q * a * (1 - lam.get(r, 0.5))
            else:
                nxt[read] += q * ((1 - a) if read else 1.0)
        states = nxt
    return sum(states.values())


def _numpy_predict(model: str, clicks: list, alpha: list, gamma: dict, lam: dict) -> list:
    """[(conditional, marginal)] per row, by enumerating every click pattern of the session; the conditional None
    where the clicks above have probability 0 (parameters at 0 or 1): it is not defined there."""
    n = len(clicks)
    patterns = {cs: _pattern_probability(model, cs, alpha, gamma, lam) for cs in itertools.product((0, 1), repeat=n)}
    out = []
    for r in range(n):
        above = [p for cs, p in patterns.items() if list(cs[:r]) == clicks[:r]]
        hit = [p for cs, p in patterns.items() if list(cs[:r]) == clicks[:r] and cs[r] == 1]
        out.append((sum(hit) / sum(above) if sum(above) > 0 else None,
                    sum(p for cs, p in patterns.items() if cs[r] == 1)))
    return out


def _predicted(model: str, train: pa.Table, test: pa.Table, iterations: int = 2) -> tuple:
    """Fit on `train` (`iterations`), then predict() every row of `train` and of `test` (each its own sqlm_clicks)
    from the fitted tables; (parameters, the log-likelihood, train's rows, test's rows), rows (session, position,
    conditional, marginal)."""
    chosen = MODELS[model]
    con = connect(None, None, None)
    try:
        checked_log(con, load(con, train, "clicks"), ())
        tables, _ = chosen.fit(con, iterations, 1e-12)
        params = {name: con.sql(f"SELECT * FROM {t}").to_arrow_table() for name, t in tables.items()}
        (_, ll), = con.execute(chosen.log_likelihood(con, tables)).fetchall()
        rows = []
        for log in (train, test):
            checked_log(con, load(con, log, "clicks"), ())
            rows.append(con.execute(f"SELECT session, position, conditional, marginal FROM "
                                    f"({chosen.predict(con, tables)}) ORDER BY session, position").fetchall())
    finally:
        con.close()
    return params, ll, *rows


def _shown(log: pa.Table) -> dict:
    """{session: [(query, doc, clicked)]}; _log() writes each session's rows in position order."""
    shown = defaultdict(list)
    for r in log.to_pylist():
        shown[r["session"]].append((r["query"], r["doc"], r["clicked"]))
    return shown


# Trained on a small log; predicted on another with a document (z) and positions (4, 5) the fit has never seen.
TRAIN = _log([("t1", "q", [("a", 1), ("b", 0), ("c", 1)]), ("t2", "q", [("b", 0), ("a", 1), ("c", 0)]),
              ("t3", "q", [("c", 1), ("a", 1), ("b", 0)]), ("t4", "q", [("a", 0), ("c", 0), ("b", 1)])])
HELD_OUT = _log([("h1", "q", [("a", 1), ("z", 0), ("b", 1), ("c", 0), ("z", 1)]),
                 ("h2", "q", [("c", 0), ("b", 0), ("a", 0)]), ("h3", "q", [("b", 1), ("c", 1)])])


@pytest.mark.parametrize("model", ["ubm", "dcm"])
def test_predict_equals_the_model_s_probabilities(model):
    """conditional = P(C_r = 1 | the clicks above) and marginal = P(C_r = 1), against every click pattern of each
    session enumerated with its probability under the model; unseen keys at 0.5. On the training log the product
    over a session's rows of conditional or 1 - conditional is its likelihood: their logs sum to the fit's."""
    params, ll, trained, rows = _predicted(model, TRAIN, HELD_OUT)
    alpha = {r["doc"]: r["attractiveness"] for r in params["attractiveness"].to_pylist()}
    gamma = {(r["position"], r["previous_click"]): r["examination"]
             for r in params["examination"].to_pylist()} if model == "ubm" else {}
    lam = {r["position"]: r["continuation"] for r in params["continuation"].to_pylist()} if model == "dcm" else {}
    got = defaultdict(list)
    for session, _, conditional, marginal in rows:
        got[session] += [conditional, marginal]
    assert len(rows) == HELD_OUT.num_rows
    for session, shown in _shown(HELD_OUT).items():
        expected = _numpy_predict(model, [c for _, _, c in shown], [alpha.get(d, 0.5) for _, d, _ in shown], gamma,
                                  lam)
        assert got[session] == pytest.approx([p for pair in expected for p in pair], abs=1e-12), session
    clicks = {(r["session"], r["position"]): r["clicked"] for r in TRAIN.to_pylist()}
    assert ll == pytest.approx(sum(math.log(p if clicks[(s, r)] else 1 - p) for s, r, p, _ in trained), abs=1e-12)


# ---- hostile logs ---------------------------------------------------------------------------------------------------

@pytest.mark.slow  # the fast tier's hostile logs: tests/test_clicks.py's and test_clicks_dbn.py's
def test_hostile_logs_fit_finite(tmp_path, capsys):
    """Each segment a hostile case: every row clicked, no row clicked, one position, a pair heading to 0 and one to 1:
    values in [0, 1], finite log-likelihoods, the long table's one schema; and the command takes both models."""
    cases = {"all clicked": [("a", 1), ("b", 1)], "none clicked": [("a", 0), ("b", 0)], "one position": [("a", 1)],
             "to 0 and 1": [("a", 1), ("b", 0), ("c", 0)]}
    sessions = [(f"{case} {i}", "q", shown[i:] + shown[:i]) for case, shown in cases.items() for i in range(2)]
    log = _log(sessions)
    log = log.append_column("case", pa.array([s.rsplit(" ", 1)[0] for s in log["session"].to_pylist()]))
    schemas = set()
    for model in ("ubm", "dcm"):
        fit = _quiet_fit(log, model, group_by="case", iterations=3)
        for parameter, table in fit.parameters.items():
            assert all(0 <= v <= 1 for v in table[parameter].to_pylist()), (model, parameter)
        summary = {r["case"]: r for r in fit.summary.to_pylist()}
        assert all(math.isfinite(r["log_likelihood"]) and r["log_likelihood"] <= 1e-12 for r in summary.values())
        # every row clicked: alpha and gamma (UBM), alpha and lambda_1 (DCM) 1 at once; DCM's lambda_2 stays 0.5 (only
        # ever a last click at the last position, its bracket 1 - lambda_2 + lambda_2 = 1): then nothing changes, and
        # that segment stops at 2 while the others run on to 3
        assert summary["all clicked"] | {"rows": 0} == {"case": "all clicked", "sessions": 2, "rows": 0,
                                                        "iterations": 2, "last_change": 0.0, "converged": True,
                                                        "log_likelihood": 0.0}
        assert summary["to 0 and 1"]["iterations"] == 3
        schemas.add(fit.table().schema)
    assert len(schemas) == 1
    for column in ("previous_click", "continuation"):  # a segment column named as a column of the results
        with pytest.raises(SqlmetricsError, match=f"group_by='{column}' is also a column of the results"):
            sqlmetrics.fit_clicks(log.rename_columns([*log.column_names[:-1], column]), model="ubm", group_by=column)
    pacsv.write_csv(log, tmp_path / "log.csv")
    assert main(["clicks", str(tmp_path / "log.csv"), "--model", "DCM", "--group-by", "case", "--iterations", "2",
                 "-o", str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr().out.startswith("dcm case=all clicked: 2 sessions, 4 rows; 2 iterations, last change 0")


# ---- slow properties: consistency, a likelihood that never falls ---------------------------------------------------

def _simulate_large(model: str, n: int, rng, alpha, gamma, lam, positions: int) -> pa.Table:
    """n sessions of one query, `positions` of len(alpha) documents in a random order, clicked as the model says."""
    order = np.argsort(rng.random((n, len(alpha))), axis=1)[:, :positions]
    attracted = rng.random((n, positions)) < alpha[order]
    clicked = np.zeros((n, positions), dtype=bool)
    previous = np.zeros(n, dtype=int)
    reading = np.ones(n, dtype=bool)
    for r in range(positions):
        if model == "ubm":
            clicked[:, r] = attracted[:, r] & (rng.random(n) < gamma[r + 1, previous])
            previous = np.where(clicked[:, r], r + 1, previous)
        else:
            clicked[:, r] = reading & attracted[:, r]
            reading &= ~clicked[:, r] | (rng.random(n) < lam[r + 1])
    return pa.table({"session": np.repeat(np.arange(n), positions), "query": np.zeros(n * positions, int),
                     "doc": order.ravel(), "position": np.tile(np.arange(1, positions + 1), n),
                     "clicked": clicked.ravel().astype(np.int8)})


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ubm", "dcm"])
def test_the_error_shrinks_with_the_log(model):
    """Logs simulated from known parameters at 1e4 and 1e5 sessions: the mean absolute error of the estimates shrinks.
    UBM's gamma and alpha are compared after scaling by gamma_{1,0} (only their product is identified); DCM's lambda
    of the last position is not identified (each click there is the session's last, at its end) and is left out."""
    rng = np.random.default_rng(12)
    docs, positions = 8, 5
    alpha = rng.uniform(0.1, 0.8, docs)
    gamma = np.zeros((positions + 1, positions))  # gamma[r, r']
    for r in range(1, positions + 1):
        gamma[r, :r] = np.sort(rng.uniform(0.3, 1.0, r))  # the nearer the previous click, the likelier examined
    lam = rng.uniform(0.3, 0.9, positions + 1)
    errors = []
    for n in (10_000, 100_000):
        log = _simulate_large(model, n, rng, alpha, gamma, lam, positions)
        fit = sqlmetrics.fit_clicks(log, model=model, iterations=1000, tolerance=1e-8)
        got = {r["doc"]: r["attractiveness"] for r in fit.parameters["attractiveness"].to_pylist()}
        if model == "ubm":
            g = {(r["position"], r["previous_click"]): r["examination"]
                 for r in fit.parameters["examination"].to_pylist()}
            scale = g[(1, 0)] / gamma[1, 0]
            error = np.mean([abs(got[d] * scale - alpha[d]) for d in range(docs)]
                            + [abs(v / scale - gamma[k]) for k, v in g.items()])
        else:
            got_lam = {r["position"]: r["continuation"] for r in fit.parameters["continuation"].to_pylist()}
            error = np.mean([abs(got[d] - alpha[d]) for d in range(docs)]
                            + [abs(got_lam[r] - lam[r]) for r in range(1, positions)])
        errors.append(error)
    assert errors[1] < errors[0] and errors[1] < 0.02, errors


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ubm", "dcm"])
@pytest.mark.parametrize("seed", [5, 6])
def test_em_never_lowers_the_likelihood(model, seed):
    """EM's log-likelihood after n + 1 iterations is at least that after n (up to rounding), n = 1..15."""
    log, *_ = _simulated(model, seed, sessions=200, markets=("de",))
    lls = [_quiet_fit(log, model, iterations=n, tolerance=1e-300).summary["log_likelihood"][0].as_py()
           for n in range(1, 16)]
    assert all(b >= a - 1e-9 for a, b in zip(lls, lls[1:])), lls


@st.composite
def _small_logs(draw):
    """1-6 sessions of 1-5 positions over 3 documents (a document may repeat within a session), clicks anywhere."""
    return _log([(f"s{s}", draw(st.sampled_from(["q", "r"])),
                  [(draw(st.sampled_from("abc")), draw(st.integers(0, 1))) for _ in range(draw(st.integers(1, 5)))])
                 for s in range(draw(st.integers(1, 6)))])


@pytest.mark.slow  # hypothesis: test_predict_equals_the_model_s_probabilities is its fast case
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_small_logs(), _small_logs(), st.sampled_from(["ubm", "dcm"]), st.integers(1, 40))
def test_predict_on_any_log(train, test, model, iterations):
    """Whatever the logs and however far EM has gone (parameters at or near 0 and 1 included): every prediction is
    finite and in [0, 1], equals the session's click patterns enumerated, and on the training log the conditionals
    multiply to the fit's likelihood."""
    params, ll, trained, rows = _predicted(model, train, test, iterations)
    alpha = {(r["query"], r["doc"]): r["attractiveness"] for r in params["attractiveness"].to_pylist()}
    gamma = {(r["position"], r["previous_click"]): r["examination"]
             for r in params["examination"].to_pylist()} if model == "ubm" else {}
    lam = {r["position"]: r["continuation"] for r in params["continuation"].to_pylist()} if model == "dcm" else {}
    got = defaultdict(list)
    for session, _, conditional, marginal in rows:
        assert 0 <= conditional <= 1 and 0 <= marginal <= 1
        got[session] += [conditional, marginal]
    for session, shown in _shown(test).items():
        expected = _numpy_predict(model, [c for _, _, c in shown], [alpha.get((q, d), 0.5) for q, d, _ in shown],
                                  gamma, lam)
        defined = [g for g, e in zip(got[session], (p for pair in expected for p in pair)) if e is not None]
        assert defined == pytest.approx([p for pair in expected for p in pair if p is not None], abs=1e-12), session
    clicks = {(r["session"], r["position"]): r["clicked"] for r in train.to_pylist()}
    probabilities = [p if clicks[(s, r)] else 1 - p for s, r, p, _ in trained]
    if min(probabilities) > 1e-300:  # else the fit's floor stands in for ln 0
        assert ll == pytest.approx(sum(math.log(p) for p in probabilities), abs=1e-9)
