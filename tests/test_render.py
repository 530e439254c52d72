"""render(): one statement per dialect, names bound (never pasted), options and errors; golden SQL files.

Golden files (tests/golden/sql/<dialect>/<case>.sql) hold the rendered SQL of every dialect, so that a
change to a template or to the renderer shows up as a SQL diff to review. Regenerate them with
SQLMETRICS_REGEN_GOLDEN=1 python -m pytest tests/test_render.py
Dialects that cannot run here (BigQuery, Snowflake, Trino, Presto, Athena, Redshift, SQL Server, Oracle,
Databricks) are checked by these files and by re-parsing; the others also run in tests/test_engines.py.
"""
from __future__ import annotations

import argparse
import difflib
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

import sqlmetrics
from sqlmetrics.catalogue import measures
from sqlmetrics.cli import sql as sql_command
from sqlmetrics.cli.common import UsageError
from sqlmetrics.dialects import DIALECTS, dialect_info, render
from sqlmetrics.identifiers import column_identifier, table_reference
from sqlmetrics.errors import SqlmetricsError

GOLDEN = Path(__file__).parent / "golden" / "sql"
REGEN = os.environ.get("SQLMETRICS_REGEN_GOLDEN") == "1"
ALL = list(DIALECTS)
# Each quoting style in the fast suite; every dialect in the full one.
QUOTE_STYLES = ("duckdb", "mysql", "bigquery", "tsql", "snowflake", "clickhouse")
EVERY_DIALECT = [d if d in QUOTE_STYLES else pytest.param(d, marks=pytest.mark.slow) for d in ALL]


def statements(sql: str, dialect: str) -> list:
    return [s for s in sqlglot.parse(sql, read=dialect_info(dialect).sqlglot) if s is not None]


def _every_measure(rows: str = "ranking", ties: str = "docid_desc") -> list[str]:
    """Every measure (bare, or at a cutoff where it needs one) of `rows` ranked, preference, position or
    recommender rows, or of `rows` subtopics: the diversity measures, which read subtopic qrels only."""
    out = []
    for m in measures().values():
        if (m.rows == "subtopics") != (rows == "subtopics"):
            continue
        if m.rows == "ratings" and ties == "rank":
            continue  # the rating measures compare scores with grades: they refuse ties='rank' (test_recsys.py)
        if m.rows in ("verdicts", "embeddings", "nuggets"):
            continue  # verdicts, embeddings and nuggets have inputs of their own: the golden cases rag and nuggets
        at = m.params.get(m.at) if m.at else None
        out.append(f"{m.name}@{'10' if at.type == 'cutoff' else '0.5'}" if at is not None and at.required else m.name)
    return out


# ---------------------------------------------------------------------------------------------- one statement


OPTION_SETS = {
    "defaults": {},
    "runs_per_query": {"per_query": True, "columns": {"run_name": "tag"}},
    "intersection_rank_level2": {"queries": "intersection", "ties": "rank", "relevance_level": 2},
    "docid_asc": {"ties": "docid_asc", "per_query": True},
}


def _covering(dialects: list, cases: list, fast: tuple) -> list:
    """Every (case, dialect) pair as a parameter; the fast suite runs one dialect of each quoting style (`fast`),
    each with one case, every case at least once (the i-th of them with case i mod n), the full suite the whole
    cross product."""
    order = [d for d in dialects if d in fast]
    return [pytest.param(case, dialect, id=f"{case}-{dialect}", marks=[] if dialect in fast and
                         cases.index(case) == order.index(dialect) % len(cases) else [pytest.mark.slow])
            for case in cases for dialect in dialects]


@pytest.mark.parametrize("case, dialect", _covering(ALL, list(OPTION_SETS), fast=QUOTE_STYLES))
def test_one_statement_for_every_dialect(case, dialect):
    options = OPTION_SETS[case]
    sql = render(_every_measure(ties=options.get("ties", "docid_desc")), dialect=dialect, history="train", **options)
    assert sql.startswith("-- sqlmetrics: ")
    parsed = statements(sql, dialect)
    assert len(parsed) == 1 and isinstance(parsed[0], exp.Select)
    ctes = [c.alias for c in parsed[0].find_all(exp.CTE)]
    assert ctes[:2] == ["judgments", "run_rows"] and "list_values" in ctes


