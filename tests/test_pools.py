"""pool() and holes() on hand-computed collections, and hostile input (tests/test_fuzz_pools.py compares them with
trectools on random runs)."""
from __future__ import annotations

import re

import pyarrow as pa
import pytest

from sqlmetrics import SqlmetricsError, SqlmetricsWarning
from sqlmetrics.cli.main import main
from sqlmetrics.judgments.pools import holes, pool, render_pool

# Two runs x two topics. A's q1 ties d2 and d3 at 2.0: evaluate()'s order (document id descending) ranks d3 second.
RUNS = {"A": {"q1": {"d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0}, "q2": {"dé": 1.0, "d5": 0.5}},
        "B": {"q1": {"d4": 9.0, "d9": 8.0, "d1": 7.0}, "q2": {"d5": 2.0, "d6": 1.0}}}
# d9's -1: pooled, not judged yet (trec_eval's reading of a negative grade); q3 is judged and no run ranks it.
QRELS = {"q1": {"d1": 1, "d4": 1, "d9": -1}, "q2": {"d5": 0}, "q3": {"d7": 1}}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    """RUNS and QRELS as TREC text files (read faster than dicts): {'A': path, 'B': path, 'qrels': path}."""
    folder = tmp_path_factory.mktemp("pools")
    paths = {name: folder / f"{name}.run" for name in RUNS} | {"qrels": folder / "qrels"}
    for name, lists in RUNS.items():
        paths[name].write_text("".join(f"{q} Q0 {d} 0 {s} {name}\n" for q, docs in lists.items()
                                       for d, s in docs.items()), encoding="utf-8")
    paths["qrels"].write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()),
                              encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}


def test_hand_computed_pool_of_two_runs_and_two_topics(files):
    # Top 2 at depth 2:  A q1: d1 (3.0), d3 (2.0, above d2 by the tie rule)   B q1: d4 (9.0), d9 (8.0)
    #                    A q2: dé (1.0), d5 (0.5)                             B q2: d5 (2.0), d6 (1.0)
    # The pool: q1 {d1, d3, d4, d9}, each from one run; q2 {dé, d5 (A at 2, B at 1: best 1), d6}.
    # Judged (a grade >= 0): q1 d1, d4; q2 d5. To judge: q1 d3, d9 (d9's -1 is not a judgment); q2 dé, d6.
    got = pool({"A": files["A"], "B": files["B"]}, depth=2, qrels=files["qrels"])
    assert [tuple(r.values()) for r in got.docs.to_pylist()] == [
        ("q1", "d3", 2, 1, ["A"]), ("q1", "d9", 2, 1, ["B"]), ("q2", "dé", 1, 1, ["A"]), ("q2", "d6", 2, 1, ["B"])]
    # pooled, judged, to_judge per topic: q1 4 = 2 + 2, q2 3 = 1 + 2; q3 in the qrels only, nothing pooled.
    assert [tuple(r.values()) for r in got.topics.to_pylist()] == [("q1", 4, 2, 2), ("q2", 3, 1, 2), ("q3", 0, 0, 0)]
    assert got.depth == 2


@pytest.mark.slow  # 0.35 s (an evaluation with a judged-only part, and the runs read again for the pool)
def test_hand_computed_holes():
    # depth 2, P@2, mean over the three judged topics (q3 unranked scores 0):
    #   A q1 top 2 d1 (rel), d3 (unjudged): 1/2; condensed list d1, d4 (both relevant): 2/2.  q2: dé, d5 (grade 0): 0
    #   B q1 d4 (rel), d9 (-1): 1/2; condensed d4, d1: 2/2.                                    q2: d5, d6: 0
    #   value (1/2 + 0 + 0) / 3 = 1/6, condensed (1 + 0 + 0) / 3 = 1/3, spread 1/6, for both runs.
    # Judged@2 (a qrels row, of min(2, length)): A q1 1/2 (d1), q2 1/2 (d5); B q1 2/2 (d4, d9: -1 is a row), q2 1/2.
    # Unjudged@2 (grade < 0 or no row, over 2): A q1 1/2, q2 1/2; B q1 1/2 (d9), q2 1/2 (d6); q3 0: 1/3 each.
    # outside (not in the other run's top 2): A q1 d1, d3: 2/2, q2 dé: 1/2 -> 3/4; B q1 d4, d9: 2/2, q2 d6: 1/2 -> 3/4.
    with pytest.warns(SqlmetricsWarning, match="no ranking for 1 qrels query"):
        table = holes(QRELS, RUNS, ["P@2"], depth=2)
    rows = {r["run"]: r for r in table.to_pylist()}
    assert [r["measure"] for r in rows.values()] == ["P@2", "P@2"]
    for run, judged in (("A", (1 / 2 + 1 / 2 + 0) / 3), ("B", (1 + 1 / 2 + 0) / 3)):
        r = rows[run]
        assert (r["value"], r["condensed"], r["spread"]) == pytest.approx((1 / 6, 1 / 3, 1 / 6), abs=1e-12)
        assert (r["unjudged"], r["outside"]) == pytest.approx((1 / 3, 3 / 4), abs=1e-12)
        assert r["judged"] == pytest.approx(judged, abs=1e-12)
    # Per topic, A's lists: q1 1/2 -> 1 (outside 1), q2 0 -> 0 (outside 1/2), q3 unranked: 0 -> 0, outside null.
    with pytest.warns(SqlmetricsWarning):
        per_topic = holes(QRELS, RUNS, ["P@2"], depth=2, per_query=True).to_pylist()
    assert [(r["query_id"], r["value"], r["condensed"], r["outside"]) for r in per_topic if r["run"] == "A"] == [
        ("q1", 0.5, 1.0, 1.0), ("q2", 0.0, 0.0, 0.5), ("q3", 0.0, 0.0, None)]


