"""The seeded draws behind the resampling tests: an integer hash h(seed, resample b, slot) written with only
`+`, `*` and `%` on BIGINTs, so that DuckDB (locally) and every engine of aggregates.py compute the same draws,
and Python reproduces them (resample_hash) for tests and for anyone checking a resample by hand.

One round is x -> (x + key)^5 mod P with P = 2^31 - 1: a permutation of 0 .. P-1 (5 does not divide P - 1),
and non-linear, unlike a Lehmer step; every product of two values below P fits in a signed BIGINT. Two rounds
mix the seed and the resample's number into hb, two mix a slot's number into hq, and the draw is their product
(a universal hash of the slot keyed by the resample):

    h = R34(R12(seed) + b) * R56(slot) mod P

A sign flip is h % 2; a bootstrap weight is Poisson(1) by the inverse of its distribution function at h / P
(poisson_sql: the Poisson bootstrap, in which each list is drawn a Poisson(1) number of times, independently of
the others, so a resample is one weighted sum over the lists and never a table of draws). The rounds are
over the few resample and slot numbers, each one expression (nested subqueries would nest too deep for SQLite's
parser), selected DISTINCT: engines do not inline a DISTINCT subquery into a join, so the rounds are not repeated
for every (resample, slot) pair, which costs one product.
"""
from __future__ import annotations

import math

P = 2147483647
# resampled statistics this close (relative to the values' scale) to the observed one count as "as extreme"
RESAMPLED_TIE = 1e-9
_KEYS = (1103515245, 12345, 1664525, 1013904223, 69069, 362437, 521288629, 88675123)


def _round(x: int, key: int) -> int:
    return pow((x + key) % P, 5, P)


def seed_hash(seed: int) -> int:
    """The seed's mixed value (seed // P mixes in too: seeds P apart differ)."""
    return _round(_round(seed % P, _KEYS[0]) + seed // P, _KEYS[1])


def replicate_hash(seed: int, b: int) -> int:
    return _round(_round(seed_hash(seed) + b, _KEYS[2]), _KEYS[3])


def slot_hash(slot: int) -> int:
    return _round(_round(slot, _KEYS[4]), _KEYS[5])


def resample_hash(seed: int, b: int, slot: int) -> int:
    """h(seed, resample b, slot) in Python: the value draw_sql() computes."""
    return replicate_hash(seed, b) * slot_hash(slot) % P


# h below POISSON_BOUNDS[k] draws the weight k: P times the Poisson(1) distribution function at k, for k = 0 .. 11;
# h at or above the last bound (probability 1e-9) draws 12.
POISSON_BOUNDS = tuple(int(P * math.exp(-1) * math.fsum(1 / math.factorial(j) for j in range(k + 1)))
                       for k in range(12))


def poisson_weight(h: int) -> int:
    """The Poisson(1) weight a draw h in 0 .. P-1 gives (poisson_sql() in Python)."""
    return next((k for k, bound in enumerate(POISSON_BOUNDS) if h < bound), len(POISSON_BOUNDS))


def poisson_sql(h: str) -> str:
    """The Poisson(1) weight of the draw h (an integer expression), as one CASE."""
    return ("CASE " + " ".join(f"WHEN {h} < {bound} THEN {k}" for k, bound in enumerate(POISSON_BOUNDS))
            + f" ELSE {len(POISSON_BOUNDS)} END")


def _rounds_sql(x: str, keys: tuple) -> str:
    """The rounds of `keys` applied to the integer expression x, as one expression."""
    x = f"CAST({x} AS BIGINT)"
    for key in keys:
        y = f"(({x}) + {key}) % {P}"
        y2 = f"(({y}) * ({y})) % {P}"
        x = f"(((({y2}) * ({y2})) % {P}) * ({y})) % {P}"
    return x


def replicates_sql(seed: int, n_resamples: int) -> str:
    """SELECT b, hb for b in 0 .. n_resamples - 1: the resamples' numbers, from a cross join of digit tables (no
    recursive CTE, no generate_series: every engine has these), and their part of the hash."""
    digits = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
    width = len(str(max(n_resamples - 1, 1)))
    numbers = (f"SELECT {' + '.join(f'{10 ** i} * t{i}.d' for i in range(width))} AS b FROM "
               + ", ".join(f"({digits}) AS t{i}" for i in range(width)))
    return (f"SELECT DISTINCT b, {_rounds_sql(f'b + {seed_hash(seed)}', _KEYS[2:4])} AS hb "
            f"FROM ({numbers}) AS h_n WHERE b < {n_resamples}")


def slots_sql(source: str) -> str:
    """SELECT slot, hq: a slot's part of the hash, for the slot numbers of `source` (SELECT ... AS slot)."""
    return f"SELECT DISTINCT slot, {_rounds_sql('slot', _KEYS[4:6])} AS hq FROM ({source}) AS h_s"


def draw_sql(hb: str, hq: str) -> str:
    """h from a resample's hb and a slot's hq."""
    return f"({hb} * {hq}) % {P}"
