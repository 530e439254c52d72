"""DBN (sqlmetrics.clicks.dbn) against oracles that are not its SQL: iterates and fixed points derived by hand on tiny
logs, and a numpy EM that enumerates every latent path of each session (attractiveness, satisfaction and continuation
of every row: 2^(3n-1) paths for n positions), written from the model's definition, not from the closed posteriors
the SQL uses; predict() and the log-likelihood against the same enumeration. Sweeps, simulations and hypothesis are
slow."""
from __future__ import annotations

import itertools
import math
import warnings
from collections import defaultdict
from functools import lru_cache

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics.clicks import dbn
from sqlmetrics.cli.main import main
from sqlmetrics.errors import SqlmetricsError, SqlmetricsWarning


def _log(sessions: list) -> pa.Table:
    """[(session, query, [(doc, clicked), ...] in position order)] as a click log."""
    rows = [(s, q, d, i, c) for s, q, shown in sessions for i, (d, c) in enumerate(shown, 1)]
    names = ("session", "query", "doc", "position", "clicked")
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})


def _fit(log, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)
        return sqlmetrics.fit_clicks(log, model="dbn", **kw)


def _values(fit, parameter: str, key=("query", "doc")) -> dict:
    return {tuple(r[k] for k in key): r[parameter] for r in fit.parameters[parameter].to_pylist()}


# --- the oracle: every latent path enumerated ---------------------------------------------------------------------

@lru_cache(maxsize=None)
def _paths(n: int) -> tuple:
    """Every (A, S, G) of a session of n positions (attractive, satisfied-if-clicked, goes-on coin of the n - 1
    transitions) with the examinations E and clicks C they make: E_1 = 1, C_r = E_r A_r,
    E_{r+1} = E_r and not (C_r S_r) and G_r."""
    bits = np.array(list(itertools.product([0, 1], repeat=3 * n - 1)), dtype=bool)
    a, s, g = bits[:, :n], bits[:, n:2 * n], bits[:, 2 * n:]
    e = np.zeros_like(a)
    e[:, 0] = True
    for r in range(n - 1):
        e[:, r + 1] = e[:, r] & ~(e[:, r] & a[:, r] & s[:, r]) & g[:, r]
    return a, s, g, e, e & a


def _path_probabilities(n, alpha, sigma, gamma):
    """P(path) for sessions of n positions: alpha, sigma (sessions x n), gamma (sessions,)."""
    a, s, g, _, _ = _paths(n)
    p = np.prod(np.where(a[None], alpha[:, None], 1 - alpha[:, None]), axis=2)
    p *= np.prod(np.where(s[None], sigma[:, None], 1 - sigma[:, None]), axis=2)
    return p * np.prod(np.where(g[None], gamma[:, None, None], 1 - gamma[:, None, None]), axis=2)


def _sessions(log: pa.Table, segment=None) -> dict:
    """{seg: [(session, pairs in position order, clicks)]}."""
    rows = defaultdict(list)
    for r in log.to_pylist():
        rows[(r.get(segment) if segment else None, r["session"])].append((r["position"], (r["query"], r["doc"]),
                                                                           r["clicked"]))
    out = defaultdict(list)
    for (seg, session), shown in rows.items():
        shown.sort()
        out[seg].append((session, [p for _, p, _ in shown], np.array([c for _, _, c in shown], dtype=bool)))
    return out


