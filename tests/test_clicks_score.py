"""A fitted click model judged on a held-out log (sqlmetrics.clicks.score, ClickFit.score, `sqlmetrics clicks
--held-out`). Each model's predict() against probabilities written here from the model's definition: a brute-force
enumeration of every click vector of short sessions (the joint probability of the clicks, summed: conditional and
marginal together) and the sequential Bayes recursion; the scores against numpy from the parameters, and a tiny
example computed by hand. Sweeps over seeds are slow."""
from __future__ import annotations

import itertools
import math
from collections import defaultdict

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli.main import main
from sqlmetrics.clicks import MODELS, ClickFit
from sqlmetrics.errors import SqlmetricsError


def _log(sessions: list, market=None) -> pa.Table:
    """[(session, query, [(doc, clicked), ...] in position order)] as a click log."""
    rows = [(s, q, d, i, c) for s, q, shown in sessions for i, (d, c) in enumerate(shown, 1)]
    names = ("session", "query", "doc", "position", "clicked")
    table = pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})
    return table if market is None else table.append_column("market", pa.array([market] * len(rows)))


# --- the models' probabilities, written from their definitions ---------------------------------------------------

def _joint(model: str, alpha: list, sigma: list, gamma: list) -> dict:
    """{click vector: its probability} for one list, summed over every path of the model's hidden events.
    pbm: each position examined with gamma_r and attractive with alpha_r, independently; clicked when both.
    cascade / sdbn: the user examines position 1; at an examined position is attracted (alpha) and clicks, then is
    satisfied (sigma; always for cascade) and leaves, or goes on; not attracted, goes on; never back once gone."""
    out = defaultdict(float)
    n = len(alpha)

    def walk(r: int, examining: bool, clicks: tuple, p: float) -> None:
        if r == n:
            out[clicks] += p
            return
        if model == "pbm":
            for e, a in itertools.product((0, 1), repeat=2):
                walk(r + 1, True, clicks + (e * a,),
                     p * (gamma[r] if e else 1 - gamma[r]) * (alpha[r] if a else 1 - alpha[r]))
            return
        if not examining:
            walk(r + 1, False, clicks + (0,), p)
            return
        s = 1.0 if model == "cascade" else sigma[r]
        walk(r + 1, True, clicks + (0,), p * (1 - alpha[r]))
        walk(r + 1, False, clicks + (1,), p * alpha[r] * s)
        walk(r + 1, True, clicks + (1,), p * alpha[r] * (1 - s))

    walk(0, True, (), 1.0)
    return out


def _enumerated(model: str, alpha: list, sigma: list, gamma: list, clicks: tuple) -> list:
    """[(conditional, marginal)] per position of a session showing `clicks`, from the joint: P(c_<r, C_r = 1) /
    P(c_<r) and the sum of P over the vectors clicked at r."""
    joint = _joint(model, alpha, sigma, gamma)
    out = []
    for r in range(len(clicks)):
        prefix = sum(p for c, p in joint.items() if c[:r] == clicks[:r])
        hit = sum(p for c, p in joint.items() if c[:r] == clicks[:r] and c[r] == 1)
        marginal = sum(p for c, p in joint.items() if c[r] == 1)
        out.append((hit / prefix if prefix > 0 else None, marginal))
    return out


def _sequential(model: str, alpha, sigma, gamma, clicks) -> tuple:
    """(conditional, marginal) arrays by the models' recursions: PBM gamma alpha both; cascade / sdbn: the
    examination probability given the clicks above, updated at a click to 1 - sigma and at a skip by Bayes
    (e (1 - alpha) / (1 - e alpha)); the marginal alpha_r prod_{i<r} (1 - alpha_i sigma_i)."""
    alpha, gamma = np.asarray(alpha, float), np.asarray(gamma, float)
    sigma = np.ones_like(alpha) if model == "cascade" else np.asarray(sigma, float)
    if model == "pbm":
        return gamma * alpha, gamma * alpha
    conditional, e = np.empty_like(alpha), 1.0
    for r, c in enumerate(clicks):
        conditional[r] = alpha[r] * e
        e = 1 - sigma[r] if c else e * (1 - alpha[r]) / (1 - e * alpha[r])
    marginal = alpha * np.concatenate([[1.0], np.cumprod(1 - alpha * sigma)[:-1]])
    return conditional, marginal


