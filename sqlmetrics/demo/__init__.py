"""Demo data for `sqlmetrics demo`: graded qrels for 50 queries and two runs of depth 100 (see make_demo.py)."""
from __future__ import annotations

from pathlib import Path

QRELS = "qrels.txt"
RUNS = ("bm25.run.gz", "rerank.run.gz")


def folder() -> Path:
    """Where the demo files are (inside the installed package)."""
    return Path(__file__).resolve().parent


def paths() -> tuple[Path, list[Path]]:
    """(qrels, [runs]) of the demo."""
    base = folder()
    return base / QRELS, [base / r for r in RUNS]
