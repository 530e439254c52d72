"""Comparing runs: significance tests (significance.py), compare() (compare.py) and its Report (report.py)."""
from .compare import compare
from .report import Report

__all__ = ["Report", "compare"]
