"""Property: whatever text a user gives `sqlmetrics sql --dbt` as a column name, a segment column or a literal of
--relevance, the model dbt's Jinja compiles is the plain statement (the same command without --dbt, over the tables
the references name), or both commands refuse it alike: no Jinja the user typed runs, vanishes or changes a value.
The text is drawn from Jinja's delimiters and what escapes them ({{ }} {% %} {# #}, raw/endraw, quotes, whitespace
control). tests/test_outputs.py's test_sql_dbt_carries_no_jinja_but_the_references has a hand-written case of each."""
import contextlib
import io

import duckdb
import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.cli import main
from sqlmetrics.identifiers import quote_identifier

PIECES = ["{{", "}}", "{%", "%}", "{#", "#}", "{", "}", "%", "#", "-", "'", '"', "raw", "endraw", " ", "x", "7*7",
          "\\", "\n", "do run_query('x')"]
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join)
SOURCE, REF = "{{ source('raw', 'qrels') }}", "{{ ref('stg_run') }}"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _compile_as_dbt(model: str) -> str:
    """The model as dbt's Jinja compiles it: each reference a table name; any other call fails the test."""
    def ran(*args, **kwargs):
        raise AssertionError(f"the model ran {args}")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"], keep_trailing_newline=True)
    return env.from_string(model).render(source=lambda s, t: f"{s}_{t}", ref=lambda *a, **k: a[-1], run_query=ran,
                                         var=ran, env_var=ran, log=ran, adapter=ran)


@pytest.mark.slow  # hypothesis, 60 texts in each place
@SETTINGS
@given(TEXT, st.sampled_from(["column", "group-by", "relevance"]))
def test_any_text_is_inert_in_the_model(text, where):
    # `--flag=value`: a value starting with '-' is the flag's, not another flag
    extra = {"column": [f"--column=query_id={text}"], "group-by": [f"--group-by={text}"],
             "relevance": ["--relevance=CASE WHEN score = '" + text.replace("'", "''") + "' THEN 1 ELSE 0 END"]}[where]
    qrels = [] if where == "relevance" else ["--qrels", SOURCE]
    plain_qrels = [] if where == "relevance" else ["--qrels", "raw_qrels"]
    none = ["--qrels", "none"] if where == "relevance" else []
    code, model, err = _run("sql", "-m", "RR", "--dbt", *qrels, *none, "--run", REF, *extra)
    plain_code, plain, plain_err = _run("sql", "-m", "RR", *plain_qrels, *none, "--run", "stg_run", *extra)
    assert code == plain_code, (err, plain_err)
    if code == 0:
        assert _compile_as_dbt(model) == plain.rstrip().removesuffix(";") + "\n"


# ---------------------------------------------------------------------------------------------- incremental
# `sqlmetrics sql --dbt --incremental` built again and again as dbt-duckdb builds it, reduced to its SQL (the first
# build creates the table; a later one evaluates the model with is_incremental() into a temporary table and merges
# it on the unique_key, pasted unquoted: ON (DBT_INTERNAL_SOURCE.key = DBT_INTERNAL_DEST.key), UPDATE / INSERT BY
# NAME). tests/test_dbt.py builds such models with dbt itself, on DuckDB and PostgreSQL.

def _dbt_duckdb_build(con, model: str, first: bool) -> None:
    config = {}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    sql = env.from_string(model).render(config=lambda **kw: config.update(kw) or "", ref=lambda name: name,
                                        this="daily", is_incremental=lambda: not first)
    assert config["materialized"] == "incremental" and config["incremental_strategy"] == "merge"
    if first:
        con.execute(f"CREATE TABLE daily AS {sql}")
        return
    keys = config["unique_key"] if isinstance(config["unique_key"], list) else [config["unique_key"]]
    on = " AND ".join(f"(DBT_INTERNAL_SOURCE.{k} = DBT_INTERNAL_DEST.{k})" for k in keys)
    con.execute(f"CREATE TEMP TABLE daily__dbt_tmp AS {sql}")
    con.execute(f"MERGE INTO daily AS DBT_INTERNAL_DEST USING daily__dbt_tmp AS DBT_INTERNAL_SOURCE ON {on} "
                "WHEN MATCHED THEN UPDATE BY NAME WHEN NOT MATCHED THEN INSERT BY NAME")
    con.execute("DROP TABLE daily__dbt_tmp")


