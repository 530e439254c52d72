"""The seeded draws behind the resampling tests: an integer hash h(seed, resample b, slot) written with only
`+`, `*` and `%` on BIGINTs, so that DuckDB (locally) and every engine of aggregates.py compute the same draws,
and Python reproduces them (resample_hash) for tests and for anyone checking a resample by hand.

One round is x -> (x + key)^5 mod P with P = 2^31 - 1: a permutation of 0 .. P-1 (5 does not divide P - 1),
and non-linear, unlike a Lehmer step; every product of two values below P fits in a signed BIGINT. Two rounds
mix the seed, two mix it with the resample's number, two mix a slot's number, and two mix their sum:

    h = R78(R34(R12(seed) + b) + R56(slot))

A sign flip is h % 2, a bootstrap draw h % n (biases of n / P, below 1e-6 for a million lists).
"""
from __future__ import annotations

P = 2147483647
_KEYS = (1103515245, 12345, 1664525, 1013904223, 69069, 362437, 521288629, 88675123)


def _round(x: int, key: int) -> int:
    return pow((x + key) % P, 5, P)


def _mix(x: int, keys: tuple) -> int:
    for key in keys:
        x = _round(x, key)
    return x


def seed_hash(seed: int) -> int:
    """The seed's mixed value (seeds 0 .. 2^32 - 1, each its own): replicates_sql()'s input."""
    return _round(_round(seed % P, _KEYS[0]) + seed // P, _KEYS[1])


def resample_hash(seed: int, b: int, slot: int) -> int:
    """h(seed, resample b, slot) in Python: the same value as hashed_sql() computes."""
    return _mix(_mix(seed_hash(seed) + b, _KEYS[2:4]) + _mix(slot, _KEYS[4:6]), _KEYS[6:8])


def _rounds(columns: str, source: str, x: str, out: str, keys: tuple) -> str:
    """SELECT columns, out FROM source, with out = the rounds of `keys` applied to the integer expression x.
    Each product gets its own subquery level, so no expression repeats its operand."""
    sql = f"SELECT {columns}, CAST({x} AS BIGINT) AS h_x FROM {source}"
    for key in keys:
        sql = (f"SELECT {columns}, h_y, (h_y * h_y) % {P} AS h_y2 "
               f"FROM (SELECT {columns}, (h_x + {key}) % {P} AS h_y FROM ({sql}) AS h_t) AS h_t")
        sql = f"SELECT {columns}, (((h_y2 * h_y2) % {P}) * h_y) % {P} AS h_x FROM ({sql}) AS h_t"
    return f"SELECT {columns}, h_x AS {out} FROM ({sql}) AS h_t"


def replicates_sql(seed: int, n_resamples: int) -> str:
    """(b, hb) for b in 0 .. n_resamples - 1: the resamples' numbers, from a cross join of digit tables (no
    recursive CTE, no generate_series: every engine has these), and their part of the hash."""
    digits = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
    width = len(str(max(n_resamples - 1, 1)))
    numbers = (f"SELECT {' + '.join(f'{10 ** i} * t{i}.d' for i in range(width))} AS b FROM "
               + ", ".join(f"({digits}) AS t{i}" for i in range(width)))
    source = f"({numbers}) AS h_n WHERE b < {n_resamples}"
    return _rounds("b", source, f"b + {seed_hash(seed)}", "hb", _KEYS[2:4])


def slot_hash_sql(columns: str, source: str, slot: str) -> str:
    """SELECT columns, hq FROM source: a slot's part of the hash."""
    return _rounds(columns, source, slot, "hq", _KEYS[4:6])


def hashed_sql(columns: str, source: str) -> str:
    """SELECT columns, h FROM source, where source has hb (replicates_sql) and hq (slot_hash_sql) columns."""
    return _rounds(columns, source, "hb + hq", "h", _KEYS[6:8])
