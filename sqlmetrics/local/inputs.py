"""The inputs beside the runs, loaded and checked: the qrels; the training interactions (history=); the item
features (items=); and a RAG pipeline's judged statements (verdicts=, judge= giving the verdicts) and question
embeddings (embeddings=, embed= giving the vectors), each read as its own kind (readers.roles.RAG_ROLES)."""
from __future__ import annotations

import dataclasses

from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..options import ITEM_ROLES, VERDICT_COLUMNS, Settings
from ..statement import Embeddings, Source
from . import checks
from .readers import Loaded, load
from .readers.loaded import _types
from .sources import _source


def _load_qrels(con, qrels, columns: dict, groups: tuple, o: Settings, inputs: list, step) -> Loaded:
    """The qrels, checked, with the judgment-group roles (groups) their qrels_format reads."""
    step("reading qrels")
    q = load(con, qrels, "qrels", columns, own_columns=bool(o.qrels_columns),
             layout=None if o.qrels_format == "qrels" else o.qrels_format, glob=o.glob)
    inputs.append(q)
    missing = [g for g in groups if g not in q.columns]
    if missing:
        raise SqlmetricsError(f"{q.label}: qrels_format={o.qrels_format!r} needs a {missing[0]!r} column; "
                              f"name it so, or map it, e.g. qrels_columns={{{missing[0]!r}: '<your column>'}}.")
    # trec_eval reads a preference level as any number (atof), a grade as an integer (atol).
    step("checking qrels")
    step.rows += checks.check(con, q, "qrels", groups=groups,
                              whole_grades=o.qrels_format not in ("prefs", "qrels_prefs"))
    return q


def _other_inputs(con, o: Settings, qrels_columns: dict, inputs: list, q: Loaded | None = None,
                  calls: tuple = ()) -> dict:
    """build_statement's other inputs, by keyword: history, verdicts, embeddings and items, None when not given.
    q: the qrels, whose queries the RAG inputs' rows are matched with (a warning names the measures, of `calls`,
    that are empty for the queries with none)."""
    reading = {rows: [c.text for c in calls if c.measure.rows == rows] for rows in ("verdicts", "embeddings")}
    return {"history": None if o.history is None else _history(con, o, qrels_columns, inputs),
            "verdicts": None if o.verdicts is None else _verdicts(con, o, qrels_columns, inputs, q,
                                                                  reading["verdicts"]),
            "embeddings": None if o.embeddings is None else _embeddings(con, o, qrels_columns, inputs, q,
                                                                        reading["embeddings"]),
            "items": None if o.items is None else _items(con, o, qrels_columns, inputs)}


def _history(con, o: Settings, qrels_columns: dict, inputs: list) -> Source:
    """The training interactions, read as qrels are (user, item, grade)."""
    h = load(con, o.history, "qrels", qrels_columns, own_columns=bool(o.qrels_columns), what="history")
    inputs.append(h)
    checks.check_history(con, h)
    return _source(h.view, {r: h.columns[r] for r in ("query_id", "doc_id")})


def _load_completed(con, given, kinds: tuple, query: dict, inputs: list, completion):
    """A RAG input, read as kinds[1]; with completion = (complete, the user's function, how), read first as kinds[0]
    (without the column the function gives) and completed by complete(con, loaded, function)."""
    what = kinds[1]
    if completion:
        complete, function, how = completion
        raw = load(con, given, kinds[0], query, what=what)
        inputs.append(raw)
        loaded = load(con, complete(con, raw, function), kinds[1], query, what=f"{what} ({how})")
    else:
        loaded = load(con, given, kinds[1], query)
    inputs.append(loaded)
    return loaded


def _verdicts(con, o: Settings, qrels_columns: dict, inputs: list, q: Loaded | None, measures: list) -> Source:
    """The judged statements: the query as the qrels name it, the statement, what it is of (statement_of) and its
    verdict, which judge= gives when the input has none (read as statements, then)."""
    v = _load_completed(con, o.verdicts, ("statements", "verdicts"), _only(qrels_columns, "query_id"), inputs,
                        o.judge and (_judged, o.judge, "judged by judge="))
    checks.check_verdicts(con, v)
    _warn_unmatched(con, q, v, measures)
    return _source(v.view, {r: v.columns[r] for r in ("query_id", *VERDICT_COLUMNS)})


