"""Logs in the warehouse: segments (group_by), labelled lists (qrels=None), relevance from behaviour,
shown positions, writing results back; executed on DuckDB and on every engine of test_engines.py."""
from __future__ import annotations

import datetime
import math
import os
import sqlite3
import warnings
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sqlglot import exp

import sqlmetrics
from sqlmetrics.demo import make_log
from sqlmetrics.dialects import DIALECTS, render
from sqlmetrics.engines import evaluate_on
from sqlmetrics.errors import SqlmetricsError, SqlmetricsWarning

from test_engines import FACTORIES, MEASURES, _close, data, engines  # noqa: F401 - shared fixtures

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

LOG_COLUMNS = {"query_id": "session", "doc_id": "doc", "rank_position": "position"}
SOME = ["nDCG@5", "nDCG", "nDCG(gain='exp')@10", "AP", "RR", "P@3", "R@5", "ERR@10", "Bpref", "GMAP", "NumQ",
        "NumRel", "FirstRank", "NERR9@5", "INST"]


@pytest.fixture(scope="module")
def log() -> pa.Table:
    return make_log.table()


def test_demo_log_file_is_the_script_output(log):
    shipped = pq.read_table(Path(make_log.__file__).with_name("search_log.parquet"))
    assert shipped.equals(log)
    assert 2000 <= log.num_rows <= 10000
    assert Path(make_log.__file__).with_name("search_log.parquet").stat().st_size < 200_000


# ---------------------------------------------------------------------------------------------- segments


def _filter(table: pa.Table, **values) -> pa.Table:
    mask = None
    for col, value in values.items():
        m = pc.equal(table[col], value)
        mask = m if mask is None else pc.and_(mask, m)
    return table.filter(mask)


def test_a_null_segment_is_a_segment_of_its_own():
    """Hand-computed: q1 (arm a) ranks its relevant document first: P@1 = RR = 1; q2 (no arm) second:
    P@1 = 0, RR = 1/2. The NULL arm is its own row, and the aggregate averages both lists."""
    log = pa.table({"arm": ["a", "a", None, None], "query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d1", "d2", "d1", "d2"],
                    "rank": [1, 2, 1, 2], "grade": [1, 0, 0, 1]})
    for qrels, options in ((None, {"label": "grade"}), ({"q1": {"d1": 1}, "q2": {"d2": 1}}, {})):
        run = log if qrels is None else log.drop_columns(["grade"])
        res = sqlmetrics.evaluate(qrels, run, ["P@1", "RR"], group_by=["arm"], ties="rank", **options)
        assert res.per_group.to_pylist() == [{"arm": "a", "P@1": 1.0, "RR": 1.0, "num_lists": 1},
                                             {"arm": None, "P@1": 0.0, "RR": 0.5, "num_lists": 1}]
        assert res.aggregate == {"P@1": 0.5, "RR": 0.75}
    # The same on SQLite, where a NULL segment once failed while sorting the rows.
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE log (arm TEXT, query_id TEXT, doc_id TEXT, rank INTEGER, grade INTEGER)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", [tuple(r.values()) for r in log.to_pylist()])
    res = sqlmetrics.evaluate(None, "log", ["P@1", "RR"], engine=con, group_by=["arm"], label="grade", ties="rank",
                              columns={"rank_position": "rank"})
    assert res.per_query.to_pylist() == [{"arm": "a", "query_id": "q1", "P@1": 1.0, "RR": 1.0},
                                         {"arm": None, "query_id": "q2", "P@1": 0.0, "RR": 0.5}]
    assert res.aggregate == {"P@1": 0.5, "RR": 0.75}


def test_a_row_without_its_run_name_is_named():
    """A segment may be NULL (its own segment, above); a run name may not: a NULL arm, and an empty one (once taken
    as a run named ''), name their row."""
    for arm in (None, ""):
        log = pa.table({"arm": ["a", "a", arm, "b"], "query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d1", "d2", "d1", "d2"],
                        "rank": [1, 2, 1, 2], "grade": [1, 0, 0, 1]})
        with pytest.raises(SqlmetricsError, match=r"run \(Arrow table\), row 3: the run name column 'arm' is empty there"):
            sqlmetrics.compare(None, log, ["RR"], label="grade", ties="rank", columns={"run_name": "arm", "rank_position": "rank"})


def test_an_arm_without_an_evaluated_list_is_named():
    """Arm b's one session has no label (NULL: unjudged), so it is not evaluated; compare said only "got 1 in the
    run_name column (['a'])", as if the column held one arm (tests/test_fuzz_compare.py)."""
    log = pa.table({"arm": ["a", "b"], "query_id": ["q1", "q2"], "doc_id": ["d1", "d1"], "rank": [1, 1],
                    "grade": pa.array([1.0, None])})
    with pytest.warns(SqlmetricsWarning, match="every label NULL"), \
            pytest.raises(SqlmetricsError, match=r"\(\['a'\]\); 'b' has no evaluated list"):
        sqlmetrics.compare(None, log, ["RR"], label="grade", ties="rank", columns={"run_name": "arm", "rank_position": "rank"})


# The qrels mode is the fast case (test_relevance_expression_forms_agree reads the other two)
@pytest.mark.parametrize("mode", [pytest.param("relevance", marks=pytest.mark.slow),
                                  pytest.param("label", marks=pytest.mark.slow), "qrels"])
