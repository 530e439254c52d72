"""The catalogue: strict template headers, a measure is one file, every template's worked examples (run on
DuckDB and SQLite), and the names users type."""
import re
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.catalogue import measures, names, parse, parse_all, templates, trec_name
from sqlmetrics.cli import main
from sqlmetrics.dialects import DIALECTS


# ---------------------------------------------------------------------------------------------- a copy of sql/


@pytest.fixture
def catalogue_copy(tmp_path, monkeypatch):
    """The catalogue read from a copy of sql/ that a test may edit (caches cleared before and after)."""
    folder = tmp_path / "sql"
    shutil.copytree(templates.sql_dir(), folder)

    def clear():
        for cached in (templates.catalogue_folder, templates.measures, templates.shared_columns, names._aliases):
            cached.cache_clear()

    monkeypatch.setattr(templates, "sql_dir", lambda: folder)
    clear()
    yield folder
    clear()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_new_measure_is_one_file(catalogue_copy, capsys):
    """sql/APTwin.sql, copied from AP.sql with only its name changed and its aliases removed, is listed,
    evaluates to AP's numbers locally and on SQLite, and renders for every dialect."""
    twin = catalogue_copy / "APTwin.sql"
    text = (catalogue_copy / "AP.sql").read_text(encoding="utf-8")
    text = text.replace("-- measure: AP\n", "-- measure: APTwin\n")
    twin.write_text(re.sub(r"^-- aliases:.*\n", "", text, flags=re.M), encoding="utf-8")

    assert main(["list", "APTwin"]) == 0
    assert "APTwin" in capsys.readouterr().out
    qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1, "d4": 1}}
    run = {"q1": {"d1": 0.3, "d2": 0.9, "d3": 0.5, "d5": 0.1}, "q2": {"d4": 0.7, "d9": 0.8}}
    local = sqlmetrics.evaluate(qrels, run, ["AP", "APTwin", "AP@2", "APTwin@2"]).aggregate
    assert local["APTwin"] == local["AP"] and local["APTwin@2"] == local["AP@2"]
    con = _sqlite_tables(qrels, run)
    on_sqlite = sqlmetrics.evaluate("qrels", "run", ["AP", "APTwin@2"], engine=con).aggregate
    assert on_sqlite["AP"] == pytest.approx(local["AP"], abs=1e-12)
    assert on_sqlite["APTwin@2"] == pytest.approx(local["AP@2"], abs=1e-12)
    for dialect in DIALECTS:
        assert "aptwin" in sqlmetrics.render(["APTwin@10"], dialect=dialect, header=False).lower()


def test_a_repeated_alias_is_refused_naming_both_files(catalogue_copy):
    shutil.copy(catalogue_copy / "AP.sql", catalogue_copy / "APTwin.sql")
    _edit(catalogue_copy / "APTwin.sql", "-- measure: AP\n", "-- measure: APTwin\n")
    with pytest.raises(SqlmetricsError, match=r"APTwin\.sql:\d+: the alias 'map' is already AP's \(.*AP\.sql:\d+\)"):
        measures()


