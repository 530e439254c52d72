"""The peers' measure lists: every measure trec_eval 10.0, ir_measures and ranx name is computed here, or refused
with its reason in docs/names.md's table of the peers' measures not computed (its "Peers' measures" section).

- trec_eval 10.0: the names its `-m` takes, which `sqlmetrics trec_eval -m` must take too: the measure table and the
  nicknames of its measures.c (a literal list: CI has no trec_eval).
- ir_measures 0.4.3: its registry (every name and alias), and each measure's parameters: the measure with a value
  other than its default, printed as ir_measures prints it (what evaluate() receives for a measure object).
- ranx 0.3.21: the metric names its metric_switch (ranx/metrics/__init__.py) knows, read from the installed file
  without importing ranx (numba's import is slow).

A documented refusal that the catalogue computes after all, or that no peer offers, is stale and fails too.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import ir_measures
import pytest

from sqlmetrics.catalogue import parse
from sqlmetrics.catalogue.trec import requested
from sqlmetrics.errors import SqlmetricsError

DOCS = Path(__file__).resolve().parent.parent / "docs" / "names.md"

# usnistgov/trec_eval at its "version 10.0" commit (f4253652), measures.c: te_trec_measures (each measure's name is
# its TREC_MEAS's first field, the same as its variable's suffix) and te_trec_measure_nicknames.
TREC_EVAL_10 = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG",
    "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P",
    "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "prefs_num_prefs_poss",
    "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel",
    "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
    "prefs_pair_imp", "prefs_avgjg_imp", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap", "rbp", "rbp_resid", "unj",
    "official", "set", "all_trec", "all_prefs", "prefs", "qrels_jg",
)


def _parses(text: str) -> str | None:
    """The catalogue measure a spelling is, or None."""
    try:
        return parse(text).measure.name
    except SqlmetricsError:
        return None


def trec_eval_offered() -> dict:
    """{name: computed}: `sqlmetrics trec_eval -m NAME` takes it (a nickname: all of its measures)."""
    out = {}
    for name in TREC_EVAL_10:
        try:
            out[name] = bool(requested([name], "trec_eval-10.0"))
        except SqlmetricsError:
            out[name] = False
    return out


def _ir_measures_call(measure, **params) -> str:
    """The measure with these parameters and values for its required ones, as ir_measures prints it."""
    required = {"cutoff": 10, "recall": 0.5, "max_rel": 3}
    given = {p: required[p] for p, info in measure.SUPPORTED_PARAMS.items() if info.required}
    return str(measure(**{**given, **params}))


def _other_value(info):
    """A value of a parameter other than its default (ir_measures leaves a default out of the printed name)."""
    if isinstance(info.choices, (list, tuple)):
        return next((c for c in info.choices if c != info.default), None)
    return {bool: not info.default if isinstance(info.default, bool) else True, dict: {0: 0, 1: 1, 2: 3}, int: 2,
            float: 0.7}.get(info.dtype)


def ir_measures_offered() -> dict:
    """{name or NAME(parameter): computed}: a registry name is computed when it parses (tried with a cutoff, bare,
    and at recall 0.5: IPrec) and so does ir_measures' printing of its measure object (SetRelP is printed
    SetP(relative=True), NumRelRet NumRet(rel=1)); a parameter when the measure printed with it parses."""
    registry = ir_measures.measures.registry
    out = {}
    for name, measure in registry.items():
        out[name] = _parses(_ir_measures_call(measure)) is not None and \
            any(_parses(s) is not None for s in (f"{name}@10", name, f"{name}@0.5"))
    for measure in {m.NAME: m for m in registry.values() if not m.params}.values():  # not SetRelP, NumRelRet
        for param, info in measure.SUPPORTED_PARAMS.items():
            value = _other_value(info)
            if param != "cutoff" and value is not None:
                out[f"{measure.NAME}({param})"] = _parses(_ir_measures_call(measure, **{param: value})) is not None
    return out


def ranx_offered() -> dict:
    """{metric: computed}: ranx's names (bare: parsed bare or at a cutoff)."""
    metrics = Path(importlib.util.find_spec("ranx").submodule_search_locations[0]) / "metrics" / "__init__.py"
    names = re.findall(r'metric == "([^"]+)"', metrics.read_text(encoding="utf-8"))
    assert len(names) >= 14, names
    return {n: _parses(n) is not None or _parses(f"{n}@10") is not None for n in names}


OFFERED = {"trec_eval": trec_eval_offered, "ir_measures": ir_measures_offered, "ranx": ranx_offered}


def documented_refusals(text: str) -> dict:
    """{peer: {item: why}} from the table under docs/names.md's "Peers' measures" heading: `| peer | items | why |`,
    the items in backquotes."""
    section = text.split("\n## Peers' measures\n", 1)[1]
    table = section.split("\n| peer |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    out: dict = {}
    for row in table:
        _, peer, items, why, _ = row.split("|")
        assert why.strip(), f"docs/names.md: no reason given for {items.strip()}"
        for item in re.findall(r"`([^`]+)`", items):
            out.setdefault(peer.strip(), {})[item] = why.strip()
    return out


def uncovered(offered: dict, refused: dict) -> tuple[list, list]:
    """(the peers' measures neither computed nor refused in the docs, the refusals that are stale)."""
    missing = [f"{peer}: {item}" for peer, items in offered.items() for item, computed in items.items()
               if not computed and item not in refused.get(peer, {})]
    stale = [f"{peer}: {item}" for peer, items in refused.items() for item in items
             if peer not in offered or offered[peer].get(item, True)]
    return missing, stale


@pytest.fixture(scope="module")
def offered() -> dict:
    return {peer: names() for peer, names in OFFERED.items()}


def test_every_peer_measure_is_computed_or_refused_with_its_reason(offered):
    missing, stale = uncovered(offered, documented_refusals(DOCS.read_text(encoding="utf-8")))
    assert not missing, "neither computed nor in docs/names.md's table of refusals:\n" + "\n".join(missing)
    assert not stale, "docs/names.md refuses what is computed, or what no peer offers:\n" + "\n".join(stale)


def test_the_lists_are_read_and_a_refusal_removed_from_the_docs_fails(offered):
    """The test above would catch a peer's measure left undocumented: the lists hold what they should, and the
    docs' table without one of its rows leaves that row's measures uncovered."""
    assert offered["trec_eval"]["dcg"] and offered["trec_eval"]["all_trec"] and len(offered["trec_eval"]) == 63
    assert offered["ir_measures"]["nNRBP"] and offered["ir_measures"]["α_DCG"] and offered["ir_measures"]["MRR"]
    assert offered["ir_measures"]["nDCG(gains)"] and offered["ir_measures"]["AP(judged_only)"]
    assert offered["ranx"]["dcg_burges"] and offered["ranx"]["r-precision"]
    text = DOCS.read_text(encoding="utf-8")
    rows = [line for line in text.split("\n## Peers' measures\n", 1)[1].splitlines() if line.startswith("| ir_measures")]
    assert rows
    for row in rows:
        missing, _ = uncovered(offered, documented_refusals(text.replace(row + "\n", "")))
        assert missing and all(f"`{m.split(': ', 1)[1]}`" in row for m in missing)
    assert uncovered({"ranx": {"made_up": False}}, {}) == (["ranx: made_up"], [])
    assert uncovered({"ranx": {"dcg": True}}, {"ranx": {"dcg": "why"}}) == ([], ["ranx: dcg"])
