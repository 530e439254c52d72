"""Every input form gives the same, hand-computed numbers.

The collection (worked by hand):
  q1 judgments d1=1, d2=0, d3=2, d4=-1; run d1 .9, d5 .8, d3 .8, d2 .1
     -> ranking d1 (rel), d5 (unjudged; wins the tie with d3: ids descending), d3 (rel), d2
     -> P@2 = 1/2, AP = (1/1 + 2/3) / 2 = 5/6
  q2 judgments a=1, b=1; run b 1.0, c 0.5 -> P@2 = 1/2, AP = (1/1) / 2 = 1/2
  q3 judgments x=0 (no relevant document), not in the run -> 0, 0
  q4 in the run only: never averaged
  mean over the qrels queries: P@2 = 1/3, AP = (5/6 + 1/2) / 3 = 4/9
"""
import gzip
import json
import math
import warnings

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError

QRELS = [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q1", "d4", -1), ("q2", "a", 1), ("q2", "b", 1),
         ("q3", "x", 0)]
RUN = [("q1", "d1", 0.9), ("q1", "d5", 0.8), ("q1", "d3", 0.8), ("q1", "d2", 0.1), ("q2", "b", 1.0),
       ("q2", "c", 0.5), ("q4", "z", 1.0)]
MEASURES = ["P@2", "AP"]
EXPECTED = {"P@2": 1 / 3, "AP": 4 / 9}
PER_QUERY = {"q1": {"P@2": 0.5, "AP": 5 / 6}, "q2": {"P@2": 0.5, "AP": 0.5}, "q3": {"P@2": 0.0, "AP": 0.0}}


def trec_qrels_text():
    return "".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS)


def trec_run_text():
    # Mixed whitespace and trailing junk, as trec_eval tolerates.
    return "".join(f"{q}\tQ0  {d} {i} {s}\ttag extra words\n" for i, (q, d, s) in enumerate(RUN, 1))


def qrels_table():
    q, d, r = zip(*QRELS)
    return pa.table({"query_id": list(q), "doc_id": list(d), "relevance": list(r)})


def run_table():
    q, d, s = zip(*RUN)
    return pa.table({"query_id": list(q), "doc_id": list(d), "score": list(s)})


def check(res):
    assert res.aggregate == pytest.approx(EXPECTED, abs=1e-12)
    rows = {r["query_id"]: r for r in res.per_query.to_pylist()}
    assert sorted(rows) == sorted(PER_QUERY)
    for qid, values in PER_QUERY.items():
        assert {m: rows[qid][m] for m in MEASURES} == pytest.approx(values, abs=1e-12), qid


def evaluate(qrels, run, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.SqlmetricsWarning)
        return sqlmetrics.evaluate(qrels, run, MEASURES, **kw)


def test_trec_text(tmp_path):
    (tmp_path / "qrels.txt").write_text(trec_qrels_text())
    (tmp_path / "run.txt").write_text(trec_run_text())
    check(evaluate(tmp_path / "qrels.txt", str(tmp_path / "run.txt")))


def test_trec_gzip(tmp_path):
    with gzip.open(tmp_path / "qrels.gz", "wt") as f:
        f.write(trec_qrels_text())
    with gzip.open(tmp_path / "run.trec.gz", "wt") as f:
        f.write(trec_run_text())
    check(evaluate(tmp_path / "qrels.gz", tmp_path / "run.trec.gz"))


def test_trec_blank_lines_are_skipped(tmp_path):
    (tmp_path / "qrels").write_text("\n" + trec_qrels_text().replace("\n", "\n\n", 2))
    (tmp_path / "run").write_text(trec_run_text() + "\n   \n")
    check(evaluate(tmp_path / "qrels", tmp_path / "run"))