@pytest.mark.parametrize("measure, says", [
    ("prefs_simp", "reads its preferences, not a ranked list, so it has no condensed value"),
    ("P(judged_only=True)@10", "is already judged only; give it without judged_only=True"),
    ("nDCG@", "nDCG@")])
def test_holes_refuses_a_measure_without_a_condensed_value(measure, says):
    with pytest.raises(SqlmetricsError, match=re.escape(says)):
        holes(QRELS, RUNS, [measure])


@pytest.mark.parametrize("depth", [0, -3, 2.5, True, None])
def test_depth_is_a_whole_number_of_at_least_one(depth):
    with pytest.raises(SqlmetricsError, match=r"depth=.* must be a whole number of at least 1"):
        pool(RUNS, depth)


def test_hostile_runs_are_refused_naming_the_row_and_column():
    # One repeated document, and one run with a spaced, quoted, semicolon column name mapped by columns=.
    odd = pa.table({'q; "x"': ["q1", "q1"], "doc id": ["d1", "d1"], "score": [1e308, -1e308]})
    with pytest.raises(SqlmetricsError, match=r"run 'odd'.*'d1' appears more than once for query 'q1' \(rows 1 and "
                                              r"2\)\. Remove the repeat"):
        pool({"odd": odd}, 1, columns={"query_id": 'q; "x"', "doc_id": "doc id"})