def test_per_segment_equals_each_segment_alone(log, mode):
    kwargs = dict(columns=LOG_COLUMNS, ties="rank")
    if mode == "relevance":
        kwargs.update(relevance="2*purchased + clicked")
        qrels = None
    elif mode == "label":
        kwargs.update(label="rating")
        qrels = None
    else:  # editor judgments per (query, doc) as qrels; the log's lists are keyed by session
        # Named as the log names them: columns= maps both tables.
        qrels = duckdb.sql("SELECT DISTINCT query, doc, rating AS relevance FROM log "
                           "WHERE rating IS NOT NULL").to_arrow_table()
        log = log.drop_columns(["rating"])
        kwargs["columns"] = {**LOG_COLUMNS, "query_id": "query"}
        log = log.filter(pc.equal(log["arm"], "control"))  # one list per (segment, query) below
        log = duckdb.sql("SELECT * FROM log QUALIFY ROW_NUMBER() OVER (PARTITION BY date, market, query, doc "
                         "ORDER BY session) = 1 AND DENSE_RANK() OVER (PARTITION BY date, market, query "
                         "ORDER BY session) = 1").to_arrow_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SqlmetricsWarning)
        together = sqlmetrics.evaluate(qrels, log, SOME, group_by=["date", "market"], **kwargs)
        assert together.per_group.column_names == ["date", "market", *SOME, "num_lists"]
        n = 0
        for row in together.per_group.to_pylist():
            alone = sqlmetrics.evaluate(qrels, _filter(log, date=row["date"], market=row["market"]), SOME,
                                        queries="intersection", **kwargs)
            n += 1
            assert row["num_lists"] == alone.per_query.num_rows
            for m in SOME:
                assert _close(row[m], alone.aggregate[m]), (row, m, alone.aggregate[m])
            seg = _filter(together.per_query, date=row["date"], market=row["market"])
            mine, theirs = seg.drop_columns(["date", "market"]).to_pylist(), alone.per_query.to_pylist()
            assert [r["query_id"] for r in mine] == [r["query_id"] for r in theirs]
            assert all(_close(a[m], b[m]) for a, b in zip(mine, theirs) for m in SOME)
    assert n == 6
    assert together.per_query.num_rows == sum(together.per_group.to_pydict()["num_lists"])


def test_segments_and_runs_together(log):
    """{run: log} and group_by: one row per (run, segment); the overall aggregate is over all lists."""
    a = log.filter(pc.equal(log["arm"], "control"))
    b = log.filter(pc.equal(log["arm"], "treatment"))
    res = sqlmetrics.evaluate(None, {"a": a, "b": b}, ["nDCG@5", "NumQ"], columns=LOG_COLUMNS, ties="rank",
                              group_by="market", label="rating")
    assert res.per_group.column_names == ["run", "market", "nDCG@5", "NumQ", "num_lists"]
    assert res.per_group.num_rows == 4
    assert res.aggregate["a"]["NumQ"] == 150
    one = sqlmetrics.evaluate(None, a, ["nDCG@5"], columns=LOG_COLUMNS, ties="rank", label="rating")
    assert _close(res.aggregate["a"]["nDCG@5"], one.aggregate["nDCG@5"])


def test_group_by_errors(log):
    with pytest.raises(SqlmetricsError, match="'nope' is not a column"):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating", group_by=["nope"])
    with pytest.raises(SqlmetricsError, match="taken by a result column"):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating", group_by=["AP"])
    with pytest.raises(SqlmetricsError, match="qrels=None needs"):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank")
    with pytest.raises(SqlmetricsError, match="pass qrels=None"):
        sqlmetrics.evaluate({"q": {"d": 1}}, log, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating")
    dup = pa.concat_tables([log, log.slice(0, 1)])
    with pytest.raises(SqlmetricsError, match="appears more than once in the list of query 's0001'"):
        sqlmetrics.evaluate(None, dup, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating", group_by=["date"])
    # The same (query, doc) in two segments is not a repeat.
    res = sqlmetrics.evaluate(None, log, ["NumQ"], columns={**LOG_COLUMNS, "query_id": "query"}, ties="rank",
                              label="rating", group_by=["session"])
    assert res.aggregate["NumQ"] == 300


# ---------------------------------------------------------------------------------------------- labelled lists


def _ndcg(labels_in_order: list, k=None, exp_gain=False) -> float:
    """nDCG of one labelled list, as LightGBM/XGBoost/TorchMetrics: the ideal is the list's own labels."""
    gain = (lambda g: 2 ** g - 1) if exp_gain else (lambda g: g)
    lab = [g for g in labels_in_order]
    top = lab[:k] if k else lab
    dcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(top) if g and g > 0)
    ideal = sorted((g for g in lab if g is not None), reverse=True)
    ideal = ideal[:k] if k else ideal
    idcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(ideal) if g > 0)
    return dcg / idcg if idcg else 0.0


def test_labelled_ndcg_equals_python_reference(log):
    res = sqlmetrics.evaluate(None, log, ["nDCG@5", "nDCG", "nDCG(gain='exp')@3"], columns=LOG_COLUMNS,
                              ties="rank", relevance={"purchased": 2, "clicked": 1})
    got = {r["query_id"]: r for r in res.per_query.to_pylist()}
    lists: dict = {}
    for r in sorted(log.to_pylist(), key=lambda r: r["position"]):
        lists.setdefault(r["session"], []).append(2 if r["purchased"] else 1 if r["clicked"] else 0)
    assert set(got) == set(lists)
    for s, labels in lists.items():
        assert _close(got[s]["nDCG@5"], _ndcg(labels, 5))
        assert _close(got[s]["nDCG"], _ndcg(labels))
        assert _close(got[s]["nDCG(gain='exp')@3"], _ndcg(labels, 3, exp_gain=True))