@pytest.mark.parametrize("old, new, message", [
    ("-- param k: cutoff = none", "-- paramm: k", r"AP\.sql:4: unknown header key 'paramm'"),
    ("-- param k: cutoff = none", "-- param k: cutof = none", r"AP\.sql:4: param k: unknown type 'cutof'"),
    ("-- param k: cutoff = none", "-- param k: cutoff = 0", r"AP\.sql:4: param k: the default '0' is not a positive"),
    ("-- param k: cutoff = none", "-- param k: cutoff = ten", r"AP\.sql:4: param k's default: 'ten' is not a number"),
    ("-- aggregate: mean", "-- aggregate: median", r"AP\.sql:\d+: aggregate: 'median' is not one of"),
    ("-- at: k", "-- at: kk", r"AP\.sql:\d+: at: 'kk' is not a parameter"),
    ("-- measure: AP", "-- measure: Ap", r"AP\.sql:1: the measure is named 'Ap' but the file 'AP\.sql'"),
    ("-- description: ", "-- descripton: ", r"AP\.sql:2: unknown header key 'descripton'"),
    ("-- aliases: map (trec_eval)", "-- aliases: map (trec-eval)", r"AP\.sql:\d+: alias 'map': unknown tool"),
    ("-- aliases: map (trec_eval)", "-- aliases: map_{kk}", r"AP\.sql:\d+: alias 'map_\{kk\}' names 'kk'"),
    ("-- example: ", "-- example: qrels: q1 d1 run: q1 d1 1 => 1\n-- example: ", r"AP\.sql:\d+: example: each qrels entry"),
    ("-- example: ", "-- example: @2 qrels: q1 d1 1 run: q1 d1 1 => one\n-- example: ", r"AP\.sql:\d+: example: the value 'one'"),
    ("-- example: ", "-- example: AP@2 qrels: q1 d1 1 run: q1 d1 1 => 1\n-- example: ", r"AP\.sql:\d+: example: write"),
])
def test_headers_are_read_strictly(catalogue_copy, old, new, message):
    _edit(catalogue_copy / "AP.sql", old, new)
    with pytest.raises(SqlmetricsError, match=message):
        measures()


def test_positions_take_no_ideal_sections(catalogue_copy):
    _edit(catalogue_copy / "nDCG.sql", "-- aggregate: mean\n", "-- aggregate: mean\n-- rows: positions\n")
    with pytest.raises(SqlmetricsError, match=r"nDCG\.sql:13: rows: positions reads the positions alone"):
        measures()


def test_body_takes_another_measures_sql_and_only_that(catalogue_copy):
    """GMBpref is `body: Bpref`: Bpref's per-query values under another aggregate; the key refuses a file that
    also has SQL, a measure without SQL of its own, and parameters declared otherwise."""
    qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2, "d4": 1}, "q2": {"d7": 1, "d8": 0}}
    run = {"q1": {"d1": 0.9, "d2": 0.8, "d5": 0.7, "d3": 0.6}, "q2": {"d8": 0.5, "d7": 0.4}}
    res = sqlmetrics.evaluate(qrels, run, ["Bpref", "GMBpref"])
    # By hand: q1's bpref is (1 + 0) / 3 (d3 is ranked below the judged non-relevant d2), q2's is 0 (floored at
    # 1e-5 by the geometric mean).
    assert [r["GMBpref"] for r in res.per_query.to_pylist()] == pytest.approx([1 / 3, 0.0])
    assert [r["Bpref"] for r in res.per_query.to_pylist()] == pytest.approx([1 / 3, 0.0])
    assert res.aggregate["GMBpref"] == pytest.approx((1 / 3 * 1e-5) ** 0.5)
    path = catalogue_copy / "GMBpref.sql"
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "SUM(is_rel)\n", encoding="utf-8")
    for cached in (templates.catalogue_folder, templates.measures):  # evaluate() above read the catalogue
        cached.cache_clear()
    with pytest.raises(SqlmetricsError, match=r"GMBpref\.sql:\d+: body: Bpref gives this measure Bpref's SQL"):
        measures()
    path.write_text(original.replace("-- body: Bpref", "-- body: Nothing"), encoding="utf-8")
    with pytest.raises(SqlmetricsError, match=r"body: 'Nothing' is not a measure with SQL of its own"):
        measures()
    path.write_text(original.replace("-- param rel: level\n", ""), encoding="utf-8")
    with pytest.raises(SqlmetricsError, match=r"declare them as Bpref\.sql does"):
        measures()


def test_a_missing_key_is_named(catalogue_copy):
    path = catalogue_copy / "AP.sql"
    path.write_text(re.sub(r"^-- reference:.*\n", "", path.read_text(encoding="utf-8"), flags=re.M), encoding="utf-8")
    with pytest.raises(SqlmetricsError, match=r"AP\.sql:1: the header has no `reference:` line"):
        measures()


