"""GrowthBook's sequential intervals and p-values (gbstats==0.8.0, SequentialTwoSidedTTest) for two-arm cases read
as JSON from standard input.

Run with the interpreter of a venv holding gbstats (not the project's: gbstats pins numpy 1.x and pandas 1.x). Each
case: {"a": [n, sum, sum of squares], "b": [...], "alpha": 0.05, "tuning": 5000}; it prints, per case, the absolute
difference b - a's interval and p-value as JSON. tests/test_sequential.py compares sqlmetrics' with them.
"""
from __future__ import annotations

import json
import sys

from gbstats.frequentist.tests import SequentialConfig, SequentialTwoSidedTTest
from gbstats.models.statistics import SampleMeanStatistic


def main() -> None:
    out = []
    for case in json.load(sys.stdin):
        a, b = (SampleMeanStatistic(n=int(v[0]), sum=float(v[1]), sum_squares=float(v[2])) for v in (case["a"], case["b"]))
        config = SequentialConfig(difference_type="absolute", alpha=case["alpha"],
                                  sequential_tuning_parameter=case["tuning"])
        test = SequentialTwoSidedTTest(a, b, config)
        low, high = test.confidence_interval
        out.append({"ci": [float(low), float(high)], "p": float(test.p_value), "estimate": float(test.point_estimate)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