def test_command_line_writes_the_documents_to_judge_as_qrels(files, tmp_path, capsys):
    out = tmp_path / "next.qrels"
    assert main(["pool", files["A"], files["B"], "--depth", "2", "--qrels", files["qrels"], "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "q1 0 d3 -1\nq1 0 d9 -1\nq2 0 dé -1\nq2 0 d6 -1\n"
    assert main(["pool", files["A"], "--depth", "-1"]) == 2
    assert "--depth -1 must be a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.slow  # one pool() call per case (~40 ms each)
@pytest.mark.parametrize("table, says", [
    (pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", None], "score": [1.0, 2.0]}),
     r"run 'x' \(Arrow table\), row 2: the query id or document id is empty"),
    (pa.table({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, float("nan")]}),
     r"run 'x' \(Arrow table\), row 2: column 'score' holds 'nan', which is not a finite number"),
    (pa.table({"query_id": ["q1"], "doc_id": ["d1"], "score": ["high"]}),
     r"run 'x' \(Arrow table\), row 1: column 'score' holds 'high'"),
    (pa.table({"query_id": ["q1"], "doc_id": ["d1"]}), r"run 'x' \(Arrow table\): no column for 'score'"),
    (pa.table({"query_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string()),
               "score": pa.array([], pa.float64())}),
     r"run 'x' \(Arrow table\): has no rows, not one ranked document.*leave it out of the pool"),
])
def test_hostile_runs_name_the_run_row_and_column(table, says):
    with pytest.raises(SqlmetricsError, match=says):
        pool({"ok": {"q1": {"d1": 1.0}}, "x": table}, 3)


@pytest.mark.slow  # a pool and holes() of one run
def test_one_run_pools_alone_and_falls_wholly_outside_the_others():
    # A alone at depth 3: q1 d1, d3, d2 (the tie by id descending), q2 dé, d5. No other run: outside is 1.
    got = pool({"A": RUNS["A"]}, 3)
    assert [(r["query_id"], r["doc_id"], r["best_rank"]) for r in got.docs.to_pylist()] == [
        ("q1", "d1", 1), ("q1", "d3", 2), ("q1", "d2", 3), ("q2", "dé", 1), ("q2", "d5", 2)]
    with pytest.warns(SqlmetricsWarning):
        row = holes(QRELS, {"A": RUNS["A"]}, ["AP"], 3).to_pylist()[0]
    assert row["outside"] == 1.0


@pytest.mark.slow  # DuckDB runs the rendered statement over tables
def test_rendered_pool_runs_on_duckdb_as_pool_does(files):
    import duckdb

    con = duckdb.connect()
    for name in ("A", "B"):
        con.execute(f"CREATE TABLE {name} AS SELECT column0 AS query_id, column2 AS doc_id, column4 AS score "
                    f"FROM read_csv('{files[name]}', delim=' ', header=false, all_varchar=true)")
    con.execute("CREATE TABLE judged (query_id VARCHAR, doc_id VARCHAR, grade INTEGER)")
    con.executemany("INSERT INTO judged VALUES (?, ?, ?)",
                    [(q, d, g) for q, ds in QRELS.items() for d, g in ds.items()])
    names = ("query_id", "doc_id", "runs", "n_runs", "best_rank")
    for qrels in (None, files["qrels"]):
        sql = render_pool(["A", "B"], 2, qrels=qrels and "judged", columns={"relevance": "grade"})
        expected = pool({"A": files["A"], "B": files["B"]}, 2, qrels=qrels).docs.select(list(names)).to_pylist()
        got = [dict(zip(names, r)) for r in con.sql(sql).fetchall()]
        assert sorted(got, key=lambda r: (r["query_id"], r["doc_id"])) == \
            sorted(expected, key=lambda r: (r["query_id"], r["doc_id"]))
        assert len(got) == (4 if qrels else 7)
    assert 'COLLATE "C"' in render_pool(["s.A", "s.B"], 2, "postgres")
    with pytest.raises(SqlmetricsError, match="dialect='sqlite' has no array aggregate"):
        render_pool(["A", "B"], 2, "sqlite")


@pytest.mark.slow  # the command line, in process: its formats and refusals
def test_command_line_formats(files, tmp_path, capsys):
    runs = [files["A"], files["B"]]
    assert main(["pool", *runs, "--depth", "2", "--qrels", files["qrels"]]) == 0
    out = capsys.readouterr().out
    assert "q2        dé              1       1  A" in out and "q3             0       0         0" in out
    assert main(["pool", *runs, "--depth", "2", "-f", "csv"]) == 0
    assert '"q2","d5",1,2,"A,B"' in capsys.readouterr().out  # A ranks d5 2nd, B 1st
    assert main(["pool", *runs, "--depth", "2", "--qrels", files["qrels"], "--topics",
                 "-o", str(tmp_path / "t.json")]) == 0
    assert '"to_judge": 2' in (tmp_path / "t.json").read_text()
    assert main(["pool", *runs, "--depth", "2", "--topics"]) == 2
    assert "--topics writes the counts' table" in capsys.readouterr().err
    assert main(["holes", files["qrels"], *runs, "-m", "P@2", "--depth", "2", "-f", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and '"condensed": 0.3333333333333333' in lines[0]
    assert main(["pool", "s.A", "s.B", "--depth", "2", "--render", "duckdb"]) == 0
    assert "ROW_NUMBER() OVER" in capsys.readouterr().out
    assert main(["pool", "A", "B", "--depth", "2", "--render", "sqlite"]) == 2
    assert "--render sqlite: not a dialect with an array aggregate" in capsys.readouterr().err


@pytest.mark.slow  # a pool of a Parquet run
def test_a_spaced_id_is_refused_in_a_qrels_file_and_kept_in_a_table(tmp_path, capsys):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"query_id": ["q 1"], "doc_id": ["d1"], "score": [1.0]}), tmp_path / "r.parquet")
    assert main(["pool", str(tmp_path / "r.parquet"), "--depth", "1", "-f", "qrels"]) == 2
    assert "query 'q 1', document 'd1': an id with a space" in capsys.readouterr().err
    assert main(["pool", str(tmp_path / "r.parquet"), "--depth", "1", "-f", "jsonl"]) == 0
    assert '"query_id": "q 1"' in capsys.readouterr().out