def test_a_whole_run_measure_must_say_aggregate_once(catalogue_copy, capsys):
    _edit(catalogue_copy / "Novelty.sql", "-- aggregate: once\n", "")
    assert main(["list"]) == 2
    assert f"{catalogue_copy / 'Novelty.sql'}:4: a measure of the whole run" in capsys.readouterr().err


def test_list_exits_2_naming_the_file_and_line(catalogue_copy, capsys):
    _edit(catalogue_copy / "AP.sql", "-- param k: cutoff = none", "-- paramm: k")
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert f"{catalogue_copy / 'AP.sql'}:4: unknown header key 'paramm'" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- worked examples


def _examples() -> list:
    """The worked examples grouped by their inputs: one parameter per distinct (qrels, run, history, items,
    verdicts, embeddings), named by its first example, holding every (measure, example) on those inputs."""
    groups: dict = {}
    for m in measures().values():
        for e in m.examples:
            key = (e.qrels, tuple(sorted(e.run)), e.history, e.items, e.verdicts, e.embeddings, e.nuggets, e.assignments)
            groups.setdefault(repr(key), []).append((m, e))
    return [pytest.param(group, id=f"{group[0][0].name}:{group[0][1].line}+{len(group) - 1}") for group in groups.values()]


def _expected(text: str):
    """(value, tolerance): a fraction exactly, a decimal to half a unit of its last written digit."""
    if text == "null":
        return None, 0
    if "/" in text:
        return float(Fraction(text)), 1e-12
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text), 0.5 * 10 ** -decimals + 1e-12


def _sqlite_tables(qrels, run: dict, history: dict | None = None, items: tuple = (), verdicts: tuple = (),
                   embeddings: tuple = (), nuggets: tuple = (), assignments: tuple = ()):
    """qrels: {query: {doc: grade}}, or an example's rows: (query, doc, grade) or, for subtopic qrels,
    (query, subtopic, doc, grade); history: the training interactions {user: {item: grade}}; items: the item
    features in long form, (item, dimension, value) rows; verdicts: the judged statements (query, statement_of,
    verdict); embeddings: (query, generated, vector, noncommittal), in long form (one row per dimension: SQLite
    has no arrays); nuggets: (query, nugget, importance, weight), assignments: (query, nugget, assignment), the
    run's (rendered SQL takes a single run's assignments by the run table's name, `run`)."""
    qrels_rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()] if isinstance(qrels, dict) else qrels
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE items (doc_id TEXT, dimension TEXT, value REAL)")
    con.executemany("INSERT INTO items VALUES (?, ?, ?)", items)
    con.execute("CREATE TABLE history (query_id TEXT, doc_id TEXT, relevance REAL)")
    con.executemany("INSERT INTO history VALUES (?, ?, ?)",
                    [(u, i, g) for u, items in (history or {}).items() for i, g in items.items()])
    con.execute("CREATE TABLE verdicts (query_id TEXT, statement TEXT, statement_of TEXT, verdict REAL)")
    con.executemany("INSERT INTO verdicts VALUES (?, ?, ?, ?)", _verdict_rows(verdicts))
    con.execute("CREATE TABLE embeddings (query_id TEXT, generated INTEGER, dimension INTEGER, value REAL, "
                "noncommittal INTEGER)")
    con.executemany("INSERT INTO embeddings VALUES (?, ?, ?, ?, ?)",
                    [(q, g, i, x, n) for q, g, vector, n in embeddings for i, x in enumerate(vector, 1)])
    con.execute("CREATE TABLE nuggets (query_id TEXT, nugget TEXT, importance TEXT, weight REAL)")
    con.executemany("INSERT INTO nuggets VALUES (?, ?, ?, ?)", nuggets)
    con.execute("CREATE TABLE assignments (query_id TEXT, run TEXT, nugget TEXT, assignment TEXT)")
    con.executemany("INSERT INTO assignments VALUES (?, 'run', ?, ?)", assignments)
    roles = SUBTOPIC_QRELS if len(qrels_rows[0]) == 4 else ("query_id", "doc_id", "relevance")
    con.execute(f"CREATE TABLE qrels ({', '.join(roles)})")
    con.execute("CREATE TABLE run (query_id TEXT, doc_id TEXT, score REAL)")
    con.executemany(f"INSERT INTO qrels VALUES ({', '.join('?' * len(roles))})", qrels_rows)
    con.executemany("INSERT INTO run VALUES (?, ?, ?)", [(q, d, s) for q, docs in run.items() for d, s in docs.items()])
    return con


