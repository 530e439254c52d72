"""Fusion of runs (sql/fusion/, sqlmetrics.fuse): every template's hand-computed examples, every method x
normalisation against ranx's fuse, the outputs, and bad input."""
from __future__ import annotations

import os
import random
import shutil
from fractions import Fraction

import duckdb
import pytest

import sqlmetrics
import sqlmetrics.dialects
from sqlmetrics.catalogue.fusion import DEFAULT_NORM, fusion_methods, normalisations
from sqlmetrics.cli.main import main
from sqlmetrics.errors import SqlmetricsError

from conftest import mariadb_connection, postgres_connection


def _dicts(rows) -> dict:
    out: dict = {}
    for q, d, s in rows:
        out.setdefault(q, {})[d] = s
    return out


def _ranked(table) -> list:
    """[(query, doc, score)] in the fused run's order."""
    t = table.to_pydict()
    return list(zip(t["query_id"], t["doc_id"], t["score"]))


def _examples():
    return [pytest.param(m, e, id=f"{m.name}:{e.line}") for m in fusion_methods().values() for e in m.examples]


@pytest.mark.parametrize("method, example", _examples())
def test_examples(method, example):
    """Every `-- example:` line of every fusion template: the hand-computed fused run, values and order."""
    options = dict(example.options)
    norm = options.pop("norm", DEFAULT_NORM)
    got = _ranked(sqlmetrics.fuse([_dicts(r) for r in example.runs], method.name, norm=norm, **options))
    where = f"{method.path}:{example.line}"
    assert [(q, d) for q, d, _ in got] == [(q, d) for q, d, _ in example.fused], f"{where}: ranking {got}"
    for (_, _, value), (_, _, want) in zip(got, example.fused):
        assert abs(value - float(Fraction(want) if "/" in want else float(want))) <= 1e-9, f"{where}: {got}"


def test_every_method_is_in_the_catalogue_with_a_ranx_alias():
    names = {a.text for m in fusion_methods().values() for a in m.aliases if a.tool == "ranx"}
    assert {"rrf", "sum", "mnz", "max", "min", "med", "anz", "wsum", "isr", "log_isr", "bordafuse", "rbc"} <= names
    assert set(normalisations()) == {"none", "min-max", "max", "sum", "zmuv", "rank"}


# ---------------------------------------------------------------------------------------------- ranx, the oracle

def _random_runs(seed: int, n_runs: int = 3) -> list:
    """Runs without ties (distinct scores in each list), over a shared pool of documents: most documents
    are missing from some runs, some queries have one-document lists."""
    rng = random.Random(seed)
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in range(6):
            docs = rng.sample(range(25), rng.choice([1, 3, 8, 15]))
            scores = rng.sample(range(1, 10_000), len(docs))
            run[f"q{q}"] = {f"d{d}": s / 97 - 20 for d, s in zip(docs, scores)}
        runs.append(run)
    return runs


def _ranx_name(method) -> str:
    return next(a.text for a in method.aliases if a.tool == "ranx")


def _params(method, n_runs: int) -> dict:
    return {"WSum": {"weights": [0.5, 0.3, 0.2][:n_runs]}, "RRF": {"k": 7}, "RBC": {"phi": 0.7}}.get(method.name, {})


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["none", "min-max", "max", "sum", "zmuv", "rank"])
@pytest.mark.parametrize("method", sorted(fusion_methods()))
def test_equals_ranx(method, norm):
    """Scores to 1e-9, and the ranking, on tie-free runs with documents missing from some of them."""
    import ranx  # a test dependency, imported where it is used: its numba start-up is slow
    m = fusion_methods()[method]
    for seed, n_runs in ((1, 2), (2, 3)):
        runs = _random_runs(seed, n_runs)
        params = _params(m, n_runs)
        want = ranx.fuse([ranx.Run(r) for r in runs], norm=None if norm == "none" else norm,
                         method=_ranx_name(m), params=params).to_dict()
        got = _ranked(sqlmetrics.fuse(runs, method, norm=norm, **params))
        assert {(q, d) for q, d, _ in got} == {(q, d) for q in want for d in want[q]}
        for q, d, score in got:
            assert abs(score - want[q][d]) <= 1e-9 * max(1, abs(want[q][d])), (q, d, score, want[q][d])
        # The ranking: ranx's scores in our order never increase, and equal ones are by document id descending.
        for q in want:
            ours = [(want[q][d], d) for qq, d, _ in got if qq == q]
            by_doc = sorted(ours, key=lambda x: x[1], reverse=True)
            assert ours == sorted(by_doc, key=lambda x: -round(x[0], 9)), q