def test_labelled_ndcg_equals_sklearn_on_tie_free_data():
    from sklearn import metrics as sklearn_metrics  # a test dependency: a missing one is a failure, not a skip
    import random

    rnd = random.Random(7)
    rows = []
    for q in range(30):
        n = rnd.randint(2, 12)
        scores = rnd.sample(range(1000), n)  # distinct: sklearn averages over tied scores, we break ties by id
        for j, s in enumerate(scores):
            rows.append((f"q{q}", f"d{j}", s / 10, rnd.choice([0, 0, 1, 2, 3])))
    rows = [r for r in rows if any(x[3] > 0 for x in rows if x[0] == r[0])]  # sklearn's all-zero list is 0 too,
    table = pa.table({k: [r[i] for r in rows] for i, k in enumerate(["query_id", "doc_id", "score", "rating"])})
    for k in (None, 3, 5):
        res = sqlmetrics.evaluate(None, table, [f"nDCG@{k}" if k else "nDCG"], label="rating")
        got = {r["query_id"]: list(r.values())[-1] for r in res.per_query.to_pylist()}
        for q in sorted({r[0] for r in rows}):
            mine = [r for r in rows if r[0] == q]
            want = sklearn_metrics.ndcg_score([[r[3] for r in mine]], [[r[2] for r in mine]], k=k)
            assert _close(got[q], float(want)), (q, k, got[q], want)


def test_labelled_recall_and_R_come_from_the_list(log):
    """R is the relevant labels in the list itself: R@10 of a 10-long list is 1 whenever it has any."""
    res = sqlmetrics.evaluate(None, log, ["R@10", "NumRel", "Success@10"], columns=LOG_COLUMNS, ties="rank",
                              label="rating")
    for r in res.per_query.to_pylist():
        assert r["R@10"] == r["Success@10"]


# ---------------------------------------------------------------------------------------------- relevance expressions

HOSTILE = [
    "(SELECT 1)",
    "clicked; DROP TABLE x",
    "1; SELECT 1",
    "SUM(clicked)",
    "MAX(purchased) + 1",
    "ROW_NUMBER() OVER ()",
    "RANK() OVER (ORDER BY position)",
    "log.clicked",
    "main.log.clicked",
    "*",
    "nope + 1",
    "clicked -- comment",
    "clicked /* x */ + 1",
    "clicked IN (SELECT 1)",
    "EXISTS (SELECT 1)",
    "read_parquet('x.parquet')",
    "current_user",
    "random()",
    "version()",
    ":p + clicked",
    "$1",
    "getenv('HOME')",
    "DROP TABLE x",
    "",
    "1 + 2",
    "clicked +",
    "CAST(clicked AS INT) + (SELECT 2)",
    "CASE WHEN clicked THEN (SELECT 1) END",
]


@pytest.mark.parametrize("spec", HOSTILE)
def test_relevance_expression_rejects_anything_but_an_expression_over_the_columns(log, spec):
    with pytest.raises(SqlmetricsError, match="relevance="):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank", relevance=spec)


@pytest.mark.parametrize("spec", [s for s in HOSTILE if s not in ("nope + 1",)])
def test_render_rejects_the_same(spec):
    with pytest.raises(SqlmetricsError, match="relevance="):
        render(["AP"], qrels=None, run="log", columns=LOG_COLUMNS, ties="rank", relevance=spec)


@pytest.mark.parametrize("spec", [{"clicked": "2"}, {"clicked": True}, {"": 1}, {}, {"nope": 1}, 5, None])
def test_relevance_mapping_is_checked(log, spec):
    with pytest.raises(SqlmetricsError):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank",
                            relevance=spec, **({} if spec is not None else {"label": None}))


def test_relevance_expression_forms_agree(log):
    kw = dict(columns=LOG_COLUMNS, ties="rank")
    a = sqlmetrics.evaluate(None, log, SOME, relevance="CASE WHEN purchased = 1 THEN 2 WHEN clicked = 1 THEN 1 ELSE 0 END", **kw)
    b = sqlmetrics.evaluate(None, log, SOME, relevance={"purchased": 2, "clicked": 1}, **kw)
    c = sqlmetrics.evaluate(None, log.append_column("g", pc.if_else(pc.equal(log["purchased"], 1), 2,
                                                    pc.cast(log["clicked"], pa.int64()))), SOME, label="g", **kw)
    for other in (b, c):
        assert other.per_query["query_id"].equals(a.per_query["query_id"])
        assert all(_close(x[m], y[m]) for x, y in zip(a.per_query.to_pylist(), other.per_query.to_pylist()) for m in SOME)
    # Case-insensitive column names, as DuckDB reads them; functions on the allowlist.
    d = sqlmetrics.evaluate(None, log, ["nDCG@5"], relevance="GREATEST(2 * PURCHASED, COALESCE(Clicked, 0))", **kw)
    assert _close(d.aggregate["nDCG@5"], b.aggregate["nDCG@5"])


def test_relevance_expression_is_bound_not_pasted():
    sql = render(["AP"], dialect="postgres", qrels=None, run="log", columns=LOG_COLUMNS, ties="rank",
                 relevance='2 * "Purchased Flag" + clicked', header=False)
    assert 'CAST((2 * "Purchased Flag" + clicked) AS DOUBLE PRECISION) AS relevance' in " ".join(sql.split()).replace(
        "( ", "(").replace(" )", ")")