SUBTOPIC_QRELS = ("query_id", "subtopic", "doc_id", "relevance")


def _verdict_rows(verdicts: tuple) -> list:
    """An example's judged statements as rows (query_id, statement, statement_of, verdict), each statement its own."""
    return [(q, f"s{i}", of, v) for i, (q, of, v) in enumerate(verdicts)]


def _qrels(rows: tuple):
    """The example's qrels as evaluate() takes them, and the qrels_format they need."""
    if len(rows[0]) == 4:  # subtopic qrels (`rows: subtopics` templates): a table, the dicts have no subtopic
        return pa.table({role: [r[i] for r in rows] for i, role in enumerate(SUBTOPIC_QRELS)}), {"qrels_format": "subtopics"}
    return _as_dicts(rows), {}


def _as_dicts(rows) -> dict:
    out: dict = {}
    for q, d, v in rows:
        out.setdefault(q, {})[d] = v
    return out


def test_every_template_has_an_example():
    assert all(m.examples for m in measures().values())


def _evaluate_examples(group, engine: str) -> dict:
    """The group's examples evaluated together on `engine` ('duckdb': embedded, from Python objects; 'sqlite': as
    tables of an SQLite database): {call: value}."""
    for measure, example in group:
        assert parse(example.call).measure.name == measure.name, f"{measure.path}:{example.line} is not an example of it"
    example = group[0][1]  # the group's inputs, which every example in it shares
    (qrels, options), run = _qrels(example.qrels), _as_dicts(example.run)
    history = _as_dicts([(u, i, 1) for u, i in example.history])
    if history:  # the training interactions, for rows: recommendations and items
        options = {**options, "history": history}
    rows = _verdict_rows(example.verdicts)
    if rows:  # the judged statements, for rows: verdicts
        options = {**options, "verdicts": pa.table({c: [r[i] for r in rows] for i, c in
                                                     enumerate(("query_id", "statement", "statement_of", "verdict"))})}
    if example.embeddings:  # the question embeddings, for rows: embeddings: DuckDB's lists (its vector function)
        options = {**options, "embeddings": pa.table({c: [list(e[i]) if c == "embedding" else e[i]
                                                          for e in example.embeddings] for i, c in
                                                       enumerate(("query_id", "generated", "embedding", "noncommittal"))})}
    if example.nuggets:  # the topics' nuggets (a weight column when the example weighs them) and the run's support
        weighted = example.nuggets[0][3] is not None
        columns = ("query_id", "nugget", "importance", *(["weight"] if weighted else []))
        options = {**options, "nuggets": pa.table({c: [n[i] for n in example.nuggets] for i, c in enumerate(columns)}),
                   "assignments": pa.table({c: [a[i] for a in example.assignments] for i, c in
                                            enumerate(("query_id", "nugget", "assignment"))}).append_column(
                       "run", pa.array(["run"] * len(example.assignments), pa.string()))}
    items = pa.table({role: [r[i] for r in example.items] for i, role in enumerate(("doc_id", "dimension", "value"))})
    calls = list(dict.fromkeys(e.call for _, e in group))
    if engine == "duckdb":
        return sqlmetrics.evaluate(qrels, run, calls, **options, **({"items": items} if example.items else {})).aggregate
    tables = {**({"history": "history"} if history else {}), **({"items": "items"} if example.items else {}),
              **({"verdicts": "verdicts"} if rows else {}), **({"embeddings": "embeddings"} if example.embeddings else {}),
              **({"nuggets": "nuggets", "assignments": "assignments"} if example.nuggets else {}),
              **({"columns": {"weight": "weight"}} if example.nuggets and example.nuggets[0][3] is not None else {})}
    return sqlmetrics.evaluate("qrels", "run", calls, **{**options, **tables},
                               engine=_sqlite_tables(example.qrels, run, history, example.items, example.verdicts,
                                                     example.embeddings, example.nuggets, example.assignments)).aggregate