# The subtopic stage's SQL is the same tree in every dialect (its names are quoted as test_one_statement_...'s):
# the fast suite renders it for DuckDB and T-SQL (the most rewritten), the full suite for every dialect.
@pytest.mark.parametrize("dialect", [d if d in ("duckdb", "tsql") else pytest.param(d, marks=pytest.mark.slow)
                                     for d in ALL])
def test_diversity_statement_for_every_dialect(dialect):
    """The diversity measures with subtopic qrels: the subtopic stage (greedy ideal steps included) renders. Where
    the engine takes fewer greedy positions than nNRBP's 34 (Spark's 20), it is refused, and renders at beta 0.3."""
    measures = [*_every_measure("subtopics"), "nDCG@10"]
    if (dialect_info(dialect).greedy_depth or 34) < 34:
        with pytest.raises(SqlmetricsError, match=rf"nNRBP.* 34 positions deep .*{dialect} takes"):
            render(measures, dialect=dialect, qrels_format="subtopics")
        measures = [m if m != "nNRBP" else "nNRBP(beta=0.3)" for m in measures]
    sql = render(measures, dialect=dialect, qrels_format="subtopics", per_query=True, columns={"run_name": "tag"})
    parsed = statements(sql, dialect)
    assert len(parsed) == 1 and isinstance(parsed[0], exp.Select)
    ctes = [c.alias for c in parsed[0].find_all(exp.CTE)]
    assert ctes[:3] == ["subtopic_judgments", "judgments", "run_rows"] and "greedy_19" in ctes and "greedy_placed" in ctes
    with pytest.raises(SqlmetricsError, match="qrels_format='subtopics'"):
        render(["alpha_nDCG@10"], dialect=dialect)


# ---------------------------------------------------------------------------------------------- binding

WEIRD = [
    "run; DROP TABLE x",
    "run\"; DROP TABLE x; --",
    "run`; DROP TABLE x; --",
    "run]; DROP TABLE x; --",
    "run'; DROP TABLE x; --",
    "run\nDROP TABLE x",
    "run */ DROP TABLE x /*",
]


def _identifier_names(tree) -> list[str]:
    return [i.name for i in tree.find_all(exp.Identifier)]




@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize("weird", WEIRD, ids=range(len(WEIRD)))
def test_weird_table_name_is_one_quoted_identifier(dialect, weird):
    for table in (weird, f"db.{weird}"):
        sql = render(["AP", "P@10"], dialect=dialect, run=table, qrels="qrels")
        parsed = statements(sql, dialect)
        assert len(parsed) == 1, sql
        tree = parsed[0]
        assert not list(tree.find_all(exp.Drop))
        tables = [t for t in tree.find_all(exp.Table) if t.name == weird]
        assert len(tables) == 1 and tables[0].this.quoted
        # The weird name is nowhere but in that identifier (and the header comment, on one line).
        assert sum(weird == n for n in _identifier_names(tree)) == 1
        assert len([line for line in sql.splitlines() if line.startswith("--")]) == 6


@pytest.mark.parametrize("dialect", EVERY_DIALECT)
@pytest.mark.parametrize("weird", WEIRD, ids=range(len(WEIRD)))
def test_weird_column_name_is_one_quoted_identifier(dialect, weird):
    sql = render(["AP"], dialect=dialect, columns={"doc_id": weird, "run_name": weird + "2"}, per_query=True)
    parsed = statements(sql, dialect)
    assert len(parsed) == 1, sql
    tree = parsed[0]
    assert not list(tree.find_all(exp.Drop))
    names = _identifier_names(tree)
    assert names.count(weird) == 2  # doc_id in the qrels and in the run
    assert names.count(weird + "2") == 1
    for ident in tree.find_all(exp.Identifier):
        if ident.name in (weird, weird + "2"):
            assert ident.quoted


def test_weird_name_never_runs_on_duckdb():
    """The DuckDB rendering of an injection attempt runs as one query and drops nothing."""
    con = duckdb.connect()
    con.execute("CREATE TABLE x (a INT)")
    con.execute("CREATE TABLE qrels AS SELECT 'q' AS query_id, 'd' AS doc_id, 1 AS relevance")
    weird = 'run"; DROP TABLE x; --'
    con.execute(f"CREATE TABLE {exp.to_identifier(weird, quoted=True).sql('duckdb')} AS "
                "SELECT 'q' AS query_id, 'd' AS doc_id, 1.0 AS score")
    assert con.execute(render(["AP"], run=weird)).fetchall() == [(1.0,)]
    assert con.execute("SELECT COUNT(*) FROM x").fetchall() == [(0,)]


