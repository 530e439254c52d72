"""ips() and pbm_ips() against Open Bandit Pipeline (obp==0.5.7) on the same seeded logs, to 1e-9: IPS, SNIPS, the
direct method and doubly robust of a stochastic new policy, with and without clipped weights, and the position-based
(slate independent) IPS of ranked lists. tests/oracles/obp_oracle.py runs in obp's own venv (SQLMETRICS_OBP_PYTHON
names its interpreter; obp pins torch, numpy 1.x and Python < 3.11, see .ci/run's obp_env). Every case goes to obp
in one run: importing obp (torch) takes most of its time."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sqlmetrics

from conftest import unavailable
from test_counterfactual import SLATE, STOCHASTIC, _slate_log, _stochastic_log

# Slow: starting obp (it imports torch) takes 3 to 5 s, over the fast suite's budget for an oracle; the fast cases
# in test_counterfactual.py check the same estimates by hand and against numpy. One test compares every case, so
# that obp starts once (tests of one module may run in several processes).
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "oracles" / "obp_oracle.py"
CLIP = 4.0


def _bandit_case(seed: int, clip):
    log, truth, arrays = _stochastic_log(seed)
    return log, {"kind": "bandit", "clip": clip, **{k: v.tolist() for k, v in arrays.items()}}


def _slate_case(seed: int):
    log, truth = _slate_log(seed)
    ids = {name: i for i, name in enumerate(dict.fromkeys(log["impression"].to_pylist()))}
    return log, {"kind": "slate", "slate_id": [ids[i] for i in log["impression"].to_pylist()],
                 "position": [p - 1 for p in log["position"].to_pylist()], "reward": log["clicked"].to_pylist(),
                 "pscore": log["p"].to_pylist(), "new_pscore": log["new_p"].to_pylist()}


def _obp(cases: list) -> list:
    python = os.environ.get("SQLMETRICS_OBP_PYTHON")
    if not python:
        unavailable("SQLMETRICS_OBP_PYTHON is unset: set it to the python of a venv with obp==0.5.7 (as .ci/run's "
                    "obp_env installs it)")
    done = subprocess.run([python, str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    if done.returncode:
        pytest.fail(f"{SCRIPT.name} failed under {python}:\n{done.stderr[-3000:]}", pytrace=False)
    return json.loads(done.stdout)


def test_ips_snips_dm_dr_of_a_stochastic_policy_and_position_based_ips_equal_obp():
    """Two seeded logs of a stochastic new policy with a reward model, one of them also with clip=4, and a log of
    ranked lists; obp's estimates of each from the arrays it takes (the new policy's probabilities and the model's
    predictions of every action), sqlmetrics' from the log's columns."""
    bandits = [(seed, clip, *_bandit_case(seed, clip)) for seed, clip in ((1, None), (1, CLIP), (2, None))]
    slate_log, slate_case = _slate_case(3)
    *refs, slate_ref = _obp([case for *_, case in bandits] + [slate_case])
    for (seed, clip, log, case), ref in zip(bandits, refs):
        est = sqlmetrics.ips(log, columns=STOCHASTIC, clip=clip)
        for name in ("ips", "dm", "dr"):
            assert est[name].value == pytest.approx(ref[name]["value"], rel=1e-9), (seed, clip, name)
            assert est[name].se == pytest.approx(ref[name]["se"], rel=1e-9), (seed, clip, name)
        if clip is None:  # obp's SNIPW takes no lambda_
            assert est["snips"].value == pytest.approx(ref["snips"]["value"], rel=1e-9), seed
            continue
        # the clipped weights: SNIPS by hand, and clipping mattered
        w = np.minimum(np.asarray(case["action_dist"])[np.arange(len(case["action"])), case["action"]]
                       / np.asarray(case["pscore"]), clip)
        r = np.asarray(case["reward"])
        assert est["snips"].value == pytest.approx(np.sum(w * r) / np.sum(w), rel=1e-9)
        assert est["clipped"] == int(np.sum(w == clip)) > 0
        unclipped = sqlmetrics.ips(log, columns=STOCHASTIC)
        assert unclipped["ips"].value != pytest.approx(est["ips"].value, rel=1e-6)
        assert unclipped["dr"].value != pytest.approx(est["dr"].value, rel=1e-6)

    est = sqlmetrics.pbm_ips(slate_log, columns=SLATE)
    assert est["impressions"] == len(set(slate_case["slate_id"])) and est["n"] == len(slate_case["reward"])
    assert est["ips"].value == pytest.approx(slate_ref["iips"]["value"], rel=1e-9)
    assert est["ips"].se == pytest.approx(slate_ref["iips"]["se"], rel=1e-9)