# ---------------------------------------------------------------------------------------------- positions


def test_positions_with_gaps_and_repeats_are_renumbered_with_a_warning():
    run = pa.table({
        "query_id": ["a"] * 4 + ["b"] * 3 + ["c"] * 2,
        "doc_id": ["d1", "d2", "d3", "d4", "d1", "d2", "d3", "d1", "d2"],
        "position": [1, 3, 7, 8, 2, 2, 5, 1, 2],  # a: gaps; b: repeated (and not from 1); c: clean
        "rating": [0, 1, 0, 1, 1, 0, 1, 0, 1],
    })
    with pytest.warns(SqlmetricsWarning, match=r"2 of 3 lists have positions that are not 1..n \(2 with gaps or "
                                               r"not starting at 1, 1 with repeated positions\)"):
        res = sqlmetrics.evaluate(None, run, ["RR", "P@2", "FirstRank"], ties="rank", label="rating")
    got = {r["query_id"]: r for r in res.per_query.to_pylist()}
    # a: renumbered d1 d2 d3 d4 -> first relevant at 2. b: position 2 tie broken by doc id descending
    # (d2 before d1): d2 (0), d1 (1), d3 (1) -> first relevant at 2.
    assert got["a"]["RR"] == 0.5 and got["a"]["P@2"] == 0.5
    assert got["b"]["FirstRank"] == 2 and got["b"]["P@2"] == 0.5
    assert got["c"]["RR"] == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", SqlmetricsWarning)
        sqlmetrics.evaluate(None, run.filter(pc.equal(run["query_id"], "c")), ["RR"], ties="rank", label="rating")


# ---------------------------------------------------------------------------------------------- writing results