def test_table_names_are_bound_strictly():
    """table_reference (what every Source's table is) binds a name, never a clause or a function call."""
    for name in ["a.read_csv('/etc/passwd')", "a.b PIVOT (SUM(x) FOR y IN (1))", "a.b AT (TIMESTAMP => 1)",
                 "a.b--x", "a.b AS c", "run; DROP TABLE x"]:
        sql = table_reference(name, "duckdb").sql("duckdb")
        table = sqlglot.parse_one(f"SELECT * FROM {sql}", read="duckdb").find(exp.Table)
        assert table.name == name.split(".", 1)[-1] and table.this.quoted, sql
        assert set(k for k, v in table.args.items() if v) <= {"this", "db"}
    assert table_reference("qrels", "duckdb").sql("duckdb") == "qrels"
    assert table_reference("main.qrels", "duckdb").sql("duckdb") == "main.qrels"


# ---------------------------------------------------------------------------------------------- names


@pytest.mark.parametrize("name, dialect, expected", [
    ("db.s.qrels", "snowflake", "db.s.qrels"),  # bare names: the engine's case rules apply (QRELS)
    ("my-project.eval_ds.qrels", "bigquery", "`my-project`.eval_ds.qrels"),
    ("`my-project.eval_ds.qrels`", "bigquery", "`my-project`.`eval_ds`.`qrels`"),
    ('db."My Schema".qrels', "postgres", 'db."My Schema".qrels'),
    ("hive.web.clicks", "trino", "hive.web.clicks"),
    ("catalog.schema.table", "trino", 'catalog."schema"."table"'),  # keywords: quoted
    ("[db].[dbo].[qrels]", "tsql", "[db].[dbo].[qrels]"),
    ("sales.order", "postgres", 'sales."order"'),  # a keyword: quoted, after folding
    ("sales.order", "snowflake", 'sales."ORDER"'),
    (("my db", "dbo", "qrels"), "tsql", "[my db].dbo.qrels"),
])
def test_qualified_table_names(name, dialect, expected):
    assert table_reference(name, dialect).sql(dialect) == expected


@pytest.mark.parametrize("name", ["a.b.c.d", "a..b", "", ("a", "b", "c", "d"), 42])
def test_bad_table_names_are_rejected(name):
    with pytest.raises(SqlmetricsError, match="table"):
        table_reference(name, "postgres")


@pytest.mark.parametrize("name, dialect, expected", [
    ("qid", "snowflake", "qid"),
    ("Doc ID", "snowflake", '"Doc ID"'),
    ("order", "postgres", '"order"'),
    ("order", "snowflake", '"ORDER"'),
    ("rank", "mysql", "`rank`"),
    ("Order", "polars", '"Order"'),  # Polars never folds case
    ('"queryId"', "postgres", '"queryId"'),  # quoted by the caller: exactly that name
    ("`query id`", "bigquery", "`query id`"),
])
def test_column_names(name, dialect, expected):
    info = dialect_info(dialect)
    assert column_identifier(name, info.sqlglot, info.fold_case).sql(info.sqlglot) == expected


def test_columns_map_roles_in_both_tables():
    sql = render(["AP"], dialect="postgres", columns={"query_id": "topic", "relevance": "grade", "score": "sim"})
    judgments = statements(sql, "postgres")[0].find(exp.CTE).this.sql("postgres")
    assert "CAST(topic AS TEXT)" in judgments and "CAST(grade AS DOUBLE PRECISION)" in judgments
    sql = render(["AP"], dialect="postgres", columns={"query_id": "topic"}, qrels_columns={"query_id": "qid"})
    assert "CAST(qid AS TEXT)" in sql and "CAST(topic AS TEXT)" in sql


def test_unknown_role_and_dialect():
    with pytest.raises(SqlmetricsError, match="unknown role 'qid'"):
        render(["AP"], columns={"qid": "query_id"})
    with pytest.raises(SqlmetricsError, match="unknown role"):
        render(["AP"], qrels_columns={"score": "s"})
    with pytest.raises(SqlmetricsError, match="dialect='access' is not supported: use one of duckdb"):
        render(["AP"], dialect="access")
    with pytest.raises(SqlmetricsError, match="unknown measure"):
        render(["nDGC@10"], dialect="bigquery")


