"""Judge agreement (sqlmetrics.judgments): hand-computed κ, α and τ_AP, and hostile inputs named by table and row.
The oracles (scikit-learn, krippendorff, scipy), the command line and the demo are in test_fuzz_agreement.py (slow)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from sqlmetrics.errors import SqlmetricsError
from sqlmetrics.judgments import agreement
from sqlmetrics.judgments.systems import correlations

# Five pairs both judged (label in a, label in b): d1 (0,0), d2 (1,2), d3 (2,2), d4 (1,1), d5 (0,1); d6 only in a;
# d7 only in b (a's -1 is TREC's "not judged"), d8 only in b.
A = {"q✓": {"d1": 0, "d2": 1, "d3": 2, "d4": 1, "d5": 0, "d6": 2, "d7": -1}}
B = {"q✓": {"d1": 0, "d2": 2, "d3": 2, "d4": 1, "d5": 1, "d7": 3, "d8": 0}}


def test_hand_computed_kappa_and_alpha():
    r = agreement(A, B, per_query=True)
    row = r.overall.to_pylist()[0]
    assert (row["pairs"], row["only_a"], row["only_b"], row["labels"]) == (5, 1, 2, 3)
    # Observed agreement 3/5. Marginals: a (0,1,2) = (2,2,1), b = (1,2,2), N = 5.
    # κ: p_e = (2·1 + 2·2 + 1·2)/25 = 8/25; κ = (0.6 − 0.32)/(1 − 0.32) = 7/17.
    # linear: observed Σ|a − b|/N = 2/5; expected Σ over the gaps 0|1 and 1|2 of F_a(1 − F_b) + F_b(1 − F_a):
    #   (0.4·0.8 + 0.2·0.6) + (0.8·0.4 + 0.6·0.2) = 0.88; κ = 1 − 0.4/0.88 = 6/11.
    # quadratic: observed 2/5; expected E X² + E Y² − 2 E X E Y = 1.2 + 2.0 − 2·0.8·1.2 = 1.28; κ = 1 − 0.4/1.28.
    # α (m = 10 values; n_0, n_1, n_2 = 3, 4, 3; two units disagree, each counted twice in the coincidences):
    #   nominal 1 − 9·4/(100 − 34) = 5/11; interval 1 − 9·(2·1 + 2·1)/(2·(12·1 + 9·4 + 12·1)) = 1 − 36/120 = 0.7;
    #   ordinal δ(0,1) = δ(1,2) = (7 − 3.5)² = 12.25, δ(0,2) = (10 − 3)² = 49:
    #   1 − 9·(4·12.25)/(2·(12·12.25 + 9·49 + 12·12.25)) = 1 − 441/1470 = 0.7.
    expected = {"observed_agreement": 0.6, "kappa": 7 / 17, "kappa_linear": 6 / 11, "kappa_quadratic": 0.6875,
                "alpha_nominal": 5 / 11, "alpha_interval": 0.7, "alpha_ordinal": 0.7}
    for name, value in expected.items():
        assert row[name] == pytest.approx(value, abs=1e-12), name
    (query,) = r.per_query.to_pylist()
    assert query["query_id"] == "q✓" and query["note"] is None
    assert all(query[k] == pytest.approx(v, abs=1e-12) for k, v in expected.items())
    assert r.confusion.to_pylist() == [{"label_a": 0, "label_b": 0, "pairs": 1}, {"label_a": 0, "label_b": 1, "pairs": 1},
                                       {"label_a": 1, "label_b": 1, "pairs": 1}, {"label_a": 1, "label_b": 2, "pairs": 1},
                                       {"label_a": 2, "label_b": 2, "pairs": 1}]
    assert r.query_confusion.to_pylist() == [{"query_id": "q✓", **c} for c in r.confusion.to_pylist()]


def test_one_label_on_both_sides_is_an_error_naming_both_tables():
    with pytest.raises(SqlmetricsError, match=r"judgments a .* and judgments b .*one label 1 on all 2 pairs.*undefined"):
        agreement({"q": {"d": 1, "e": 1, "f": 0}}, {"q": {"d": 1, "e": 1}})


def test_no_pair_in_common_is_an_error():
    with pytest.raises(SqlmetricsError, match=r"no \(query, document\) pair is judged on both sides \(1 only in a, 1 "
                                              r"only in b\)"):
        agreement({"q": {"d": 1}}, {"q": {"D": 1}})


@pytest.mark.parametrize("label, problem", [
    (None, r"column 'relevance' holds None, which is not an integer relevance grade"),
    (0.5, r"column 'relevance' holds '0\.5', which is not an integer relevance grade"),
    (2.0 ** 40, r"column 'relevance' holds a grade beyond ±2147483648"),
])
def test_bad_label_named_by_table_row_and_column(label, problem):
    b = pa.table({"query_id": ["q", "q"], "doc_id": ["d", "e"], "relevance": [1.0, label]})
    with pytest.raises(SqlmetricsError, match=r"judgments b \(Arrow table\), row 2: " + problem):
        agreement({"q": {"d": 1, "e": 0}}, b)


def test_tau_ap_hand_computed():
    # b's order: w, x, y, z; a's order: x, w, y, z (the top two swapped).
    # C(2) = 0 (w above x in b, below in a), C(3) = 2, C(4) = 3: τ_AP = 2/3·(0/1 + 2/2 + 3/3) − 1 = 1/3.
    # τ-b: one discordant pair of six: (5 − 1)/6 = 2/3. ρ: ranks differ by one place at the top: 1 − 6·2/(4·15) = 0.8.
    # The same swap at the bottom (a's order w, x, z, y): C(2) = 1, C(3) = 2, C(4) = 2:
    #   τ_AP = 2/3·(1 + 1 + 2/3) − 1 = 7/9, τ and ρ unchanged: τ_AP weighs the top.
    top = pa.table({"measure": ["m"] * 4, "run": ["w", "x", "y", "z"], "mean_a": [0.8, 0.9, 0.3, 0.1],
                    "mean_b": [0.9, 0.8, 0.5, 0.2]})
    bottom = top.set_column(2, "mean_a", pa.array([0.9, 0.8, 0.1, 0.3]))
    for means, tau_ap in ((top, 1 / 3), (bottom, 7 / 9)):
        (row,) = correlations(means).to_pylist()
        assert row["tau_ap"] == pytest.approx(tau_ap, abs=1e-12)
        assert row["kendall_tau"] == pytest.approx(2 / 3, abs=1e-12)
        assert row["spearman_rho"] == pytest.approx(0.8, abs=1e-12)
        assert row["note"] is None
