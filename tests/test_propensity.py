"""Relevance and position bias from click models (issue 44, step 2): a fitted model's parameters as qrels
(ClickFit.qrels()), position-bias propensities by intervention harvesting (pivot, adjacent chain) and from a PBM
(sqlmetrics.propensities(), ClickFit.propensities()), and those propensities in pbm_ips().

Oracles: hand-computed tiny logs (each derivation in its test's docstring), ultr-bias-toolkit 0.0.5's PivotEstimator
and AdjacentChainEstimator on the same logs (optional: installed with `pip install --no-deps
ultr-bias-toolkit==0.0.5`; its package imports torch, which these estimators never use, so their modules are loaded
without it), nDCG in numpy, and logs simulated from known examination probabilities (slow)."""
from __future__ import annotations

import importlib.util
import os
import random
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli.main import main
from sqlmetrics.errors import SqlmetricsError, SqlmetricsWarning


def _log(sessions: list, **segment) -> pa.Table:
    """[(session, query, [(doc, clicked), ...] in position order)] as a click log; segment={name: [value per
    session]} adds a segment column."""
    rows = [(s, q, d, i, c) for s, q, shown in sessions for i, (d, c) in enumerate(shown, 1)]
    names = ("session", "query", "doc", "position", "clicked")
    columns = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    for name, values in segment.items():
        by_session = dict(zip([s for s, _, _ in sessions], values))
        columns[name] = [by_session[r[0]] for r in rows]
    return pa.table(columns)


# ctr(q, d, k): a at 1: (1 + 0) / 2, at 2: 1, at 3: 0; b at 1: 1, at 2: (0 + 1) / 2 (never at 3); c at 1: 1, at 2: 1,
# at 3: (1 + 0) / 2.
HAND = _log([("s1", "q", [("a", 1), ("b", 0), ("c", 1)]),
             ("s2", "q", [("b", 1), ("a", 1), ("c", 0)]),
             ("s3", "q", [("c", 1), ("b", 1), ("a", 0)]),
             ("s4", "q", [("a", 0), ("c", 1)])])


def _theta(table) -> dict:
    return {r["position"]: r["propensity"] for r in table.to_pylist()}


def test_pivot_and_adjacent_by_hand():
    """HAND's intervention sets: S(1,2) = S(2,1) = {a, b, c}, S(1,3) = S(2,3) = S(3,1) = S(3,2) = {a, c}.
    pivot 1: theta_2 = (a2 + b2 + c2) / (a1 + b1 + c1) = 2.5 / 2.5 = 1; theta_3 = (a3 + c3) / (a1 + c1) = 0.5 / 1.5.
    adjacent: theta_2 = 1 (as pivot 1); theta_3 = theta_2 * (a3 + c3) / (a2 + c2) = 0.5 / 2 = 0.25.
    pivot 3: ratio(1) = (a1 + c1) / (a3 + c3) = 3, ratio(2) = (a2 + c2) / (a3 + c3) = 4, ratio(3) = 1: theta over
    ratio(1) = 1, 4/3, 1/3."""
    pivot = sqlmetrics.propensities(HAND, method="pivot")
    assert pivot.column_names == ["position", "propensity", "pairs"]
    assert [(r["position"], r["pairs"]) for r in pivot.to_pylist()] == [(1, 3), (2, 3), (3, 2)]
    assert _theta(pivot) == pytest.approx({1: 1.0, 2: 1.0, 3: 1 / 3}, abs=1e-15)
    assert _theta(sqlmetrics.propensities(HAND, method="adjacent")) == pytest.approx({1: 1.0, 2: 1.0, 3: 0.25},
                                                                                      abs=1e-15)
    assert _theta(sqlmetrics.propensities(HAND, method="pivot", pivot=3)) == pytest.approx(
        {1: 1.0, 2: 4 / 3, 3: 1 / 3}, abs=1e-15)


