"""Inputs: files, frames, dicts and DuckDB tables become DuckDB views with known column roles.

DuckDB scans every file itself (TREC text is split by a regular expression inside DuckDB, CSV, Parquet
and JSON Lines by its readers); nothing is parsed line by line in Python. Each input is checked before
evaluation, and every problem is a SqlmetricsError naming the input, the line or row, and the fix.

load() picks the reader for what it is given, one module per input family: trec.py, csv_tsv.py and
parquet_json.py (files.py picks one by a file's name), objects.py (frames, Arrow, dicts, the IR toolkits'
objects), tables.py (a table of a DuckDB or SQLite file), globs.py (glob=True) and remote.py (fsspec). What
they share: loaded.py (Loaded), roles.py (which column plays which role), text.py (reading text files, and
why one cannot be read).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from ...deferred import exp
from ...errors import SqlmetricsError
from ...identifiers import quote_identifier as _q
from ...statement import LISTS, Source
from ..databases import _split_duckdb_target
from .files import _GLOB, _file_view
from .globs import _glob_view
from .loaded import Loaded, _fresh, _numbered, _types
from .objects import IR_DATASETS, _ir_dataset_items, _is_arrow, _named_tuples, _object_view
from .remote import _is_remote, _remote_view
from .tables import _database_table


def load(con, obj, kind: str, columns: dict | None = None, name: str | None = None, fmt: str | None = None,
         own_columns: bool = False, layout: str | None = None, glob: bool = False, what: str | None = None) -> Loaded:
    """Register one input as a view on `con`. kind: qrels, run, items, or a RAG input's (roles.RAG_ROLES: verdicts,
    embeddings, and statements and questions before judge= and embed=); columns: {role: column} for this table's roles;
    own_columns: the mapping was given for this table alone (qrels_columns=), so a TREC file refuses it;
    layout: the fields of a TREC text file when they are not kind's (TREC_FIELDS, e.g. 'qrels_jg');
    glob: a name holding * ? [ ] { }, or a folder, is a pattern of Parquet files (else it is one file);
    what: the input's name in messages, when it is not the kind's (e.g. 'verdicts', read as statements are).
    A run whose doc_id column is a list (one row per query) is unnested: see _unnested."""
    loaded = _load(con, obj, kind, columns, name, fmt, own_columns, layout, glob, what)
    return _unnested(con, loaded) if kind == "run" and _column_type(con, loaded, "doc_id").endswith("[]") else loaded


def _load(con, obj, kind: str, columns: dict | None, name: str | None, fmt: str | None, own_columns: bool,
          layout: str | None, glob: bool, what: str | None = None) -> Loaded:
    what = what or (kind if name is None else f"run {name!r}")
    if isinstance(obj, (str, Path)):
        text = str(obj)
        if isinstance(obj, str) and text.startswith(IR_DATASETS):
            return _named_tuples(con, _ir_dataset_items(text, kind, what), kind, f"{what} {text!r}", columns)
        if target := _split_duckdb_target(text):
            return _database_table(con, *target, kind, columns, what)
        if glob and (_GLOB.search(text) or Path(text).is_dir()):
            return _glob_view(con, text, kind, f"{what} files {text!r}", columns, own_columns, layout)
        if _is_remote(text):
            return _remote_view(con, text, kind, f"{what} file {text!r}", columns, fmt, own_columns, layout)
        return _file_view(con, Path(text), kind, f"{what} file {text!r}", columns, fmt, own_columns, layout)
    if isinstance(obj, Iterator) and not _is_arrow(obj):
        return _named_tuples(con, obj, kind, what, columns)
    return _object_view(con, obj, kind, what, columns)


def _column_type(con, loaded: Loaded, role: str) -> str:
    return _types(con, loaded.view)[loaded.columns[role]]


def _unnested(con, loaded: Loaded) -> Loaded:
    """A run with one row per query, its doc_id a list of document ids in rank order (and its score, when
    there is one, the list of their scores), as one row per document: the statement's own unnesting
    (statement.Source with lists=True, which `sqlmetrics sql --list-run` renders for other engines), so
    that the checks see documents. The other columns (segments, labels) are kept beside the roles."""
    c = loaded.columns
    label = f"{loaded.label} (one list per row)"
    if "score" in c:
        if not _column_type(con, loaded, "score").endswith("[]"):
            raise SqlmetricsError(f"{label}: doc_id ({c['doc_id']!r}) is a list, and score ({c['score']!r}) is not; "
                                  "give a list of scores beside each list of documents, or leave the scores out "
                                  "(the list order is then the ranking).")
        query, docs, scores = (_q(c[r]) for r in ("query_id", "doc_id", "score"))
        bad = con.execute(f"SELECT {query}, len({docs}), len({scores}) FROM {loaded.view} "
                          f"WHERE len({docs}) IS DISTINCT FROM len({scores}) LIMIT 1").fetchall()
        if bad:
            (query_id, n_docs, n_scores), = bad
            raise SqlmetricsError(
                f"{label}: query {query_id!r} has {n_docs} document ids and {n_scores} scores; give one score "
                f"per document (lists of equal length), or leave the scores out (the list order is then the "
                "ranking).")
    roles = {"query_id": "VARCHAR", "doc_id": "VARCHAR", "rank_position": "BIGINT", "score": "DOUBLE"}
    if "run_name" in c:
        roles["run_name"] = "VARCHAR"
    source = Source(exp.to_table(loaded.view), {r: exp.to_identifier(col, quoted=True) for r, col in c.items()},
                    lists=True)
    hidden = {*c.values(), *roles, *LISTS[2:]}  # the roles' columns, and names the roles now take
    kept = [n for n in _types(con, loaded.view) if n not in hidden]
    tree = source.select(roles)
    if kept:
        tree = tree.select(*(exp.column(exp.to_identifier(n, quoted=True), LISTS[0]) for n in kept), copy=False)
    view = _fresh("lists")
    con.execute(f"CREATE TEMP VIEW {view} AS {tree.sql('duckdb')}")
    return dataclasses.replace(loaded, view=view, columns={r: r for r in roles}, label=label,
                               numbered=_numbered(view, 0), line_of=None)