def _wrong(group, engine: str) -> list:
    """Each example whose value on `engine` is not the hand-computed one (a measure's value never depends on the
    others evaluated beside it)."""
    values = _evaluate_examples(group, engine)
    wrong = []
    for measure, example in group:
        want, tolerance = _expected(example.value)
        got = values[example.call]
        if want is None and got is not None or want is not None and (got is None or abs(got - want) > tolerance):
            wrong.append(f"{measure.path}:{example.line}: {engine} gives {got}, the example says "
                         f"{'null' if want is None else want}")
    return wrong


@pytest.mark.parametrize("group", _examples())
def test_examples_on_duckdb(group):
    """Every `-- example:` line of every template: the hand-computed value. The examples with the same inputs are
    evaluated together, in one statement, and each value compared with its own example's."""
    wrong = _wrong(group, "duckdb")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow  # 2 s in all, each statement rendered by sqlglot; the fast suite renders for SQLite in test_render.py
@pytest.mark.parametrize("group", _examples())
def test_examples_on_sqlite(group):
    """The same examples on SQLite, the statement rendered for it: the same hand-computed values."""
    wrong = _wrong(group, "sqlite")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------------------------- the contract


def test_every_measure_of_the_contract_is_in_the_catalogue(metrics_md_path):
    """METRICS.md's catalogue table (in ../shared) names the measures; each must be a template."""
    text = metrics_md_path.read_text(encoding="utf-8")
    table = text.split("## The catalogue", 1)[1].split("\n\n")[2]
    named = set()
    for row in table.splitlines()[2:]:
        for name in re.findall(r"`([A-Za-z][A-Za-z0-9]*)", row.split("|")[1]):
            named.add(name)
    assert named and named <= set(measures()), sorted(named - set(measures()))


def test_measure_reference_covers_every_template():
    """docs/measures.md is generated from the templates; whether the committed copy is current is a step of
    .ci/run (`python -m sqlmetrics.catalogue.reference --check`), so that adding a measure keeps this suite green."""
    from sqlmetrics.catalogue import reference

    doc = reference.document()
    for m in measures().values():
        assert f"\n## {m.name}\n" in doc and all(f"`{e.call}`" in doc for e in m.examples)


# ---------------------------------------------------------------------------------------------- names