def test_trec_carriage_returns_are_whitespace(tmp_path, monkeypatch):
    """CRLF lines among LF ones (DuckDB's line reader refused the mix), and a lone \\r inside a line, which DuckDB
    would end it at: whitespace within the line to trec_eval (the fields after the 6th are ignored). Read from a
    copy, removed after the evaluation."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "qrels").write_bytes(trec_qrels_text().replace("\n", "\r\n", 3).encode())
    lines = trec_run_text().replace("\n", "\r\n", 2).splitlines(keepends=True)
    lines[4] = lines[4].replace("\n", "\rq2 Q0 x 1 9.0 t\n")  # q2's b, then words of the same line
    (tmp_path / "run").write_bytes("".join(lines).encode())
    check(evaluate(tmp_path / "qrels", tmp_path / "run"))
    assert not list((tmp_path / "tmp").glob("sqlmetrics-input-*"))


def test_csv_tsv_with_mapped_and_recognised_columns(tmp_path):
    pd.DataFrame(QRELS, columns=["qid", "docno", "label"]).to_csv(tmp_path / "qrels.csv", index=False)
    pd.DataFrame(RUN, columns=["q", "doc", "bm25"]).to_csv(tmp_path / "run.tsv", sep="\t", index=False)
    # columns= maps both tables wherever the role exists; qrels_columns= overrides it for the qrels.
    check(evaluate(tmp_path / "qrels.csv", tmp_path / "run.tsv", columns={"query_id": "q", "score": "bm25"},
                   qrels_columns={"query_id": "qid"}))
    with pytest.raises(SqlmetricsError, match="'q', which is not a column .*qrels_columns= overrides it"):
        evaluate(tmp_path / "qrels.csv", tmp_path / "run.tsv", columns={"query_id": "q", "score": "bm25"})


def test_parquet_and_jsonl(tmp_path):
    pq.write_table(qrels_table(), tmp_path / "qrels.parquet")
    with open(tmp_path / "run.jsonl", "w") as f:
        for q, d, s in RUN:
            f.write(json.dumps({"query_id": q, "doc_id": d, "score": s}) + "\n")
    check(evaluate(tmp_path / "qrels.parquet", tmp_path / "run.jsonl"))


def test_arrow_pandas_polars():
    check(evaluate(qrels_table(), run_table()))
    check(evaluate(qrels_table().to_pandas(), run_table().to_pandas()))
    check(evaluate(pl.from_arrow(qrels_table()), pl.from_arrow(run_table())))


def test_dicts_ranx_shape():
    qrels, run = {}, {}
    for q, d, r in QRELS:
        qrels.setdefault(q, {})[d] = r
    for q, d, s in RUN:
        run.setdefault(q, {})[d] = s
    check(evaluate(qrels, run))


def test_duckdb_file_and_relation(tmp_path):
    path = tmp_path / "eval.duckdb"
    con = duckdb.connect(str(path))
    con.register("q", qrels_table())
    con.register("r", run_table())
    con.execute("CREATE TABLE qrels AS SELECT * FROM q")
    con.execute("CREATE VIEW run_bm25 AS SELECT * FROM (SELECT * FROM r)")
    con.execute("CREATE TABLE run_copy AS SELECT * FROM r")
    check(evaluate(con.table("qrels"), con.table("run_copy")))
    con.close()
    check(evaluate(f"{path}:qrels", f"{path}:run_copy"))


def test_integer_ids_compare_as_decimal_text():
    qrels = pa.table({"query_id": [1, 1], "doc_id": [10, 9], "relevance": [1, 0]})
    run = pa.table({"query_id": ["1", "1"], "doc_id": ["9", "10"], "score": [1.0, 1.0]})
    # Tie: ids descending byte-wise puts "9" before "10", so the relevant "10" is second.
    res = sqlmetrics.evaluate(qrels, run, ["RR"])
    assert res.aggregate["RR"] == 0.5


def test_several_runs_in_one_query():
    other = pa.table({"query_id": ["q1", "q2"], "doc_id": ["d3", "a"], "score": [1.0, 1.0]})
    res = evaluate(qrels_table(), {"base": run_table(), "other": other})
    assert res.aggregate["base"] == pytest.approx(EXPECTED)
    # other: q1 d3 relevant at 1 -> P@2 1/2, AP 1/2; q2 a at 1 -> 1/2, 1/2; q3 -> 0
    assert res.aggregate["other"] == pytest.approx({"P@2": 1 / 3, "AP": 1 / 3})
    assert res.per_query.column_names == ["run", "query_id", "P@2", "AP"]
    assert res.per_query.num_rows == 6


# The fast suite runs the defaults; the other options (0.5 s each), the full suite.
@pytest.mark.parametrize("options", [{}, pytest.param({"queries": "intersection"}, marks=pytest.mark.slow),
                                     pytest.param({"ties": "rank"}, marks=pytest.mark.slow)])
def test_several_runs_give_each_run_its_values_alone(options):
    """Several runs are evaluated one after the other (one statement per run): each run's rows are the ones it
    gets alone, bit for bit, whatever its column types, ordered by run name then query; a measure's own
    judged_only (a second statement) and a fused run included."""
    ints = pa.table({"query_id": ["q1", "q1", "q2", "q9"], "doc_id": ["d3", "d1", "a", "z"],
                     "score": pa.array([3, 2, 5, 1], pa.int32()), "rank": [1, 2, 1, 1]})
    floats = pa.table({"query_id": ["q2", "q1", "q1"], "doc_id": ["b", "d2", "d4"],
                       "score": pa.array([0.5, 0.25, 0.125], pa.float32()), "rank": [1, 1, 2]})
    runs = {"zeta": run_table().append_column("rank", pa.array([1, 2, 3, 4, 1, 2, 1])), "alpha": ints, "mid": floats}
    measures = ["P@2", "AP", "AP(judged_only=True)", "nDCG@3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = sqlmetrics.evaluate(qrels_table(), runs, measures, **options)
        alone = {name: sqlmetrics.evaluate(qrels_table(), run, measures, **options) for name, run in runs.items()}
    rows = together.per_query.to_pylist()
    assert [r["run"] for r in rows] == sorted(r["run"] for r in rows)
    for name, res in alone.items():
        assert [{k: v for k, v in r.items() if k != "run"} for r in rows if r["run"] == name] == \
            res.per_query.to_pylist()
        assert together.aggregate[name] == res.aggregate
    if "ties" not in options:  # fusion reads scores
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fused = sqlmetrics.evaluate(qrels_table(), runs, measures, fuse={"rrf": {"method": "rrf"}}, **options)
        assert [r for r in fused.per_query.to_pylist() if r["run"] != "rrf"] == rows
        assert {r["run"] for r in fused.per_query.to_pylist()} == {*runs, "rrf"}


def test_queries_intersection_and_warnings():
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="no ranking for 1 qrels query .*'q3'"):
        sqlmetrics.evaluate(qrels_table(), run_table(), MEASURES)
    with pytest.warns(sqlmetrics.SqlmetricsWarning, match="1 query with no judgments .*'q4'"):
        res = sqlmetrics.evaluate(qrels_table(), run_table(), MEASURES, queries="intersection")
    assert res.aggregate == pytest.approx({"P@2": 0.5, "AP": (5 / 6 + 0.5) / 2})


def test_duplicates_policies():
    dup = pa.concat_tables([run_table(), pa.table({"query_id": ["q1"], "doc_id": ["d3"], "score": [0.95]})])
    with pytest.raises(sqlmetrics.SqlmetricsError, match="'d3' appears more than once for query 'q1' .*rows 3 and 8"):
        evaluate(qrels_table(), dup)
    # max keeps d3 at .95 -> q1 ranking d3, d1, ... -> P@2 1, AP 1
    assert evaluate(qrels_table(), dup, duplicates="max").aggregate["AP"] == pytest.approx((1 + 0.5) / 3)
    check(evaluate(qrels_table(), dup, duplicates="first"))


def test_measure_keys_are_strings_as_passed():
    res = sqlmetrics.evaluate(
        qrels_table(), run_table(), ["map", "AP", "P_2", "precision@2"], queries="intersection")
    assert list(res.aggregate) == ["map", "AP", "P_2", "precision@2"]
    assert res.aggregate["map"] == res.aggregate["AP"]
    assert res.aggregate["P_2"] == res.aggregate["precision@2"]


@pytest.mark.slow  # every measure of the catalogue
def test_a_judged_query_missing_from_the_run_scores_the_empty_value_for_every_measure():
    from sqlmetrics.catalogue import measures

    # (The diversity measures read subtopic qrels: tests/test_diversity.py has their query missing from the run.)
    catalogue = {name: m for name, m in measures().items() if m.rows != "subtopics"}
    wanted = [f"{m.name}@5" if m.at and m.params[m.at].required and m.params[m.at].type == "cutoff"
              else f"{m.name}@0.5" if m.at and m.params[m.at].required else m.name for m in catalogue.values()
              if m.aggregate != "once"  # a measure of the whole run has no per-query empty value (test_recsys.py)
              and m.rows not in ("verdicts", "embeddings", "nuggets")  # the query's tables (test_rag.py, test_nuggets.py)
              and m.rows != "items"]  # item similarities read history= or items= (test_recsys.py)
    qrels = pa.table({"query_id": ["q1", "q2", "q2"], "doc_id": ["d1", "d1", "d2"], "relevance": [1, 1, 0]})
    run = pa.table({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]})
    with pytest.warns(sqlmetrics.SqlmetricsWarning):
        res = sqlmetrics.evaluate(qrels, run, wanted)
    q2 = [r for r in res.per_query.to_pylist() if r["query_id"] == "q2"][0]
    # 0 for most; undefined (NULL) for the first relevant rank, the grade at a rank, Accuracy and the user's ROC
    # area (no pair to compare), 1 for FallOut (torchmetrics: no non-relevant document retrieved). NumRel and
    # PrefsNumPrefsPoss count judgments (q2: one relevant document, one preference d1 > d2), and IDCG is the
    # judgments' ideal DCG (d1's gain 1 at rank 1), as trec_eval 10.0's ideal_dcg of an empty ranking.
    # YAAP: trec_eval 10.0 (the default) evaluates an empty ranking there, ln(1 / (1 + R)) with R = 1.
    by_hand = {"FirstRank": None, "Grade": None, "Accuracy": None, "UserAUC": None, "FallOut": 1.0,
               "YAAP": math.log(1 / 2)}
    expected = {w: by_hand.get(w.split("@")[0], 0.0) for w in wanted} | {"NumQ": 1.0, "NumRel": 1.0,
                                                                         "PrefsNumPrefsPoss": 1.0, "IDCG": 1.0}
    assert q2 == {"query_id": "q2", **expected}


@pytest.mark.parametrize("late_line", [
    "q2 Q0 c 6 0.5 t",  # clean: the fast path reads the whole file
    "q2  Q0 c 6 0.5 t",  # a double space far down: the general path
    "q2 Q0 c\t6 0.5 t junk",  # a tab merging two fields, balanced by trailing junk: the general path
    "q2 Q0 c 6 0.5 t and trailing words",  # extra fields: the general path, which ignores them
])
def test_trec_fast_path_falls_back_on_any_irregular_line(tmp_path, late_line):
    # Enough regular lines that the irregular one is past the sniffed head of the file.
    filler = "".join(f"q9 Q0 f{i} {i} 0.1 t\n" for i in range(20000))
    head = "".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(RUN[:4], 1))
    (tmp_path / "run").write_text(head + filler + late_line + "\n")
    (tmp_path / "qrels").write_text(trec_qrels_text())
    res = evaluate(tmp_path / "qrels", tmp_path / "run")
    rows = {r["query_id"]: r for r in res.per_query.to_pylist()}
    assert rows["q1"]["AP"] == pytest.approx(5 / 6) and rows["q2"]["AP"] == 0.0  # c is not judged


@pytest.mark.parametrize("compressed", [False, True])
def test_trec_a_tab_inside_a_space_separated_field_splits_it(tmp_path, compressed):
    """A tab is whitespace in TREC: `d2<TAB>x 9 0.5 t` is document d2, rank x, score 9, so d2 ranks first.
    An uncompressed file is searched for a tab as a whole, a gzip'd one line by line: both read it so."""
    filler = "".join(f"q9 Q0 f{i} {i} 0.1 t\n" for i in range(20000))  # past the sniffed head of the file
    text = ("q1 Q0 d1 1 3.0 t\n" + filler + "q1 Q0 d2\tx 9 0.5 t\n").encode()
    (tmp_path / "run").write_bytes(gzip.compress(text) if compressed else text)
    (tmp_path / "qrels").write_text("q1 0 d1 0\nq1 0 d2 1\n")
    rows = {r["query_id"]: r for r in evaluate(tmp_path / "qrels", tmp_path / "run").per_query.to_pylist()}
    # By hand: q1's one relevant document, d2, at rank 1: AP 1. Split on spaces alone, `d2<TAB>x` would be
    # an unjudged document and d2 never retrieved: AP 0.
    assert rows["q1"]["AP"] == 1.0


