"""compare(unit=) when the assignment is not clean: a unit in both arms (contamination, GrowthBook's "multiple
exposures") and lists without a unit id (NULL, empty or spaces) are left out of every arm with a warning that counts
them, and refused above max_excluded, in Python, on the command line and through render_compare() + decide() on
DuckDB (and SQLite in the full suite): the counts travel in the statement's rows. An arm of one unit gives its
difference (its variance is not defined: no interval, no p); a covariate that is not a finite number is named with
its units. The values are hand-computed from the hand-made logs below; tests/test_fuzz_units.py draws such logs at
random."""
from __future__ import annotations

import math
import sqlite3
import warnings

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli import main as cli_main

COLUMNS = {"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"}
OPTIONS = dict(columns=COLUMNS, ties="rank", label="clicked")
FLAGS = [f"--column={r}={c}" for r, c in COLUMNS.items()] + ["--ties", "rank", "--label", "clicked"]
# Each list's clicks by position: its RR is 1 / the first clicked position, by hand.
RR = {1.0: [1, 0], 0.5: [0, 1], 0.25: [0, 0, 0, 1], 0.0: [0, 0]}


def _log(sessions: list, **extra) -> pa.Table:
    """One row per position of each session (user, arm, RR of the session); extra: {column: {user: value}}."""
    rows = [{"user": u, "arm": a, "session": f"s{i:02d}", "doc": f"d{p}", "position": p, "clicked": c,
             **{k: v.get(u) for k, v in extra.items()}}
            for i, (u, a, rr) in enumerate(sessions) for p, c in enumerate(RR[rr], 1)]
    return pa.Table.from_pylist(rows)


# A: u1 (RR 1), u2 (0.5), u3 (1, 0.5) -> mean over lists 0.75; B: u4 (0.25), u5 (1, 0.25), u6 (0.5) -> 0.5; u9 in
# both arms, '' and '  ' and NULL without a unit id: left out, the difference stays 0.5 - 0.75 = -0.25.
CLEAN = [("u1", "A", 1.0), ("u2", "A", 0.5), ("u3", "A", 1.0), ("u3", "A", 0.5),
         ("u4", "B", 0.25), ("u5", "B", 1.0), ("u5", "B", 0.25), ("u6", "B", 0.5)]
MIXED = CLEAN + [("u9", "A", 1.0), ("u9", "B", 1.0)]
BLANK = MIXED + [("", "A", 0.0), ("  ", "B", 0.0), (None, "A", 0.0)]


def _sqlite_rows(log: pa.Table, sql: str) -> list:
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TABLE log ({', '.join(log.column_names)})")
    con.executemany(f"INSERT INTO log VALUES ({', '.join('?' * log.num_columns)})",
                    [tuple(r.values()) for r in log.to_pylist()])
    cur = con.execute(sql)
    return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]


def _reports(log: pa.Table, dialects=("duckdb",), **kw) -> list:
    """The report as compare(unit=) gives it here, and from render_compare() run on each dialect, then decide()."""
    out = [sqlmetrics.compare(None, log, ["RR"], unit="user", baseline="A", max_p=0.05, **OPTIONS, **kw)]
    con = duckdb.connect()
    con.register("log", log)
    for dialect in dialects:
        sql = sqlmetrics.render_compare(["RR"], dialect, qrels=None, run="log", unit="user", test="welch", max_p=0.05,
                                        covariate=kw.get("covariate"), **OPTIONS)
        rows = con.sql(sql).to_arrow_table().to_pylist() if dialect == "duckdb" else _sqlite_rows(log, sql)
        out.append(sqlmetrics.decide(rows, baseline="A", max_excluded=kw.get("max_excluded", 0.01)))
    return out


def _same(a, b) -> bool:
    x, y = ({k: v for k, v in r.to_dict().items() if k != "options"} for r in (a, b))
    return json_close(x, y)


def _kept(report) -> dict:
    """A report but for what was left out and the options (which decide() cannot know)."""
    return {k: v for k, v in report.to_dict().items() if k not in ("options", "excluded")}


