"""Counterfactual estimates from click logs, computed in SQL on DuckDB: only a handful of sums come back.

ips()           the click-through a new ranker would have had, from a log of a randomised logging policy:
                inverse propensity scoring (IPS) and its self-normalised form (SNIPS), with normal intervals.
interleaving()  team-draft interleaving credit: per impression, the team (ranker) whose documents got more
                clicks wins; the share of wins of one minus the other's, an interval and a sign test.

A log is a file DuckDB reads (Parquet, CSV, JSON Lines), a pyarrow Table, or a pandas / polars frame; the
columns playing each role are named by `columns=` ({role: column}; a role's own name by default).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import duckdb

from ..local.connection import connect
from ..errors import SqlmetricsError
from ..identifiers import quote_identifier, sql_literal

IPS_ROLES = ("action", "click", "propensity", "new_action")
INTERLEAVING_ROLES = ("impression", "team", "click")


@dataclass
class Estimate:
    value: float
    se: float  # standard error
    ci_low: float  # normal interval at the call's confidence
    ci_high: float


def ips(log, columns: dict | None = None, confidence: float = 0.95, *, memory_limit=None, threads=None,
        temp_directory=None) -> dict:
    """IPS and SNIPS estimates of a new ranker's click-through from a logged, randomised policy.

    One row per logged decision (an impression's slot): `action` (what the logging policy showed: a
    document, or the ranker's choice at that position), `click` (the reward: 0/1 or a number), `propensity`
    (the logging policy's probability of having shown that action there, in (0, 1]) and `new_action` (what
    the new ranker would have shown in the same place). With w = [action = new_action] / propensity:
    IPS = sum(w * click) / n, SNIPS = sum(w * click) / sum(w). Standard errors: the sample standard deviation
    of w * click over sqrt(n) (IPS), the delta method sqrt(sum(w^2 (click - SNIPS)^2)) / sum(w) (SNIPS).
    Returns {"ips": Estimate, "snips": Estimate, "n": rows, "matches": rows where the rankers agree}.
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    z = _z(confidence)
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    with _opened(log, columns, IPS_ROLES, "ips", resources) as (con, view, c):
        bad, unknown = con.execute(f"""
            SELECT COUNT(*) FILTER (WHERE {_not_finite(c['propensity'])} OR {c['propensity']} <= 0
                                          OR {c['propensity']} > 1 OR {_not_finite(c['click'])}),
                   COUNT(*) FILTER (WHERE {c['action']} IS NULL OR {c['new_action']} IS NULL)
            FROM {view}""").fetchone()
        if bad:
            raise SqlmetricsError(f"ips: {bad} row(s) have no click (NULL, NaN or infinite) or a propensity outside "
                                  f"(0, 1] (columns {c['propensity']!r}, {c['click']!r}); every logged decision "
                                  "needs both.")
        if unknown:  # whether the rankers agree there would be a guess
            raise SqlmetricsError(f"ips: {unknown} row(s) have no action or new_action (NULL in columns "
                                  f"{c['action']!r}, {c['new_action']!r}); every logged decision needs what was shown "
                                  "and what the new ranker would show.")
        n, matches, sw, swr, sw2r2, sw2r, sw2 = con.execute(f"""
            SELECT COUNT(*), SUM(CASE WHEN w > 0 THEN 1 ELSE 0 END), SUM(w), SUM(w * r), SUM(w * w * r * r),
                   SUM(w * w * r), SUM(w * w)
            FROM (SELECT CASE WHEN {c['action']} = {c['new_action']} THEN 1.0 / CAST({c['propensity']} AS DOUBLE)
                              ELSE 0.0 END AS w,
                         CAST({c['click']} AS DOUBLE) AS r
                  FROM {view})""").fetchone()
    if not n:
        raise SqlmetricsError("ips: the log has no rows.")
    if not all(math.isfinite(s) for s in (sw, swr, sw2r2, sw2r, sw2)):
        raise SqlmetricsError("ips: the weighted clicks overflow a double (a click near 1e308, or divided by a tiny "
                              f"propensity); rescale column {c['click']!r}.")
    value = swr / n
    se = math.sqrt(max(0.0, sw2r2 - n * value * value) / (n - 1) / n) if n > 1 else math.nan
    out = {"ips": _estimate(value, se, z), "n": n, "matches": matches}
    if sw > 0:
        s = swr / sw
        out["snips"] = _estimate(s, math.sqrt(max(0.0, sw2r2 - 2 * s * sw2r + s * s * sw2)) / sw, z)
    else:  # the rankers never agree: nothing in the log says what the new ranker would get
        out["snips"] = Estimate(math.nan, math.nan, math.nan, math.nan)
    return out


def interleaving(log, columns: dict | None = None, confidence: float = 0.95, *, memory_limit=None, threads=None,
                 temp_directory=None) -> dict:
    """Team-draft interleaving credit from interleaved click logs.

    One row per shown document: `impression` (the interleaved list), `team` (the ranker that contributed the
    document; two distinct values in the log) and `click` (0/1). Per impression, the team with more clicked
    documents wins; equal counts (no click too) are a tie. With teams a < b (sorted) and per impression
    outcome +1 (b wins), -1 (a wins), 0: delta = mean outcome = (wins b - wins a) / impressions, a normal
    interval from its sample standard deviation, and the two-sided sign test of b's wins among the
    impressions with a winner (= scipy.stats.binomtest(wins_b, wins_a + wins_b)).
    Returns {"teams": (a, b), "impressions", "wins": {a: .., b: ..}, "ties", "delta": Estimate, "p_value"}.
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    z = _z(confidence)
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    with _opened(log, columns, INTERLEAVING_ROLES, "interleaving", resources) as (con, view, c):
        teams = [r[0] for r in con.execute(f"SELECT DISTINCT {c['team']} FROM {view}").fetchall()]
        if len(teams) != 2 or None in teams:
            raise SqlmetricsError(f"interleaving: the team column {c['team']!r} must hold exactly two rankers' names "
                                  f"and no NULL; it holds {sorted(map(repr, teams))}.")
        a, b = sorted(teams)
        missing, other, lost = con.execute(
            f"SELECT COUNT(*) FILTER (WHERE {_not_finite(c['click'])}), "
            f"COUNT(*) FILTER (WHERE NOT {_not_finite(c['click'])} AND CAST({c['click']} AS DOUBLE) NOT IN (0, 1)), "
            f"COUNT(*) FILTER (WHERE {c['impression']} IS NULL) FROM {view}").fetchone()
        if missing:  # neither a click nor no click: which team it would credit is a guess
            raise SqlmetricsError(f"interleaving: {missing} row(s) have no click (NULL, NaN or infinite in column "
                                  f"{c['click']!r}); give each shown document 0 or 1, or leave its impression out.")
        if other:  # a count or a negative number: whether it is a click is a guess
            raise SqlmetricsError(f"interleaving: {other} row(s) have a click that is neither 0 nor 1 (column "
                                  f"{c['click']!r}); give each shown document 0 or 1.")
        if lost:  # rows without an impression would be pooled into one made-up impression
            raise SqlmetricsError(f"interleaving: {lost} row(s) have no impression (NULL in column "
                                  f"{c['impression']!r}); each shown document belongs to one interleaved list.")
        clicked = f"CASE WHEN {c['click']} <> 0 THEN 1 ELSE 0 END"
        n, wins_a, wins_b = con.execute(f"""
            SELECT COUNT(*), SUM(CASE WHEN ca > cb THEN 1 ELSE 0 END), SUM(CASE WHEN cb > ca THEN 1 ELSE 0 END)
            FROM (SELECT {c['impression']},
                         SUM(CASE WHEN {c['team']} = ? THEN {clicked} ELSE 0 END) AS ca,
                         SUM(CASE WHEN {c['team']} = ? THEN {clicked} ELSE 0 END) AS cb
                  FROM {view} GROUP BY {c['impression']})""", [a, b]).fetchone()
    delta = (wins_b - wins_a) / n
    # outcomes are -1, 0, +1: their squares sum to the impressions with a winner
    var = (wins_a + wins_b - n * delta * delta) / (n - 1) if n > 1 else math.nan
    return {"teams": (a, b), "impressions": n, "wins": {a: wins_a, b: wins_b}, "ties": n - wins_a - wins_b,
            "delta": _estimate(delta, math.sqrt(max(0.0, var) / n), z), "p_value": sign_test(wins_b, wins_a + wins_b)}


def _not_finite(column: str) -> str:
    """SQL: the column's value is NULL, NaN or infinite. A NaN is also found by its hash: in Parquet, DuckDB answers
    isnan() from the file's min/max statistics, which leave NaN out."""
    x = f"CAST({column} AS DOUBLE)"
    return f"({x} IS NULL OR isnan({x}) OR isinf({x}) OR hash({x}) = hash(CAST('nan' AS DOUBLE)))"


def sign_test(k: int, n: int) -> float:
    """Two-sided exact binomial test of k successes in n trials at p = 1/2 (= scipy.stats.binomtest)."""
    if n == 0:
        return 1.0
    low = min(k, n - k)
    if 2 * low == n:
        return 1.0
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(low + 1)]
    top = max(logs)
    return min(1.0, 2 * math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def _z(confidence) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise SqlmetricsError(f"confidence={confidence!r} must be a number strictly between 0 and 1, such as 0.95.")
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def _estimate(value: float, se: float, z: float) -> Estimate:
    return Estimate(value, se, value - z * se, value + z * se)


class _opened:
    """The log as a DuckDB view on a connection of its own, and its column (quoted) for each role."""

    def __init__(self, log, columns, roles: tuple, what: str, resources: dict):
        self.log, self.columns, self.roles, self.what = log, dict(columns or {}), roles, what
        self.resources = resources

    def __enter__(self):
        self.con = connect(**self.resources)
        try:
            return self.con, "sqlm_log", self._view()
        except BaseException:
            self.con.close()
            raise

    def __exit__(self, kind, error, traceback):
        self.con.close()
        if isinstance(error, duckdb.Error):  # e.g. a text propensity, or actions of types that do not compare
            raise SqlmetricsError(f"{self.what}: the log's columns do not fit their roles: "
                                  f"{str(error).splitlines()[0]}") from None

    def _view(self) -> dict:
        unknown = [r for r in self.columns if r not in self.roles]
        if unknown:
            raise SqlmetricsError(f"{self.what}: columns= names unknown role(s) {unknown}; the roles are "
                                  f"{', '.join(self.roles)}.")
        log = self.log
        if isinstance(log, (str, Path)):
            if not Path(log).is_file():
                raise SqlmetricsError(f"{self.what}: no such file {str(log)!r}.")
            try:
                self.con.execute("CREATE TEMP VIEW sqlm_log AS SELECT * FROM " + sql_literal(str(log)))
            except duckdb.Error as e:
                raise SqlmetricsError(f"{self.what}: cannot read {str(log)!r} as Parquet, CSV or JSON Lines: "
                                      f"{str(e).splitlines()[0]}") from None
        elif type(log).__module__.split(".")[0] in ("pyarrow", "pandas", "polars"):
            self.con.register("sqlm_log", log)
        else:
            raise SqlmetricsError(f"{self.what}: cannot read a {type(log).__name__}; pass a file path (Parquet, CSV, "
                                  "JSON Lines), a pyarrow Table or a pandas or polars DataFrame.")
        present = [r[0] for r in self.con.execute("DESCRIBE sqlm_log").fetchall()]
        out = {}
        for role in self.roles:
            name = self.columns.get(role, role)
            if name not in present:
                raise SqlmetricsError(f"{self.what}: no column {name!r} for the role {role!r} (columns: "
                                      f"{', '.join(present)}); map it with columns={{{role!r}: '<your column>'}}.")
            out[role] = quote_identifier(name)
        return out