# ---------------------------------------------------------------------------------------------- outputs

def test_outputs_agree(tmp_path):
    """TREC text, Parquet, CSV and a DuckDB table hold the returned run."""
    runs = _random_runs(5, 2)
    want = _ranked(sqlmetrics.fuse(runs, "rrf"))
    for name in ("fused.run", "fused.parquet", "fused.csv"):
        assert sqlmetrics.fuse(runs, "rrf", output=tmp_path / name) is None
    sqlmetrics.fuse(runs, "rrf", output=f"{tmp_path}/f.duckdb:rrf")
    lines = [line.split() for line in (tmp_path / "fused.run").read_text().splitlines()]
    assert [(q, d, float(s)) for q, _, d, _, s, _ in lines] == want
    assert [int(r) for _, _, _, r, _, _ in lines[:3]] == [1, 2, 3] and {t for *_, t in lines} == {"fused"}
    con = duckdb.connect()
    for source in (f"'{tmp_path}/fused.parquet'", f"'{tmp_path}/fused.csv'"):
        assert con.sql(f"SELECT query_id, doc_id, score FROM {source}").fetchall() == want
    con.execute(f"ATTACH '{tmp_path}/f.duckdb' AS f (READ_ONLY)")
    assert con.sql("SELECT query_id, doc_id, score FROM f.rrf ORDER BY query_id, rank").fetchall() == want


def test_a_fused_run_is_evaluated_like_any_run():
    qrels = {"q1": {"d1": 1, "d2": 0, "d4": 2}}
    fused = sqlmetrics.fuse([{"q1": {"d1": 3, "d2": 2, "d3": 1}}, {"q1": {"d4": 2, "d2": 1}}], "rrf", k=1)
    # RRF(k=1): d2 5/6, d1 1/2, d4 1/3, d3 1/4: relevant at ranks 2 and 3, R = 2.
    assert sqlmetrics.evaluate(qrels, fused, ["AP"]).aggregate["AP"] == pytest.approx((1 / 2 + 2 / 3) / 2)


# ---------------------------------------------------------------------------------------------- bad input

RUNS = [{"q1": {"d1": 1.0, "d2": 0.5}}, {"q1": {"d2": 2.0}}]


@pytest.mark.parametrize("call, message", [
    (lambda: sqlmetrics.fuse(RUNS, "rff"), r"method='rff' is not a fusion method\. Did you mean 'RRF'\?"),
    (lambda: sqlmetrics.fuse(RUNS, "rrf", norm="minmax"), r"norm='minmax' is not a normalisation\. Did you mean 'min-max'\?"),
    (lambda: sqlmetrics.fuse(RUNS, "rrf", kk=3), r"RRF has no parameter 'kk'\. Did you mean 'k'\?"),
    (lambda: sqlmetrics.fuse(RUNS, "rrf", k=-1), r"RRF: k=-1 is not a positive number"),
    (lambda: sqlmetrics.fuse(RUNS, "rbc", phi=2), r"RBC: phi=2 is not a number between 0 and 1"),
    (lambda: sqlmetrics.fuse(RUNS[:1], "rrf"), r"two or more runs; 1 given"),
    (lambda: sqlmetrics.fuse(RUNS[0], "rrf"), r"two or more runs: a list of runs"),
    (lambda: sqlmetrics.fuse(RUNS, "wsum"), r"WSum needs the parameter 'weights'"),
    (lambda: sqlmetrics.fuse(RUNS, "wsum", weights=[1.0]), r"WSum: 1 weights for 2 runs"),
    (lambda: sqlmetrics.fuse(RUNS, "wsum", weights=[1, "a"]), r"WSum: weights= takes one number per run"),
    (lambda: sqlmetrics.fuse([{"q1": {"d1": 1.0}}, {"q1": {"d1": "x"}}], "sum"), r"run 'run2' \(dict\).*not a number"),
    # Finite scores whose sum is not: every such document tied at infinity (tests/test_fuzz_fusion.py)
    (lambda: sqlmetrics.fuse([{"q1": {"d1": 1e308}}, {"q1": {"d1": 1e308}}], "sum", norm="none"),
     r"fuse: the fused score of document 'd1' for query 'q1' overflows a double.*norm='min-max'"),
])
def test_bad_input(call, message):
    with pytest.raises(SqlmetricsError, match=message):
        call()


