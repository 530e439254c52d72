"""compare(unit=, pre_period=): arms randomised by user, whose sessions are the lists. The statistics (the delta
method's variance of the ratio of the users' sums, CUPED's adjustment from the pre-period, Welch's test on them)
against tea-tasting's RatioOfMeans on the same per-user sums, to 1e-9; the per-list values are evaluate()'s, tested
against trec_eval and ranx elsewhere."""
from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics.demo import make_ab
from sqlmetrics.stats.html import build_report

COLUMNS = {"query_id": "session", "doc_id": "doc", "rank_position": "position", "run_name": "arm"}
OPTIONS = dict(columns=COLUMNS, ties="rank", label="clicked", baseline="control", max_p=0.05)
MEASURES = ["RR", "P@3"]


def _experiment() -> tuple:
    """The demo's generator (sqlmetrics.demo.make_ab) at 300 users and a larger lift: each user clicks with a
    propensity of their own, so a user's sessions are correlated and the pre-period predicts the test; a fifth of the
    users are absent from the pre-period. The test's sessions alternate between two days (a segment)."""
    test, before = (make_ab.table(period, seed=1, users=300, lift=0.08) for period in ("test", "before"))
    days = ["mon" if int(s[1:]) % 2 else "tue" for s in test["session"].to_pylist()]
    return test.append_column("day", pa.array(days)), before


EXPERIMENT, PRE = _experiment()


def _per_user(log: pa.Table, measure: str, **group) -> dict:
    """{(segment..., user): (arm, sum of the measure over the user's lists, lists)} from evaluate()'s per-list values."""
    columns = {r: c for r, c in COLUMNS.items() if c in log.column_names}  # the pre-period has no arm
    res = sqlmetrics.evaluate(None, log, [measure], columns=columns, ties="rank", label="clicked",
                              group_by=[*group.get("group_by", []), "user"])
    out: dict = {}
    for row in res.per_query.to_pylist():
        key = (*(row[g] for g in group.get("group_by", [])), row["user"])
        arm, y, n = out.get(key, (row.get("run"), 0.0, 0))
        out[key] = (arm, y + row[measure], n + 1)
    return out


def _oracle(measure: str, cuped: bool, segment=None, **group):
    """tea-tasting's RatioOfMeans (Welch, Student's t) on the per-user sums: the treatment against the control."""
    import pandas as pd

    users = {k: v for k, v in _per_user(EXPERIMENT, measure, **group).items() if segment is None or k[0] == segment}
    rows = []
    before = {}
    if cuped:
        for key, (_, y, n) in _per_user(PRE, measure).items():
            before[key[-1]] = (y, n)
    for key, (arm, y, n) in users.items():
        yp, lp = before.get(key[-1], (0.0, 0))
        rows.append({"arm": arm, "y": y, "l": n, "yp": yp, "lp": lp})
    import tea_tasting as tt  # here, not at the top: 0.8 s to import, for the few tests that use it

    metric = tt.RatioOfMeans("y", "l", "yp" if cuped else None, "lp" if cuped else None, confidence_level=0.95)
    return metric.analyze(pd.DataFrame(rows), control="control", treatment="treatment", variant="arm"), len(rows)