@pytest.mark.parametrize("alias, name", [("postgresql", "postgres"), ("MariaDB", "mysql"), ("mssql", "tsql"),
                                         ("chdb", "clickhouse")])
def test_dialect_aliases(alias, name):
    assert dialect_info(alias).name == name


@pytest.mark.parametrize("dialect", [d for d, info in DIALECTS.items() if info.float32 is None])
def test_float32_needs_a_four_byte_float(dialect):
    with pytest.raises(SqlmetricsError, match="float32"):
        render(["AP"], dialect=dialect, score_precision="float32")


@pytest.mark.parametrize("dialect, fragment", [("tsql", "REAL"), ("oracle", "BINARY_FLOAT"), ("postgres", "REAL"),
                                               ("clickhouse", "Float32"), ("duckdb", "FLOAT"), ("polars", "REAL")])
def test_float32_type(dialect, fragment):
    sql = render(["AP"], dialect=dialect, score_precision="float32")
    assert f"CAST(score AS {fragment})" in sql or f"CAST(score AS Nullable({fragment}))" in sql


def test_header_lists_measures_and_options():
    sql = render(["nDCG@10", "map\n"], dialect="snowflake", qrels="db.s.qrels", run="db.s.run", per_query=True,
                 columns={"query_id": "qid"})
    head = [line for line in sql.splitlines() if line.startswith("--")]
    assert head[1] == "-- measures: ndcg_at_10 = nDCG@10, map = map\\n"
    assert head[2] == "-- qrels: db.s.qrels (query_id=qid, doc_id=doc_id, relevance=relevance)"
    assert "ties='docid_desc'" in head[4] and "relevance_level=1" in head[4]
    assert head[5] == "-- one row per query_id: query_id, ndcg_at_10, map"
    assert not render(["AP"], header=False).startswith("--")


def test_header_names_a_single_group_by_column():
    sql = render(["AP"], per_query=False, group_by="date")
    assert "-- one row per date: date, ap, num_lists" in sql.splitlines()


# ---------------------------------------------------------------------------------------------- per-dialect fixes


def test_portability_fixes():
    assert 'COLLATE "C"' in render(["AP"], dialect="postgres")
    assert "COLLATE BINARY" in render(["AP"], dialect="sqlite")
    mysql = render(["AP"], dialect="mysql", per_query=True)
    assert "AS BINARY) AS doc_id" in mysql and "CAST(list_values.query_id AS CHAR) AS query_id" in mysql
    assert "COLLATE Latin1_General_BIN2" in render(["AP"], dialect="tsql")
    assert "POWER(CAST(0.8 AS FLOAT)" in render(["RBP"], dialect="tsql")
    oracle = render(["AP"], dialect="oracle")
    assert "NLSSORT(doc_id, 'NLS_SORT=BINARY')" in oracle and "CLOB" not in oracle
    assert "SETTINGS join_use_nulls = 1" in render(["AP"], dialect="clickhouse")
    assert "1 PRECEDING" not in render(["ERR@10"], dialect="polars")
    for dialect in ALL:
        sql = render(["nDCG@10"], dialect=dialect)
        assert "LOG(2," not in sql.upper().replace(" ", "")  # LN(x) / LN(2), never LOG(2, x)


def test_duckdb_rendering_equals_evaluate():
    con = duckdb.connect()
    qrels = pa.table({"qid": ["1", "1", "1", "2"], "doc_id": ["a", "B", "c", "a"], "relevance": [1, 2, 0, 1]})
    run = pa.table({"qid": ["1", "1", "1", "2"], "doc_id": ["a", "B", "c", "b"], "score": [1.0, 1.0, 0.5, 2.0]})
    con.register("q", qrels)
    con.register("r", run)
    measures = ["nDCG@2", "AP", "RR", "ERR@3"]
    got = con.execute(render(measures, qrels="q", run="r", columns={"query_id": "qid"})).fetchall()[0]
    want = sqlmetrics.evaluate(qrels, run, measures, columns={"query_id": "qid"}, qrels_columns={"query_id": "qid"})
    assert got == pytest.approx([want.aggregate[m] for m in measures], abs=1e-12)