def test_segments_each_their_own():
    """Two markets, each HAND's sessions: the same estimates in each, the segment column first."""
    sessions = [(f"{m}{s}", q, shown) for m in ("de", "fr") for s, q, shown in
                [("s1", "q", [("a", 1), ("b", 0), ("c", 1)]), ("s2", "q", [("b", 1), ("a", 1), ("c", 0)]),
                 ("s3", "q", [("c", 1), ("b", 1), ("a", 0)]), ("s4", "q", [("a", 0), ("c", 1)])]]
    log = _log(sessions, market=["de"] * 4 + ["fr"] * 4)
    table = sqlmetrics.propensities(log, method="adjacent", group_by="market")
    assert table.column_names == ["market", "position", "propensity", "pairs"]
    assert [(r["market"], r["position"]) for r in table.to_pylist()] == [(m, k) for m in ("de", "fr")
                                                                          for k in (1, 2, 3)]
    assert table["propensity"].to_pylist() == pytest.approx([1.0, 1.0, 0.25] * 2, abs=1e-15)


def test_pbm_propensities_are_examination_over_position_1():
    fit = sqlmetrics.fit_clicks(HAND, model="pbm", iterations=5, tolerance=0.5)
    gamma = {r["position"]: r["examination"] for r in fit.parameters["examination"].to_pylist()}
    table = fit.propensities()
    assert table.column_names == ["position", "propensity", "impressions", "clicks"]
    assert _theta(table) == pytest.approx({r: g / gamma[1] for r, g in gamma.items()}, rel=1e-14)
    with pytest.raises(SqlmetricsError, match="model='cascade' has none"):
        sqlmetrics.fit_clicks(HAND, model="cascade").propensities()