def test_a_bad_output_leaves_nothing(tmp_path):
    with pytest.raises(SqlmetricsError, match="folder"):
        sqlmetrics.fuse(RUNS, "rrf", output=tmp_path / "missing" / "fused.run")
    with pytest.raises(SqlmetricsError, match="not a number"):
        sqlmetrics.fuse([RUNS[0], {"q1": {"d1": "x"}}], "rrf", output=tmp_path / "fused.run")
    # TREC text splits its lines on whitespace: an id or a tag holding some cannot be written there
    spaced = [RUNS[0], {"q1": {"d 2": 2.0}}]
    with pytest.raises(SqlmetricsError, match="TREC text cannot hold the id 'd 2'"):
        sqlmetrics.fuse(spaced, "rrf", output=tmp_path / "fused.run")
    with pytest.raises(SqlmetricsError, match="tag='my run'"):
        sqlmetrics.fuse(RUNS, "rrf", output=tmp_path / "fused.run", tag="my run")
    assert list(tmp_path.iterdir()) == []
    sqlmetrics.fuse(spaced, "rrf", output=tmp_path / "fused.parquet")  # which Parquet holds as it is
    assert "d 2" in duckdb.sql(f"SELECT doc_id FROM '{tmp_path}/fused.parquet'").fetchnumpy()["doc_id"]


# ---------------------------------------------------------------------------------------------- strict headers

@pytest.fixture
def fusion_copy(tmp_path, monkeypatch):
    """The fusion catalogue read from a copy of sql/ that a test may edit (caches cleared before and after)."""
    from sqlmetrics.catalogue import fusion, templates

    folder = tmp_path / "sql"
    shutil.copytree(templates.sql_dir(), folder)
    monkeypatch.setattr(fusion, "sql_dir", lambda: folder)
    for cached in (templates.catalogue_folder, fusion.fusion_methods, fusion.fusion_columns):
        cached.cache_clear()
    yield folder / "fusion"
    for cached in (templates.catalogue_folder, fusion.fusion_methods, fusion.fusion_columns):
        cached.cache_clear()


@pytest.mark.parametrize("old, new, message", [
    ("-- param k: number = 60", "-- param k: numbr = 60", r"RRF\.sql:4: param k: unknown type 'numbr'"),
    ("-- param k: number = 60", "-- param k: number = -1", r"RRF\.sql:4: param k: the default '-1' is not a positive"),
    ("-- aliases: rrf (ranx)", "-- aliases: rrf (ranks)", r"RRF\.sql:5: alias 'rrf': unknown tool \(ranks\)"),
    ("-- fusion: RRF", "-- fusion: Rrf", r"RRF\.sql:1: the method is named 'Rrf' but the file 'RRF\.sql'"),
    ("-- reference:", "-- referenc:", r"RRF\.sql:3: unknown header key"),
    ("-- example: (k=1)", "-- example: (kk=1)", r"RRF\.sql:6: example: 'kk' is not a parameter of RRF"),
    ("d3 1/4\n", "d3 a quarter\n", r"RRF\.sql:6: example: each fused entry is `query doc number`"),
    ("d3 1/4\n", "d3 quarter\n", r"RRF\.sql:6: example: the fused value 'quarter'"),
    ("-- aliases: rrf (ranx)", "-- aliases: sum (ranx)", r"'sum' already names the fusion method"),
])
def test_a_bad_header_is_named(fusion_copy, old, new, message):
    from sqlmetrics.catalogue.fusion import fusion_methods

    path = fusion_copy / "RRF.sql"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SqlmetricsError, match=message):
        fusion_methods()


