"""The catalogue (sql/ headers), the names users type, and the README table generated from them."""
from pathlib import Path

import pytest

from sqlmetrics import SqlmetricsError, catalogue, names

REPO = Path(__file__).resolve().parent.parent

# METRICS.md's catalogue, all of it: a measure missing here is missing from the product.
CONTRACT_MEASURES = {
    "P", "SetP", "R", "SetR", "F1", "SetF", "Success", "Hits", "RR", "AP", "GMAP", "Rprec", "Bpref", "IPrec",
    "DCG", "nDCG", "CG", "RBP", "ERR", "Judged", "NumQ", "NumRet", "NumRel", "NumRelRet", "FirstRank",
    "ContextPrecision",
}


def test_catalogue_is_the_contract():
    assert set(catalogue.measures()) == CONTRACT_MEASURES


def test_readme_table_is_generated_from_sql():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert catalogue.readme_with_table(readme) == readme, "run: python -m sqlmetrics.catalogue README.md"


def test_every_file_declares_description_reference_and_aggregate():
    for m in catalogue.measures().values():
        assert m.description and m.reference, m.path
        assert m.aggregate in ("mean", "sum", "geometric"), m.path
        assert m.better in ("higher", "lower"), m.path


# (spelling, canonical form, parameters) — METRICS.md "Names", every spelling listed there.
SPELLINGS = [
    ("nDCG@10", "nDCG", {"k": 10}), ("P(rel=2)@5", "P", {"k": 5, "rel": 2}), ("AP@100", "AP", {"k": 100}),
    ("RR@10", "RR", {"k": 10}), ("RBP(p=0.8)", "RBP", {"p": 0.8}), ("ERR@20", "ERR", {"k": 20}),
    ("Judged@10", "Judged", {"k": 10}), ("SetP", "SetP", {}), ("SetR", "SetR", {}),
    ("SetF(beta=0.5)", "SetF", {"beta": 0.5}), ("IPrec@0.5", "IPrec", {"r": 0.5}),
    ("nDCG(gain='exp')@10", "nDCG", {"gain": "exp", "k": 10}),
    # trec_eval
    ("P_10", "P", {"k": 10}), ("P.10", "P", {"k": 10}), ("recall_100", "R", {"k": 100}), ("map", "AP", {"k": None}),
    ("map_cut_100", "AP", {"k": 100}), ("ndcg", "nDCG", {"k": None}), ("ndcg_cut_10", "nDCG", {"k": 10}),
    ("ndcg_cut.10", "nDCG", {"k": 10}), ("recip_rank", "RR", {"k": None}), ("Rprec", "Rprec", {}),
    ("bpref", "Bpref", {}), ("success_10", "Success", {"k": 10}), ("iprec_at_recall_0.10", "IPrec", {"r": 0.1}),
    ("gm_map", "GMAP", {}), ("set_P", "SetP", {}), ("set_recall", "SetR", {}), ("set_F", "SetF", {"beta": 1.0}),
    ("num_q", "NumQ", {}), ("num_ret", "NumRet", {}), ("num_rel", "NumRel", {}), ("num_rel_ret", "NumRelRet", {}),
    # ranx
    ("precision@5", "P", {"k": 5}), ("recall@100", "R", {"k": 100}), ("f1@10", "F1", {"k": 10}),
    ("hits@10", "Hits", {"k": 10}), ("hit_rate@10", "Success", {"k": 10}), ("mrr@10", "RR", {"k": 10}),
    ("map@100", "AP", {"k": 100}), ("ndcg@10", "nDCG", {"k": 10}), ("ndcg_burges@10", "nDCG", {"gain": "exp"}),
    ("dcg@10", "DCG", {"k": 10}), ("dcg_burges@10", "DCG", {"gain": "exp", "k": 10}),
    ("r-precision", "Rprec", {}), ("r_precision", "Rprec", {}), ("rbp.95", "RBP", {"p": 0.95}),
    ("ndcg@10-l2", "nDCG", {"k": 10, "rel": 2}), ("precision", "SetP", {}), ("recall", "SetR", {}),
]


@pytest.mark.parametrize("text, name, params", SPELLINGS)
def test_spellings(text, name, params):
    call = names.parse(text)
    assert call.measure.name == name
    for key, value in params.items():
        assert call.values[key] == value, key


def test_canonical_form_keeps_only_given_parameters():
    assert names.parse("ndcg_burges@10").canonical == "nDCG(gain='exp')@10"
    assert names.parse("P_10").canonical == "P@10"
    assert names.parse("ndcg@10-l2").canonical == "nDCG(rel=2)@10"


def test_relevance_level_is_the_default_rel():
    assert names.parse("P@5", relevance_level=2).values["rel"] == 2
    assert names.parse("P(rel=3)@5", relevance_level=2).values["rel"] == 3


def test_same_string_twice_is_rejected():
    with pytest.raises(SqlmetricsError, match="listed twice"):
        names.parse_all(["P@5", "P@5"])