def _predicted(model: str, sessions: list, alpha: dict, sigma: dict, gamma: dict, missing=()) -> dict:
    """{(session, position): (conditional, marginal)} from MODELS[model].predict over sqlm_clicks and parameter
    tables built here (seg 0): the contract every model's predict() keeps. Keys in `missing` get no row."""
    alpha, sigma, gamma = ({k: float(v) for k, v in d.items()} for d in (alpha, sigma, gamma))
    con = duckdb.connect()
    rows = [(s, d, r, c) for s, shown in sessions for r, (d, c) in enumerate(shown, 1)]
    tables = {  # seg 0 and query 'q' throughout; typed as log.checked_log() and the fits leave them
        "clicks": ("session VARCHAR, doc VARCHAR, position BIGINT, clicked INTEGER", rows),
        "attractiveness": ("doc VARCHAR, attractiveness DOUBLE",
                           [(d, a) for d, a in alpha.items() if d not in missing]),
        "satisfaction": ("doc VARCHAR, satisfaction DOUBLE", [(d, s) for d, s in sigma.items() if d not in missing]),
        "examination": ("position BIGINT, examination DOUBLE", [(r, g) for r, g in gamma.items() if r not in missing]),
    }
    for name, (columns, values) in tables.items():
        con.execute(f"CREATE TEMP TABLE sqlm_{name} (seg BIGINT, query VARCHAR, {columns})")
        if values:
            con.execute(f"INSERT INTO sqlm_{name} SELECT 0, 'q', * FROM (VALUES {', '.join(map(repr, values))})")
    tables = {"cascade": ("attractiveness",), "sdbn": ("attractiveness", "satisfaction"),
              "pbm": ("attractiveness", "examination")}[model]
    sql = MODELS[model].predict(con, {t: f"sqlm_{t}" for t in tables})
    got = {(s, r): (c, m) for _, s, r, c, m in con.execute(sql).fetchall()}
    assert len(got) == len(rows)
    return got