def test_positions_without_an_intervention_are_named():
    """Position 3 shows c only, which is never shown elsewhere: no pair links it to 1 or 2, so it is left out and
    named; in the second log nothing at position 1 is clicked among the pairs it shares with 2 (ratio 0/0)."""
    log = _log([("s1", "q", [("a", 1), ("b", 1), ("c", 1)]), ("s2", "q", [("b", 1), ("a", 0), ("c", 0)])])
    for method in ("pivot", "adjacent"):
        with pytest.warns(SqlmetricsWarning, match=r"position\(s\) 3 cannot be estimated"):
            assert list(_theta(sqlmetrics.propensities(log, method=method))) == [1, 2]
    log = _log([("s1", "q", [("a", 0), ("b", 1)]), ("s2", "q", [("b", 0), ("a", 1)])])
    with pytest.warns(SqlmetricsWarning, match=r"position\(s\) 2 cannot be estimated.*none of those clicked"):
        assert _theta(sqlmetrics.propensities(log)) == {1: 1.0}
    # pivot 2 shares b and c with position 3 but nothing with position 1: nothing can be normalised to position 1
    log = _log([("s1", "q", [("a", 1), ("b", 1), ("c", 1)]), ("s2", "q", [("x", 1), ("c", 1), ("b", 1)])])
    with pytest.warns(SqlmetricsWarning, match=r"position\(s\) 2, 3 cannot be estimated.*or at position 1"):
        assert _theta(sqlmetrics.propensities(log, pivot=2)) == {1: 1.0}
    log = _log([("s1", "q", [("a", 1), ("b", 0)]), ("s2", "q", [("b", 1), ("a", 0)])])
    with pytest.warns(SqlmetricsWarning, match=r"position\(s\) 2 are estimated 0"):
        assert _theta(sqlmetrics.propensities(log, method="adjacent")) == {1: 1.0, 2: 0.0}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "pivot", "pivot": 4}, "pivot position 4 is never shown: the log's positions go to 3"),
    ({"method": "pivot", "pivot": 0}, "pivot=0 must be a position"),
    ({"method": "pivot", "pivot": True}, "pivot=True must be a position"),
    ({"method": "adjacent", "pivot": 2}, "applies to method='pivot'"),
    ({"method": "pivots"}, "not a propensity estimator"),
    ({"method": "pivot", "iterations": 5}, "has no iterations"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.propensities(HAND, **kwargs)


def test_a_segment_named_as_a_result_column_is_refused():
    """A segment column called pairs (or propensity, relevance) would make two columns of that name."""
    log = HAND.append_column("pairs", pa.array(["x"] * HAND.num_rows))
    with pytest.raises(SqlmetricsError, match="group_by='pairs' is also a column of the results"):
        sqlmetrics.propensities(log, group_by="pairs")


def test_qrels_from_a_fit_and_ndcg():
    """SDBN on HAND-like TINY (test_clicks.py): alpha a 0 (2 impressions), b 2/3 (3), c 1/2 (2). A run ranking c, a,
    b: DCG = 0.5/log2(2) + 0/log2(3) + (2/3)/log2(4), the ideal b, c, a: (2/3)/1 + 0.5/log2(3); nDCG in numpy.
    min_impressions=3 keeps b alone; levels=[0.5] grades b and c 1, a 0."""
    tiny = _log([("s1", "q", [("a", 0), ("b", 1), ("c", 1)]), ("s2", "q", [("b", 1), ("a", 0), ("c", 0)]),
                 ("s3", "q", [("a", 0), ("c", 0), ("b", 0)])])
    fit = sqlmetrics.fit_clicks(tiny, model="sdbn")
    qrels = fit.qrels(min_impressions=2)
    assert qrels.column_names == ["query", "doc", "relevance"]
    assert qrels["doc"].to_pylist() == ["a", "b", "c"]
    assert qrels["relevance"].to_pylist() == pytest.approx([0, 2 / 3, 0.5], abs=1e-15)
    gains, ideal = np.array([0.5, 0.0, 2 / 3]), np.array([2 / 3, 0.5, 0.0])
    discount = 1 / np.log2(np.arange(2, 5))
    run = {"q": {"c": 3.0, "a": 2.0, "b": 1.0}}
    res = sqlmetrics.evaluate(qrels, run, ["nDCG"])
    assert res.aggregate["nDCG"] == pytest.approx((gains @ discount) / (ideal @ discount), abs=1e-12)
    assert [r["doc"] for r in fit.qrels(min_impressions=3).to_pylist()] == ["b"]
    assert [(r["doc"], r["relevance"]) for r in fit.qrels(2, levels=[0.5]).to_pylist()] == [("a", 0), ("b", 1),
                                                                                             ("c", 1)]
    # satisfaction: b 1/2, c 1; judged where the pair's attractiveness has the impressions
    assert [(r["doc"], r["relevance"]) for r in fit.qrels(2, "satisfaction").to_pylist()] == [("b", .5), ("c", 1.0)]
    for kwargs, message in (({"parameter": "examination"}, "no such parameter keyed by"),
                            ({"min_impressions": 0}, "min_impressions=0"),
                            ({"levels": [0.5, 0.2]}, "increasing thresholds")):
        with pytest.raises(SqlmetricsError, match=message):
            fit.qrels(**kwargs)


def test_pbm_ips_with_propensities_by_hand():
    """A deterministic logger (propensity 1) and new ranker; examination 1 and 0.5 in de, 1 and 0.25 in fr.
    Impression 1 (de): both slots agree and are clicked: 1/1 + 1/0.5 = 3; impression 2 (fr): position 2 agrees and
    is clicked: 1/0.25 = 4; position 1 is not clicked. Mean 3.5."""
    log = pa.table({"impression": [1, 1, 2, 2], "position": [1, 2, 1, 2], "click": [1, 1, 0, 1],
                    "propensity": [1.0] * 4, "action": ["a", "b", "b", "a"], "new_action": ["a", "b", "b", "a"],
                    "market": ["de", "de", "fr", "fr"]})
    thetas = pa.table({"market": ["de", "de", "fr", "fr"], "position": [1, 2, 1, 2], "propensity": [1, .5, 1, .25]})
    assert sqlmetrics.pbm_ips(log, propensities=thetas)["ips"].value == pytest.approx(3.5, abs=1e-15)
    # without segments: a dict; 1/1 + 1/0.5 and 1/0.5
    assert sqlmetrics.pbm_ips(log, propensities={1: 1.0, 2: 0.5})["ips"].value == pytest.approx(2.5, abs=1e-15)
    assert sqlmetrics.pbm_ips(log)["ips"].value == pytest.approx(1.5, abs=1e-15)
    # a segment held as numbers in the log and as text in the propensities: DuckDB compares them as numbers
    numbered = log.set_column(log.column_names.index("market"), "market", pa.array([7, 7, 8, 8]))
    thetas = thetas.set_column(0, "market", pa.array(["7", "7", "8", "8"]))
    assert sqlmetrics.pbm_ips(numbered, propensities=thetas)["ips"].value == pytest.approx(3.5, abs=1e-15)


@pytest.mark.parametrize(("thetas", "message"), [
    ({1: 1.0}, r"2 row\(s\) of the log are at a position propensities= does not give \(the first: position 2"),
    ({1: 1.0, 2: 0.0}, "not a positive number"),
    ({1: 1.0, 2: float("nan")}, "not a positive number"),
    (pa.table({"position": [1, 1, 2], "propensity": [1.0, 1.0, .5]}), "more than once"),
    (pa.table({"arm": ["x"], "position": [1], "propensity": [1.0]}), r"segment column\(s\) \['arm'\] that the log"),
    (pa.table({"pos": [1], "theta": [1.0]}), "needs position and propensity"),
    ([1.0, 0.5], "cannot be a list"),
    ({1: True, 2: 0.5}, "maps each position"),
    (pa.table({"position": ["1", "x"], "propensity": [1.0, .5]}), "holds VARCHAR values in column 'position'"),
])
def test_pbm_ips_bad_propensities(thetas, message):
    log = pa.table({"impression": [1, 1, 2, 2], "position": [1, 2, 1, 2], "click": [1, 1, 0, 1],
                    "propensity": [1.0] * 4, "action": ["a", "b", "b", "a"], "new_action": ["a", "b", "b", "a"]})
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.pbm_ips(log, propensities=thetas)


def test_command_line(tmp_path, capsys):
    """clicks --propensities writes the table pbm-ips --propensities reads; clicks --qrels what eval reads."""
    pq.write_table(HAND, tmp_path / "log.parquet")
    out = tmp_path / "theta.parquet"
    assert main(["clicks", str(tmp_path / "log.parquet"), "--propensities", "adjacent", "-o", str(out)]) == 0
    assert _theta(pq.read_table(out)) == pytest.approx({1: 1.0, 2: 1.0, 3: 0.25})
    ips = pa.table({"impression": [1, 1, 1], "position": [1, 2, 3], "click": [1, 0, 1], "propensity": [1.0] * 3,
                    "action": list("abc"), "new_action": list("abc")})
    pq.write_table(ips, tmp_path / "ips.parquet")
    capsys.readouterr()
    assert main(["pbm-ips", str(tmp_path / "ips.parquet"), "--propensities", str(out), "-f", "json"]) == 0
    assert '"value": 5.0' in capsys.readouterr().out  # 1/1 + 1/0.25
    assert main(["clicks", str(tmp_path / "log.parquet"), "--model", "cascade", "--qrels", "-o",
                 str(tmp_path / "qrels.parquet")]) == 0
    assert pq.read_table(tmp_path / "qrels.parquet").column_names == ["query", "doc", "relevance"]
    # eval reads the file as qrels by its column names: a run ranking c, b, a of q gets the nDCG of those grades in
    # that order (numpy).
    grades = {r["doc"]: r["relevance"] for r in pq.read_table(tmp_path / "qrels.parquet").to_pylist()}
    (tmp_path / "run.tsv").write_text("query_id\tdoc_id\tscore\nq\tc\t3\nq\tb\t2\nq\ta\t1\n")
    gains, ideal = np.array([grades[d] for d in "cba"]), np.array(sorted(grades.values(), reverse=True))
    discount = 1 / np.log2(np.arange(2, 5))
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "qrels.parquet"), str(tmp_path / "run.tsv"), "-m", "nDCG", "-f", "csv"]) == 0
    assert float(capsys.readouterr().out.splitlines()[1].split(",")[-1]) == pytest.approx(
        (gains @ discount) / (ideal @ discount), abs=1e-12)
    capsys.readouterr()
    assert main(["clicks", str(tmp_path / "log.parquet"), "--propensities", "pivot", "--model", "sdbn"]) == 2
    assert "leave --model out" in capsys.readouterr().err
    assert main(["clicks", str(tmp_path / "log.parquet"), "--propensities", "pivot", "--pivot", "9", "-o",
                 str(tmp_path / "none.parquet")]) == 2
    assert not (tmp_path / "none.parquet").exists()
    for flags, message in ((["--pivot", "2"], "--pivot K is the pivot position of --propensities pivot"),
                           (["--min-impressions", "3"], "give --qrels too"),
                           (["--qrels", "--propensities", "pbm"], "give one")):
        capsys.readouterr()
        assert main(["clicks", str(tmp_path / "log.parquet"), *flags]) == 2
        assert message in capsys.readouterr().err