def _numpy_dbn(sessions: list, iterations: int) -> tuple:
    """DBN's EM by enumeration, on one segment's sessions (_sessions()), every value from 0.5: alpha <- E[A] per
    impression, sigma <- E[S] per click, gamma <- E[transitions made] / E[transitions possible (E_r = 1, not
    satisfied, r < n)], a zero denominator keeping the previous value. Returns (alpha, sigma, gamma, log-likelihood)."""
    sessions = [(shown, c) for _, shown, c in sessions]
    pairs = sorted({p for shown, _ in sessions for p in shown})
    clicked = sorted({p for shown, c in sessions for p, x in zip(shown, c) if x})
    alpha, sigma, gamma = dict.fromkeys(pairs, 0.5), dict.fromkeys(clicked, 0.5), 0.5
    by_length = defaultdict(list)
    for shown, c in sessions:
        by_length[len(shown)].append((shown, c))
    for _ in range(iterations):
        a_num, s_num = defaultdict(float), defaultdict(float)
        a_den, s_den = defaultdict(int), defaultdict(int)
        g_num = g_den = 0.0
        for n, group in by_length.items():
            al = np.array([[alpha[p] for p in shown] for shown, _ in group])
            si = np.array([[sigma.get(p, 0.5) for p in shown] for shown, _ in group])
            a, s, g, e, c = _paths(n)
            obs = np.array([x for _, x in group])
            post = _path_probabilities(n, al, si, np.full(len(group), gamma)) * (c[None] == obs[:, None]).all(axis=2)
            post /= post.sum(axis=1, keepdims=True)
            attracted, satisfied = post @ a, post @ s
            free = e[:, :-1] & ~(c[:, :-1] & s[:, :-1])  # could go on: read, not satisfied, not the last position
            g_num += float((post @ (free & g)).sum())
            g_den += float((post @ free).sum())
            for i, (shown, x) in enumerate(group):
                for r, p in enumerate(shown):
                    a_num[p] += attracted[i, r]
                    a_den[p] += 1
                    if x[r]:
                        s_num[p] += satisfied[i, r]
                        s_den[p] += 1
        alpha = {p: a_num[p] / a_den[p] for p in pairs}
        sigma = {p: s_num[p] / s_den[p] for p in clicked}
        gamma = g_num / g_den if g_den > 0 else gamma
    return alpha, sigma, gamma, _numpy_ll(sessions, alpha, sigma, gamma)


def _numpy_ll(sessions, alpha, sigma, gamma) -> float:
    total = 0.0
    for shown, x in sessions:
        n = len(shown)
        p = _path_probabilities(n, np.array([[alpha.get(q, 0.5) for q in shown]]),
                                np.array([[sigma.get(q, 0.5) for q in shown]]), np.array([gamma]))[0]
        total += math.log(p[(_paths(n)[4] == x).all(axis=1)].sum())
    return total


def _numpy_predict(shown, x, alpha, sigma, gamma) -> list:
    """(conditional, marginal) per position by enumeration: P(C_r = 1, C_<r as observed) / P(C_<r as observed), and
    P(C_r = 1)."""
    n = len(shown)
    p = _path_probabilities(n, np.array([[alpha.get(q, 0.5) for q in shown]]),
                            np.array([[sigma.get(q, 0.5) for q in shown]]), np.array([gamma]))[0]
    c = _paths(n)[4]
    out = []
    for r in range(n):
        before = (c[:, :r] == x[:r]).all(axis=1)
        out.append((p[before & c[:, r]].sum() / p[before].sum(), p[c[:, r]].sum()))
    return out


def _simulated(seed: int, sessions: int, markets=("de", "fr"), docs: int = 5, positions: int = 4) -> tuple:
    """Sessions of one of 2 queries, `positions` of `docs` documents in a random order, drawn from DBN: alpha and
    sigma per (market, query, doc), gamma per market; sessions of 1..positions positions now and then."""
    rng = np.random.default_rng(seed)
    gamma = {m: rng.uniform(0.5, 0.95) for m in markets}
    alpha = {(m, q, d): rng.uniform(0.05, 0.9) for m in markets for q in range(2) for d in range(docs)}
    sigma = {(m, q, d): rng.uniform(0.1, 0.9) for m in markets for q in range(2) for d in range(docs)}
    cols = defaultdict(list)
    for s in range(sessions):
        m, q = markets[rng.integers(len(markets))], int(rng.integers(2))
        n = positions if rng.random() < 0.8 else int(rng.integers(1, positions + 1))
        reading = True
        for r, d in enumerate(rng.permutation(docs)[:n], 1):
            click = reading and rng.random() < alpha[(m, q, int(d))]
            for name, value in zip(("market", "session", "query", "doc", "position", "clicked"),
                                   (m, f"s{s}", f"q{q}", f"d{d}", r, int(click))):
                cols[name].append(value)
            if reading and ((click and rng.random() < sigma[(m, q, int(d))]) or rng.random() >= gamma[m]):
                reading = False
    return pa.table(dict(cols)), alpha, sigma, gamma