# CUPED's case covers the delta method's too (its variance is the adjusted one); the plain case is the full suite's.
@pytest.mark.parametrize("cuped", [pytest.param(False, marks=pytest.mark.slow), True], ids=["delta", "cuped"])
def test_welch_over_users_equals_tea_tasting(cuped):
    extra = {"pre_period": PRE} if cuped else {}
    rep = sqlmetrics.compare(None, EXPERIMENT, MEASURES, unit="user", **OPTIONS, **extra)
    assert rep.unit == "user" and rep.cuped is cuped and not rep.paired and rep.test == "welch"
    for c in rep.comparisons:
        ref, n = _oracle(c.measure, cuped)
        assert (c.run, c.baseline, c.n) == ("treatment", "control", n)
        assert c.difference == pytest.approx(ref.effect_size, rel=1e-9)
        assert c.statistic == pytest.approx(ref.statistic, rel=1e-9)
        assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
        assert (c.ci_low, c.ci_high) == pytest.approx((ref.effect_size_ci_lower, ref.effect_size_ci_upper), rel=1e-9)
        assert (c.rel_difference, c.rel_ci_low, c.rel_ci_high) == pytest.approx(
            (ref.rel_effect_size, ref.rel_effect_size_ci_lower, ref.rel_effect_size_ci_upper), rel=1e-9)
        assert math.isnan(c.variance_reduction) is not cuped
    if cuped:  # the pre-period predicts each user's clicks: CUPED removes a part of the variance
        plain = sqlmetrics.compare(None, EXPERIMENT, MEASURES, unit="user", **OPTIONS)
        for c, p in zip(rep.comparisons, plain.comparisons):
            assert 0.02 < c.variance_reduction < 0.9
            assert c.ci_high - c.ci_low < p.ci_high - p.ci_low
            assert (c.ci_high - c.ci_low) / (p.ci_high - p.ci_low) == pytest.approx(
                math.sqrt(1 - c.variance_reduction), rel=1e-3)  # the t quantiles differ by their df alone
        # The tables print the arms' unadjusted means: the pairs table shows their difference (tea-tasting's without
        # CUPED) beside CUPED's, each named, where it once showed CUPED's alone under the unadjusted means.
        text = rep.pairs_table()
        assert text.splitlines()[0].split()[3:6] == ["unadjusted", "CUPED", "difference"]
        for c in rep.comparisons:
            plain_difference = _oracle(c.measure, False)[0].effect_size
            assert rep.unadjusted(c) == pytest.approx(plain_difference, rel=1e-9)
            assert rep.unadjusted(c) == pytest.approx(rep.means["treatment"][c.measure] - rep.means["control"][c.measure])
            row = next(line.split() for line in text.splitlines() if line.startswith(c.measure + " "))
            assert row[3:5] == [f"{plain_difference:+.4f}", f"{c.difference:+.4f}"]


@pytest.mark.slow  # a page build
def test_the_report_shows_both_differences_under_cuped():
    """The HTML report's pairs table, as the text one: the unadjusted difference beside CUPED's, each named."""
    rep = sqlmetrics.compare(None, EXPERIMENT, MEASURES, unit="user", pre_period=PRE, **OPTIONS)
    page = build_report(None, EXPERIMENT, MEASURES, unit="user", pre_period=PRE, **OPTIONS).to_html()
    assert "<th>unadjusted</th><th>CUPED difference [95% CI]</th>" in page
    for c in rep.comparisons:
        assert f"<td>{rep.unadjusted(c):+.4f}</td><td>{c.difference:+.4f} [" in page


@pytest.mark.slow  # segments: the same statistics per day (the fast suite's case is the whole log)
def test_users_per_segment_and_the_delta_method_widens_the_naive_interval():
    rep = sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="user", group_by="day", **OPTIONS)
    assert [c.segment for c in rep.comparisons] == [("mon",), ("tue",)]
    for c in rep.comparisons:
        ref, n = _oracle("RR", False, segment=c.segment[0], group_by=["day"])
        assert c.n == n and c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    # The sessions of one user are alike: treating them as independent (no unit=) understates the variance.
    naive = sqlmetrics.compare(None, EXPERIMENT, ["RR"], **OPTIONS).comparisons[0]
    clustered = sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="user", **OPTIONS).comparisons[0]
    assert clustered.difference == pytest.approx(naive.difference, rel=1e-12)  # the same mean over lists
    assert clustered.ci_high - clustered.ci_low > naive.ci_high - naive.ci_low


def test_a_pre_period_without_the_arms_users_adjusts_nothing():
    """A pre-period log of other users (none of the experiment's): CUPED has no covariate, the comparison is the
    plain one, and nothing divides by zero."""
    strangers = PRE.set_column(0, "user", pa.array([f"x{u}" for u in PRE["user"].to_pylist()]))
    adjusted = sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="user", pre_period=strangers, **OPTIONS)
    plain = sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="user", **OPTIONS)
    c, p = adjusted.comparisons[0], plain.comparisons[0]
    assert (c.difference, c.p_value, c.ci_low, c.ci_high) == (p.difference, p.p_value, p.ci_low, p.ci_high)
    assert c.variance_reduction == 0


