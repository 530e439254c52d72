"""Comparing runs: significance tests (significance.py), compare() (compare.py) and its Report (report.py);
counterfactual estimates from click logs (counterfactual.py)."""
from .compare import compare
from .counterfactual import interleaving, ips
from .report import Report

__all__ = ["Report", "compare", "interleaving", "ips"]