# --- ultr-bias-toolkit ----------------------------------------------------------------------------------------------

def _toolkit():
    """ultr-bias-toolkit's PivotEstimator and AdjacentChainEstimator. Its intervention_harvesting package's
    __init__ imports the all-pairs estimator, which imports torch; the two estimators' modules need only pandas, so
    the package is stood in by an empty module of its path and they are imported from it."""
    spec = importlib.util.find_spec("ultr_bias_toolkit")
    if spec is None:
        reason = "ultr-bias-toolkit is not installed: pip install --no-deps ultr-bias-toolkit==0.0.5"
        if os.environ.get("SQLMETRICS_REQUIRE_SHARED") == "1":
            pytest.fail(f"{reason} (SQLMETRICS_REQUIRE_SHARED=1)", pytrace=False)
        pytest.skip(reason)
    name = "ultr_bias_toolkit.bias.intervention_harvesting"
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(Path(spec.submodule_search_locations[0]) / "bias" / "intervention_harvesting")]
        sys.modules[name] = package
    from ultr_bias_toolkit.bias.intervention_harvesting.adjacent_chain import AdjacentChainEstimator
    from ultr_bias_toolkit.bias.intervention_harvesting.pivot import PivotEstimator
    return PivotEstimator, AdjacentChainEstimator


