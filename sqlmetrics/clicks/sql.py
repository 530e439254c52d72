"""What the click models share: SQL of a log-likelihood, and EM's loop."""
from __future__ import annotations

from collections.abc import Callable

# A probability's floor inside a logarithm or under a division: reached only where a model gives an observed row
# probability 0 (alpha and gamma both rounded to 1 at a row without a click), never at a fitted interior point.
FLOOR = "1e-300"


def em(segments: list, iterations: int, tolerance: float, step: Callable) -> dict:
    """EM's loop, every model's: step(active segments) runs one simultaneous update of those segments and returns
    {seg: its largest change}; a segment stops once that is below the tolerance, all at `iterations`. Returns {seg:
    (iterations run, the last iteration's largest change)} for every segment."""
    done = {seg: (0, None) for seg in segments}
    active = list(segments)
    for i in range(1, iterations + 1):
        changes = step(active)
        for seg, change in changes.items():
            done[seg] = (i, change)
        active = [seg for seg, change in changes.items() if not change < tolerance]
        if not active:
            break
    return done


def observed_ll(p: str, clicked: str, log: str = "ln") -> str:
    """SQL: the log (ln or log2) of the probability of a row's click as observed, p being P(click): floored at FLOOR,
    never -inf or NaN where the model rules the observation out."""
    return (f"CASE WHEN {clicked} = 1 THEN {log}(GREATEST({p}, {FLOOR})) "
            f"ELSE {log}(GREATEST(1 - {p}, {FLOOR})) END")


def binomial_ll(p: str, k: str, n: str) -> str:
    """SQL: k ln p + (n - k) ln(1 - p), each term 0 when its count is 0 (0 * ln 0 = 0)."""
    return (f"(CASE WHEN {k} > 0 THEN {k} * ln(GREATEST({p}, {FLOOR})) ELSE 0 END + "
            f"CASE WHEN {n} - {k} > 0 THEN ({n} - {k}) * ln(GREATEST(1 - {p}, {FLOOR})) ELSE 0 END)")