# ---------------------------------------------------------------------------------------------- CLI


def _cli(argv):
    parser = argparse.ArgumentParser(prog="sqlmetrics")
    sql_command.add_parser(parser.add_subparsers(dest="command"), [])
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_sql_command():
    text, output = _cli(["sql", "-m", "nDCG@10,AP", "-m", "RBP(p=0.5,gain='graded')", "--dialect", "snowflake",
                         "--qrels", "db.s.qrels", "--run", "db.s.run", "--column", "qid=query_id", "--per-query"])
    assert output is None and text.endswith(";\n")
    assert "-- measures: ndcg_at_10 = nDCG@10, ap = AP, rbp_p_0_5_gain_graded = RBP(p=0.5,gain='graded')" in text
    assert "CAST(qid AS VARCHAR) AS query_id" in text and "FROM db.s.run" in text
    assert len(statements(text, "snowflake")) == 1
    text, _ = _cli(["sql", "-m", "AP", "--column", "query_id=qid", "--no-header"])
    assert text.startswith("WITH") and "CAST(qid AS TEXT) AS query_id" in text
    with pytest.raises(UsageError, match="ROLE=NAME"):
        _cli(["sql", "-m", "AP", "--column", "qid"])


# ---------------------------------------------------------------------------------------------- golden files

# One file per dialect, a fixed small set of measures: a change to the statement's shape shows as a diff
# here; every other measure is checked by executing it (test_engines.py, the examples in sql/).
GOLDEN_CASES = {
    "warehouse_runs_per_query": dict(
        measures=["nDCG@10", "AP", "ERR(gmax='max')@20", "RBP(p=0.5)", "P(rel=2)@5", "Bpref", "GMAP", "FirstRank"],
        qrels="analytics.eval.qrels", run="analytics.eval.search_log", per_query=True,
        columns={"query_id": "query_text", "doc_id": "item_id", "relevance": "rating", "rank_position": "position",
                 "run_name": "experiment_arm"},
        ties="rank"),
    "rag": dict(
        measures=["ContextPrecision@5", "Faithfulness", "ContextRecall", "ContextRelevancy", "AnswerRelevancy"],
        qrels="rag.eval.context_judgments", run="rag.eval.retrieved", verdicts="rag.eval.verdicts",
        embeddings="rag.eval.question_embeddings", per_query=True,
        columns={"query_id": "question_id", "doc_id": "chunk_id", "relevance": "relevant", "score": "similarity"}),
    "nuggets": dict(
        measures=["nDCG@10", "NuggetAll", "NuggetVitalStrict", "NuggetWeighted", "NuggetRecall"],
        qrels="rag.eval.context_judgments", run="rag.eval.retrieved_by_system", nuggets="rag.eval.nuggets",
        assignments="rag.eval.nugget_assignments", per_query=True,
        columns={"query_id": "topic_id", "doc_id": "chunk_id", "relevance": "relevant", "score": "similarity",
                 "run_name": "system", "nugget": "nugget_id", "run": "system", "weight": "nugget_weight"}),
}


# The nugget case renders in the slow tier only (the fast tier's budget); test_nuggets.py renders it once.
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "nuggets" else c for c in GOLDEN_CASES])
@pytest.mark.parametrize("dialect", EVERY_DIALECT)  # each quoting style in the fast suite, every file in the full one
def test_golden_sql(dialect, case):
    spec = dict(GOLDEN_CASES[case])
    measures = spec.pop("measures")
    sql = render(measures, dialect=dialect, **spec) + "\n"
    path = GOLDEN / dialect / f"{case}.sql"
    assert len(statements(sql, dialect)) == 1
    if REGEN or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql, encoding="utf-8")
        if REGEN:  # comparing with what was just written would prove nothing
            pytest.skip(f"{path} regenerated: review the diff")
        pytest.fail(f"{path} did not exist and was written: review it, then run again")
    golden = path.read_text(encoding="utf-8")
    if sql != golden:
        diff = "".join(list(difflib.unified_diff(golden.splitlines(True), sql.splitlines(True), str(path), "rendered"))[:60])
        pytest.fail(f"the rendered {dialect} SQL changed. If that is intended, regenerate the golden files with\n"
                    f"  SQLMETRICS_REGEN_GOLDEN=1 python -m pytest tests/test_render.py\nand review the diff:\n{diff}")