def test_output_parquet_is_written_atomically(tmp_path, log, monkeypatch):
    out = tmp_path / "results.parquet"
    res = sqlmetrics.evaluate(None, log, ["nDCG@5"], columns=LOG_COLUMNS, ties="rank", label="rating",
                              group_by=["date"], output=out)
    assert pq.read_table(out).equals(res.per_query)
    before = out.read_bytes()

    def broken(table, where, **kw):
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(SqlmetricsError, match="cannot be written .disk full"):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating", output=out)
    assert out.read_bytes() == before  # the old file is intact
    new = tmp_path / "new.parquet"
    with pytest.raises(SqlmetricsError, match="cannot be written .disk full"):
        sqlmetrics.evaluate(None, log, ["AP"], columns=LOG_COLUMNS, ties="rank", label="rating", output=new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.parquet"]  # no file, no temporary left


def test_output_errors_come_before_any_work(tmp_path):
    with pytest.raises(SqlmetricsError, match="the extension '.xlsx' names no format; name the file .parquet"):
        sqlmetrics.evaluate(None, "missing.parquet", ["AP"], label="x", output=tmp_path / "r.xlsx")
    with pytest.raises(SqlmetricsError, match="does not exist"):
        sqlmetrics.evaluate(None, "missing.parquet", ["AP"], label="x", output=tmp_path / "no" / "r.parquet")


def test_output_csv(tmp_path, log):
    out = tmp_path / "r.csv"
    sqlmetrics.evaluate(None, log, ["RR"], columns=LOG_COLUMNS, ties="rank", label="rating", output=out)
    assert out.read_text().splitlines()[0] == '"query_id","RR"'


@pytest.mark.parametrize("dialect", list(DIALECTS))
@pytest.mark.parametrize("mode", ["create", "append"])
def test_render_into(dialect, mode):
    import sqlglot

    kw = dict(dialect=dialect, qrels=None, run="db.log", columns=LOG_COLUMNS, ties="rank", group_by=["date", "arm"],
              relevance="2*purchased + clicked", into="db.eval_results", into_mode=mode)
    if dialect == "polars" and mode == "append":
        with pytest.raises(SqlmetricsError, match="polars: its SQLContext runs CREATE TABLE ... AS but has no INSERT"):
            render(["nDCG@10", "AP"], **kw)
        return
    sql = render(["nDCG@10", "AP"], **kw)
    if dialect == "clickhouse" and mode == "create":
        assert "ENGINE=MergeTree\nORDER BY tuple() AS\n" in sql
    parsed = [s for s in sqlglot.parse(sql, read=DIALECTS[dialect].sqlglot) if s is not None]
    assert len(parsed) == 1
    assert isinstance(parsed[0], exp.Insert if mode == "append" else (exp.Create, exp.Select))


@pytest.mark.parametrize("mode, dialect", [("replace", "postgres"), ("replace", "sqlite"), ("merge", "mysql"),
                                           ("merge", "sqlite"), ("merge", "clickhouse")])
def test_render_into_refuses_what_is_not_one_statement_there(mode, dialect):
    with pytest.raises(SqlmetricsError, match=f"into_mode='{mode}' is not one statement on {dialect} .*render it for "):
        render(["AP"], dialect=dialect, into="t", into_mode=mode, group_by="day")
    with pytest.raises(SqlmetricsError, match="into_mode='merge' replaces the rows with the same key .* these rows have "
                                              "none"):
        render(["AP"], into="t", into_mode="merge")


def test_render_row_key_is_one_text_per_key():
    """row_key: each value tagged n (NULL) or v (its text, '|' doubled), joined by '|'; by hand. A NULL and 'NULL',
    a value holding the separator or a tag: each key its own text, never NULL."""
    con = duckdb.connect()
    con.execute("CREATE TABLE log AS SELECT * FROM (VALUES (DATE '2026-03-02', NULL, 'a|'), (DATE '2026-03-02', 9, "
                "NULL), (NULL, 9, 'NULL'), (NULL, 9, '|n'), (NULL, NULL, '')) t(day, page, tag)")
    con.execute("CREATE TABLE run AS SELECT *, 'q1' AS query_id, 'd1' AS doc_id, 1.0 AS score, 1 AS clicked "
                "FROM log")
    sql = render(["RR"], qrels=None, run="run", label="clicked", group_by=["day", "page", "tag"], row_key="k")
    assert sorted(con.execute(sql).fetchall(), key=repr) == sorted([
        (datetime.date(2026, 3, 2), None, "a|", 1.0, 1, "v2026-03-02|n|va||"),
        (datetime.date(2026, 3, 2), 9, None, 1.0, 1, "v2026-03-02|v9|n"),
        (None, 9, "NULL", 1.0, 1, "n|v9|vNULL"), (None, 9, "|n", 1.0, 1, "n|v9|v||n"),
        (None, None, "", 1.0, 1, "n|n|v")], key=repr)


@pytest.mark.parametrize("kw, message", [
    ({"row_key": ""}, "row_key='': give the name of the key column"),
    ({"row_key": 3}, "row_key=3: give the name"),
    ({"row_key": "RR"}, "row_key='RR' is the name of another column of the results"),
    ({"row_key": "Day", "group_by": "day"}, "row_key='Day' is the name of another column"),
    ({"row_key": "k", "group_by": None}, "row_key= is the rows' key .* these rows have none"),
])
def test_render_row_key_refusals(kw, message):
    with pytest.raises(SqlmetricsError, match=message):
        render(["RR"], qrels=None, run="log", label="clicked", **{"group_by": ["day"], **kw})


def _daily(log: pa.Table, day) -> pa.Table:
    return log.filter(pc.equal(log["day"], pa.scalar(day, pa.date32())))


DAY_KW = dict(ties="rank", group_by=["day", "page"], label="clicked")


def _merge_a_day(execute, fetch, load, dialect):
    """The log's results into a table, then day 2 re-run from a corrected log (q3's click now at rank 1) and a new
    day 3 merged in: day 2's rows are replaced, day 1's are as they were, day 3's added. Rendered for `dialect`
    and run by execute(sql); load(name, table) makes a table of the engine; fetch(sql) its rows."""
    import datetime

    log = _typed_log()
    d1, d2, d3 = datetime.date(2026, 3, 2), datetime.date(2026, 3, 10), datetime.date(2026, 3, 11)
    fixed = log.set_column(5, "clicked", pa.array([1 if q == "q3" and p == 1 else 0 if q == "q3" else c for q, p, c in
                                                   zip(*(log[n].to_pylist() for n in ("query_id", "rank_position",
                                                                                      "clicked")))]))
    fixed = pa.concat_tables([_daily(fixed, d2), _daily(log, d2).set_column(1, "day", pa.array([d3] * 3, pa.date32()))])
    load("log_all", log)
    load("log_new", fixed)
    execute(render(["RR", "P@1"], dialect=dialect, qrels=None, run="log_all", into="results", **DAY_KW))
    execute(render(["RR", "P@1"], dialect=dialect, qrels=None, run="log_new", into="results", into_mode="merge",
                   **DAY_KW))
    got = sorted((r[0], int(r[1]), float(r[2]), float(r[3]), int(r[4]))
                 for r in fetch("SELECT day, page, rr, p_at_1, num_lists FROM results"))
    assert got == [(d1, 9, 0.5, 0.0, 1), (d1, 10, 1.0, 1.0, 1), (d2, 9, 1.0, 1.0, 1), (d3, 9, 1 / 3, 0.0, 1)]


def test_render_merge_replaces_a_days_rows_on_duckdb():
    con = duckdb.connect()

    def load(name, table):
        con.register("src", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src")
        con.unregister("src")

    _merge_a_day(con.execute, lambda sql: con.execute(sql).fetchall(), load, "duckdb")
    # into_mode='replace': the new rows alone, in a table of their types
    con.execute(render(["RR", "P@1"], qrels=None, run="log_new", into="results", into_mode="replace", **DAY_KW))
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT day) FROM results").fetchone() == (2, 2)
    assert con.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'results' "
                       "AND column_name = 'day'").fetchone() == ("DATE",)


@pytest.mark.slow  # a server
def test_render_merge_replaces_a_days_rows_on_postgres():
    """PostgreSQL 15's MERGE, on a log whose day is a DATE and page an INTEGER (kept in the results' table)."""
    from conftest import postgres_connection

    con = postgres_connection()
    schema = f"sqlm_merge_{os.getpid()}"
    types = {"query_id": "TEXT", "day": "DATE", "page": "INTEGER", "doc_id": "TEXT", "rank_position": "INTEGER",
             "clicked": "INTEGER"}
    try:
        with con.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; SET search_path TO {schema}")

            def load(name, table):
                cur.execute(f"CREATE TABLE {name} ({', '.join(f'{c} {t}' for c, t in types.items())})")
                cur.executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * len(types))})",
                                [tuple(r.values()) for r in table.to_pylist()])

            def fetch(sql):
                cur.execute(sql)
                return cur.fetchall()

            _merge_a_day(cur.execute, fetch, load, "postgres")
            assert fetch("SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() "
                         "AND table_name = 'results' AND column_name IN ('day', 'page') ORDER BY column_name") == \
                [("date",), ("integer",)]
    finally:
        con.rollback()
        with con.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.commit()
        con.close()