def _load_log(con, names: list, rows: list) -> None:
    """The log table `log`: (segment values..., session, doc, position, clicked) under `names`, then its four."""
    columns = ", ".join(f'{quote_identifier(n)} VARCHAR' for n in names)
    con.execute(f"CREATE OR REPLACE TABLE log ({columns}, session VARCHAR, doc VARCHAR, position INTEGER, "
                "clicked INTEGER)")
    if rows:
        con.executemany(f"INSERT INTO log VALUES ({', '.join('?' * (len(names) + 4))})", rows)


def _incremental_model(segments: list, per_query: bool = False) -> str:
    code, model, err = _run("sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--ties", "rank", "--run",
                            "{{ ref('log') }}", "--column", "query_id=session", "--column", "doc_id=doc", "--column",
                            "rank_position=position", *(f"--group-by={s}" for s in segments), "--dbt",
                            f"--incremental={segments[0]}", *(["-q"] if per_query else []))
    assert code == 0, err
    return model


def _table(con, names: list, *values) -> list:
    cur = con.execute("SELECT * FROM daily")
    columns = [c[0] for c in cur.description]
    at = [columns.index(n) for n in [*names, *values]]
    return sorted((tuple(round(v, 12) if isinstance(v, float) else v for v in (row[i] for i in at))
                   for row in cur.fetchall()), key=repr)


def test_incremental_builds_keep_one_row_per_segment():
    """Three builds of a log whose segments a key must tell apart (a NULL market and the text 'NULL', ('a|', 'b')
    and ('a', '|b'), no day), under a day column whose name holds Jinja: the first build has only rows without a
    day, so the table has no last day and the second build reads every row; the third reads day 1 (the last) and
    the new day 2, and the rows without a day. RR by hand: 1 / the first clicked rank."""
    names = ["d {{ this }}", 'm "k"; --', "order"]  # the day, the market, the shop
    d1, d2 = "2026-03-01", "2026-03-02"
    v1 = [(None, "x", "s", "q1", "a", 1, 1)]
    v2 = [(None, "x", "s", "q1", "a", 1, 0), (None, "x", "s", "q1", "b", 2, 1),
          (d1, None, "s", "q2", "a", 1, 1),
          (d1, "NULL", "s", "q3", "a", 1, 0), (d1, "NULL", "s", "q3", "b", 2, 1),
          (d1, "a|", "b", "q4", "a", 1, 1),
          (d1, "a", "|b", "q5", "a", 1, 0), (d1, "a", "|b", "q5", "b", 2, 1)]
    v3 = [*v2[:2], (d1, None, "s", "q2", "a", 1, 0), (d1, None, "s", "q2", "b", 2, 1), *v2[3:],
          *((d2, None, None, "q6", doc, i, int(i == 3)) for i, doc in enumerate("abc", 1))]
    model = _incremental_model(names)
    con = duckdb.connect()
    for log, first in ((v1, True), (v2, False)):
        _load_log(con, names, log)
        _dbt_duckdb_build(con, model, first)
    assert _table(con, names, "rr", "num_lists") == sorted([
        (None, "x", "s", 0.5, 1), (d1, None, "s", 1.0, 1), (d1, "NULL", "s", 0.5, 1), (d1, "a|", "b", 1.0, 1),
        (d1, "a", "|b", 0.5, 1)], key=repr)
    _load_log(con, names, v3)
    _dbt_duckdb_build(con, model, False)
    assert _table(con, names, "rr", "num_lists") == sorted([
        (None, "x", "s", 0.5, 1), (d1, None, "s", 0.5, 1), (d1, "NULL", "s", 0.5, 1), (d1, "a|", "b", 1.0, 1),
        (d1, "a", "|b", 0.5, 1), (d2, None, None, round(1 / 3, 12), 1)], key=repr)


NAME_PIECES = ['"', "'", ";", "--", " ", "é", "日本", "select", "order", "|", "x", "{{", "}}", "{%", "#}", "\\", "NULL",
               "\n"]