def test_unit_refusals_say_what_to_do():
    with pytest.raises(sqlmetrics.SqlmetricsError, match="use test='welch'"):
        sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="user", test="mannwhitney", **OPTIONS)
    with pytest.raises(sqlmetrics.SqlmetricsError, match="name the unit's column in unit="):
        sqlmetrics.compare(None, EXPERIMENT, ["RR"], pre_period=PRE, **OPTIONS)
    with pytest.raises(sqlmetrics.SqlmetricsError, match="GMAP is aggregated otherwise"):
        sqlmetrics.compare(None, EXPERIMENT, ["GMAP"], unit="user", **OPTIONS)
    with pytest.raises(sqlmetrics.SqlmetricsError, match="the unit is a column of its own"):
        sqlmetrics.compare(None, EXPERIMENT, ["RR"], unit="session", **OPTIONS)
    # a session without its user (NULL) is no unit's: left out of both arms with a warning that counts it (once it was
    # pooled with every other such session as one user), and refused above max_excluded of the lists
    users = EXPERIMENT["user"].to_pylist()
    holed = EXPERIMENT.set_column(0, "user", pa.array([None if u == "u0003" else u for u in users], pa.string()))
    sessions = dict(zip(EXPERIMENT["session"].to_pylist(), users))
    lost = sum(u == "u0003" for u in sessions.values())
    said = rf"unit= 'user': {lost} of {len(sessions):,} lists \([0-9.]+%\) have no unit id"
    import duckdb

    con = duckdb.connect()
    con.register("holed", holed)
    sql = sqlmetrics.render_compare(["RR"], "duckdb", qrels=None, run="holed", unit="user", test="welch",
                                    **{k: v for k, v in OPTIONS.items() if k not in ("baseline", "max_p")})
    for run in (lambda **kw: sqlmetrics.compare(None, holed, ["RR"], unit="user", **OPTIONS, **kw),
                lambda **kw: sqlmetrics.decide(con.sql(sql).to_arrow_table(), **kw)):
        with pytest.warns(sqlmetrics.SqlmetricsWarning, match=said):
            rep = run()
        assert rep.excluded == {"multiple_arms": 0, "multiple_arms_lists": 0, "no_id_lists": lost}
        assert f"Left out of every arm: 0 units in more than one arm (0 lists), {lost} lists without a unit id." \
            in rep.to_table()
        with pytest.raises(sqlmetrics.SqlmetricsError, match=said + r" .*: more than max_excluded=0.001 of them"):
            run(max_excluded=0.001)


def test_the_demo_files_are_the_script_output():
    import pyarrow.parquet as pq

    for period, name in make_ab.FILES.items():
        assert pq.read_table(sqlmetrics.demo.folder() / name).equals(make_ab.table(period))
        assert (sqlmetrics.demo.folder() / name).stat().st_size < 60_000