@pytest.mark.slow  # Spark
@pytest.mark.parametrize("mode", ["merge", "replace"])
def test_render_merge_and_replace_are_spark_statements(mode):
    """Spark's own parser reads the MERGE INTO and CREATE OR REPLACE TABLE rendered for it. (Executing them needs a
    table format that takes them, Delta Lake or Iceberg, whose jars are not on PyPI; Spark's built-in tables
    refuse both.)"""
    from conftest import spark_session

    spark = spark_session()
    sql = render(["RR", "P@1"], dialect="spark", qrels=None, run="log_new", into="results", into_mode=mode,
                 header=False, **DAY_KW)
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql).toString()
    assert ("MergeIntoTable" if mode == "merge" else "ReplaceTableAsSelect") in plan, plan[:500]


def test_render_into_executes_on_duckdb(log):
    con = duckdb.connect()
    con.register("src", log)
    con.execute("CREATE SCHEMA s; CREATE TABLE s.log AS SELECT * FROM src")
    kw = dict(qrels=None, run="s.log", columns=LOG_COLUMNS, ties="rank", group_by=["date", "arm"],
              relevance="2*purchased + clicked")
    con.execute(render(["nDCG@5", "RR"], into="s.results", **kw))
    con.execute(render(["nDCG@5", "RR"], into="s.results", into_mode="append", **kw))
    rows = con.execute('SELECT "date", arm, ndcg_at_5, rr, num_lists FROM s.results ORDER BY 1, 2').fetchall()
    assert len(rows) == 12
    want = sqlmetrics.evaluate(None, log, ["nDCG@5", "RR"], columns=LOG_COLUMNS, ties="rank", group_by=["date", "arm"],
                               relevance="2*purchased + clicked").per_group.to_pylist()
    for got, w in zip(rows[::2], want):
        assert got[:2] == (w["date"], w["arm"]) and _close(got[2], w["nDCG@5"]) and got[4] == w["num_lists"]



def _typed_log() -> pa.Table:
    """Two days (DATE) and two page sizes (9 and 10: as text, '10' sorts before '9'); q1 ranks its click first
    (RR 1), q2 second (RR 1/2), q3 third (RR 1/3)."""
    import datetime

    rows = [("q1", datetime.date(2026, 3, 2), 10, "a", 1, 1), ("q1", datetime.date(2026, 3, 2), 10, "b", 2, 0),
            ("q2", datetime.date(2026, 3, 2), 9, "a", 1, 0), ("q2", datetime.date(2026, 3, 2), 9, "b", 2, 1),
            ("q3", datetime.date(2026, 3, 10), 9, "a", 1, 0), ("q3", datetime.date(2026, 3, 10), 9, "b", 2, 0),
            ("q3", datetime.date(2026, 3, 10), 9, "c", 3, 1)]
    return pa.table({"query_id": [r[0] for r in rows], "day": pa.array([r[1] for r in rows], pa.date32()),
                     "page": pa.array([r[2] for r in rows], pa.int64()), "doc_id": [r[3] for r in rows],
                     "rank_position": [r[4] for r in rows], "clicked": [r[5] for r in rows]})


def test_segments_keep_their_types_in_rendered_sql_and_locally():
    """A DATE segment stays a DATE and a number a number, in the table into= writes and in evaluate()'s per-group
    rows, and numbers sort as numbers (9 before 10). Before, the statement cast every segment to text."""
    import datetime

    log = _typed_log()
    con = duckdb.connect()
    con.register("src", log)
    con.execute("CREATE TABLE clicks AS SELECT * FROM src")
    kw = dict(ties="rank", group_by=["day", "page"], label="clicked")
    con.execute(render(["RR"], qrels=None, run="clicks", into="results", **kw))
    assert con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'results' "
                       "ORDER BY ordinal_position").fetchall()[:2] == [("day", "DATE"), ("page", "BIGINT")]
    d2, d10 = datetime.date(2026, 3, 2), datetime.date(2026, 3, 10)
    want = [(d2, 9, 0.5, 1), (d2, 10, 1.0, 1), (d10, 9, 1 / 3, 1)]
    assert con.execute(render(["RR"], qrels=None, run="clicks", **kw)).fetchall() == want  # the statement's own order
    local = sqlmetrics.evaluate(None, log, ["RR"], **kw).per_group
    assert local.schema.field("day").type == pa.date32() and local.schema.field("page").type == pa.int64()
    assert [tuple(r.values()) for r in local.to_pylist()] == want


def test_a_segment_the_runs_type_differently_is_compared_as_text():
    """Two runs, one with the page size as a number, the other as text: one table of results, the segment as
    text (a number and a date, or text, have no common type to compare in)."""
    log = _typed_log()
    as_text = log.set_column(2, "page", pa.array([str(v) for v in log["page"].to_pylist()]))
    got = sqlmetrics.evaluate(None, {"numbers": log, "text": as_text}, ["RR"], ties="rank", group_by="page",
                              label="clicked").per_group
    assert got.schema.field("page").type == pa.string()
    assert sorted((r["run"], r["page"], round(r["RR"], 6)) for r in got.to_pylist()) == [
        ("numbers", "10", 1.0), ("numbers", "9", round((0.5 + 1 / 3) / 2, 6)),
        ("text", "10", 1.0), ("text", "9", round((0.5 + 1 / 3) / 2, 6))]

