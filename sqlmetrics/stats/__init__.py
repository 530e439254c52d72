"""Comparing runs: significance tests (significance.py), compare() (compare.py) and its Report (report.py);
in a warehouse, the tests' sufficient statistics as one statement (aggregates.render_compare) and decide();
counterfactual estimates from click logs (counterfactual.py)."""
from .aggregates import render_compare
from .compare import compare, decide
from .counterfactual import interleaving, ips, pbm_ips
from .report import Report

__all__ = ["Report", "compare", "decide", "interleaving", "ips", "pbm_ips", "render_compare"]