# The log's own columns and the model's: a segment cannot be named so (case aside: DuckDB's names are not)
TAKEN = {"session", "doc", "position", "clicked", "rr", "num_lists", "run_name", "query_id", "sqlmetrics_key"}
# A name in quotes is the name inside them; argparse reads `--group-by=--` as no value (before Python 3.12).
SEGMENT_NAME = st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=4).map("".join).filter(
    lambda n: n[0] not in '"`[' and n.lower() not in TAKEN and n != "--")
VALUE = st.sampled_from([None, "", "NULL", "n", "v", "|", "a|", "|a", "a", "||", "v|n", "'", "é"])
DAY = st.sampled_from([None, "1", "2", "3"])


def _lists(segments: int):
    """A log's lists: {(segment values..., session): (documents, the clicked rank or 0)}."""
    key = st.tuples(DAY, *[VALUE] * (segments - 1), st.sampled_from(["q1", "q2"]))
    return st.dictionaries(key, st.tuples(st.integers(1, 3), st.integers(0, 3)), max_size=8)


def _rows(lists: dict) -> list:
    return [(*key, f"d{i}", i, int(i == clicked)) for key, (n, clicked) in lists.items() for i in range(1, n + 1)]


def _decoded(key: str) -> tuple:
    """A row key split back into its values: 'n' a NULL, 'v' and the text with '||' for '|', joined by '|'."""
    values, i = [], 0
    while True:
        tag, i = key[i], i + 1
        text = []
        while tag == "v" and i < len(key) and (key[i] != "|" or key[i + 1:i + 2] == "|"):
            text.append(key[i])
            i += 2 if key[i] == "|" else 1
        values.append(None if tag == "n" else "".join(text))
        if i == len(key):
            return tuple(values)
        assert key[i] == "|" and tag in "nv", key
        i += 1


@pytest.mark.slow  # hypothesis, 60 logs built twice
@SETTINGS
@given(st.lists(SEGMENT_NAME, min_size=1, max_size=3, unique_by=str.lower).flatmap(
    lambda names: st.tuples(st.just(names), _lists(len(names)), _lists(len(names)), st.booleans())))
def test_incremental_builds_merge_what_they_read(drawn):
    """Whatever the segment names and values (NULLs, 'NULL', the key's tags and separator), a second build leaves
    the first build's rows, replaced by those the second evaluates (the log's rows from the table's last day on and
    those without a day; every row when the table has no day), one row per segment (and query, with -q), each with
    a key that is never NULL and splits back into its segment values. The evaluations are the plain statement's
    (`sqlmetrics sql` without --dbt) over the rows each build reads, merged here in Python."""
    names, v1, v2, per_query = drawn
    keys = [*names, *(["query_id"] if per_query else [])]
    values = ["rr"] if per_query else ["rr", "num_lists"]
    plain_code, plain, err = _run("sql", "-m", "RR", "--qrels", "none", "--label", "clicked", "--ties", "rank",
                                  "--run", "log", "--column", "query_id=session", "--column", "doc_id=doc",
                                  "--column", "rank_position=position", *(f"--group-by={n}" for n in names),
                                  *(["-q"] if per_query else []))
    assert plain_code == 0, err
    model = _incremental_model(names, per_query)
    con = duckdb.connect()

    def table(sql):  # the rows as (key, values, row key); a name as DuckDB reads it, case aside (NULL is "null")
        cur = con.execute(sql)
        at = {c[0].lower(): i for i, c in enumerate(cur.description)}
        return [(tuple(row[at[k.lower()]] for k in keys), tuple(row[at[v]] for v in values),
                 row[at["sqlmetrics_key"]] if "sqlmetrics_key" in at else None) for row in cur.fetchall()]

    def evaluated(lists):  # {key: values} of the plain statement over these lists
        _load_log(con, names, _rows(lists))
        return {k: v for k, v, _ in table(plain)}

    last = max((key[0] for key in v1 if key[0] is not None), default=None)
    read = {key: v for key, v in v2.items() if key[0] is None or last is None or key[0] >= last}
    want = {**evaluated(v1), **evaluated(read)}
    for lists, first in ((v1, True), (v2, False)):
        _load_log(con, names, _rows(lists))
        _dbt_duckdb_build(con, model, first)
    got = table("SELECT * FROM daily")
    assert sorted(((k, v) for k, v, _ in got), key=repr) == sorted(want.items(), key=repr)
    assert all(_decoded(row_key) == k for k, _, row_key in got)