# ---------------------------------------------------------------------------------------------- engines

ENGINE_LOG = ("date", "arm", "session", "doc", "position", "clicked", "purchased", "rating")
ENGINE_CASES = {
    "segments_relevance": dict(group_by=["date", "arm"], relevance="2*purchased + clicked"),
    "segments_mapping": dict(group_by=["arm"], relevance={"purchased": 2, "clicked": 1}),
    "segments_label": dict(group_by=["date"], label="rating"),
}


def _log_rows(log):
    # The first 60 sessions: 600 rows, every date and both arms.
    rows = [tuple(r[c] for c in ENGINE_LOG) for r in log.to_pylist()]
    keep = sorted({r[2] for r in rows})[:30] + sorted({r[2] for r in rows})[-30:]
    return [r for r in rows if r[2] in keep]


def _load_log(engine, rows) -> str:
    name = engine.name
    types = {"date": "text", "arm": "text", "session": "text", "doc": "text", "position": "int", "clicked": "int",
             "purchased": "int", "rating": "int"}
    table = pa.table({c: pa.array([r[i] for r in rows], pa.string() if types[c] == "text" else pa.int64())
                      for i, c in enumerate(ENGINE_LOG)})
    run_name = engine.tables["run"]
    target = run_name[: -len("run")] + "sqlm_log"
    if name == "duckdb":
        engine.con.register("log_src", table)
        engine.con.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM log_src")
    elif name in ("sqlite", "postgres", "mariadb"):
        dialect = {"sqlite": "sqlite", "postgres": "postgres", "mariadb": "mysql"}[name]
        sql_type = {"sqlite": {"text": "TEXT", "int": "INTEGER"}, "postgres": {"text": "TEXT", "int": "INTEGER"},
                    "mysql": {"text": "VARCHAR(100)", "int": "INT"}}[dialect]
        cur = engine.con.cursor()
        cur.execute(f"DROP TABLE IF EXISTS {target}")
        defs = ", ".join(f"{exp.to_identifier(c, quoted=True).sql(dialect)} {sql_type[types[c]]}" for c in ENGINE_LOG)
        cur.execute(f"CREATE TABLE {target} ({defs})")
        ph = "?" if name == "sqlite" else "%s"
        cur.executemany(f"INSERT INTO {target} VALUES ({', '.join([ph] * len(ENGINE_LOG))})", rows)
        engine.con.commit()
    elif name == "clickhouse":
        defs = ", ".join(f"`{c}` {'String' if types[c] == 'text' else 'Nullable(Int32)'}" for c in ENGINE_LOG)
        engine.con.query(f"DROP TABLE IF EXISTS {target}")
        engine.con.query(f"CREATE TABLE {target} ({defs}) ENGINE = Memory")
        values = ", ".join("(" + ", ".join(exp.convert(v).sql("clickhouse") for v in r) + ")" for r in rows)
        engine.con.query(f"INSERT INTO {target} VALUES {values}")
    elif name == "datafusion":
        engine.con.register_record_batches(target, [table.to_batches()])
    elif name == "polars":
        import polars as pl

        engine.con.register(target, pl.from_arrow(table))
    elif name == "spark":
        values = ", ".join("(" + ", ".join(exp.convert(v).sql("spark") if v is not None else "CAST(NULL AS INT)"
                                           for v in r) + ")" for r in rows)
        names = ", ".join(f"`{c}`" for c in ENGINE_LOG)
        engine.con.sql(f"CREATE OR REPLACE GLOBAL TEMPORARY VIEW sqlm_log AS SELECT * FROM VALUES {values} AS t({names})")
    return target


@pytest.fixture(scope="module")
def loaded_logs(engines, log):
    rows = _log_rows(log)
    cache = {}

    def get(name):
        if name not in cache:
            engine = engines(name)
            cache[name] = (engine, _load_log(engine, rows))
        return cache[name]

    yield get, rows
    for engine, target in cache.values():
        if engine.name in ("postgres", "mariadb"):
            try:
                cur = engine.con.cursor()
                cur.execute(f"DROP TABLE IF EXISTS {target}")
                engine.con.commit()
            except Exception:  # noqa: BLE001 - best effort
                pass


@pytest.mark.slow
@pytest.mark.parametrize("case", list(ENGINE_CASES))
@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_logs_on_engine_equal_duckdb(engine_name, case, loaded_logs):
    get, rows = loaded_logs
    engine, table = get(engine_name)
    kwargs = dict(columns=LOG_COLUMNS, ties="rank", **ENGINE_CASES[case])
    got = evaluate_on(engine.con, MEASURES, qrels=None, run=table, **kwargs)
    local = pa.table({c: [r[i] for r in rows] for i, c in enumerate(ENGINE_LOG)})
    want = sqlmetrics.evaluate(None, local, MEASURES, **kwargs)
    segs = ENGINE_CASES[case]["group_by"]
    assert got.per_query.column_names == want.per_query.column_names == [*segs, "query_id", *MEASURES]
    assert got.per_query.select([*segs, "query_id"]).to_pylist() == want.per_query.select([*segs, "query_id"]).to_pylist()
    bad = [f"{w['query_id']} {m}: {engine_name}={g[m]!r} duckdb={w[m]!r}"
           for g, w in zip(got.per_query.to_pylist(), want.per_query.to_pylist()) for m in MEASURES
           if not _close(g[m], w[m])]
    assert not bad, f"{len(bad)} per-list values differ:\n" + "\n".join(bad[:30])
    assert got.per_group.select(segs + ["num_lists"]).to_pylist() == want.per_group.select(segs + ["num_lists"]).to_pylist()
    for g, w in zip(got.per_group.to_pylist(), want.per_group.to_pylist()):
        assert all(_close(g[m], w[m]) for m in MEASURES), (g, w)
    assert all(_close(got.aggregate[m], want.aggregate[m]) for m in MEASURES)