def json_close(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(json_close(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(json_close(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) or math.isnan(x) and math.isnan(y)
    return x == y


def test_a_unit_in_both_arms_is_left_out_with_a_warning_and_refused_above_the_threshold():
    clean = sqlmetrics.compare(None, _log(CLEAN), ["RR"], unit="user", baseline="A", max_p=0.05, **OPTIONS)
    (c,) = clean.comparisons
    assert c.difference == pytest.approx(-0.25, abs=1e-12) and c.n == 6
    assert clean.excluded == {"multiple_arms": 0, "multiple_arms_lists": 0, "no_id_lists": 0}
    with pytest.warns(sqlmetrics.SqlmetricsWarning,
                      match=r"unit= 'user': 1 of 7 units \(14.3%; 2 lists\) were in more than one arm"):
        reports = _reports(_log(MIXED), max_excluded=0.2)
    for rep in reports:  # once: u9 counted in both arms, and no word of it
        (c,) = rep.comparisons
        assert c.difference == pytest.approx(-0.25, abs=1e-12) and c.n == 6
        assert rep.excluded == {"multiple_arms": 1, "multiple_arms_lists": 2, "no_id_lists": 0}
        assert rep.sample_ratio["lists"] == {"A": 3, "B": 3}
        assert _same(rep, reports[0])
    assert json_close(_kept(reports[0]), _kept(clean))  # u9 left out: the clean log's report
    with pytest.raises(sqlmetrics.SqlmetricsError, match=r"1 of 7 units .* \('u9'\): more than max_excluded=0.01"):
        sqlmetrics.compare(None, _log(MIXED), ["RR"], unit="user", **OPTIONS)


@pytest.mark.slow  # the fast suite's: NULL ids in test_ab_units.py, blank ones through DuckDB in test_ab_engine.py
def test_lists_without_a_unit_id_are_left_out_as_null_ones():
    with pytest.warns(sqlmetrics.SqlmetricsWarning) as caught:
        reports = _reports(_log(BLANK), max_excluded=0.25)
    assert {str(w.message).split("; they are left out")[0] for w in caught} == {
        "unit= 'user': 1 of 7 units (14.3%; 2 lists) were in more than one arm ('u9') and 3 of 13 lists (23.1%) have "
        "no unit id (NULL, empty or spaces only)",
        "unit= 'user': 1 of 7 units (14.3%; 2 lists) were in more than one arm and 3 of 13 lists (23.1%) have no unit "
        "id (NULL, empty or spaces only)"}  # the statement's rows carry no ids
    for rep in reports:  # once: '' and '  ' were two more users
        (c,) = rep.comparisons
        assert c.difference == pytest.approx(-0.25, abs=1e-12) and c.n == 6
        assert rep.excluded == {"multiple_arms": 1, "multiple_arms_lists": 2, "no_id_lists": 3}
        assert _same(rep, reports[0])
    clean = sqlmetrics.compare(None, _log(CLEAN), ["RR"], unit="user", baseline="A", max_p=0.05, **OPTIONS)
    assert json_close(_kept(reports[0]), _kept(clean))


def test_an_arm_without_a_unit_left_is_refused():
    """Found by tests/test_fuzz_units.py: once every unit of an arm was left out, its comparison was nan without a
    word (u2 left in A), or the report could not be printed at all (KeyError: no unit left anywhere)."""
    for sessions in ([("u1", "A", 1.0), ("u1", "B", 1.0), ("u2", "A", 0.5)], [("u1", "A", 1.0), ("u1", "B", 1.0)]):
        with pytest.warns(sqlmetrics.SqlmetricsWarning), pytest.raises(
                sqlmetrics.SqlmetricsError, match=r"unit= 'user': no unit of ('A', )?'B' is left once the units in "
                                                  r"more than one arm and the lists without a unit id are left out"):
            _reports(_log(sessions), max_excluded=1)


def test_the_command_line_says_it_in_one_line(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    pq.write_table(_log(MIXED), path)
    args = ["compare", "none", str(path), "-m", "RR", *FLAGS, "--unit", "user", "--baseline", "A"]
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "1 of 7 units" in err and "--max-excluded" in err
    assert cli_main([*args, "--max-excluded", "0.2"]) == 0
    out, err = capsys.readouterr()
    assert "sqlmetrics: warning: --unit 'user': 1 of 7 units" in err  # the keywords as the flags are spelt
    assert "Left out of every arm: 1 units in more than one arm (2 lists), 0 lists without a unit id." in out


def test_an_arm_of_one_unit_gives_its_difference_and_says_why_there_is_no_p():
    """A: u1's two lists (RR 1 and 0.5) -> 0.75; B: u2 (0.25), u3 (0.25, 1) -> 0.5. The difference is -0.25, as
    without unit=; a variance over one unit is not defined (once the difference was nan too)."""
    log = _log([("u1", "A", 1.0), ("u1", "A", 0.5), ("u2", "B", 0.25), ("u3", "B", 0.25), ("u3", "B", 1.0)],
               pre={"u1": 0.5, "u2": 0.5, "u3": 0.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = sqlmetrics.compare(None, log, ["RR"], baseline="A", max_p=0.05, **OPTIONS).comparisons[0]
    assert plain.difference == pytest.approx(-0.25, abs=1e-12)
    for kw in ({}, {"covariate": "pre", "dialects": ()}):  # a covariate equal for every unit adjusts nothing
        with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"unit= 'user': one unit in 'A': the difference of the "
                          r"means is given, but a variance over one unit is not defined, so those comparisons have no "
                          r"interval and no p-value"):
            reports = _reports(log, **kw)
        for rep in reports:
            (c,) = rep.comparisons
            assert c.difference == pytest.approx(-0.25, abs=1e-12) and c.n == 3
            assert all(math.isnan(v) for v in (c.p_value, c.ci_low, c.ci_high, c.statistic))
        assert "-0.2500" in reports[0].to_table()


@pytest.mark.parametrize("value, shown", [(math.nan, "'nan'"), pytest.param(math.inf, "'inf'", marks=pytest.mark.slow),
                                          pytest.param(-math.inf, "'-inf'", marks=pytest.mark.slow), ("abc", "'abc'")])
def test_a_covariate_that_is_not_a_finite_number_is_named_with_its_units(value, shown):
    """Once: NaN gave difference nan with p = 1.0, an infinite one ValueError (fsum), a text one an internal error."""
    text = isinstance(value, str)
    pre = {u: (value if u in ("u2", "u5") else ("0.5" if text else 0.5)) for u in ("u1", "u2", "u3", "u4", "u5", "u6")}
    log = _log(CLEAN, pre=pre)
    with pytest.raises(sqlmetrics.SqlmetricsError, match=rf"covariate= 'pre' is not a finite number for 2 units \(user "
                       rf"'u2': {shown}, 'u5': {shown}\)\. CUPED's covariate is each unit's number"):
        sqlmetrics.compare(None, log, ["RR"], unit="user", covariate="pre", baseline="A", **OPTIONS)


def test_a_text_covariate_on_the_command_line_is_one_line(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    pq.write_table(_log(CLEAN, pre={"u1": "0.5", "u2": "high"}), path)
    assert cli_main(["compare", "none", str(path), "-m", "RR", *FLAGS, "--unit", "user", "--covariate", "pre"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "--covariate 'pre' is not a finite number for 1 unit (user 'u2': 'high')" in err


@pytest.mark.slow  # SQLite's statement (sqlglot's rendering) and its run: DuckDB's is the fast suite's
def test_sqlite_leaves_out_what_duckdb_does():
    with pytest.warns(sqlmetrics.SqlmetricsWarning):
        here, *there = _reports(_log(BLANK), dialects=("duckdb", "sqlite"), max_excluded=0.25)
    assert all(_same(rep, here) for rep in there) and here.excluded["no_id_lists"] == 3
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="one unit in 'A'"):
        here, *there = _reports(_log([("u1", "A", 1.0), ("u2", "B", 0.25), ("u3", "B", 1.0)]), dialects=("sqlite",))
    assert _same(there[0], here) and here.comparisons[0].difference == pytest.approx(-0.375, abs=1e-12)


@pytest.mark.slow  # a message's wording; the refusal itself is test_fuzz_decide.py's too
def test_a_nan_covariate_in_the_warehouse_is_named_as_the_cause():
    """The statement casts the covariate there as before; the NaN it sums into CUPED's moments is refused by
    decide() (and compare(engine=)), which says where it comes from."""
    log = _log(CLEAN, pre={"u1": math.nan, "u2": 0.5, "u3": 0.5, "u4": 0.2, "u5": 0.1, "u6": 0.3})
    con = duckdb.connect()
    con.register("log", log)
    sql = sqlmetrics.render_compare(["RR"], "duckdb", qrels=None, run="log", unit="user", test="welch",
                                    covariate="pre", **OPTIONS)
    for run in (lambda: sqlmetrics.decide(con.sql(sql).to_arrow_table(), baseline="A"),
                lambda: sqlmetrics.compare(None, "log", ["RR"], unit="user", covariate="pre", engine=con, baseline="A",
                                           **OPTIONS)):
        with pytest.raises(sqlmetrics.SqlmetricsError, match=r"the units_pre row of run 'A', RR: v1 is empty \(NULL or "
                           r"NaN\), where the statement gives a finite number; a covariate= column holding NaN"):
            run()