# ---------------------------------------------------------------------------------------------- command line

def test_command_line_fuse_and_sql(tmp_path, capsys):
    from sqlmetrics.demo import paths

    _, (bm25, rerank) = paths()
    assert main(["fuse", str(bm25), str(rerank), "--method", "rrf", "-p", "k=10", "--tag", "mix"]) == 0
    out = capsys.readouterr().out
    want = _ranked(sqlmetrics.fuse([str(bm25), str(rerank)], "RRF", k=10))
    lines = [line.split() for line in out.splitlines()]
    assert [(q, d, float(s)) for q, _, d, _, s, _ in lines] == want and lines[0][5] == "mix"
    assert main(["fuse", str(bm25), str(rerank), "--method", "wsum", "--weights", "0.3,0.7", "--norm", "zmuv",
                 "-o", str(tmp_path / "w.parquet")]) == 0
    got = duckdb.sql(f"SELECT query_id, doc_id, score FROM '{tmp_path}/w.parquet'").fetchall()
    assert got == _ranked(sqlmetrics.fuse([str(bm25), str(rerank)], "wsum", norm="zmuv", weights=[0.3, 0.7]))
    assert main(["fuse", str(bm25), "--method", "rrf"]) == 2
    assert "two or more runs; 1 given" in capsys.readouterr().err
    assert main(["fuse", str(bm25), str(rerank), "--method", "rrf", "-p", "k"]) == 2
    assert "-p/--param takes NAME=VALUE" in capsys.readouterr().err
    assert main(["sql", "--fuse", "rrf", "--fuse-run", "db.bm25", "--fuse-run", "dense", "--dialect", "snowflake"]) == 0
    out = capsys.readouterr().out
    assert "FROM db.bm25" in out and "UNION ALL" in out and out.rstrip().endswith(";")
    assert main(["sql", "--fuse", "rrf", "--fuse-run", "a", "--fuse-run", "b", "-m", "AP"]) == 2
    assert main(["sql"]) == 2


# ---------------------------------------------------------------------------------------------- other engines

def _collated_runs() -> list:
    """Ids that a collation would merge or reorder, with tied scores: 'D1' and 'd1' (one id where case does not
    count), 'x' and 'x ' (one id where trailing spaces pad), 'B' before 'a' in bytes but after it in a
    dictionary order, and 'ab' against 'a-c' (en_US ignores the hyphen)."""
    docs = ["D1", "d1", "x", "x ", "B", "a", "ab", "a-c"]
    return [{"q1": {d: float(1 + (i + k) % 3) for i, d in enumerate(docs)},
             "Q1": {d: float(2 - i % 2) for i, d in enumerate(reversed(docs))}} for k in range(3)]


def _rendered_equals_local(execute, create, dialect, norm, runs=None):
    runs = runs or _random_runs(7, 3)
    for i, run in enumerate(runs):
        create(f"fuse_run{i}", [(q, d, s) for q, docs in run.items() for d, s in docs.items()])
    for name, method in fusion_methods().items():
        params = _params(method, 3)
        sql = sqlmetrics.dialects.render_fusion([f"fuse_run{i}" for i in range(3)], name, norm=norm,
                                                dialect=dialect, **params)
        got = {(q, d): s for q, d, s in execute(sql)}
        want = {(q, d): s for q, d, s in _ranked(sqlmetrics.fuse(runs, name, norm=norm, **params))}
        assert got.keys() == want.keys(), name
        assert all(abs(got[k] - want[k]) <= 1e-9 * max(1, abs(want[k])) for k in want), name