def _execute(engine, sql: str) -> None:
    """Run a statement that returns no rows (CREATE TABLE ... AS, INSERT, DROP) on an engine."""
    con = engine.con
    if engine.name == "duckdb":
        con.execute(sql)
    elif engine.name in ("sqlite", "postgres", "mariadb"):
        cur = con.cursor()
        cur.execute(sql)
        cur.close()
        con.commit()
    elif engine.name == "clickhouse":
        con.query(sql)
    elif engine.name == "datafusion":
        con.sql(sql).collect()
    elif engine.name == "polars":
        con.execute(sql, eager=True)
    elif engine.name == "spark":
        con.sql(sql).collect()


def _into_target(engine, tmp_path) -> str:
    if engine.name == "spark":  # a database of its own, its files under tmp_path (not the working directory)
        engine.con.sql(f"CREATE DATABASE IF NOT EXISTS sqlm_out LOCATION '{(tmp_path / 'sqlm_out').as_uri()}'")
        return "sqlm_out.sqlm_results"
    return engine.tables["run"][: -len("run")] + "sqlm_results"


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", list(FACTORIES))
def test_render_into_executes_on_engine(engine_name, loaded_logs, tmp_path):
    """into= on every engine: CREATE TABLE ... AS, then INSERT INTO (where the engine has it); the table read
    back holds evaluate()'s per-segment rows on DuckDB (twice after the insert)."""
    from sqlmetrics.engines import _fetch
    from sqlmetrics.catalogue import parse_all
    from sqlmetrics.plan import output_columns

    get, rows = loaded_logs
    engine, table = get(engine_name)
    kind = "mysql" if engine_name == "mariadb" else engine_name
    kwargs = dict(columns=LOG_COLUMNS, ties="rank", group_by=["date", "arm"], relevance="2*purchased + clicked")
    target = _into_target(engine, tmp_path)
    _execute(engine, f"DROP TABLE IF EXISTS {target}")
    try:
        _execute(engine, render(SOME, dialect=kind, qrels=None, run=table, into=target, **kwargs))
        if engine_name == "polars":
            with pytest.raises(SqlmetricsError, match="into_mode='append' is not available for polars"):
                render(SOME, dialect=kind, qrels=None, run=table, into=target, into_mode="append", **kwargs)
            copies = 1
        else:
            _execute(engine, render(SOME, dialect=kind, qrels=None, run=table, into=target, into_mode="append",
                                    **kwargs))
            copies = 2
        got, names = _fetch(engine.con, kind, f"SELECT * FROM {target}")
    finally:
        _execute(engine, f"DROP TABLE IF EXISTS {target}")
    outs = output_columns(parse_all(SOME, 1))
    assert [n.lower() for n in names] == ["date", "arm", *outs, "num_lists"]
    local = pa.table({c: [r[i] for r in rows] for i, c in enumerate(ENGINE_LOG)})
    want = sqlmetrics.evaluate(None, local, SOME, **kwargs).per_group.to_pylist()
    got.sort(key=lambda r: (str(r[0]), str(r[1])))
    assert len(got) == copies * len(want)
    for i, g in enumerate(got):
        w = want[i // copies]
        key = [v.decode() if isinstance(v, (bytes, bytearray)) else v for v in g[:2]]
        assert key == [w["date"], w["arm"]] and int(g[-1]) == w["num_lists"], (g, w)
        bad = [f"{m}: {engine_name}={v!r} duckdb={w[m]!r}" for m, v in zip(SOME, g[2:-1])
               if not _close(None if v is None else float(v), w[m])]
        assert not bad, f"{engine_name} {w['date']} {w['arm']}:\n" + "\n".join(bad)


def test_positions_counted_from_zero_are_said_so_once_and_ranked_as_from_one():
    """0-based positions, the usual logging convention, once gave "3096 of 3096 lists have positions that are not
    1..n": now one plain sentence, and the values of the same log numbered from 1."""
    rows = [("s1", "a", 0, 1), ("s1", "b", 1, 0), ("s1", "c", 2, 1), ("s2", "a", 0, 0), ("s2", "d", 1, 1)]
    log = pa.table({"session_id": [r[0] for r in rows], "doc": [r[1] for r in rows],
                    "position": [r[2] for r in rows], "clicked": [r[3] for r in rows]})
    one_based = log.set_column(2, "position", pa.array([r[2] + 1 for r in rows]))
    options = dict(label="clicked", ties="rank", columns={"doc_id": "doc"})
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match=r"positions count from 0 in all 2 of 2 lists") as caught:
        got = sqlmetrics.evaluate(None, log, ["RR", "P@2", "nDCG@2"], **options)
    assert not any("not 1..n" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert got.aggregate == sqlmetrics.evaluate(None, one_based, ["RR", "P@2", "nDCG@2"], **options).aggregate
