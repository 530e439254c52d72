"""Judge agreement against its peers: κ = scikit-learn's cohen_kappa_score (3 weightings), α = the krippendorff
package's alpha (3 levels), τ-b and ρ = scipy's, τ_AP = its definition written out; random judgment sets with
missing pairs, negative grades and 2-5 labels; the command line, the demo and hostile tables."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.cli.main import main
from sqlmetrics.demo import folder
from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.judgments import agreement, ranking_agreement
from sqlmetrics.judgments.systems import correlations

pytestmark = pytest.mark.slow

krippendorff = pytest.importorskip("krippendorff")
metrics = pytest.importorskip("sklearn.metrics")
stats = pytest.importorskip("scipy.stats")

KAPPAS = {"kappa": None, "kappa_linear": "linear", "kappa_quadratic": "quadratic"}
ALPHAS = {"alpha_nominal": "nominal", "alpha_ordinal": "ordinal", "alpha_interval": "interval"}


@st.composite
def judgment_sets(draw):
    """Two {query: {doc: grade}} dicts over the same documents; a grade is one of 2-5 labels (not consecutive, so
    that κ's weights on ranks and α's interval distances on values differ), -1 (not judged), or absent."""
    labels = draw(st.lists(st.integers(0, 9), min_size=2, max_size=5, unique=True))
    grade = st.one_of(st.sampled_from(labels), st.sampled_from(labels), st.just(-1), st.none())
    a, b = {}, {}
    for q in range(draw(st.integers(1, 4))):
        for d in range(draw(st.integers(1, 12))):
            for side in (a, b):
                g = draw(grade)
                if g is not None:
                    side.setdefault(f"q{q}", {})[f"d{d}"] = g
    return a or {"q0": {"d0": labels[0]}}, b or {"q0": {"d0": labels[1]}}


def _pairs(a: dict, b: dict, query=None) -> list:
    return [(a[q][d], b[q][d]) for q in a for d in a[q]
            if (query is None or q == query) and d in b.get(q, {}) and a[q][d] >= 0 and b[q][d] >= 0]


def _units(a: dict, b: dict, query) -> np.ndarray:
    """krippendorff's reliability data: 2 coders × every (query, doc) either judged, NaN where one did not."""
    keys = sorted({(q, d) for side in (a, b) for q in side for d in side[q] if q == query or query is None})
    value = lambda side, q, d: side.get(q, {}).get(d, -1)  # noqa: E731
    return np.array([[value(s, q, d) if value(s, q, d) >= 0 else np.nan for q, d in keys] for s in (a, b)], float)


def _expected(a: dict, b: dict, query, labels: list) -> dict | None:
    """The peers' values on the pairs both judged (of one query or all); None where they are undefined."""
    pairs = _pairs(a, b, query)
    if not pairs or len({x for p in pairs for x in p}) == 1:
        return None
    ya, yb = zip(*pairs)
    out = {name: metrics.cohen_kappa_score(ya, yb, labels=labels, weights=w) for name, w in KAPPAS.items()}
    out.update({name: krippendorff.alpha(_units(a, b, query), level_of_measurement=level)
                for name, level in ALPHAS.items()})
    out["observed_agreement"] = sum(x == y for x, y in pairs) / len(pairs)
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(judgment_sets())
def test_kappa_and_alpha_equal_sklearn_and_krippendorff(sets):
    a, b = sets
    pairs = _pairs(a, b)
    labels = sorted({x for p in pairs for x in p})
    overall = _expected(a, b, None, labels)
    if overall is None:
        with pytest.raises(SqlmetricsError, match="no \\(query, document\\) pair|one label"):
            agreement(a, b)
        return
    r = agreement(a, b, per_query=True)
    row = r.overall.to_pylist()[0]
    assert row["pairs"] == len(pairs)
    for name, value in overall.items():
        assert row[name] == pytest.approx(value, abs=1e-12 if name.startswith("kappa") else 1e-9), name
    confusion = {(c["label_a"], c["label_b"]): c["pairs"] for c in r.confusion.to_pylist()}
    assert confusion == {k: sum(p == k for p in pairs) for k in set(pairs)}
    per_query = {(c["query_id"], c["label_a"], c["label_b"]): c["pairs"] for c in r.query_confusion.to_pylist()}
    assert per_query == {(q, *k): n for q in a for k, n in Counter(_pairs(a, b, q)).items()}
    for query in r.per_query.to_pylist():
        q = query["query_id"]
        expected = _expected(a, b, q, labels)
        if expected is None:
            assert all(query[name] is None for name in (*KAPPAS, *ALPHAS)) and query["note"]
            continue
        assert query["note"] is None
        for name, value in expected.items():
            assert query[name] == pytest.approx(value, abs=1e-12 if name.startswith("kappa") else 1e-9), (q, name)
        only_a = sum(1 for d, g in a.get(q, {}).items() if g >= 0 and b.get(q, {}).get(d, -1) < 0)
        assert query["only_a"] == only_a