# (spelling, canonical form, parameters) — METRICS.md "Names", every spelling listed there.
SPELLINGS = [
    ("nDCG@10", "nDCG", {"k": 10}), ("P(rel=2)@5", "P", {"k": 5, "rel": 2}), ("AP@100", "AP", {"k": 100}),
    ("RR@10", "RR", {"k": 10}), ("RBP(p=0.8)", "RBP", {"p": 0.8}), ("ERR@20", "ERR", {"k": 20}),
    ("Judged@10", "Judged", {"k": 10}), ("SetP", "SetP", {}), ("SetR", "SetR", {}),
    ("SetF(beta=0.5)", "SetF", {"beta": 0.5}), ("IPrec@0.5", "IPrec", {"r": 0.5}),
    ("nDCG(gain='exp')@10", "nDCG", {"gain": "exp", "k": 10}),
    # trec_eval
    ("P_10", "P", {"k": 10}), ("P.10", "P", {"k": 10}), ("recall_100", "R", {"k": 100}), ("map", "AP", {"k": None}),
    ("map_cut_100", "AP", {"k": 100}), ("ndcg", "nDCG", {"k": None}), ("ndcg_cut_10", "nDCG", {"k": 10}),
    ("ndcg_cut.10", "nDCG", {"k": 10}), ("recip_rank", "RR", {"k": None}), ("Rprec", "Rprec", {}),
    ("bpref", "Bpref", {}), ("success_10", "Success", {"k": 10}), ("iprec_at_recall_0.10", "IPrec", {"r": 0.1}),
    ("gm_map", "GMAP", {}), ("set_P", "SetP", {}), ("set_recall", "SetR", {}), ("set_F", "SetF", {"beta": 1.0}),
    ("num_q", "NumQ", {}), ("num_ret", "NumRet", {}), ("num_rel", "NumRel", {}), ("num_rel_ret", "NumRelRet", {}),
    # ranx
    ("precision@5", "P", {"k": 5}), ("recall@100", "R", {"k": 100}), ("f1@10", "F1", {"k": 10}),
    ("hits@10", "Hits", {"k": 10}), ("hit_rate@10", "Success", {"k": 10}), ("mrr@10", "RR", {"k": 10}),
    ("map@100", "AP", {"k": 100}), ("ndcg@10", "nDCG", {"k": 10}), ("ndcg_burges@10", "nDCG", {"gain": "exp"}),
    ("dcg@10", "DCG", {"k": 10}), ("dcg_burges@10", "DCG", {"gain": "exp", "k": 10}),
    ("r-precision", "Rprec", {}), ("r_precision", "Rprec", {}), ("rbp.95", "RBP", {"p": 0.95}),
    ("ndcg@10-l2", "nDCG", {"k": 10, "rel": 2}), ("precision", "SetP", {}), ("recall", "SetR", {}),
]


@pytest.mark.parametrize("text, name, params", SPELLINGS)
def test_spellings(text, name, params):
    call = parse(text)
    assert call.measure.name == name
    for key, value in params.items():
        assert call.values[key] == value, key


# trec_eval's own names (as it prints them in its output files), from the templates' (trec_eval) aliases.
TREC_NAMES = [("nDCG@10", "ndcg_cut_10"), ("nDCG", "ndcg"), ("AP", "map"), ("AP@100", "map_cut_100"), ("P@5", "P_5"),
              ("R@1000", "recall_1000"), ("RR", "recip_rank"), ("IPrec@0.1", "iprec_at_recall_0.10"),
              ("IPrec@1", "iprec_at_recall_1.00"), ("GMAP", "gm_map"), ("SetF", "set_F"), ("NumRelRet", "num_rel_ret"),
              ("Success@10", "success_10"), ("Bpref", "bpref"), ("Rprec", "Rprec"), ("P_10", "P_10"),
              # no trec_eval counterpart, or a parameter trec_eval cannot express: as given
              ("RR@10", "RR@10"), ("P(rel=2)@5", "P(rel=2)@5"), ("ndcg_burges@10", "ndcg_burges@10"),
              ("SetF(beta=0.5)", "SetF(beta=0.5)")]


@pytest.mark.parametrize("text, trec", TREC_NAMES)
def test_trec_eval_names(text, trec):
    assert trec_name(parse(text)) == trec


def test_canonical_form_keeps_only_given_parameters():
    assert parse("ndcg_burges@10").canonical == "nDCG(gain='exp')@10"
    assert parse("P_10").canonical == "P@10"
    assert parse("ndcg@10-l2").canonical == "nDCG(rel=2)@10"


def test_relevance_level_is_the_default_rel():
    assert parse("P@5", relevance_level=2).values["rel"] == 2
    assert parse("P(rel=3)@5", relevance_level=2).values["rel"] == 3


def test_same_string_twice_is_rejected():
    with pytest.raises(SqlmetricsError, match="listed twice"):
        parse_all(["P@5", "P@5"])