def _check_predict(model: str, seed: int, n: int) -> None:
    """Every click vector of a list of n documents, each as a held-out session: predict() equals the enumeration
    and the recursion to 1e-12."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(n)]
    alpha = dict(zip(docs, rng.uniform(0.05, 0.95, n)))
    sigma = dict(zip(docs, rng.uniform(0.05, 0.95, n)))
    gamma = dict(zip(range(1, n + 1), rng.uniform(0.05, 0.95, n)))
    a, s, g = [alpha[d] for d in docs], [sigma[d] for d in docs], [gamma[r] for r in range(1, n + 1)]
    vectors = list(itertools.product((0, 1), repeat=n))
    sessions = [(f"s{i}", list(zip(docs, v))) for i, v in enumerate(vectors)]
    got = _predicted(model, sessions, alpha, sigma, gamma)
    for i, v in enumerate(vectors):
        enumerated = _enumerated(model, a, s, g, v)
        conditional, marginal = _sequential(model, a, s, g, v)
        for r in range(n):
            c, m = got[(f"s{i}", r + 1)]
            assert m == pytest.approx(enumerated[r][1], abs=1e-12) and m == pytest.approx(marginal[r], abs=1e-12)
            if enumerated[r][0] is not None:  # a prefix of probability 0 (cascade: two clicks) has no conditional
                assert c == pytest.approx(enumerated[r][0], abs=1e-12), (model, v, r)
            assert c == pytest.approx(conditional[r], abs=1e-12), (model, v, r)


@pytest.mark.parametrize("model", ["cascade", "sdbn", "pbm"])
def test_predict_equals_the_enumerated_model(model):
    _check_predict(model, seed=1, n=3)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["cascade", "sdbn", "pbm"])
@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_predict_equals_the_enumerated_model_more_seeds(model, seed):
    _check_predict(model, seed, n=5)


def test_predict_at_the_boundaries_and_unseen_keys():
    """alpha and sigma at 0 and 1, and a document and a position the fit has no parameter for (0.5 each): finite
    probabilities in [0, 1]; a skipped document of alpha 1 (a history the model rules out) gives conditional 0, not
    0/0. By hand, SDBN, list a(alpha 1, sigma 0) b(alpha 0) x(unseen: 0.5, 0.5), clicks 1 0 0: at b the reader goes
    on surely (1 - sigma_a = 1): conditional 0 (alpha_b); at x, e = 1 after the skip of b (alpha 0), so 0.5. Marginal
    at x: 0.5 * (1 - 1 * 0) * (1 - 0 * 1) = 0.5."""
    alpha, sigma, gamma = {"a": 1.0, "b": 0.0, "x": 0.5}, {"a": 0.0, "b": 1.0, "x": 0.5}, {1: 1.0, 2: 0.0, 3: 0.5}
    sessions = [("s1", [("a", 1), ("b", 0), ("x", 0)]), ("s2", [("a", 0), ("b", 1), ("x", 1)])]
    got = {model: _predicted(model, sessions, alpha, sigma, gamma, missing=("x", 3))
           for model in ("cascade", "sdbn", "pbm")}
    assert all(0 <= v <= 1 and math.isfinite(v) for m in got.values() for pair in m.values() for v in pair), got
    assert got["sdbn"][("s1", 2)] == (0.0, 0.0) and got["sdbn"][("s1", 3)] == (0.5, 0.5)
    assert got["sdbn"][("s2", 2)][0] == 0.0  # a (alpha 1) skipped: the history is impossible; 0, not NaN
    assert got["pbm"][("s1", 3)] == (0.25, 0.25)


# --- the scores ----------------------------------------------------------------------------------------------------

# Cascade fitted to these gives alpha_a = 1/2 (a read twice, clicked once) and alpha_b = 1/4 (read 4 times, once).
TRAIN = _log([("t1", "q", [("a", 1)]), ("t2", "q", [("a", 0), ("b", 0)]), ("t3", "q", [("b", 1)]),
              ("t4", "q", [("b", 0)]), ("t5", "q", [("b", 0)])])
HELD_OUT = _log([("s1", "q", [("a", 0), ("b", 1)]), ("s2", "q", [("b", 0), ("a", 0)])])


def test_score_by_hand():
    """Cascade, alpha_a = 1/2, alpha_b = 1/4; held-out s1: a(0) b(1), s2: b(0) a(0).
    Conditional: s1: 1 - 1/2, then 1/4 (no click above); s2: 1 - 1/4, then 1 - 1/2.
    Log-likelihood = ln(1/2) + ln(1/4) + ln(3/4) + ln(1/2) = ln 3 - 6 ln 2 = -3.0603; per session half of it.
    Marginal q: s1: 1/2, then 1/4 * (1 - 1/2) = 1/8; s2: 1/4, then 1/2 * (1 - 1/4) = 3/8.
    Rank 1: log2 of (1 - 1/2) and (1 - 1/4): mean (log2 3 - 3) / 2, perplexity 2^((3 - log2 3)/2) = sqrt(8/3).
    Rank 2: log2(1/8) and log2(1 - 3/8) = log2 5 - 3: mean (log2 5 - 6) / 2, perplexity sqrt(64/5) = 8 / sqrt 5.
    Perplexity = (sqrt(8/3) + 8/sqrt 5) / 2 = 2.6054.
    CTR cells, one impression each: (a,1) 0 vs 1/2, (b,1) 0 vs 1/4, (b,2) 1 vs 1/8, (a,2) 0 vs 3/8: squares 16/64,
    4/64, 49/64, 9/64; RMSE sqrt(78/256) = sqrt 78 / 16; rank 1 sqrt(20/128) = sqrt(5/32); rank 2 sqrt(58/128)."""
    fit = sqlmetrics.fit_clicks(TRAIN, model="cascade")
    assert {r["doc"]: r["attractiveness"] for r in fit.parameters["attractiveness"].to_pylist()} == \
        {"a": 0.5, "b": 0.25}
    score = fit.score(HELD_OUT)  # the fit's connection is closed: the score reads its Arrow tables
    (row,) = score.segments.to_pylist()
    ll = math.log(3) - 6 * math.log(2)
    assert row == pytest.approx({"sessions": 2, "rows": 4, "unseen_rows": 0, "log_likelihood": ll,
                                 "log_likelihood_per_session": ll / 2,
                                 "perplexity": (math.sqrt(8 / 3) + 8 / math.sqrt(5)) / 2,
                                 "ctr_rmse": math.sqrt(78) / 16}, abs=1e-12)
    ranks = {r["position"]: r for r in score.ranks.to_pylist()}
    assert ranks[1]["perplexity"] == pytest.approx(math.sqrt(8 / 3), abs=1e-12)
    assert ranks[2]["perplexity"] == pytest.approx(8 / math.sqrt(5), abs=1e-12)
    assert ranks[1]["ctr_rmse"] == pytest.approx(math.sqrt(5 / 32), abs=1e-12)
    assert ranks[2]["ctr_rmse"] == pytest.approx(math.sqrt(58 / 128), abs=1e-12)
    assert ranks[1]["log_likelihood"] == pytest.approx(math.log(1 / 2) + math.log(3 / 4), abs=1e-12)
    assert [(r["sessions"], r["rows"]) for r in ranks.values()] == [(2, 2), (2, 2)]
    table = score.table()
    assert table.column_names[:2] == ["model", "position"] and table["position"].to_pylist() == [None, 1, 2]


def _numpy_scores(model: str, fit, held_out: pa.Table) -> dict:
    """Each number of a score from the fit's parameters, in numpy, by the definitions (unseen keys at 0.5)."""
    alpha = {(r["query"], r["doc"]): r["attractiveness"] for r in fit.parameters["attractiveness"].to_pylist()}
    sigma = {(r["query"], r["doc"]): r["satisfaction"]
             for r in fit.parameters.get("satisfaction", pa.table({"x": []})).to_pylist()}
    gamma = {r["position"]: r["examination"]
             for r in fit.parameters.get("examination", pa.table({"x": []})).to_pylist()}
    sessions: dict = {}
    for r in held_out.to_pylist():
        sessions.setdefault(r["session"], []).append(r)
    ll, bits, cells, unseen = [], {}, {}, 0
    for rows in sessions.values():
        rows.sort(key=lambda r: r["position"])
        keys = [(r["query"], r["doc"]) for r in rows]
        c = np.array([r["clicked"] for r in rows])
        a = [alpha.get(k, 0.5) for k in keys]
        conditional, marginal = _sequential(model, a, [sigma.get(k, 0.5) for k in keys],
                                            [gamma.get(r["position"], 0.5) for r in rows], c)
        unseen += sum(k not in alpha or (model == "pbm" and r["position"] not in gamma) for k, r in zip(keys, rows))
        ll.append(np.sum(np.log(np.maximum(np.where(c == 1, conditional, 1 - conditional), 1e-300))))
        for r, ci, q, k in zip(rows, c, marginal, keys):
            bits.setdefault(r["position"], []).append(math.log2(max(q if ci else 1 - q, 1e-300)))
            cells.setdefault((k, r["position"]), []).append((ci, q))
    rank_perplexity = {r: 2 ** -np.mean(b) for r, b in bits.items()}
    squares = {key: len(v) * (np.mean([x[0] for x in v]) - np.mean([x[1] for x in v])) ** 2
               for key, v in cells.items()}
    n = {key: len(v) for key, v in cells.items()}
    per_rank = {r: math.sqrt(sum(s for (_, p), s in squares.items() if p == r) /
                             sum(x for (_, p), x in n.items() if p == r)) for r in bits}
    return {"sessions": len(sessions), "rows": held_out.num_rows, "unseen_rows": unseen,
            "log_likelihood": float(np.sum(ll)), "log_likelihood_per_session": float(np.sum(ll)) / len(sessions),
            "perplexity": float(np.mean(list(rank_perplexity.values()))),
            "ctr_rmse": math.sqrt(sum(squares.values()) / sum(n.values())), "ranks": (rank_perplexity, per_rank)}