@pytest.mark.slow  # SQLite over every fused value; test_command_line_fuse_and_sql renders the fast case
@pytest.mark.parametrize("norm", ["min-max", "rank"])
def test_rendered_for_sqlite(norm):
    import sqlite3

    con = sqlite3.connect(":memory:")

    def create(table, rows):
        con.execute(f"CREATE TABLE {table} (query_id TEXT, doc_id TEXT, score REAL)")
        con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)

    _rendered_equals_local(lambda sql: con.execute(sql).fetchall(), create, "sqlite", norm)
    for table in ("fuse_run0", "fuse_run1", "fuse_run2"):
        con.execute(f"DROP TABLE {table}")

    def nocase(table, rows):  # a NOCASE column keeps its collation through CAST
        con.execute(f"CREATE TABLE {table} (query_id TEXT COLLATE NOCASE, doc_id TEXT COLLATE NOCASE, score REAL)")
        con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)

    _rendered_equals_local(lambda sql: con.execute(sql).fetchall(), nocase, "sqlite", norm, _collated_runs())


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["zmuv", "sum"])
def test_rendered_for_postgres(norm):
    con = postgres_connection(autocommit=True)
    schema = f"sqlm_fuse_{os.getpid()}"
    con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    con.execute(f"CREATE SCHEMA {schema}")
    con.execute(f"SET search_path TO {schema}")
    try:
        def create(table, rows):
            con.execute(f"CREATE TABLE {table} (query_id TEXT, doc_id TEXT, score DOUBLE PRECISION)")
            with con.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)

        _rendered_equals_local(lambda sql: con.execute(sql).fetchall(), create, "postgres", norm)
        for table in ("fuse_run0", "fuse_run1", "fuse_run2"):
            con.execute(f"DROP TABLE {table}")
        # the test database's collation is ICU en-US (.ci/engines.sh): a dictionary order, 'a' < 'B'
        _rendered_equals_local(lambda sql: con.execute(sql).fetchall(), create, "postgres", norm, _collated_runs())
    finally:
        con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        con.close()


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["min-max", "rank"])
def test_rendered_for_mariadb(norm):
    """MariaDB's default collation ignores case and pads trailing spaces: the ids must compare as bytes."""
    con = mariadb_connection(autocommit=True)
    prefix = f"sqlm_fuse_{os.getpid()}_"
    tables = []

    def create(table, rows):
        tables.append(table)
        with con.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
            cur.execute(f"CREATE TABLE {prefix}{table} (query_id VARCHAR(20), doc_id VARCHAR(20), score DOUBLE)")
            cur.executemany(f"INSERT INTO {prefix}{table} VALUES (%s, %s, %s)", rows)

    def execute(sql):
        with con.cursor() as cur:
            cur.execute(sql.replace("fuse_run", prefix + "fuse_run"))
            return cur.fetchall()

    try:
        _rendered_equals_local(execute, create, "mysql", norm)
        _rendered_equals_local(execute, create, "mysql", norm, _collated_runs())
    finally:
        with con.cursor() as cur:
            for table in set(tables):
                cur.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
        con.close()


# ---------------------------------------------------------------------------------------------- evaluate(fuse=)

def test_evaluate_reports_fused_runs_beside_the_inputs():
    from sqlmetrics.demo import paths

    qrels, (bm25, rerank) = paths()
    runs = {"bm25": str(bm25), "rerank": str(rerank)}
    measures = ["AP", "nDCG@10", "P@5"]
    res = sqlmetrics.evaluate(qrels, runs, measures, fuse={"rrf": {"k": 20}, "mix": {"method": "wsum",
                                                                                     "weights": [0.2, 0.8]}})
    assert set(res.aggregate) == {"bm25", "rerank", "rrf", "mix"}
    alone = sqlmetrics.evaluate(qrels, runs, measures)
    for name in ("bm25", "rerank"):
        assert res.aggregate[name] == alone.aggregate[name]
    for name, fused in (("rrf", sqlmetrics.fuse(runs, "rrf", k=20)),
                        ("mix", sqlmetrics.fuse(runs, "wsum", weights=[0.2, 0.8]))):
        want = sqlmetrics.evaluate(qrels, fused, measures).aggregate
        assert res.aggregate[name] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("runs, fuse, message", [
    ({"a": RUNS[0], "b": RUNS[1]}, {"a": {"method": "rrf"}}, r"'a' is already the name of a run"),
    ({"a": RUNS[0], "b": RUNS[1]}, {"x": {}}, r"method='x' is not a fusion method"),
    ({"a": RUNS[0], "b": RUNS[1]}, {"rrf": 60}, r"fuse= takes \{name:"),
    (RUNS[0], {"rrf": {}}, r"fuse= fuses the scores of named runs"),
    ({"a": {"q1": {"d1": 1e308}}, "b": {"q1": {"d1": 1e308}}}, {"s": {"method": "mnz", "norm": "none"}},
     r"fuse= 's': the fused score of document 'd1' for query 'q1' overflows a double"),
])
def test_evaluate_fuse_bad_input(runs, fuse, message):
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.evaluate({"q1": {"d1": 1}}, runs, ["AP"], fuse=fuse)


