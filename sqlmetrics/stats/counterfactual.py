"""Counterfactual estimates from click logs, computed in SQL on DuckDB: only a handful of sums come back.

ips()           the click-through a new ranker (deterministic, or a stochastic policy) would have had, from a
                log of a randomised logging policy: inverse propensity scoring (IPS), its self-normalised form
                (SNIPS) and, from a reward model's columns, the direct method (DM) and doubly robust (DR)
                estimates, with normal intervals; weights can be clipped.
pbm_ips()       the same for ranked lists, per impression: the position-based (item-position independent) IPS.
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

IPS_ROLES = ("action", "click", "propensity", "new_action", "new_propensity", "reward_hat", "new_reward_hat")
PBM_ROLES = ("impression", "position", "action", "click", "propensity", "new_action", "new_propensity")
# Roles a log may lack: used when columns= maps them or the log has a column of the role's name, as the other
# roles are found. action and new_action are needed only without new_propensity (_weight()).
OPTIONAL_ROLES = ("action", "new_action", "new_propensity", "reward_hat", "new_reward_hat")
INTERLEAVING_ROLES = ("impression", "team", "click")
# The roles that take numbers, and what each takes: a log's column of another type (text: '50%', 'yes') there is
# named before any SQL compares it with a number.
NUMBERS = {"click": "a number (a click, 0 or 1, or a reward)",
           "propensity": "a probability in (0, 1], such as 0.5 (not '50%')",
           "new_propensity": "a probability in [0, 1], such as 0.5 (not '50%')", "reward_hat": "a number, the predicted reward",
           "new_reward_hat": "a number, the expected reward", "position": "a position, a number (1, 2, ...)"}
_NUMERIC_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "NULL", '"NULL"')  # NULL: a column of NULLs


@dataclass
class Estimate:
    value: float
    se: float  # standard error
    ci_low: float  # normal interval at the call's confidence
    ci_high: float


def ips(log, columns: dict | None = None, confidence: float = 0.95, *, clip: float | None = None,
        memory_limit=None, threads=None, temp_directory=None) -> dict:
    """IPS and SNIPS estimates of a new policy's click-through from a logged, randomised policy; DM and DR from a
    reward model's columns.

    One row per logged decision (an impression's slot): `action` (what the logging policy showed: a
    document, or the ranker's choice at that position), `click` (the reward: 0/1 or a number), `propensity`
    (the logging policy's probability of having shown that action there, in (0, 1]) and either `new_action`
    (what a deterministic new ranker would have shown in the same place: w = [action = new_action] / propensity)
    or `new_propensity` (a stochastic new policy's probability of the logged action there, in [0, 1]:
    w = new_propensity / propensity; action and new_action are then not needed, and not read if present).
    clip=W sets every weight above W to W (obp's lambda_), in every estimate.
    IPS = sum(w * click) / n, SNIPS = sum(w * click) / sum(w). Standard errors: the sample standard deviation
    of w * click over sqrt(n) (IPS), the delta method sqrt(sum(w^2 (click - SNIPS)^2)) / sum(w) (SNIPS).
    With a reward model's `reward_hat` (its predicted reward of the logged action) and `new_reward_hat` (its
    expected reward under the new policy in that context, sum over a of new policy(a) * prediction(a)):
    DM = mean(new_reward_hat), DR = mean(new_reward_hat + w * (click - reward_hat)), each with the sample
    standard deviation of its terms over sqrt(n).
    Returns {"ips": Estimate, "snips": Estimate, "n": rows, "matches": rows of a positive weight, "stochastic":
    whether new_propensity weighted them}, and "dm" and "dr" (Estimate) with a reward model, "clipped" (rows
    whose weight was clipped) with clip=.
    memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    z = _z(confidence)
    clip = _clip(clip)
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    with _opened(log, columns, IPS_ROLES, "ips", resources, OPTIONAL_ROLES) as opened:
        con, view, c = opened.con, opened.view, opened.c
        w = _weight(opened, con, view, clip, "ips")
        model = [role for role in ("reward_hat", "new_reward_hat") if role in c]
        if len(model) == 1:  # DR needs both; DM alone from a model's half would hide the other's absence
            raise opened.missing(({"reward_hat", "new_reward_hat"} - set(model)).pop(),
                                 f"or leave out {model[0]} too: a reward model gives both reward_hat (its prediction "
                                 "for the logged action) and new_reward_hat (its expected reward under the new policy)")
        for role in model:
            bad = con.execute(f"SELECT COUNT(*) FILTER (WHERE {_not_finite(c[role])}) FROM {view}").fetchone()[0]
            if bad:
                raise SqlmetricsError(f"ips: {bad} row(s) have no {role} (NULL, NaN or infinite in column "
                                      f"{c[role]!r}); the reward model must predict every logged decision.")
        dm = dr = model_columns = "NULL"
        if model:  # q1: the model's expected reward under the new policy; q0: its prediction of the logged action
            model_columns = (f"CAST({c['new_reward_hat']} AS DOUBLE) AS q1, "
                             f"CAST({c['reward_hat']} AS DOUBLE) AS q0")
            dm, dr = "q1", "q1 + w * (r - q0)"
        n, matches, sw, swr, sw2r2, sw2r, sw2, clipped, dm_mean, dm_sd, dr_mean, dr_sd = con.execute(f"""
            SELECT COUNT(*), SUM(CASE WHEN w > 0 THEN 1 ELSE 0 END), SUM(w), SUM(w * r), SUM(w * w * r * r),
                   SUM(w * w * r), SUM(w * w), SUM(CASE WHEN clipped THEN 1 ELSE 0 END),
                   AVG({dm}), STDDEV_SAMP({dm}), AVG({dr}), STDDEV_SAMP({dr})
            FROM (SELECT {w}, CAST({c['click']} AS DOUBLE) AS r, {model_columns} FROM {view})""").fetchone()
    if not n:
        raise SqlmetricsError("ips: the log has no rows.")
    if not all(math.isfinite(s) for s in (sw, swr, sw2r2, sw2r, sw2)):
        raise SqlmetricsError("ips: the weighted clicks overflow a double (a click near 1e308, or divided by a tiny "
                              f"propensity); rescale column {c['click']!r}.")
    if model and not all(math.isfinite(s) for s in (dm_mean, dr_mean, dm_sd or 0.0, dr_sd or 0.0)):
        raise SqlmetricsError("ips: the reward model's terms overflow a double (a prediction or a click near 1e308, "
                              f"or a tiny propensity); rescale columns {c['click']!r}, {c['reward_hat']!r} and "
                              f"{c['new_reward_hat']!r}.")
    value = swr / n
    se = math.sqrt(max(0.0, sw2r2 - n * value * value) / (n - 1) / n) if n > 1 else math.nan
    out = {"ips": _estimate(value, se, z), "n": n, "matches": matches, "stochastic": "new_propensity" in c}
    if sw > 0:
        s = swr / sw
        out["snips"] = _estimate(s, math.sqrt(max(0.0, sw2r2 - 2 * s * sw2r + s * s * sw2)) / sw, z)
    else:  # the rankers never agree: nothing in the log says what the new ranker would get
        out["snips"] = Estimate(math.nan, math.nan, math.nan, math.nan)
    if model:
        for name, mean, sd in (("dm", dm_mean, dm_sd), ("dr", dr_mean, dr_sd)):
            out[name] = _estimate(mean, sd / math.sqrt(n) if sd is not None else math.nan, z)
    if clip is not None:
        out["clipped"] = clipped
    return out


def pbm_ips(log, columns: dict | None = None, confidence: float = 0.95, *, clip: float | None = None,
            propensities=None, memory_limit=None, threads=None, temp_directory=None) -> dict:
    """The position-based IPS estimate of a new ranker's clicks per ranked list (obp's SlateIndependentIPS).

    One row per impression and position of a logged ranked list: `impression` (the list), `position`, `click`,
    `propensity` (the logging policy's marginal probability of having shown that document at that position,
    in (0, 1]) and either `new_propensity` (the new policy's marginal probability of that document at that
    position, in [0, 1]) or `action` and `new_action` (the documents the logging and a deterministic new ranker
    put at that position). Per slot w = new_propensity / propensity (or [action = new_action] / propensity),
    clipped at clip= if given; the estimate is the mean over impressions of sum(w * click) over the list's
    slots, with the sample standard deviation of those sums over sqrt(impressions). It is unbiased when a
    click at a position depends only on the document and that position (the position-based model), not on
    the rest of the list.
    propensities= (examination by position, such as sqlmetrics.propensities() estimates: a pyarrow Table, a
    pandas or polars DataFrame, a Parquet, CSV or JSON Lines file, with columns position and propensity, theta_r > 0,
    normalised so that theta_1 = 1; any other column is a segment matched by name to the log's column; or a dict
    {position: propensity}) divides each slot's weight by its position's theta_r as well (Joachims, Swaminathan
    and Schnabel 2017): under the position-based model, a click at r is examined-and-attractive with probability
    theta_r * gamma_1 * alpha_d, so the estimate becomes the new policy's expected clicks per list were every
    position examined as position 1: gamma_1 times the sum of alpha_d over the documents it shows.
    With a deterministic logging ranker, give the log propensity 1.
    Returns {"ips": Estimate, "impressions": lists, "n": rows, "matches": rows of a positive weight}, and
    "clipped" with clip=. memory_limit, threads and temp_directory are DuckDB's, as evaluate() takes them.
    """
    z = _z(confidence)
    clip = _clip(clip)
    resources = {"memory_limit": memory_limit, "threads": threads, "temp_directory": temp_directory}
    with _opened(log, columns, PBM_ROLES, "pbm_ips", resources, OPTIONAL_ROLES) as opened:
        con, view, c = opened.con, opened.view, opened.c
        examination = None
        if propensities is not None:
            view, examination = _examined(con, view, c, propensities), "sqlm_theta"
        w = _weight(opened, con, view, clip, "pbm_ips", examination)
        lost, twice = con.execute(f"""
            SELECT COUNT(*) FILTER (WHERE {c['impression']} IS NULL OR {c['position']} IS NULL),
                   COUNT(*) - COUNT(DISTINCT ({c['impression']}, {c['position']})) FROM {view}""").fetchone()
        if lost:  # rows without a list would be pooled into one made-up impression
            raise SqlmetricsError(f"pbm_ips: {lost} row(s) have no impression or position (NULL in columns "
                                  f"{c['impression']!r}, {c['position']!r}); each row is one slot of one list.")
        if twice:  # a slot logged twice would count its click twice
            raise SqlmetricsError(f"pbm_ips: {twice} row(s) repeat an (impression, position) pair (columns "
                                  f"{c['impression']!r}, {c['position']!r}); each slot of a list is one row.")
        impressions, n, matches, clipped, mean, sd, overflow = con.execute(f"""
            SELECT COUNT(*), SUM(slots), SUM(matches), SUM(clipped), AVG(v), STDDEV_SAMP(v),
                   COUNT(*) FILTER (WHERE isinf(v) OR isnan(v))
            FROM (SELECT COUNT(*) AS slots, SUM(CASE WHEN w > 0 THEN 1 ELSE 0 END) AS matches,
                         SUM(CASE WHEN clipped THEN 1 ELSE 0 END) AS clipped, SUM(w * r) AS v
                  FROM (SELECT {c['impression']} AS i, {w}, CAST({c['click']} AS DOUBLE) AS r FROM {view})
                  GROUP BY i)""").fetchone()
    if not impressions:
        raise SqlmetricsError("pbm_ips: the log has no rows.")
    if overflow or not math.isfinite(mean) or (sd is not None and not math.isfinite(sd)):
        raise SqlmetricsError("pbm_ips: the weighted clicks overflow a double (a click near 1e308, or divided by a "
                              f"tiny propensity); rescale column {c['click']!r}.")
    out = {"ips": _estimate(mean, sd / math.sqrt(impressions) if sd is not None else math.nan, z),
           "impressions": impressions, "n": n, "matches": matches}
    if clip is not None:
        out["clipped"] = clipped
    return out


def _examined(con, view: str, c: dict, propensities) -> str:
    """A view of the log with each row's examination propensity (sqlm_theta) joined by position and by every other
    column of the propensities table (its segments); every row must have one."""
    segments = _propensity_table(con, propensities)
    log_names = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
    absent = [n for n in segments if n not in log_names]
    if absent:
        raise SqlmetricsError(f"pbm_ips: propensities= has the segment column(s) {absent} that the log lacks; "
                              "estimate the propensities with the log's own segment columns, or drop those columns.")
    same = " AND ".join([f"l.{quote_identifier(n)} IS NOT DISTINCT FROM t.{quote_identifier(n)}" for n in segments]
                        + [f"CAST(l.{c['position']} AS DOUBLE) = CAST(t.\"position\" AS DOUBLE)"])
    con.execute(f"""CREATE TEMP VIEW sqlm_examined AS SELECT l.*, CAST(t."propensity" AS DOUBLE) AS sqlm_theta
                    FROM {view} l LEFT JOIN sqlm_thetas t ON {same}""")
    missing = con.execute(f"SELECT COUNT(*), MIN({c['position']}) FROM sqlm_examined WHERE sqlm_theta IS NULL"
                          ).fetchone()
    if missing[0]:
        raise SqlmetricsError(f"pbm_ips: {missing[0]} row(s) of the log are at a position propensities= does not "
                              f"give (the first: position {missing[1]}"
                              f"{' in their segment' if segments else ''}); give every shown position a propensity, "
                              "or leave those rows out.")
    return "sqlm_examined"


def _propensity_table(con, propensities) -> list:
    """propensities= as the view sqlm_thetas (position, propensity, segments...), checked: numbers, each (segment,
    position) once, every propensity positive and finite. Its segment columns' names: every column but position,
    propensity and the evidence propensities() writes beside them (pairs, impressions, clicks)."""
    if isinstance(propensities, dict):
        import pyarrow as pa

        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for pair in propensities.items() for v in pair):
            raise SqlmetricsError("pbm_ips: propensities= as a dict maps each position (a number) to its propensity "
                                  f"(a number), such as {{1: 1.0, 2: 0.62}}; got {propensities!r}.")
        propensities = pa.table({"position": pa.array(list(propensities), pa.float64()),
                                 "propensity": pa.array(list(propensities.values()), pa.float64())})
    if isinstance(propensities, (str, Path)):
        if not Path(propensities).is_file():
            raise SqlmetricsError(f"pbm_ips: propensities= names no file {str(propensities)!r}.")
        con.execute("CREATE TEMP VIEW sqlm_thetas AS SELECT * FROM " + sql_literal(str(propensities)))
    elif type(propensities).__module__.split(".")[0] in ("pyarrow", "pandas", "polars"):
        con.register("sqlm_thetas", propensities)
    else:
        raise SqlmetricsError(f"pbm_ips: propensities= cannot be a {type(propensities).__name__}; give a table "
                              "(position, propensity) as a pyarrow Table, a DataFrame or a file, or a dict "
                              "{position: propensity}.")
    types = dict(r[:2] for r in con.execute("DESCRIBE sqlm_thetas").fetchall())
    names = list(types)
    if not {"position", "propensity"} <= set(names):
        raise SqlmetricsError(f"pbm_ips: propensities= has columns {names}; it needs position and propensity (and "
                              "any segment columns the log shares, such as market).")
    for name in ("position", "propensity"):
        if not (types[name] in _NUMERIC_TYPES or types[name].startswith("DECIMAL")):
            raise SqlmetricsError(f"pbm_ips: propensities= holds {types[name]} values in column {name!r}; it takes "
                                  "numbers (a position 1, 2, ...; a propensity such as 0.62).")
    segments = [n for n in names if n not in ("position", "propensity", "pairs", "impressions", "clicks")]
    keys = ", ".join(quote_identifier(n) for n in (*segments, "position"))
    theta = 'CAST("propensity" AS DOUBLE)'
    bad, twice = con.execute(f"""
        SELECT COUNT(*) FILTER (WHERE {_not_finite('"propensity"')} OR {theta} <= 0 OR {_not_finite('"position"')}),
               COUNT(*) - COUNT(DISTINCT ({keys})) FROM sqlm_thetas""").fetchone()
    if bad:
        raise SqlmetricsError(f"pbm_ips: propensities= has {bad} row(s) without a position or with a propensity "
                              "that is not a positive number (0, NULL, NaN, infinite); a click at a position is "
                              "weighted by 1/propensity. Leave out the positions that could not be estimated.")
    if twice:
        raise SqlmetricsError(f"pbm_ips: propensities= gives {twice} (segment, position) more than once (columns "
                              f"{keys}); one propensity per position of a segment.")
    return segments


def _weight(opened, con, view: str, clip, what: str, examination: str | None = None) -> str:
    """SQL select items `w` (the row's weight, clipped at clip) and `clipped` (whether it was), after checking the
    columns they read; the log's other roles' checks (propensity, click) too.

    With new_propensity the weight is the new policy's probability over the logging policy's (a stochastic new
    policy, as obp's estimators take it: action_dist); a deterministic ranker's probability is [action =
    new_action]. new_propensity is the general form, so a log with both is weighted by new_propensity: a
    new_action column beside it is then the policy's sampled or top choice, which is not its probability."""
    c = opened.c
    bad = con.execute(f"""
        SELECT COUNT(*) FILTER (WHERE {_not_finite(c['propensity'])} OR {c['propensity']} <= 0
                                      OR {c['propensity']} > 1 OR {_not_finite(c['click'])})
        FROM {view}""").fetchone()[0]
    if bad:
        raise SqlmetricsError(f"{what}: {bad} row(s) have no click (NULL, NaN or infinite) or a propensity outside "
                              f"(0, 1] (columns {c['propensity']!r}, {c['click']!r}); every logged decision "
                              "needs both.")
    p = f"CAST({c['propensity']} AS DOUBLE)"
    if examination:  # the slot's examination propensity (pbm_ips's propensities=) multiplies the logging policy's
        p = f"({p} * {examination})"
    if "new_propensity" in c:
        q = c["new_propensity"]
        bad = con.execute(f"SELECT COUNT(*) FILTER (WHERE {_not_finite(q)} OR {q} < 0 OR {q} > 1) "
                          f"FROM {view}").fetchone()[0]
        if bad:
            raise SqlmetricsError(f"{what}: {bad} row(s) have a new_propensity outside [0, 1] (NULL, NaN or infinite "
                                  f"included; column {q!r}); it is the new policy's probability of the logged "
                                  "action, given for every logged decision.")
        w = f"CAST({q} AS DOUBLE) / {p}"
    else:
        for role in ("action", "new_action"):
            if role not in c:
                raise opened.missing(role, "or give a stochastic policy's probability of the logged action as "
                                           "new_propensity")
        unknown = con.execute(f"SELECT COUNT(*) FILTER (WHERE {c['action']} IS NULL OR {c['new_action']} IS NULL) "
                              f"FROM {view}").fetchone()[0]
        if unknown:  # whether the rankers agree there would be a guess
            raise SqlmetricsError(f"{what}: {unknown} row(s) have no action or new_action (NULL in columns "
                                  f"{c['action']!r}, {c['new_action']!r}); every logged decision needs what was shown "
                                  "and what the new ranker would show.")
        w = f"CASE WHEN {c['action']} = {c['new_action']} THEN 1.0 / {p} ELSE 0.0 END"
    if clip is None:
        return f"{w} AS w, false AS clipped"
    limit = f"CAST({clip!r} AS DOUBLE)"
    return f"LEAST({w}, {limit}) AS w, {w} > {limit} AS clipped"


def _clip(clip):
    """clip= as a float, or None: a maximum weight, a positive finite number."""
    if clip is None:
        return None
    if isinstance(clip, bool) or not isinstance(clip, (int, float)) or not math.isfinite(clip) or clip <= 0:
        raise SqlmetricsError(f"clip={clip!r} must be a positive finite number, the largest weight (new policy's "
                              "probability / logging propensity) to keep, such as clip=10; leave it out to clip none.")
    return float(clip)


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
    with _opened(log, columns, INTERLEAVING_ROLES, "interleaving", resources) as opened:
        con, view, c = opened.con, opened.view, opened.c
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
    """The log as a DuckDB view on a connection of its own (.con, .view) and its column (quoted) for each role
    (.c): every role of `roles` the log has; a missing one is an error unless it is `optional` and columns= does
    not name it."""

    def __init__(self, log, columns, roles: tuple, what: str, resources: dict, optional: tuple = ()):
        self.log, self.columns, self.roles, self.what = log, dict(columns or {}), roles, what
        self.resources, self.optional = resources, optional

    def __enter__(self):
        self.con = connect(**self.resources)
        self.view = "sqlm_log"
        try:
            self.c = self._view()
        except BaseException:
            self.con.close()
            raise
        return self

    def __exit__(self, kind, error, traceback):
        self.con.close()
        if isinstance(error, duckdb.Error):  # e.g. a text propensity, or actions of types that do not compare
            raise SqlmetricsError(f"{self.what}: the log's columns do not fit their roles: "
                                  f"{str(error).splitlines()[0]}") from None

    def missing(self, role: str, alternative: str = "") -> SqlmetricsError:
        """The error of a role without its column."""
        name = self.columns.get(role, role)
        return SqlmetricsError(f"{self.what}: no column {name!r} for the role {role!r} (columns: "
                               f"{', '.join(self.present)}); map it with columns={{{role!r}: '<your column>'}}"
                               + (f", {alternative}." if alternative else "."))

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
        types = dict(r[:2] for r in self.con.execute("DESCRIBE sqlm_log").fetchall())
        self.present = list(types)
        out = {}
        for role in self.roles:
            name = self.columns.get(role, role)
            if name in self.present:
                out[role] = quote_identifier(name)
                if role in NUMBERS and not (types[name] in _NUMERIC_TYPES or types[name].startswith("DECIMAL")):
                    raise self._not_numbers(role, name, types[name])
            elif role not in self.optional or role in self.columns:  # a mapped column is meant to be there
                raise self.missing(role)
        return out

    def _not_numbers(self, role: str, name: str, kind: str) -> SqlmetricsError:
        """The error of a role taking numbers whose column holds text (or dates...): its first value that is not a
        number, and its row (1, 2, ... in the log's order), else its first value."""
        c = quote_identifier(name)
        found = self.con.execute(f"""
            SELECT v, r FROM (SELECT {c} AS v, row_number() OVER () AS r FROM sqlm_log) WHERE v IS NOT NULL
            ORDER BY TRY_CAST(CAST(v AS VARCHAR) AS DOUBLE) IS NOT NULL, r LIMIT 1""").fetchone()
        source = repr(str(self.log)) if isinstance(self.log, (str, Path)) else "the log"
        holds = "text" if kind == "VARCHAR" else f"{kind} values"
        example = f": {found[0]!r} in row {found[1]}" if found else ""
        return SqlmetricsError(f"{self.what}: column {name!r} (the role {role}) of {source} holds {holds}{example}; "
                               f"{role} takes {NUMBERS[role]}. Store the column as numbers, or map another column "
                               f"with columns={{{role!r}: '<your column>'}}.")
