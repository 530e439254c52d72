"""Which column of an input plays which role (query_id, doc_id, relevance, score, ...): mapped by columns=, or
recognised by its name. Every reader ends here (_map_columns), so every input kind names a missing column alike."""
from __future__ import annotations

from ...catalogue.templates import ASSIGNMENTS, IMPORTANCES, STATEMENTS_OF
from ...errors import SqlmetricsError
from ...options import GROUP_ROLES, ITEM_ROLES, QRELS_ROLES, SUBTOPIC_ROLE
from .loaded import Loaded, _fresh, _numbered, _types

RANKING_ROLES = ("query_id", "doc_id", "score", "rank_position")  # run_name only when mapped

# Column names recognised without a mapping (case-insensitive). A role is guessed only when exactly one
# of its names is present; anything else needs columns={role: name}.
KNOWN_NAMES = {
    # a recommender's list is a user's, a search log's a session's or a request's
    "query_id": ("query_id", "qid", "query", "topic", "topic_id", "q_id", "queryid", "query-id", "user_id", "userid",
                 "user", "session_id", "sessionid", "session", "request_id", "requestid"),
    "doc_id": ("doc_id", "docid", "docno", "doc", "document", "document_id", "pid", "item_id", "itemid", "item",
               "corpus-id"),
    "relevance": ("relevance", "rel", "label", "grade", "judgment", "judgement", "qrel", "rating"),
    "score": ("score", "sim", "similarity", "rsv", "prediction"),
    "rank_position": ("rank", "position", "pos", "rank_position"),
    "judgment_group": ("judgment_group", "jg"),
    "judgment_subgroup": ("judgment_subgroup", "jsg"),
    "subtopic": ("subtopic", "subtopic_id", "iteration"),  # ir_measures keeps a subtopic in `iteration`
}
# The item features' columns (items=, kind "items"); the item is found as doc_id is.
ITEM_NAMES = {"vector": ("vector", "embedding", "features"), "category": ("category", "genre"),
              "dimension": ("dimension", "dim"), "value": ("value",)}
# A name that is no candidate when the other one is present. PyTerrier's frames carry both: `docid` is
# Terrier's internal number and `docno` the collection's id; `query` is the query's text, `qid` its id.
# A nuggets file's `nugget` may be the nugget's text beside its `nugget_id`.
SHADOWED_BY = {"docid": "docno", "query": "qid", "nugget": "nugget_id"}
# Qrels layouts that call the grade `score`, recognised by their exact columns: BEIR's qrels TSV and
# ranx's Qrels.save("qrels.parquet"). Elsewhere a `score` column in qrels is a run passed as qrels.
GRADE_NAMED_SCORE = ({"query-id", "corpus-id", "score"}, {"q_id", "doc_id", "score"})

# A RAG pipeline's inputs, each a kind of its own: {kind: (required roles, optional roles)}. The query is found as
# the qrels' is (columns=, qrels_columns=, or a known name); every other role is the column of its own name (any
# case). verdicts=: the judged statements; statements: the same before judge= gives their verdicts. embeddings=:
# one vector per question, an `embedding` list or the long form (`dimension`, `value`: one row per dimension);
# questions: the questions' texts before embed= gives their vectors.
RAG_ROLES = {
    "verdicts": (("query_id", "statement", "statement_of", "verdict"), ()),
    "statements": (("query_id", "statement", "statement_of"), ()),
    "embeddings": (("query_id", "generated"), ("embedding", "dimension", "value", "noncommittal")),
    "questions": (("query_id", "generated", "question"), ()),
    # nuggets=: each topic's nuggets; assignments=: each run's support of them (the AutoNuggetizer's labels).
    "nuggets": (("query_id", "nugget", "importance"), ("weight",)),
    "assignments": (("query_id", "run", "nugget", "assignment"), ()),
}
# The names the nugget inputs' roles go by besides their own (TREC RAG's and nuggetizer's files).
NUGGET_NAMES = {"nugget": ("nugget_id", "nugget"), "run": ("run", "run_id", "run_name", "system")}
# A click log's roles (kind "clicks", sqlmetrics.clicks): one row per shown (session, position), each role found by
# its own names; the shipped demo log (session, query, doc, position, clicked) needs no mapping.
CLICK_NAMES = {
    "session": ("session", "session_id", "sessionid", "serp", "serp_id", "impression", "impression_id", "request_id"),
    "query": ("query", "query_id", "qid"),
    "doc": ("doc", "doc_id", "docid", "docno", "document", "document_id", "item", "item_id"),
    "position": ("position", "rank", "pos", "rank_position"),
    "clicked": ("clicked", "click", "is_click"),
}
# What a RAG role's column holds, said when it is missing (columns= maps none of them).
RAG_COLUMNS = {
    "statement": "it holds the statement judged",
    "statement_of": f"it says what each statement is of: {', '.join(map(repr, STATEMENTS_OF))}",
    "verdict": "it holds each statement's verdict, 1 or 0 (or judge= gives them: then leave it out)",
    "generated": "it is 0 for the question asked and 1, 2, ... for the questions generated from the answer",
    "question": "embed= embeds each row's question (its text): give a question column and no embedding column",
    "nugget": "it names each nugget (nugget_id or nugget), unique within its topic",
    "importance": f"it says each nugget's importance: {', '.join(map(repr, IMPORTANCES))}",
    "run": "it names the run (as evaluate names runs: a file's stem, a dict's key) whose answer the row judges",
    "assignment": f"it says how the run's answer supports the nugget: {', '.join(map(repr, ASSIGNMENTS))}",
}