def _simulated(seed: int, sessions: int, docs: int = 6, positions: int = 4) -> pa.Table:
    """A PBM log of one query: `positions` of `docs` documents, in a random order."""
    rng = np.random.default_rng(seed)
    gamma, alpha = np.sort(rng.uniform(0.3, 1, positions))[::-1], rng.uniform(0.05, 0.9, docs)
    order = np.argsort(rng.random((sessions, docs)), axis=1)[:, :positions]
    clicked = rng.random((sessions, positions)) < gamma * alpha[order]
    return pa.table({"session": np.repeat(np.arange(sessions), positions), "query": ["q"] * (sessions * positions),
                     "doc": [f"d{d}" for d in order.ravel()], "position": np.tile(np.arange(1, positions + 1),
                                                                                   sessions),
                     "clicked": clicked.ravel().astype(np.int8)})


def _check_scores(model: str, seed: int, train: int, test: int) -> None:
    log, held_out = _simulated(seed, train), _simulated(seed + 100, test, docs=7, positions=5)  # d6, position 5 unseen
    fit = sqlmetrics.fit_clicks(log, model=model, **({"iterations": 30, "tolerance": 1e-3} if model == "pbm" else {}))
    expected = _numpy_scores(model, fit, held_out)
    rank_perplexity, rank_rmse = expected.pop("ranks")
    score = fit.score(held_out)
    (row,) = score.segments.to_pylist()
    assert row == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert expected["unseen_rows"] > 0
    for r in score.ranks.to_pylist():
        assert r["perplexity"] == pytest.approx(rank_perplexity[r["position"]], rel=1e-12)
        assert r["ctr_rmse"] == pytest.approx(rank_rmse[r["position"]], rel=1e-12)


