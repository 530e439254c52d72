"""What an evaluation returns, wherever it ran."""
from __future__ import annotations

from dataclasses import dataclass, field


def fixed(value: float, digits: int = 4) -> str:
    """A number as the tables print it: `digits` decimals, and never -0.0000: a value a hair below zero (the
    floating-point noise of an exact 0, as in Personalization of identical lists) prints as 0.0000."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


@dataclass
class Results:
    """Evaluation results, keyed by the measure strings exactly as passed.

    aggregate: {measure: value}, or {run_name: {measure: value}} when several runs were evaluated.
    per_query: a pyarrow Table with `query_id` (and `run` for several runs, and the group_by columns)
    and one column per measure: one row per evaluated list.
    per_group: with group_by, a pyarrow Table with one row per (run and) segment: the segment columns, each
    measure's aggregate (mean, sum or geometric mean) over the segment's lists, and `num_lists`; else None.
    """

    aggregate: dict
    per_query: object  # pyarrow.Table; (column names, rows) for the command line, which never loads pyarrow
    measures: list
    per_group: object | None = field(default=None)