def _embeddings(con, o: Settings, qrels_columns: dict, inputs: list, q: Loaded | None, measures: list) -> Embeddings:
    """The question embeddings: the query as the qrels name it, generated, the vector (an embedding list, or
    dimension and value: one row per dimension) and noncommittal; embed= gives the vectors of the questions' texts
    (read as questions, then)."""
    e = _load_completed(con, o.embeddings, ("questions", "embeddings"), _only(qrels_columns, "query_id"), inputs,
                        o.embed and (_embedded, o.embed, "embedded by embed="))
    checks.check_embeddings(con, e)
    _warn_unmatched(con, q, e, measures)
    source = _source(e.view, e.columns)
    if "noncommittal" not in e.columns:  # optional here: no generation judged the answer noncommittal
        source = dataclasses.replace(source, constants={"noncommittal": 0})
    return Embeddings(source, "function" if "embedding" in e.columns else "long")


def _warn_unmatched(con, q: Loaded | None, rag: Loaded, measures: list) -> None:
    """A RAG input's rows are matched with the judged queries by query id, exactly: say when some judged queries,
    or all, have none (the measures read from it are then empty), as a run's missing queries are warned about."""
    if q is None or not measures:
        return
    measure = " and ".join([", ".join(measures[:-1]), measures[-1]] if len(measures) > 1 else measures)
    judged = f"SELECT DISTINCT CAST({_q(q.columns['query_id'])} AS VARCHAR) AS id FROM {q.view}"
    given = f"SELECT DISTINCT CAST({_q(rag.columns['query_id'])} AS VARCHAR) AS id FROM {rag.view}"
    missing = [r[0] for r in con.execute(f"SELECT id FROM ({judged}) EXCEPT SELECT id FROM ({given}) ORDER BY id").fetchall()]
    if not missing:
        return
    total = con.execute(f"SELECT COUNT(*) FROM ({judged})").fetchall()[0][0]
    if len(missing) == total:
        theirs = [r[0] for r in con.execute(f"SELECT id FROM ({given}) ORDER BY id LIMIT 3").fetchall()]
        warn(f"{rag.label} matches none of the {total} judged queries by query id (its ids: "
                      f"{', '.join(map(repr, theirs))}; the qrels': {', '.join(map(repr, missing[:3]))}): {measure} "
                      f"{'is' if len(measures) == 1 else 'are'} empty (NULL). Ids are compared exactly, case included.")
    else:
        warn(f"{rag.label} has no rows for {len(missing)} of the {total} judged queries "
                      f"({', '.join(map(repr, missing[:5]))}{', ...' if len(missing) > 5 else ''}); their {measure} "
                      f"{'is' if len(measures) == 1 else 'are'} empty (NULL).")


def _items(con, o: Settings, qrels_columns: dict, inputs: list) -> Source:
    """The item features: the item (read as the qrels' doc_id) and its features."""
    mapped = {r: c for r, c in (o.columns or {}).items() if r in ITEM_ROLES}
    item = {"doc_id": qrels_columns["doc_id"]} if "doc_id" in qrels_columns else {}
    i = load(con, o.items, "items", {**item, **mapped})
    inputs.append(i)
    if mapped:  # the features columns= names; another form, found by its column's name, is left aside
        form = {"dimension", "value"} if mapped.keys() & {"dimension", "value"} else set(mapped)
        i = dataclasses.replace(i, columns={r: c for r, c in i.columns.items() if r == "doc_id" or r in form})
    if "vector" in i.columns and not _types(con, i.view)[i.columns["vector"]].endswith("]"):
        raise SqlmetricsError(f"{i.label}: the vector column {i.columns['vector']!r} is not a list of numbers; "
                              "give a list (or array) per item, or the long form (dimension, value).")
    checks.check_items(con, i)
    return _source(i.view, i.columns)



