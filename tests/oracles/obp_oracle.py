"""Open Bandit Pipeline's off-policy estimates (obp==0.5.7) for logs read as JSON from standard input.

Run with the interpreter of a venv holding obp (not the project's: obp pins torch, numpy 1.x and old scikit-learn;
.ci/run's obp_env says how it is installed). Each case is one of
  {"kind": "bandit", "action": [n ints], "reward": [n], "pscore": [n], "action_dist": [n x k], "q_hat": [n x k],
   "clip": W or null}: the logged action, its reward and logging propensity, the new policy's probabilities of
   every action and the reward model's predictions of every action. Prints ips, snips, dm and dr (obp's
   InverseProbabilityWeighting, SelfNormalizedInverseProbabilityWeighting, DirectMethod and DoublyRobust; lambda_=clip
   for IPW and DR, which obp's SNIPW does not take) as {"value", "se"}.
  {"kind": "slate", "slate_id", "position", "reward", "pscore", "new_pscore"}: one entry per slot, the logging and
   new policies' marginal probabilities of the slot's item at its position. Prints iips (SlateIndependentIPS).
se is the sample standard deviation (ddof 1) of obp's per-round terms (_estimate_round_rewards, which
estimate_policy_value averages; for a slate, summed per slate) over sqrt(rounds): obp's own intervals are bootstraps.
tests/test_counterfactual_obp.py compares sqlmetrics' ips() and pbm_ips() with them.
"""
from __future__ import annotations

import json
import sys

import numpy as np
from obp.ope import (DirectMethod, DoublyRobust, InverseProbabilityWeighting,
                     SelfNormalizedInverseProbabilityWeighting, SlateIndependentIPS)


def _se(terms) -> float:
    return float(np.std(terms, ddof=1) / np.sqrt(len(terms)))


def bandit(case: dict) -> dict:
    action = np.asarray(case["action"], dtype=int)
    n = len(action)
    data = {"reward": np.asarray(case["reward"], dtype=float), "action": action,
            "pscore": np.asarray(case["pscore"], dtype=float),
            "action_dist": np.asarray(case["action_dist"], dtype=float)[:, :, None],  # one position
            "estimated_rewards_by_reg_model": np.asarray(case["q_hat"], dtype=float)[:, :, None],
            "position": np.zeros(n, dtype=int)}
    clip = np.inf if case["clip"] is None else case["clip"]
    out = {}
    for name, estimator, uses in (
            ("ips", InverseProbabilityWeighting(lambda_=clip), ("reward", "action", "pscore", "action_dist")),
            ("snips", SelfNormalizedInverseProbabilityWeighting(), ("reward", "action", "pscore", "action_dist")),
            ("dm", DirectMethod(), ("action_dist", "estimated_rewards_by_reg_model")),
            ("dr", DoublyRobust(lambda_=clip), ("reward", "action", "pscore", "action_dist",
                                                "estimated_rewards_by_reg_model"))):
        given = {k: data[k] for k in uses + ("position",)}
        out[name] = {"value": float(estimator.estimate_policy_value(**given)),
                     "se": _se(estimator._estimate_round_rewards(**given))}
    return out


def slate(case: dict) -> dict:
    slate_id = np.asarray(case["slate_id"], dtype=int)
    given = {"slate_id": slate_id, "position": np.asarray(case["position"], dtype=int),
             "reward": np.asarray(case["reward"], dtype=float),
             "pscore_item_position": np.asarray(case["pscore"], dtype=float),
             "evaluation_policy_pscore_item_position": np.asarray(case["new_pscore"], dtype=float)}
    estimator = SlateIndependentIPS(len_list=int(given["position"].max()) + 1)
    terms = estimator._estimate_round_rewards(reward=given["reward"], position=given["position"],
                                              behavior_policy_pscore=given["pscore_item_position"],
                                              evaluation_policy_pscore=given["evaluation_policy_pscore_item_position"])
    per_slate = np.bincount(np.unique(slate_id, return_inverse=True)[1], weights=terms)
    return {"iips": {"value": float(estimator.estimate_policy_value(**given)), "se": _se(per_slate)}}


def main() -> None:
    json.dump([{"bandit": bandit, "slate": slate}[case["kind"]](case) for case in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