def _tau_ap(truth: list, tested: list) -> float:
    """τ_AP from its definition: the systems in `tested`'s order; C(i) counts those above position i that `truth`
    also ranks above the system at i."""
    order = sorted(range(len(tested)), key=lambda i: -tested[i])
    total = sum(sum(truth[order[j]] > truth[order[i]] for j in range(i)) / i for i in range(1, len(order)))
    return 2 * total / (len(order) - 1) - 1


@pytest.mark.filterwarnings("ignore:An input array is constant")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.1, 0.2, 0.25, 0.5, 0.7, 0.9]), st.integers(0, 1000)), min_size=2,
                max_size=9), st.booleans())
def test_correlations_equal_scipy_and_the_definition(values, tie_b):
    # Means on a grid: two means closer than 1e-12 are tied here (DECIMALS), which scipy would not know.
    va = [x for x, _ in values]
    vb = [(y // 100) / 10 if tie_b else y / 1000 for _, y in values]
    means = pa.table({"measure": ["m"] * len(va), "run": [f"r{i}" for i in range(len(va))], "mean_a": va,
                      "mean_b": vb})
    (row,) = correlations(means).to_pylist()
    tau, rho = stats.kendalltau(va, vb).statistic, stats.spearmanr(va, vb).statistic
    for name, value in (("kendall_tau", tau), ("spearman_rho", rho)):
        if math.isnan(value):
            assert row[name] is None and row["note"]
        else:
            assert row[name] == pytest.approx(value, abs=1e-12), name
    if len(set(va)) == len(va) and len(set(vb)) == len(vb):
        assert row["tau_ap"] == pytest.approx(_tau_ap(va, vb), abs=1e-12)
    else:
        assert row["tau_ap"] is None and "tied" in row["note"]


def test_ranking_agreement_on_the_demo_equals_scipy():
    base = folder()
    measures = ["nDCG@10", "P@5", "AP"]
    with pytest.warns(Warning):  # the human set judges half the queries the runs rank
        r = ranking_agreement(base / "rag_human_qrels.txt", base / "rag_llm_qrels.txt", base / "rag_systems.parquet",
                              measures, columns={"run_name": "run_name"}, memory_limit="1GB")
    means = r.means.to_pylist()
    assert [c["measure"] for c in r.correlations.to_pylist()] == measures
    for row in r.correlations.to_pylist():
        va = [m["mean_a"] for m in means if m["measure"] == row["measure"]]
        vb = [m["mean_b"] for m in means if m["measure"] == row["measure"]]
        assert row["systems"] == 6
        assert row["kendall_tau"] == pytest.approx(stats.kendalltau(va, vb).statistic, abs=1e-12)
        assert row["spearman_rho"] == pytest.approx(stats.spearmanr(va, vb).statistic, abs=1e-12)
        assert row["tau_ap"] == pytest.approx(_tau_ap(va, vb), abs=1e-12)


def test_one_run_is_refused():
    with pytest.raises(SqlmetricsError, match="at least two runs"):
        ranking_agreement({"q": {"d": 1}}, {"q": {"d": 0}}, {"only": {"q": {"d": 1.0}}}, ["P@1"])


def test_demo_agreement_equals_the_peers_and_the_command_line_writes_it(tmp_path, capsys):
    base = folder()
    human, llm = base / "rag_human_qrels.txt", base / "rag_llm_qrels.txt"
    r = agreement(human, llm, per_query=True)
    read = lambda p: {(q, d): int(g) for q, _, d, g in (line.split() for line in open(p))}  # noqa: E731
    a, b = read(human), read(llm)
    both = sorted(set(a) & set(b))
    row = r.overall.to_pylist()[0]
    assert (row["pairs"], row["only_a"], row["only_b"]) == (400, 0, 400)
    assert row["kappa"] == pytest.approx(metrics.cohen_kappa_score([a[k] for k in both], [b[k] for k in both]),
                                         abs=1e-12)
    out = tmp_path / "per_query.parquet"
    assert main(["agreement", str(human), str(llm), "--per-query", "-o", str(out), "--memory-limit", "1GB"]) == 0
    assert pq.read_table(out).equals(r.per_query)
    assert "kappa_quadratic" in capsys.readouterr().out
    assert main(["agreement", str(human), str(llm), "-f", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("400,0,400,4,0.7375,")
    assert main(["agreement", str(human), str(llm), "-m", "P@5"]) == 2  # -m without --runs
    assert main(["agreement", str(human), str(base / "qrels.txt"), "--runs", str(base / "bm25.run.gz"),
                 str(base / "rerank.run.gz"), "-m", "P@10", "-o", str(tmp_path / "c.csv")]) == 0
    assert (tmp_path / "c.csv").read_text().splitlines()[0] == \
        '"measure","systems","kendall_tau","tau_ap","spearman_rho","note"'


def test_hostile_column_names_duplicates_and_empty_tables(tmp_path):
    names = {"query_id": "query id", "doc_id": "doc;id", "relevance": '"grade"'}
    a = pa.table({"query id": ["q", "q", "q"], "doc;id": ["d", "e", "f"], '"grade"': [0, 1, 1]})
    b = pa.table({"query id": ["q", "q", "q"], "doc;id": ["d", "e", "f"], '"grade"': [0, 1, 0]})
    row = agreement(a, b, columns=names).overall.to_pylist()[0]
    # 2 of 3 agree; p_e = (1·2 + 2·1)/9 = 4/9: κ = (2/3 − 4/9)/(5/9) = 0.4
    assert row["kappa"] == pytest.approx(0.4, abs=1e-12)
    repeated = pa.table({"query id": ["q", "q"], "doc;id": ["d", "d"], '"grade"': [0, 1]})
    with pytest.raises(SqlmetricsError, match=r"judgments b .*document 'd' appears more than once for query 'q'"):
        agreement(a, repeated, columns=names)
    empty = tmp_path / "empty.csv"
    empty.write_text("query_id,doc_id,relevance\n")
    with pytest.raises(SqlmetricsError, match=r"judgments a file .*empty\.csv.*(no rows|empty)"):
        agreement(empty, {"q": {"d": 1}})
    nan = pa.table({"query_id": ["q", "q"], "doc_id": ["d", "e"], "relevance": [1.0, float("nan")]})
    with pytest.raises(SqlmetricsError, match=r"judgments a .*row 2: column 'relevance'"):
        agreement(nan, {"q": {"d": 1, "e": 0}})


def test_one_label_in_a_query_is_null_with_a_note():
    a = {"q1": {"d": 1, "e": 1}, "q2": {"d": 0, "e": 1}}
    b = {"q1": {"d": 1, "e": 1}, "q2": {"d": 0, "e": 0}}
    rows = {r["query_id"]: r for r in agreement(a, b, per_query=True).per_query.to_pylist()}
    assert rows["q1"]["kappa"] is None and rows["q1"]["alpha_ordinal"] is None
    assert rows["q1"]["note"] == "one label on both sides: kappa and alpha undefined"
    assert rows["q1"]["observed_agreement"] == 1.0
    assert rows["q2"]["kappa"] is not None
