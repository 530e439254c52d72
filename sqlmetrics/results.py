"""What an evaluation returns, wherever it ran; and how a value is written: fixed() in a table, json_text() in
every JSON the package writes."""
from __future__ import annotations

import datetime
import decimal
import json
import math
import numbers
from dataclasses import dataclass, field


def fixed(value: float, digits: int = 4) -> str:
    """A number as the tables print it: `digits` decimals, and never -0.0000: a value a hair below zero (the
    floating-point noise of an exact 0, as in Personalization of identical lists) prints as 0.0000."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


# Which queries a mean is over: where, by design, the package's evaluations differ from trec_eval's default. Printed
# under every table a person reads (eval's and compare's; trec_eval's own output stays byte for byte trec_eval's).
AVERAGED = {
    "qrels": "Means over every judged query, one a run misses scoring 0 (trec_eval -c; without -c, trec_eval "
             "averages only the queries both files have).",
    "intersection": "Means over the queries both the qrels and the run have (trec_eval without -c; by default "
                    "every judged query counts, one a run misses scoring 0).",
}


def json_value(value):
    """A value as the package's JSON holds it, which any strict parser reads (RFC 8259): a number that is not
    finite (NaN, +-inf, which JSON cannot spell) is null; a date, time or timestamp its ISO 8601 text
    ("2024-06-01", "2024-06-01T12:34:56+00:00"); a decimal its exact digits as text ("1.50": as a JSON number
    a reader would round it to a double); any other value JSON has no type for, its text. Integers stay numbers,
    however large: JSON's numbers have no bound, and Python's parser reads them back exactly."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (datetime.date, datetime.time)):  # datetime.datetime is a date
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, numbers.Integral):  # numpy's integers too
        return int(value)
    if isinstance(value, numbers.Real):  # float, numpy's floats
        return float(value) if math.isfinite(value) else None
    return str(value)


def _jsonable(value):
    """`value` with json_value() applied to everything inside it that JSON does not take as it is."""
    if value is None or type(value) in (str, int, bool):
        return value
    if type(value) is float:  # the common case first: millions of values in a per-query table
        return value if math.isfinite(value) else None
    if isinstance(value, dict):  # json writes a key of these types as text itself; any other, json_value()'s
        return {k if k is None or isinstance(k, (str, int, float)) else str(json_value(k)): _jsonable(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return json_value(value)


def json_text(value, indent: int | None = None) -> str:
    """The one way the package writes JSON: json_value() for every value json cannot take as it is, UTF-8
    text unescaped, and never NaN or Infinity (allow_nan=False would raise, not write them)."""
    return json.dumps(_jsonable(value), indent=indent, ensure_ascii=False, allow_nan=False)


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
