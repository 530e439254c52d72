"""SQL the click models share."""
from __future__ import annotations

# A probability's floor inside a logarithm or under a division: reached only where a model gives an observed row
# probability 0 (alpha and gamma both rounded to 1 at a row without a click), never at a fitted interior point.
FLOOR = "1e-300"


def binomial_ll(p: str, k: str, n: str) -> str:
    """SQL: k ln p + (n - k) ln(1 - p), each term 0 when its count is 0 (0 * ln 0 = 0)."""
    return (f"(CASE WHEN {k} > 0 THEN {k} * ln(GREATEST({p}, {FLOOR})) ELSE 0 END + "
            f"CASE WHEN {n} - {k} > 0 THEN ({n} - {k}) * ln(GREATEST(1 - {p}, {FLOOR})) ELSE 0 END)")