def test_per_query_rows_of_arms_without_a_shared_session_are_refused_not_written_empty(tmp_path, capsys):
    """compare -q writes each query's difference between two runs; arms of different sessions (here tested over
    users) share none, which once wrote a file of a header alone."""
    from sqlmetrics.cli import main as cli_main

    folder = Path(make_ab.__file__).parent
    out = tmp_path / "rows.csv"
    flags = [f"--column={r}={c}" for r, c in COLUMNS.items()]
    code = cli_main(["compare", "none", str(folder / "ab_users.parquet"), "-m", "RR", *flags, "--ties", "rank",
                     "--label", "clicked", "--baseline", "control", "--unit", "user", "-q", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "no query is in both runs of any pair" in err and "over units, user" in err
    assert not out.exists()


def _with_covariate(share: float = 1.0) -> pa.Table:
    """The experiment with a column pre_rr: each user's mean RR over the pre-period's sessions (the user's value on
    every row). share=1: every user has one (0 for those absent from the pre-period); share < 1: those, and every
    third user, hold NULL."""
    before = {k[-1]: y / n for k, (_, y, n) in _per_user(PRE, "RR").items()}
    users = EXPERIMENT["user"].to_pylist()
    if share == 1:
        values = [before.get(u, 0.0) for u in users]
    else:  # the arms alternate by user: every third user leaves both arms some users with a value
        values = [before.get(u) if int(u[1:]) % 3 else None for u in users]
    return EXPERIMENT.append_column("pre_rr", pa.array(values, pa.float64()))


def _covariate_oracle(log: pa.Table, measure: str, ratio: bool):
    """tea-tasting's RatioOfMeans with CUPED on the users' sums and their pre_rr: as a plain covariate (every user
    has one) or, when some have none, as the ratio (pre_rr or 0) / (1 or 0), the pre-period's form."""
    import pandas as pd

    covariate = {}
    for u, x in zip(log["user"].to_pylist(), log["pre_rr"].to_pylist()):
        covariate.setdefault(u, set()).add(x)
    rows = []
    for key, (arm, y, n) in _per_user(EXPERIMENT, measure).items():
        (x,) = covariate[key[-1]]
        rows.append({"arm": arm, "y": y, "l": n, "yp": x or 0.0, "lp": 0 if x is None else 1})
    import tea_tasting as tt

    metric = (tt.RatioOfMeans("y", "l", "yp", "lp", confidence_level=0.95) if ratio else
              tt.RatioOfMeans("y", "l", "yp", None, confidence_level=0.95))
    return metric.analyze(pd.DataFrame(rows), control="control", treatment="treatment", variant="arm")


@pytest.mark.parametrize("share", [pytest.param(1.0, marks=pytest.mark.slow), 0.5])
def test_cuped_from_a_column_equals_tea_tasting(share):
    """covariate= (a column of the log) as CUPED's covariate: Welch over users on the adjusted ratio = tea-tasting's
    RatioOfMeans with that covariate, to 1e-9; a user without a value (NULL) has none, as a user absent from a
    pre-period log."""
    log = _with_covariate(share)
    rep = sqlmetrics.compare(None, log, ["RR"], unit="user", covariate="pre_rr", **OPTIONS)
    (c,) = rep.comparisons
    ref = _covariate_oracle(log, "RR", ratio=share < 1)
    assert rep.cuped and c.variance_reduction > 0
    assert c.difference == pytest.approx(ref.effect_size, rel=1e-9)
    assert (c.ci_low, c.ci_high) == pytest.approx((ref.effect_size_ci_lower, ref.effect_size_ci_upper), rel=1e-9)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.slow  # two engines and compare(engine=); the oracle case below is the fast suite's
def test_cuped_from_a_column_in_the_warehouse_equals_local():
    """render_compare(covariate=) on DuckDB and SQLite, then decide(); and compare(engine=, covariate=): the local
    report to 1e-9. A user whose rows disagree has no covariate there as here."""
    import sqlite3

    import duckdb

    log = _with_covariate(0.5)
    users = log["user"].to_pylist()
    values = log["pre_rr"].to_pylist()
    first = {}
    for i, u in enumerate(users):  # u0001's first row says another value than its others
        if u == "u0001" and first.setdefault(u, i) == i:
            values[i] = 0.123
    log = log.set_column(log.column_names.index("pre_rr"), "pre_rr", pa.array(values, pa.float64()))
    options = {k: v for k, v in OPTIONS.items() if k not in ("baseline", "max_p")}
    here = sqlmetrics.compare(None, log, ["RR", "P@3"], unit="user", covariate="pre_rr", **OPTIONS)
    con = duckdb.connect()
    con.register("log", log)
    lite = sqlite3.connect(":memory:")
    lite.execute(f"CREATE TABLE log ({', '.join(log.column_names)})")
    lite.executemany(f"INSERT INTO log VALUES ({', '.join('?' * log.num_columns)})",
                     [tuple(r.values()) for r in log.to_pylist()])
    for dialect, fetch in (("duckdb", lambda sql: con.sql(sql).to_arrow_table().to_pylist()),
                           ("sqlite", lambda sql: [dict(zip([d[0] for d in cur.description], r))
                                                   for cur in [lite.execute(sql)] for r in cur.fetchall()])):
        sql = sqlmetrics.render_compare(["RR", "P@3"], dialect, qrels=None, run="log", unit="user",
                                        covariate="pre_rr", test="welch", max_p=0.05, **options)
        there = sqlmetrics.decide(fetch(sql), baseline="control")
        assert there.cuped and _close(there, here), dialect
    on_engine = sqlmetrics.compare(None, "log", ["RR", "P@3"], unit="user", covariate="pre_rr", engine=con, **OPTIONS)
    assert _close(on_engine, here)


def _close(a, b) -> bool:
    return all(x.difference == pytest.approx(y.difference, rel=1e-9) and x.p_value == pytest.approx(y.p_value, rel=1e-9)
               and x.ci_low == pytest.approx(y.ci_low, rel=1e-9) and x.variance_reduction ==
               pytest.approx(y.variance_reduction, rel=1e-9) for x, y in zip(a.comparisons, b.comparisons)) \
        and len(a.comparisons) == len(b.comparisons) == 2


def test_covariate_refusals():
    log = _with_covariate()
    for kwargs, message in (({}, "covariate= gives each unit its covariate: name the unit's column in unit="),
                            ({"unit": "user", "pre_period": PRE}, "give one of them"),
                            ({"unit": "user", "covariate": "user"}, "the covariate is a column of its own"),
                            ({"unit": "user", "covariate": "pre_ctr"}, "covariate= 'pre_ctr': the log has no such")):
        with pytest.raises(sqlmetrics.SqlmetricsError, match=message):
            sqlmetrics.compare(None, log, ["RR"], **{"covariate": "pre_rr", **kwargs}, **OPTIONS)