def warn_outside_catalogue(con, items: Source | None, runs: list, calls: tuple) -> None:
    """With items= (the catalogue), the items a run recommends that it does not list: a catalogue share counts
    none of them (CatalogCoverage), so say how many there are (a run and a catalogue of different id spellings
    would otherwise just score low). runs: the checked runs, (name, Loaded, log view or None)."""
    if items is None or not any("in_catalogue" in c.measure.body for c in calls):
        return
    catalogue = f"SELECT CAST({_q(items.columns['doc_id'])} AS VARCHAR) FROM {items.table}"
    for _, loaded, _ in runs:
        outside = con.execute(f"SELECT COUNT(*), MIN(d) FROM (SELECT CAST({_q(loaded.columns['doc_id'])} AS VARCHAR) "
                              f"AS d FROM {loaded.view} EXCEPT {catalogue})").fetchall()[0]
        if outside[0]:
            total = con.execute(f"SELECT COUNT(DISTINCT {_q(loaded.columns['doc_id'])}) FROM {loaded.view}").fetchall()
            warn(f"{loaded.label} recommends {outside[0]} of its {total[0][0]} items outside items= (the catalogue; "
                 f"e.g. {outside[1]!r}): a share of the catalogue counts only the items it lists.")

def _judged(con, loaded: Loaded, judge):
    """The verdicts= rows (an Arrow table) with the verdict judge= gives each (a list of row dicts -> 1 or 0 each)."""
    import pyarrow as pa

    table = con.sql(f"SELECT * FROM {loaded.view}").to_arrow_table()
    if "verdict" in (c.lower() for c in table.column_names):
        raise SqlmetricsError(f"{loaded.label}: has a verdict column; judge= judges statements without one. Drop "
                              "the column, or leave judge= out.")
    # Each row as documented: its roles by their names (query_id, statement, statement_of, whatever the file calls
    # them), its other columns as they are.
    roles = {column: role for role, column in loaded.columns.items()}
    rows = [{roles.get(k, k): v for k, v in row.items()} for row in table.to_pylist()]
    verdicts = _called(judge, "judge", rows, "statements")
    bad = next((v for v in verdicts if isinstance(v, str) or v not in (0, 1)), None)
    if bad is not None:
        raise SqlmetricsError(f"judge= returned {bad!r}: a verdict is 1 or 0 (True or False).")
    return table.append_column("verdict", pa.array([int(v) for v in verdicts], pa.int64()))


def _embedded(con, loaded: Loaded, embed):
    """The embeddings= rows (an Arrow table) with the vector embed= gives each question's text (a list of strings ->
    a list of numbers each)."""
    import pyarrow as pa

    table = con.sql(f"SELECT * FROM {loaded.view}").to_arrow_table()
    if "embedding" in (c.lower() for c in table.column_names):  # the question column is there (kind "questions")
        raise SqlmetricsError(f"{loaded.label}: embed= embeds each row's question (its text): give a question column "
                              f"and no embedding column (columns: {', '.join(table.column_names)}).")
    texts = table.column(loaded.columns["question"]).to_pylist()
    if None in texts:
        raise SqlmetricsError(f"{loaded.label}, row {texts.index(None) + 1}: the question is empty; embed= needs its "
                              "text.")
    vectors = _called(embed, "embed", [str(t) for t in texts], "questions")
    try:
        array = pa.array([[float(x) for x in v] for v in vectors], pa.list_(pa.float64()))
    except (TypeError, ValueError):
        raise SqlmetricsError("embed= returned something other than a list of numbers for a question.") from None
    return table.append_column("embedding", array)


def _called(function, name: str, items: list, what: str) -> list:
    """The caller's function over all the items at once, one result per item."""
    try:
        out = list(function(items))
    except Exception as e:  # the caller's code: any failure is theirs, named so
        raise SqlmetricsError(f"{name}= failed on {len(items)} {what}: {type(e).__name__}: {e}") from e
    if len(out) != len(items):
        raise SqlmetricsError(f"{name}= returned {len(out)} results for {len(items)} {what}: give one per item, in "
                              "order.")
    return out


def _only(columns: dict, role: str) -> dict:
    return {role: columns[role]} if role in columns else {}