# ---------------------------------------------------------------------------------------------- optimize_fusion

def _same_documents_runs(seed: int, n_runs: int):
    """Runs ranking the same documents per query (so that no weight setting leaves documents tied at 0, whose
    order ranx and sqlmetrics break differently), and graded qrels."""
    rng = random.Random(seed)
    qrels = {f"q{q}": {f"d{d}": rng.choice([0, 0, 1, 2]) for d in range(12)} for q in range(8)}
    for q in qrels:
        qrels[q]["d0"] = 1  # every query has a relevant document
    runs = [{q: {f"d{d}": s / 101 for d, s in zip(range(12), rng.sample(range(1, 5000), 12))} for q in qrels}
            for _ in range(n_runs)]
    return qrels, runs


@pytest.mark.slow
@pytest.mark.parametrize("method, n_runs, grid", [("wsum", 2, {}), ("wsum", 3, {"step": 0.25}), ("rrf", 2, {}),
                                                  ("rbc", 2, {"step": 0.1, "min_phi": 0.1})])
def test_optimize_fusion_picks_ranx_weights(method, n_runs, grid):
    import ranx  # a test dependency, imported where it is used: its numba start-up is slow
    qrels, runs = _same_documents_runs(11, n_runs)
    train = ["q0", "q1", "q2", "q3", "q4"]
    got = sqlmetrics.optimize_fusion(qrels, runs, method, norm="min-max", metric="ndcg@10", train=train, **grid)

    def subset(d, queries):
        return {q: d[q] for q in queries}

    held = [q for q in qrels if q not in train]
    want = ranx.optimize_fusion(ranx.Qrels(subset(qrels, train)), [ranx.Run(subset(r, train)) for r in runs],
                                norm="min-max", method=method, metric="ndcg@10", show_progress=False, **grid)
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in want.items()} == got["params"]
    fused = ranx.fuse([ranx.Run(subset(r, train)) for r in runs], norm="min-max", method=method, params=want)
    assert got["train"] == pytest.approx(ranx.evaluate(ranx.Qrels(subset(qrels, train)), fused, "ndcg@10"), abs=1e-9)
    fused = ranx.fuse([ranx.Run(subset(r, held)) for r in runs], norm="min-max", method=method, params=want)
    assert got["held_out"] == pytest.approx(ranx.evaluate(ranx.Qrels(subset(qrels, held)), fused, "ndcg@10"), abs=1e-9)
    assert len(got["trials"]) == {"wsum": 11 if n_runs == 2 else 15, "rrf": 10, "rbc": 10}[method]


def test_optimize_fusion_bad_input():
    qrels, runs = _same_documents_runs(3, 2)
    with pytest.raises(SqlmetricsError, match="CombSUM has no parameter to optimise"):
        sqlmetrics.optimize_fusion(qrels, runs, "sum")
    with pytest.raises(SqlmetricsError, match=r"train= names queries without judgments \(q99\)"):
        sqlmetrics.optimize_fusion(qrels, runs, "rrf", train=["q0", "q99"])
    with pytest.raises(SqlmetricsError, match="is not averaged over queries"):
        sqlmetrics.optimize_fusion(qrels, runs, "rrf", metric="GMAP")