def _map_columns(con, view: str, kind: str, label: str, columns: dict | None) -> dict:
    types = _types(con, view)
    present = list(types)
    lower = {c.lower(): c for c in present}
    roles, required, names = _roles_of(kind)
    columns = dict(columns or {})
    if kind == "run" and "run_name" in columns:
        roles = ("run_name", *roles)
    mapping = {}
    for role in roles:
        if role in columns:
            if columns[role] not in present:
                also = (" (columns= maps both tables; qrels_columns= overrides it for the qrels)"
                        if kind == "qrels" or kind in RAG_ROLES else "")
                # The qrels' mapping is columns= and qrels_columns= merged: say which maps both tables
                mapped = f"{role!r} is mapped" if also else f"columns= maps {role!r}"
                raise SqlmetricsError(
                    f"{label}: {mapped} to {columns[role]!r}, which is not a column "
                    f"(columns: {', '.join(present)}){also}."
                )
            mapping[role] = columns[role]
            continue
        found = [lower[n] for n in names[role] if n in lower and SHADOWED_BY.get(n) not in lower]
        if role == "relevance" and kind == "qrels" and set(lower) in GRADE_NAMED_SCORE:
            found = [lower["score"]]
        if len(found) == 1:
            mapping[role] = found[0]
        elif len(found) > 1:  # any guessed role: skipping it would pick another column, or fail obscurely
            raise SqlmetricsError(
                f"{label}: several columns could be {role!r} ({', '.join(found)}); "
                f"say which with columns={{{role!r}: ...}}."
            )
    missing = [r for r in required if r not in mapping]
    lists = kind == "run" and "doc_id" in mapping and types[mapping["doc_id"]].endswith("[]")
    if kind == "run" and not lists and "score" not in mapping and "rank_position" not in mapping:
        missing.append("score")
    if missing and missing[0] in RAG_COLUMNS:
        raise SqlmetricsError(f"{label}: no column {missing[0]!r} (columns: {', '.join(present)}); "
                              f"{RAG_COLUMNS[missing[0]]}.")
    if missing:
        raise SqlmetricsError(
            f"{label}: no column for {', '.join(map(repr, missing))} (columns: {', '.join(present)}). "
            f"Rename it (or map it: {'qrels_columns' if kind == 'qrels' else 'columns'}={{{missing[0]!r}: "
            "'<your column>'})."
        )
    if kind == "embeddings":
        _vector_roles(mapping, types, label)
    return mapping


def _roles_of(kind: str) -> tuple[tuple, tuple, dict]:
    """(the roles of an input of this kind, those it must have, {role: the column names it is recognised by})."""
    if kind == "clicks":
        return tuple(CLICK_NAMES), tuple(CLICK_NAMES), CLICK_NAMES
    if kind in RAG_ROLES:
        required, optional = RAG_ROLES[kind]
        names = {r: NUGGET_NAMES.get(r, (r,)) for r in (*required, *optional) if r != "query_id"}  # mostly its own name
        return (*required, *optional), required, {"query_id": KNOWN_NAMES["query_id"], **names}
    # The judgment group and subtopic are optional: read only by the qrels_format that says when one is missing.
    roles = {"qrels": (*QRELS_ROLES, *GROUP_ROLES, SUBTOPIC_ROLE), "items": ("doc_id", *ITEM_ROLES)}.get(kind, RANKING_ROLES)
    required = {"qrels": ("query_id", "doc_id", "relevance"), "items": ("doc_id",)}.get(kind, ("query_id", "doc_id"))
    return roles, required, {**KNOWN_NAMES, **ITEM_NAMES}


def _vector_roles(mapping: dict, types: dict, label: str) -> None:
    """An embeddings= input's vectors: its `embedding` column when that is a list, else the long form (`dimension`
    and `value`, one row per dimension). The other form's roles are dropped from the mapping."""
    if "embedding" in mapping and types[mapping["embedding"]].endswith("]"):
        mapping.pop("dimension", None)
        mapping.pop("value", None)
    elif "dimension" in mapping and "value" in mapping:
        mapping.pop("embedding", None)
    else:
        raise SqlmetricsError(f"{label}: no list column 'embedding', nor 'dimension' and 'value' (one row per "
                              f"dimension); columns: {', '.join(types)}.")


def _empty_view(con, kind: str, label: str) -> Loaded:
    """An input without rows, with the columns of its roles. A RAG input has columns of its own, which an input
    without any does not show: refused."""
    if kind in RAG_ROLES or kind == "clicks":
        roles = RAG_ROLES[kind][0] if kind in RAG_ROLES else CLICK_NAMES
        raise SqlmetricsError(f"{label}: is empty, without even its columns ({', '.join(roles)}).")
    view = _fresh(kind)
    value = "relevance" if kind == "qrels" else "score"
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT NULL::VARCHAR AS query_id, NULL::VARCHAR AS doc_id, "
                f"NULL::DOUBLE AS {value} WHERE false")
    roles = {"query_id": "query_id", "doc_id": "doc_id", value: value}
    return Loaded(view, roles, label, "line", _numbered(view, 0))