def test_one_named_run_is_labelled_like_several():
    res = evaluate(qrels_table(), {"base": run_table()})
    assert res.aggregate == {"base": pytest.approx(EXPECTED)}
    assert res.per_query.column_names == ["run", "query_id", "P@2", "AP"]
    assert set(res.per_query.column("run").to_pylist()) == {"base"}


def test_recommender_and_log_column_names_are_recognised(tmp_path):
    """user_id / item_id / rating / prediction (a recommender's tables) and session_id or request_id with position
    (a search log's) play their roles without a mapping."""
    (tmp_path / "truth.csv").write_text("user_id,item_id,rating\nu1,i1,5\nu1,i2,0\n")
    (tmp_path / "reco.csv").write_text("user_id,item_id,prediction\nu1,i2,0.9\nu1,i1,0.5\n")
    got = sqlmetrics.evaluate(tmp_path / "truth.csv", tmp_path / "reco.csv", ["P@1", "RR"]).aggregate
    assert got == {"P@1": 0.0, "RR": 0.5}
    for key in ("session_id", "request_id"):
        (tmp_path / "log.csv").write_text(f"{key},item_id,position,clicked\ns1,i1,1,0\ns1,i2,2,1\n")
        assert sqlmetrics.evaluate(None, tmp_path / "log.csv", ["RR"], label="clicked", ties="rank").aggregate == \
            {"RR": 0.5}


@pytest.mark.parametrize("lines", [
    ['{"qid": "q1", "doc_id": ["d2", "d1", "d3"]}', '{"qid": "q2", "doc_id": ["d4"]}'],  # the list order ranks
    ['{"qid": "q1", "doc_id": ["d3", "d1", "d2"], "score": [0.1, 0.8, 0.9]}',
     '{"qid": "q2", "doc_id": ["d4"], "score": [1.0]}'],
])
def test_a_json_lines_run_of_one_list_per_query_equals_its_parquet(tmp_path, lines):
    """Logs keep a list per query mostly in JSON Lines: read as Parquet's and Arrow's lists are."""
    (tmp_path / "run.jsonl").write_text("\n".join(lines) + "\n")
    rows = [json.loads(line) for line in lines]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "run.parquet")
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d4": 1}}
    measures = ["RR", "P@1", "AP", "num_ret"]
    got = sqlmetrics.evaluate(qrels, tmp_path / "run.jsonl", measures)
    assert got.aggregate == sqlmetrics.evaluate(qrels, tmp_path / "run.parquet", measures).aggregate
    assert got.aggregate["num_ret"] == 4