def _simulated(seed: int, sessions: int, theta: list, queries: int = 3, docs: int = 6, rankers: int = 3,
               ragged: bool = False) -> pa.Table:
    """A PBM log: each session a query and one of a few rankers (a fixed random order of the query's documents each,
    so a pair moves between positions only across rankers, as intervention harvesting assumes); clicked with
    probability theta[position] * alpha[query, doc]. ragged: sessions show 2..len(theta) documents."""
    rng = random.Random(seed)
    alpha = {(q, d): rng.uniform(0.05, 0.9) for q in range(queries) for d in range(docs)}
    orders = {(q, r): rng.sample(range(docs), len(theta)) for q in range(queries) for r in range(rankers)}
    rows = {"session": [], "query": [], "doc": [], "position": [], "clicked": []}
    for s in range(sessions):
        q, r = rng.randrange(queries), rng.randrange(rankers)
        shown = orders[q, r][:rng.randint(2, len(theta)) if ragged else len(theta)]
        for k, d in enumerate(shown, 1):
            for column, value in zip(rows, (s, f"q{q}", f"d{d}", k, int(rng.random() < theta[k - 1] * alpha[q, d]))):
                rows[column].append(value)
    return pa.table(rows)


def _toolkit_theta(estimator, log: pa.Table) -> dict:
    frame = log.to_pandas().rename(columns={"query": "query_id", "doc": "doc_id", "clicked": "click"})
    return dict(zip(*(estimator(frame)[c].tolist() for c in ("position", "examination"))))