@pytest.mark.slow  # test_score_by_hand is the fast check of the same arithmetic
@pytest.mark.parametrize("model", ["cascade", "sdbn", "pbm"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scores_equal_numpy_more_seeds(model, seed):
    _check_scores(model, seed, train=2000, test=500)


def test_score_per_segment_and_hostile_held_out_logs():
    """Segments judged each by its own model; a held-out segment the fit has none for is named; a held-out log of
    another id type (text against integers), all clicked, a query and document never seen: finite numbers, the
    unseen rows counted."""
    train = pa.concat_tables([TRAIN.append_column("market", pa.array(["de"] * 6)),
                              _log([("u1", "q", [("a", 0), ("b", 1)])], market="fr")])
    fit = sqlmetrics.fit_clicks(train, model="cascade", group_by="market")
    both = pa.concat_tables([HELD_OUT.append_column("market", pa.array(["de"] * 4)),
                             _log([("v1", "q", [("b", 1), ("a", 1)]), ("v2", "new", [("z", 1)])], market="fr")])
    score = fit.score(both)
    rows = {r["market"]: r for r in score.segments.to_pylist()}
    # segment de scored by de's parameters only: test_score_by_hand's log-likelihood
    assert rows["de"]["log_likelihood"] == pytest.approx(math.log(3) - 6 * math.log(2), abs=1e-12)
    assert rows["fr"]["unseen_rows"] == 1 and rows["fr"]["sessions"] == 2
    assert all(math.isfinite(v) for r in rows.values() for v in r.values() if isinstance(v, float))
    with pytest.raises(SqlmetricsError, match=r"has the segment market='it', which the fit has no model for "
                                              r"\(it has market='de'; market='fr'\)"):
        fit.score(HELD_OUT.append_column("market", pa.array(["it"] * 4)))
    with pytest.raises(SqlmetricsError, match="held-out click log .*group_by.*'market'"):
        fit.score(HELD_OUT)  # the fit's segment column absent
    numbers = _log([(1, 7, [(1, 1), (2, 1)])])
    as_text = _log([("x", "7", [("1", 1), ("2", 0)])])
    score = sqlmetrics.fit_clicks(numbers, model="cascade").score(as_text).segments.to_pylist()[0]
    # Cascade read only doc 1 (the first click): alpha_1 = 1, doc 2 unseen. Matched as text, doc 1's click has
    # conditional 1 and doc 2 below it 0 (no click): log-likelihood 0; matched by type, neither would be seen.
    assert (score["unseen_rows"], score["log_likelihood"]) == (1, 0.0)


def test_command_line_held_out(tmp_path, capsys):
    pq.write_table(TRAIN, tmp_path / "train.parquet")
    pq.write_table(HELD_OUT, tmp_path / "test.parquet")
    assert main(["clicks", str(tmp_path / "train.parquet"), "--model", "cascade", "--model", "SDBN",  # or cascade,sdbn
                 "--held-out", str(tmp_path / "test.parquet"), "-o", str(tmp_path / "s.csv")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("cascade  "))
    assert line.split()[1:6] == ["2", "4", "0", "-3.06027", "-1.53014"]  # test_score_by_hand's numbers
    assert "scored with 0.5" in out
    text = (tmp_path / "s.csv").read_text().splitlines()
    assert text[0].startswith('"model","position","sessions"') and len(text) == 1 + 2 * 3
    assert main(["clicks", str(tmp_path / "train.parquet"), "--model", "cascade,pdm", "--held-out",
                 str(tmp_path / "test.parquet")]) == 2
    assert "Did you mean 'pbm'?" in capsys.readouterr().err
    assert main(["clicks", str(tmp_path / "train.parquet"), "--model", "cascade,sdbn"]) == 2
    assert "several are compared on a held-out log (--held-out FILE)" in capsys.readouterr().err
    # --iterations goes to the EM models among them; with none, a closed form refuses it as it does alone
    assert main(["clicks", str(tmp_path / "train.parquet"), "--model", "cascade,sdbn", "--iterations", "4",
                 "--held-out", str(tmp_path / "test.parquet")]) == 2
    assert "--model cascade has closed-form estimates" in capsys.readouterr().err


# --- click-model-based metrics of a ranking never shown -------------------------------------------------------------

def test_expected_by_hand():
    """SDBN fitted to test_clicks.py's TINY log: alpha a 0, b 2/3, c 1/2; sigma b 1/2, c 1 (a never clicked: 0.5).
    Run A lists q as b, c, a (by score): P(C) = 2/3; 1/2 (1 - 2/3 * 1/2) = 1/3; 0: expected clicks 1; satisfied
    1 - (1 - 1/3)(1 - 1/2)(1 - 0) = 2/3. Its query r lists x, unseen: alpha = sigma = 0.5: 0.5 clicks, 0.25
    satisfied. Run B lists q as a, b, c (by rank): 0; 2/3; 1/2 (1 - 0)(1 - 1/3) = 1/3: 1 click, satisfied 2/3.
    At depth 2, B's q shows a, b: 0 + 2/3 clicks, satisfied 1 - (1 - 0)(1 - 1/3) = 1/3."""
    tiny = _log([("s1", "q", [("a", 0), ("b", 1), ("c", 1)]), ("s2", "q", [("b", 1), ("a", 0), ("c", 0)]),
                 ("s3", "q", [("a", 0), ("c", 0), ("b", 0)])])
    a = pa.table({"query_id": ["q", "q", "q", "r"], "doc_id": ["b", "c", "a", "x"], "score": [3.0, 2.0, 1.0, 1.0]})
    b = pa.table({"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "c"], "rank": [1, 2, 3]})
    sdbn = sqlmetrics.fit_clicks(tiny, model="sdbn")
    got = sdbn.expected({"A": a, "B": b}).to_pylist()
    expected = [
        {"run": "A", "query_id": "q", "documents": 3, "unseen_documents": 0, "expected_clicks": 1.0,
         "satisfaction": 2 / 3},
        {"run": "A", "query_id": "r", "documents": 1, "unseen_documents": 1, "expected_clicks": 0.5,
         "satisfaction": 0.25},
        {"run": "B", "query_id": "q", "documents": 3, "unseen_documents": 0, "expected_clicks": 1.0,
         "satisfaction": 2 / 3}]
    assert len(got) == len(expected) and all(g == pytest.approx(e, abs=1e-12) for g, e in zip(got, expected))
    top = sdbn.expected(b, depth=2).to_pylist()  # a, b: 0 + 2/3; sat 1/3
    assert (top[0]["documents"], top[0]["expected_clicks"], top[0]["satisfaction"]) == \
        pytest.approx((2, 2 / 3, 1 / 3), abs=1e-12)
    with pytest.raises(SqlmetricsError, match="depth=0 must be a whole number of at least 1"):
        sdbn.expected(b, depth=0)


def _check_expected(model: str, seed: int, queries: int) -> None:
    """Random parameters (a fit, its tables replaced), random lists of 4 documents of 5: expected clicks = the sum
    over click vectors of P(c) times its clicks (enumerated), satisfaction = 1 - prod (1 - alpha sigma)."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(5)]
    alpha, sigma = dict(zip(docs, rng.uniform(0.02, 0.98, 5))), dict(zip(docs, rng.uniform(0.02, 0.98, 5)))
    gamma = rng.uniform(0.02, 0.98, 4)
    qs = [f"q{i}" for i in range(queries)]
    parameters = {"attractiveness": pa.table({"query": [q for q in qs for _ in docs], "doc": docs * queries,
                                                  "attractiveness": [alpha[d] for _ in qs for d in docs]}),
                      "satisfaction": pa.table({"query": [q for q in qs for _ in docs], "doc": docs * queries,
                                                "satisfaction": [sigma[d] for _ in qs for d in docs]}),
                      "examination": pa.table({"position": [1, 2, 3, 4], "examination": gamma})}
    if model != "pbm":
        del parameters["examination"]
    if model != "sdbn":
        del parameters["satisfaction"]
    fit = ClickFit(model, (), parameters, pa.table({"sessions": [1]}))
    lists = {q: list(rng.permutation(docs)[:4]) for q in qs}
    run = pa.table({"query_id": [q for q in qs for _ in range(4)], "doc_id": [d for q in qs for d in lists[q]],
                    "rank": [r for _ in qs for r in range(1, 5)]})
    got = {r["query_id"]: r for r in fit.expected(run).to_pylist()}
    for q, shown in lists.items():
        a, s = [alpha[d] for d in shown], [sigma[d] for d in shown]
        joint = _joint(model, a, s, list(gamma))
        assert got[q]["expected_clicks"] == pytest.approx(sum(p * sum(c) for c, p in joint.items()), abs=1e-12)
        if model == "sdbn":
            assert got[q]["satisfaction"] == pytest.approx(1 - np.prod(1 - np.array(a) * np.array(s)), abs=1e-12)


def test_expected_equals_the_enumerated_model():
    """SDBN, whose satisfaction is checked too; the three models over more seeds are slow."""
    _check_expected("sdbn", seed=1, queries=3)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["cascade", "sdbn", "pbm"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_expected_equals_the_enumerated_model_more_seeds(model, seed):
    _check_expected(model, seed, queries=20)


def test_expected_per_segment_and_bad_runs():
    """A segmented fit predicts each list under every segment's model; a run without rank or score, with a document
    twice, or empty is named."""
    train = pa.concat_tables([TRAIN.append_column("market", pa.array(["de"] * 6)),
                              _log([("u1", "q", [("a", 0), ("b", 1)])], market="fr")])
    fit = sqlmetrics.fit_clicks(train, model="cascade", group_by="market")
    run = pa.table({"query_id": ["q", "q"], "doc_id": ["a", "b"], "rank": [1, 2]})
    table = fit.expected(run)  # one run: named run1; cascade has no satisfaction
    assert table.column_names == ["run", "market", "query_id", "documents", "unseen_documents", "expected_clicks"]
    assert table["run"].to_pylist() == ["run1", "run1"]
    got = {r["market"]: r["expected_clicks"] for r in table.to_pylist()}
    # de: alpha a 1/2, b 1/4: 1/2 + 1/4 * 1/2; fr: a 0, b 1: 0 + 1
    assert got == pytest.approx({"de": 0.625, "fr": 1.0}, abs=1e-12)
    with pytest.raises(SqlmetricsError, match="run 'run1' .*no column for 'score'"):
        fit.expected(run.drop_columns(["rank"]))
    with pytest.raises(SqlmetricsError, match="run1"):
        fit.expected(pa.table({"query_id": ["q", "q"], "doc_id": ["a", "a"], "rank": [1, 2]}))
    with pytest.raises(SqlmetricsError, match="has no rows"):
        fit.expected(run.slice(0, 0))


@pytest.mark.slow  # scipy's import (1.7 s) is most of it; test_expected_by_hand checks the depth cut fast
def test_compare_rankings_with_a_paired_test():
    """fit.compare() is compare()'s report over expected()'s per-query values, cut at depth: its paired t-test's
    p-value equals scipy's on those values."""
    from scipy import stats

    rng = np.random.default_rng(5)
    train = _log([(f"s{i}", f"q{i % 6}", [(f"d{d}", int(rng.random() < 0.5)) for d in rng.permutation(4)])
                  for i in range(60)])
    fit = sqlmetrics.fit_clicks(train, model="sdbn")
    runs = {name: pa.table({"query_id": [f"q{q}" for q in range(6) for _ in range(4)],
                            "doc_id": [f"d{d}" for _ in range(6) for d in range(4)],
                            "score": rng.random(24)}) for name in ("x", "y")}
    report = fit.compare(runs, depth=2)
    table = fit.expected(runs, depth=2).to_pylist()
    assert {r["documents"] for r in table} == {2}
    values = {(r["run"], r["query_id"]): r for r in table}
    for measure in ("expected_clicks", "satisfaction"):
        (c,) = [c for c in report.comparisons if c.measure == measure]
        x, y = ([values[(run, f"q{q}")][measure] for q in range(6)] for run in ("x", "y"))
        assert (c.run, c.baseline) == ("y", "x")
        assert c.difference == pytest.approx(np.mean(y) - np.mean(x), abs=1e-12)
        assert c.p_value == pytest.approx(stats.ttest_rel(y, x).pvalue, rel=1e-9)


def test_command_line_runs(tmp_path, capsys):
    """`sqlmetrics clicks LOG --model sdbn --runs A B --depth 2`: the report of compare(), -o the per-query values
    (test_expected_by_hand's lists at depth 2: A shows b, c: 2/3 + 1/2 * 2/3 = 1 click; B shows a, b: 2/3)."""
    tiny = _log([("s1", "q", [("a", 0), ("b", 1), ("c", 1)]), ("s2", "q", [("b", 1), ("a", 0), ("c", 0)]),
                 ("s3", "q", [("a", 0), ("c", 0), ("b", 0)])])
    pq.write_table(tiny, tmp_path / "log.parquet")
    pq.write_table(pa.table({"query_id": ["q"] * 3, "doc_id": ["b", "c", "a"], "score": [3.0, 2.0, 1.0]}),
                   tmp_path / "A.parquet")
    pq.write_table(pa.table({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "rank": [1, 2, 3]}),
                   tmp_path / "B.parquet")
    runs = [str(tmp_path / "A.parquet"), str(tmp_path / "B.parquet")]
    assert main(["clicks", str(tmp_path / "log.parquet"), "--model", "sdbn", "--runs", *runs, "--depth", "2",
                 "--baseline", "A", "-o", str(tmp_path / "q.csv")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sdbn: 3 sessions") and "expected_clicks" in out and "satisfaction" in out
    rows = (tmp_path / "q.csv").read_text().splitlines()
    assert rows[0] == '"run","query_id","documents","unseen_documents","expected_clicks","satisfaction"'
    values = {r.split(",")[0]: [float(x) for x in r.split(",")[4:]] for r in rows[1:]}
    assert values['"A"'] == pytest.approx([1.0, 2 / 3], abs=1e-12)  # satisfied: 1 - (1 - 1/3)(1 - 1/2) = 2/3
    assert values['"B"'] == pytest.approx([2 / 3, 1 / 3], abs=1e-12)
    assert main(["clicks", str(tmp_path / "log.parquet"), "--runs", *runs, "--held-out",
                 str(tmp_path / "log.parquet")]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["clicks", str(tmp_path / "log.parquet"), "--model", "sdbn", "--runs", *runs, "--depth", "0"]) == 2
    assert "depth" in capsys.readouterr().err


@pytest.mark.slow  # the fast tier scores and predicts with cascade, sdbn and pbm above
def test_every_model_scores_and_predicts_lists_with_integer_ids():
    """UBM, DCM and DBN (whose predict() came from other branches than score() and expected(); the other models are
    checked above) judged on a held-out log and predicting a run, the log's ids integers (a run's are read as text:
    the fit's are compared as text then): every number finite, a probability in [0, 1], expected clicks at most the
    list's length. The slow hypothesis corpora (tests/test_fuzz_clicks_score.py) draw every model."""
    log = pa.table({"session": [1, 1, 1, 2, 2, 2, 3, 3, 3], "query": [7] * 9, "doc": [1, 2, 3, 2, 1, 3, 3, 2, 1],
                    "position": [1, 2, 3] * 3, "clicked": [0, 1, 0, 1, 0, 1, 0, 0, 0]})
    run = pa.table({"query_id": [7, 7, 7], "doc_id": [3, 1, 2], "score": [3.0, 2.0, 1.0]})
    for model in ("ubm", "dcm", "dbn"):
        fit = sqlmetrics.fit_clicks(log, model=model, iterations=5)
        scores = fit.score(log).segments.to_pylist()[0]
        assert all(math.isfinite(scores[c]) for c in ("log_likelihood", "perplexity", "ctr_rmse")), model
        expected = fit.expected(run).to_pylist()[0]
        assert 0 <= expected["expected_clicks"] <= 3 and 0 <= expected.get("satisfaction", 0) <= 1, model