@pytest.mark.parametrize("method, grid, message", [
    ("wsum", {"step": -0.1}, r"step=-0.1 must be a positive number"),
    ("wsum", {"step": 0}, r"step=0 must be a positive number"),  # once silently ranx's 0.1
    ("wsum", {"step": 2}, r"step=2 leaves no weights between 0 and 1"),
    ("rrf", {"min_k": 100, "max_k": 10}, r"min_k=100 is above max_k=10"),
    ("rrf", {"step": 2.5}, r"RRF's k is a whole number"),
    ("rbc", {"min_phi": 0.9, "max_phi": 0.5}, r"min_phi=0.9 is above max_phi=0.5"),
])
def test_optimize_fusion_names_a_bad_grid(method, grid, message):
    """Each said "train= is empty" before, though no train= was given."""
    qrels, runs = _same_documents_runs(3, 2)
    with pytest.raises(SqlmetricsError, match=message):
        sqlmetrics.optimize_fusion(qrels, runs, method, **grid)


def test_compare_tests_fused_runs_against_their_inputs():
    from sqlmetrics.demo import paths

    qrels, (bm25, rerank) = paths()
    runs = {"bm25": str(bm25), "rerank": str(rerank)}
    report = sqlmetrics.compare(qrels, runs, ["nDCG@10"], fuse={"rrf": {"k": 60}})
    assert report.runs == ["bm25", "rerank", "rrf"]
    fused = sqlmetrics.fuse(runs, "rrf", k=60)
    assert report.means["rrf"]["nDCG@10"] == pytest.approx(
        sqlmetrics.evaluate(qrels, fused, ["nDCG@10"]).aggregate["nDCG@10"], abs=1e-12)
    assert {(c.baseline, c.run) for c in report.comparisons} == {("bm25", "rerank"), ("bm25", "rrf"), ("rerank", "rrf")}


def test_fuse_refuses_what_it_cannot_take_naming_only_its_own_flags(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    (tmp_path / "dup.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n")
    for argv, says in (([str(tmp_path / "a.txt")] * 2 + ["-p", "k=60", "-p", "k=10"], "-p k= is given twice"),
                       ([str(tmp_path / "dup.txt"), str(tmp_path / "a.txt")], "appears more than once")):
        capsys.readouterr()
        code = main(["fuse", *argv, "--method", "rrf"])
        out, err = capsys.readouterr()
        assert code == 2 and says in err and "duplicates" not in err and out == "", err


def test_fusion_and_convert_keep_to_the_callers_resources(monkeypatch, tmp_path):
    """fuse(), optimize_fusion(), `sqlmetrics fuse` and `sqlmetrics convert` open their DuckDB database with the
    caller's memory_limit, threads and temp_directory (--memory-limit ...), as evaluate() does."""
    from sqlmetrics.cli import convert
    from sqlmetrics.local import evaluate as local_evaluate
    from sqlmetrics.local import fuse as local_fuse

    seen = []
    for module in (local_fuse, local_evaluate, convert):
        real = module.connect
        monkeypatch.setattr(module, "connect", lambda *a, real=real, **kw: seen.append((a, kw)) or real(*a, **kw))
    sqlmetrics.fuse(RUNS, "rrf", memory_limit="300MB", threads=1)
    sqlmetrics.optimize_fusion({"q1": {"d1": 1}}, RUNS, "rrf", min_k=10, max_k=20, step=10, memory_limit="250MB")
    for i, run in enumerate(RUNS):
        (tmp_path / f"r{i}.run").write_text("".join(f"q1 Q0 {d} 1 {s} r\n" for d, s in run["q1"].items()))
    assert main(["fuse", str(tmp_path / "r0.run"), str(tmp_path / "r1.run"), "--method", "rrf", "--threads", "1",
                 "-o", str(tmp_path / "fused.run")]) == 0
    assert main(["convert", "run", str(tmp_path / "r0.run"), "-o", str(tmp_path / "r0.parquet"), "--memory-limit",
                 "200MB", "--temp-directory", str(tmp_path)]) == 0
    assert seen == [(("300MB", 1, None), {}), (("250MB", None, None), {}), ((None, 1, None), {}),
                    ((), {"memory_limit": "200MB", "temp_directory": str(tmp_path)})]