@pytest.mark.slow  # pandas and the toolkit: 0.2 s; the hand-derived case above is the fast one
def test_toolkit_agrees():
    """On a log where every position is linked (8 rankers): ours and ultr-bias-toolkit's, to 1e-12."""
    pivot, adjacent = _toolkit()
    log = _simulated(5, 400, [1.0, 0.6, 0.4, 0.3], rankers=8)
    for method, estimator in (("pivot", pivot()), ("adjacent", adjacent()), ("pivot", pivot(pivot_rank=2))):
        ours = _theta(sqlmetrics.propensities(log, method=method, pivot=getattr(estimator, "pivot_rank", 1)))
        assert ours == pytest.approx(_toolkit_theta(estimator, log), rel=1e-12, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_toolkit_agrees_on_seeds(seed):
    """Several seeds, ragged sessions, few rankers (so some positions are not linked), pivots 1..3: every position we
    estimate the toolkit estimates too, the same to 1e-12. Where the definitions differ: the toolkit normalises a
    pivot k > 1 by the first position shown with the pivot (ours by position 1 always: the same when position 1 is
    linked to the pivot); it gives 0 (0/0) or inf (x/0) where a ratio is undefined, where ours leaves the position
    out with a warning; and its adjacent chain skips a missing link (no pair shown at both k and k + 1) and goes on
    multiplying below it, where ours stops: the positions below a broken link are not estimated."""
    pivot, adjacent = _toolkit()
    log = _simulated(seed, 300 + 100 * seed, [1.0, 0.7, 0.5, 0.35, 0.25], queries=4, rankers=2 + seed % 3,
                     ragged=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)
        for method, estimator in (("adjacent", adjacent()), *(("pivot", pivot(pivot_rank=k)) for k in (1, 2, 3))):
            ours = _theta(sqlmetrics.propensities(log, method=method, pivot=getattr(estimator, "pivot_rank", 1)))
            theirs = _toolkit_theta(estimator, log)
            if 1 not in theirs:  # position 1 not linked to the pivot: theirs normalised otherwise, ours not at all
                assert set(ours) == {1}
                continue
            assert set(ours) <= set(theirs)
            assert ours == pytest.approx({k: theirs[k] for k in ours}, rel=1e-12, abs=1e-12)


# --- consistency, simulated ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_estimates_converge_to_the_truth():
    """theta = 1, 0.7, 0.5, 0.35, 0.25: the largest error of each estimator shrinks from 1e4 to 1e5 sessions, and is
    small at 1e5; pbm_ips with the estimated propensities estimates the new ranker's attractive documents."""
    theta = [1.0, 0.7, 0.5, 0.35, 0.25]
    errors = {}
    for n in (10_000, 100_000):
        log = _simulated(11, n, theta, queries=5, docs=8, rankers=4)
        for method in ("pivot", "adjacent", "pbm"):
            kwargs = {"iterations": 500, "tolerance": 1e-8} if method == "pbm" else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SqlmetricsWarning)
                got = _theta(sqlmetrics.propensities(log, method=method, **kwargs))
            errors[method, n] = max(abs(got[k] - t) for k, t in enumerate(theta, 1))
    for method in ("pivot", "adjacent", "pbm"):
        assert errors[method, 100_000] < errors[method, 10_000], errors
        assert errors[method, 100_000] < 0.03, errors


@pytest.mark.slow
def test_pbm_ips_with_known_examination_covers_the_truth():
    """A uniformly shuffled logger over 4 documents (propensity 1/4 each slot), examination gamma = 0.9 * theta;
    the new ranker shows d0..d3 in order. With theta: the estimate is gamma_1 * sum of alpha (every position examined
    as position 1); the interval covers it, with the true theta and with theta estimated from the same log."""
    rng = random.Random(4)
    theta, alpha = [1.0, 0.6, 0.4, 0.3], [0.8, 0.5, 0.3, 0.1]
    rows = {"impression": [], "position": [], "click": [], "propensity": [], "action": [], "new_action": []}
    clicks = {"session": [], "query": [], "doc": [], "position": [], "clicked": []}
    for i in range(40_000):
        for k, d in enumerate(rng.sample(range(4), 4), 1):
            c = int(rng.random() < 0.9 * theta[k - 1] * alpha[d])
            for column, value in zip(rows, (i, k, c, 0.25, d, k - 1)):
                rows[column].append(value)
            for column, value in zip(clicks, (i, "q", d, k, c)):
                clicks[column].append(value)
    truth = 0.9 * sum(alpha)
    for thetas in ({k: t for k, t in enumerate(theta, 1)},
                   sqlmetrics.propensities(pa.table(clicks), method="pivot")):
        est = sqlmetrics.pbm_ips(pa.table(rows), propensities=thetas)["ips"]
        assert est.ci_low < truth < est.ci_high, (est, truth)