def _check_against_numpy(log, iterations: int, segment="market") -> None:
    fit = _fit(log, group_by=segment, iterations=iterations, tolerance=1e-300)
    summary = {r[segment]: r for r in fit.summary.to_pylist()}
    alpha = _values(fit, "attractiveness", (segment, "query", "doc"))
    sigma = _values(fit, "satisfaction", (segment, "query", "doc"))
    gamma = _values(fit, "continuation", (segment,))
    for name, table in fit.parameters.items():
        assert all(0 <= v <= 1 for v in table[name].to_pylist()), name
    for seg, sessions in _sessions(log, segment).items():
        a, s, g, ll = _numpy_dbn(sessions, iterations)
        assert summary[seg]["iterations"] == iterations or summary[seg]["last_change"] == 0  # stopped: a fixed point
        assert {k[1:]: v for k, v in alpha.items() if k[0] == seg} == pytest.approx(a, abs=1e-9)
        assert {k[1:]: v for k, v in sigma.items() if k[0] == seg} == pytest.approx(s, abs=1e-9)
        assert gamma[(seg,)] == pytest.approx(g, abs=1e-9)
        assert summary[seg]["log_likelihood"] == pytest.approx(ll, abs=1e-9 * max(1.0, abs(ll)))


def test_dbn_equals_an_em_over_every_latent_path():
    log, _, _, _ = _simulated(seed=1, sessions=40)
    _check_against_numpy(log, iterations=3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_dbn_equals_an_em_over_every_latent_path_more_seeds(seed):
    log, _, _, _ = _simulated(seed, sessions=600)
    _check_against_numpy(log, iterations=25)


# --- by hand ------------------------------------------------------------------------------------------------------

def test_by_hand_on_the_command_line(tmp_path, capsys):
    """Two logs by hand, one segment each, fitted by `sqlmetrics clicks --model dbn --iterations 3`.

    Segment "iterates": s1 a(0) b(0); s2 c(1) alone. a at position 1 was read (E_1 = 1) and not clicked:
    P(A = 1 | C) = 0, so alpha_a = 0 from the first iteration on. b: with e = 1, w_1 = (1 - alpha_a)(1 - gamma) and
    w_2 = (1 - alpha_a) gamma (1 - alpha_b), so P(E_2 = 1 | C) = gamma (1 - alpha_b) / (1 - gamma alpha_b) (alpha_a
    cancels); alpha_b <- alpha_b (1 - P(E_2 | C)) = alpha_b (1 - gamma) / (1 - gamma alpha_b) and gamma <- P(E_2 | C) /
    P(E_1 = 1, S_1 = 0 | C) = gamma (1 - alpha_b) / (1 - gamma alpha_b). s2 has one position (no transition; its click
    at the list's end: P(S = 1 | C) = sigma, unchanged). alpha_b and gamma start equal and stay so:
    x <- x (1 - x) / (1 - x^2) = x / (1 + x), x = 1 / (n + 2) after n iterations; alpha_c = 1, sigma_c = 0.5. The
    change of iteration 3 is 1/4 - 1/5. Log-likelihood: ln(1 - x^2) + ln 1.

    Segment "fixed": s3 a(0) b(1) c(1); s4 b(0) c(1); s5 c(1) b(0) a(1). Every session's last click is its last
    row, so every row was read and every transition made: gamma's numerator and denominator are both the 2 + 1 + 2
    transitions above the last clicks, gamma = 1, and alpha = clicks / impressions: a 1/2, b 1/3, c 3/3, from the
    first iteration on. A click above the last is unsatisfied (the user went on): b's in s3, c's in s5, P(S = 1 | C)
    = 0; a last click at the list's end tells nothing, P(S = 1 | C) = sigma. So sigma_b = 0/1, sigma_a = 0.5/1
    (unchanged), and sigma_c <- (sigma_c + sigma_c + 0) / 3: 1/3 after one iteration, (1/3)(2/3)^(n-1) after n,
    towards 0 (the likelihood sees sigma_c only as s5's 1 - sigma_c): the change of iteration 3 is 2/9 - 4/27, the
    only one (alpha and gamma are already at their fixed point). Log-likelihood, each session's probability:
    s3 (1 - 1/2)(1/3)(1 - 0) gamma (1) = 1/6; s4 (1 - 1/3)(1) = 2/3; s5: c clicked (1), unsatisfied (1 - sigma_c),
    on (gamma = 1), b not clicked (2/3), on, a clicked (1/2)."""
    import pyarrow.parquet as pq

    log = _log([("s1", "q", [("a", 0), ("b", 0)]), ("s2", "q", [("c", 1)]),
                ("s3", "q", [("a", 0), ("b", 1), ("c", 1)]), ("s4", "q", [("b", 0), ("c", 1)]),
                ("s5", "q", [("c", 1), ("b", 0), ("a", 1)])])
    pq.write_table(log.append_column("log", pa.array(["iterates"] * 3 + ["fixed"] * 8)), tmp_path / "log.parquet")
    assert main(["clicks", str(tmp_path / "log.parquet"), "--model", "DBN", "--group-by", "log", "--iterations", "3",
                 "-o", str(tmp_path / "p.parquet")]) == 0
    n, x, s_c = 3, 1 / 5, (1 / 3) * (2 / 3) ** 2
    out = capsys.readouterr().out.splitlines()
    assert [line.split(";")[:2] for line in out] == [
        ["dbn log=fixed: 3 sessions, 8 rows", f" {n} iterations, last change {2 / 9 - 4 / 27:.3g} (not converged)"],
        ["dbn log=iterates: 2 sessions, 3 rows", f" {n} iterations, last change {1 / 4 - 1 / 5:.3g} (not converged)"]]
    ll = {"iterates": math.log(1 - x * x), "fixed": math.log(1 / 6) + math.log(2 / 3) + math.log((1 - s_c) / 3)}
    for line, segment in zip(out, ("fixed", "iterates")):
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(ll[segment], abs=1e-5)
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.column_names == ["model", "log", "parameter", "query", "doc", "position", "previous_click", "value",
                                  "impressions", "clicks", "last_clicks"]
    got = {(r["log"], r["parameter"], r["doc"]): r["value"] for r in table.to_pylist()}
    assert got == pytest.approx({
        ("iterates", "attractiveness", "a"): 0, ("iterates", "attractiveness", "b"): x,
        ("iterates", "attractiveness", "c"): 1, ("iterates", "satisfaction", "c"): 0.5,
        ("iterates", "continuation", None): x,
        ("fixed", "attractiveness", "a"): 1 / 2, ("fixed", "attractiveness", "b"): 1 / 3,
        ("fixed", "attractiveness", "c"): 1, ("fixed", "satisfaction", "a"): 0.5, ("fixed", "satisfaction", "b"): 0,
        ("fixed", "satisfaction", "c"): s_c, ("fixed", "continuation", None): 1}, abs=1e-15)
    (row,) = [r for r in table.to_pylist() if r["parameter"] == "continuation" and r["log"] == "iterates"]
    assert [row[c] for c in ("query", "position", "impressions", "clicks", "last_clicks")] == [None, None, 3, 1, 1]


# --- predict() and the log-likelihood --------------------------------------------------------------------------------

def _predict_rows(log: pa.Table, alpha: dict, sigma: dict, gamma: float) -> dict:
    """predict() run over `log` as sqlm_clicks (one segment), with parameter tables holding the values given."""
    con = duckdb.connect()
    con.register("log_view", log)
    con.execute("CREATE TEMP TABLE sqlm_clicks AS SELECT 0::BIGINT AS seg, session, query, doc, "
                "position::BIGINT AS position, clicked::INTEGER AS clicked FROM log_view")
    for name, values in (("attractiveness", alpha), ("satisfaction", sigma)):
        con.register(f"v_{name}", pa.table({"query": [q for q, _ in values], "doc": [d for _, d in values],
                                            name: list(values.values())}))
        con.execute(f"CREATE TEMP TABLE p_{name} AS SELECT 0::BIGINT AS seg, * FROM v_{name}")
    con.execute(f"CREATE TEMP TABLE p_continuation AS SELECT 0::BIGINT AS seg, {gamma!r}::DOUBLE AS continuation")
    tables = {name: f"p_{name}" for name in ("attractiveness", "satisfaction", "continuation")}
    rows = con.execute(f"SELECT session, position, conditional, marginal FROM ({dbn.predict(con, tables)})").fetchall()
    con.close()
    return {(s, p): (c, m) for s, p, c, m in rows}


def test_predict_equals_the_enumeration():
    """Values at 0 and 1 where the log stays possible (d2 never clicked at alpha 0, d4 clicked at alpha 1, d3 a last
    click at the list's end at sigma 1, d0 clicked above a row at sigma 0), a (query, doc) without a value (d9: 0.5,
    as PyClick) and sessions without a click, one position, two clicks in a row."""
    alpha = {("q0", "d1"): 0.3, ("q0", "d2"): 0.0, ("q0", "d3"): 0.7, ("q1", "d4"): 1.0, ("q1", "d0"): 0.45,
             ("q1", "d2"): 0.2}
    sigma = {("q0", "d3"): 1.0, ("q1", "d4"): 0.35, ("q1", "d0"): 0.0, ("q0", "d1"): 0.6}
    log = _log([("h1", "q0", [("d1", 0), ("d9", 1), ("d2", 0), ("d3", 1)]),
                ("h2", "q1", [("d4", 1), ("d0", 1), ("d2", 0)]), ("h3", "q0", [("d3", 0)]),
                ("h4", "q0", [("d1", 1), ("d2", 0), ("d9", 0), ("d3", 0)])])
    got = _predict_rows(log, alpha, sigma, 0.8)
    for session, shown, x in _sessions(log)[None]:
        for r, (conditional, marginal) in enumerate(_numpy_predict(shown, x, alpha, sigma, 0.8), 1):
            assert got[(session, r)] == pytest.approx((conditional, marginal), abs=1e-12)


def test_hostile_logs():
    """Every row clicked, no row clicked, one position, satisfaction heading to 0 and to 1: finite values in [0, 1],
    a finite log-likelihood, equal to the enumeration's."""
    logs = {
        "all clicked": _log([("s1", "q", [("a", 1), ("b", 1)]), ("s2", "q", [("b", 1), ("a", 1)])]),
        "none clicked": _log([("s1", "q", [("a", 0), ("b", 0), ("c", 0)]), ("s2", "q", [("c", 0)])]),
        "one position": _log([("s1", "q", [("a", 1)]), ("s2", "q", [("a", 0)]), ("s3", "q", [("b", 1)])]),
        # a is always the last click with nothing clicked below: satisfaction towards 1; b always clicked above
        # another click: towards 0
        "satisfaction to 0 and 1": _log([("s1", "q", [("b", 1), ("a", 1), ("c", 0), ("d", 0)]),
                                         ("s2", "q", [("b", 1), ("a", 1), ("d", 0), ("c", 0)])]),
    }
    log = pa.concat_tables([t.append_column("case", pa.array([name] * t.num_rows)) for name, t in logs.items()])
    log = log.set_column(0, "session", pa.compute.binary_join_element_wise(log["case"], log["session"], "/"))
    _check_against_numpy(log, iterations=3, segment="case")  # one fit, a segment each
    with pytest.raises(SqlmetricsError, match="group_by='continuation' is also a column of the results"):
        sqlmetrics.fit_clicks(log.rename_columns([*log.column_names[:-1], "continuation"]), model="dbn",
                              group_by="continuation")


# --- slow: consistency and the likelihood's ascent -----------------------------------------------------------------

def _simulated_large(rng, n: int, alpha, sigma, gamma: float, positions: int) -> pa.Table:
    """n sessions of `positions` of the documents in a random order, clicks drawn from DBN, vectorised."""
    order = np.argsort(rng.random((n, len(alpha))), axis=1)[:, :positions]
    clicked = np.zeros((n, positions), dtype=bool)
    reading = np.ones(n, dtype=bool)
    for r in range(positions):
        clicked[:, r] = reading & (rng.random(n) < alpha[order[:, r]])
        satisfied = clicked[:, r] & (rng.random(n) < sigma[order[:, r]])
        reading &= ~satisfied & (rng.random(n) < gamma)
    return pa.table({"session": np.repeat(np.arange(n), positions), "query": np.zeros(n * positions, int),
                     "doc": order.ravel(), "position": np.tile(np.arange(1, positions + 1), n),
                     "clicked": clicked.ravel().astype(np.int8)})


@pytest.mark.slow
def test_the_error_shrinks_with_the_log():
    """Logs simulated from known alpha, sigma (8 documents) and gamma at 1e4 and 1e5 sessions of 5 positions: the
    mean absolute error of every estimate shrinks, and is small at 1e5."""
    rng = np.random.default_rng(21)
    alpha, sigma, gamma = rng.uniform(0.1, 0.8, 8), rng.uniform(0.2, 0.9, 8), 0.8
    errors = []
    for n in (10_000, 100_000):
        fit = _fit(_simulated_large(rng, n, alpha, sigma, gamma, 5), iterations=1000, tolerance=1e-7)
        assert fit.summary["converged"][0].as_py()
        a = {r["doc"]: r["attractiveness"] for r in fit.parameters["attractiveness"].to_pylist()}
        s = {r["doc"]: r["satisfaction"] for r in fit.parameters["satisfaction"].to_pylist()}
        g = fit.parameters["continuation"]["continuation"][0].as_py()
        errors.append(np.mean([abs(a[d] - alpha[d]) for d in range(8)] + [abs(s[d] - sigma[d]) for d in range(8)]
                              + [abs(g - gamma)]))
    assert errors[1] < errors[0] and errors[1] < 0.03, errors


@pytest.mark.slow
def test_the_likelihood_never_decreases():
    """EM's ascent: the log-likelihood after each of iterations 1..12 (a fit each, every one from 0.5) is at least the
    one before, per segment."""
    log, _, _, _ = _simulated(seed=8, sessions=400)
    previous = None
    for n in range(1, 13):
        ll = dict(zip(*(_fit(log, group_by="market", iterations=n, tolerance=1e-300).summary[c].to_pylist()
                        for c in ("market", "log_likelihood"))))
        if previous:
            assert all(ll[m] >= previous[m] - 1e-9 for m in ll), (n, ll, previous)
        previous = ll


@st.composite
def _valid_logs(draw):
    """1-5 sessions of 1-4 positions over 3 documents (a document may repeat within a session), any clicks, one or
    two markets: logs whose fits sit on the boundaries (all or no clicks, a pair seen once, gamma without a
    transition)."""
    sessions = []
    for s in range(draw(st.integers(1, 5))):
        shown = draw(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 1)), min_size=1, max_size=4))
        sessions.append((f"s{s}", draw(st.sampled_from(["q1", "q2"])), shown, draw(st.sampled_from(["de", "fr"]))))
    return sessions


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # ~50 s
@given(_valid_logs())
def test_any_valid_log_equals_the_enumeration(sessions):
    """Property: on any valid log, every segment's DBN after 6 iterations equals the enumeration EM's to 1e-9, inside
    [0, 1], with a finite log-likelihood."""
    log = _log([s[:3] for s in sessions]).append_column(
        "market", pa.array([m for _, _, shown, m in sessions for _ in shown]))
    _check_against_numpy(log, iterations=6)
