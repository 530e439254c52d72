"""Parquet files (read lazily, where the statement needs them), JSON Lines and JSON files (every value read as
text, a number as written), and ranx's {query_id: {doc_id: value}} JSON."""
from __future__ import annotations

import re
from pathlib import Path

import duckdb

from ...errors import SqlmetricsError
from ...identifiers import quote_identifier as _q
from ...identifiers import sql_literal as _lit
from .loaded import Loaded, _first_line, _fresh, _numbered
from .roles import RAG_ROLES, _map_columns
from .text import _create, _reason, _trec_lines


def _parquet_view(con, source: str, kind: str, label: str, columns: dict | None) -> Loaded:
    """One Parquet file (local, or remote through a filesystem registered with DuckDB), read lazily: only
    the columns the statement needs (most of the speed on wide files)."""
    view = _fresh(kind)
    try:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM read_parquet({_lit(source)})")
        con.execute(f"SELECT * FROM {view} LIMIT 0")
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read as Parquet ({_first_line(e)}).") from None
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0),
                  read_all=f"SELECT max(hash(t)) FROM {view} AS t")


# DuckDB 1.3 brought `lambda t: ...`; 2.0 refuses the older `t -> ...`.
_LAMBDA = "lambda t: " if tuple(map(int, re.findall(r"\d+", duckdb.__version__)[:2])) >= (1, 3) else "t -> "
# Every number outside a JSON string quoted, so that ->> gives its written text. The text is cut into
# strings and what lies between them (a string's quotes inside are escaped, so none is cut in two).
_QUOTE_NUMBERS = (r"""list_aggregate(list_transform(regexp_extract_all(line, '(?s)"(?:[^"\\]|\\.)*"|[^"]+'), """
                  + _LAMBDA + r"""CASE WHEN starts_with(t, '"') THEN t ELSE regexp_replace(t, """
                  r"""'(-?[0-9][0-9.eE+-]*)', '"\1"', 'g') END), 'string_agg', '')""")
_NUMBER_ROLES = ("score", "relevance", "rank_position", "verdict", "generated")


def _json_view(con, path: Path, kind: str, label: str, columns: dict | None, compression: str,
               head: bytes) -> Loaded:
    """JSON Lines (one object per line; a .json file too), or one JSON array of objects.

    Every value is read as text, as CSV's are, and scores and grades are converted by the checks. DuckDB's
    JSON reader guesses column types from the first 20,480 lines (a later value of another type fails the
    whole read), and parses a number to a double, which would make the id `1.50` the id `1.5` (and `1e3`
    `1000.0`). Ids are compared as text, so a number keeps its written text (in every column but the score,
    grade, rank, verdict and generated ones, whose value alone matters): found by a regular expression on the
    line where the key is written once and the line has no escapes, else by quoting every number of the line
    (_QUOTE_NUMBERS, several times slower).
    """
    # {query_id: {doc_id: value}} is a qrels' or a run's shape: a RAG input's columns are its own (RAG_ROLES).
    if kind not in RAG_ROLES and _NESTED_JSON.match(head) and (
            nested := _nested_json_view(con, path, kind, label, compression)):
        return nested
    array = head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")
    raw, row_word = _fresh("json"), "object" if array else "line"
    if array:
        source = (f"(SELECT ROW_NUMBER() OVER () AS line_no, json AS line FROM read_json_objects("
                  f"{_lit(str(path))}, format = 'array', compression = {_lit(compression)}))")
    else:
        source = ("(SELECT * FROM (SELECT ROW_NUMBER() OVER () AS line_no, line FROM {lines}) "
                  "WHERE trim(line) <> '')")
    _create(con, path, label, "json" if array else "jsonl", compression,
            lambda size: f"CREATE TEMP TABLE {raw} AS " + source.replace("{lines}", _trec_lines(path, compression, size)))
    # One pass: the keys of each kind of object, by first line; NULL for a line that is no JSON object.
    groups = con.execute(f"SELECT CASE WHEN json_valid(line) AND json_type(line) = 'OBJECT' THEN json_keys(line) "
                         f"END AS keys, MIN(line_no) FROM {raw} GROUP BY keys ORDER BY 2").fetchall()
    names: dict = {}
    for keys, first in groups:
        if keys is None:
            text = con.execute(f"SELECT line FROM {raw} WHERE line_no = {first}").fetchone()[0]
            raise SqlmetricsError(
                f"{label}, {row_word} {first}: not a JSON object: {text[:80]!r}{'...' if len(text) > 80 else ''}. "
                'Write one object per line, e.g. {"query_id": "q1", "doc_id": "d1", "score": 1.5} (or, in a .json '
                "file, one array of such objects).")
        if len(set(keys)) < len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise SqlmetricsError(f"{label}, {row_word} {first}: the key {twice!r} is written twice in one object; "
                                  "keep one.")
        names.update(dict.fromkeys(keys))
    if not names:
        raise SqlmetricsError(f"{label}: has no rows (no JSON object).")
    view = _fresh(kind)
    arrays = _array_keys(con, raw, list(names)) if kind == "run" else set()
    typed = [f"NULL::{'VARCHAR[]' if n in arrays else 'VARCHAR'} AS {_q(n)}" for n in names]
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(typed)}")
    mapping = _map_columns(con, view, kind, label, columns)  # names only: which columns hold numbers
    numbers = {mapping[r] for r in _NUMBER_ROLES if r in mapping}
    con.execute(f"DROP VIEW {view}")
    lists = _list_columns(mapping, arrays)
    values = ", ".join(lists.get(n) or f"{_json_value(n, n not in numbers)} AS {_q(n)}" for n in names)
    table = _fresh("json")  # the values with each one's line number; the view shows the values alone
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT line_no, {values} FROM {raw}")
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read as JSON ({_reason(e)}).") from None
    con.execute(f"DROP TABLE {raw}")
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {table}")
    return Loaded(view, mapping, label, row_word, f"(SELECT * FROM {table})")


def _pointer(key: str) -> str:
    return _lit("/" + key.replace("~", "~0").replace("/", "~1"))  # JSON pointer: any key, literally


def _array_keys(con, raw: str, names: list) -> set:
    """The keys some line of a run gives a JSON array: one object per query, its documents (and scores) listed."""
    found = con.execute("SELECT " + ", ".join(f"bool_or(json_type(line, {_pointer(n)}) = 'ARRAY')" for n in names)
                        + f" FROM {raw}").fetchone()
    return {n for n, is_array in zip(names, found) if is_array}


def _list_columns(mapping: dict, arrays: set) -> dict:
    """{key: the SELECT item reading it as a list} for a run's documents (and scores) given as JSON arrays, which
    the readers unnest as they do Parquet's lists; a value that is no array of the kind fails the read."""
    out = {}
    for role, kind in (("doc_id", "VARCHAR[]"), ("score", "DOUBLE[]")):
        key = mapping.get(role)
        if key in arrays and (role == "doc_id" or mapping.get("doc_id") in arrays):
            out[key] = f"CAST(json_extract(line, {_pointer(key)}) AS {kind}) AS {_q(key)}"
    return out


# A file that opens as {"q1": {...: an object keyed by query (ranx's .json files, json.dump of such a dict).
_NESTED_JSON = re.compile(rb'^(\xef\xbb\xbf)?\s*\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{')


def _nested_json_view(con, path: Path, kind: str, label: str, compression: str) -> Loaded | None:
    """{query_id: {doc_id: value}} written as one JSON object, as ranx saves runs and qrels; None when the
    file is not one such object (JSON Lines whose first value is an object), for the JSON Lines reader."""
    objects = (f"read_json_objects({_lit(str(path))}, format = 'unstructured', compression = {_lit(compression)}, "
               f"maximum_object_size = {1 << 30})")  # one object holds the whole run
    value = "relevance" if kind == "qrels" else "score"
    table = _fresh(kind)
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT q.key AS query_id, d.key AS doc_id, d.value AS {value}, "
                    f"json_type(q.value) AS inner_type FROM {objects} AS t, json_each(t.json) AS q "
                    "LEFT JOIN json_each(q.value) AS d ON json_type(q.value) = 'OBJECT'")
        one = con.execute(f"SELECT COUNT(*) = 1 FROM {objects}").fetchone()[0]
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read as JSON ({_reason(e)}).") from None
    if not one or con.execute(f"SELECT COUNT(*) FROM {table} WHERE inner_type <> 'OBJECT'").fetchone()[0]:
        con.execute(f"DROP TABLE {table}")
        return None
    view = _fresh(kind)  # a query with no documents ({"q1": {}}) has no row
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT query_id, doc_id, {value} FROM {table} WHERE doc_id IS NOT NULL")
    return Loaded(view, {"query_id": "query_id", "doc_id": "doc_id", value: value}, label, "row",
                  _numbered(view, 0))


def _json_value(key: str, as_written: bool) -> str:
    """One key's value as text (NULL when absent or null); a number as written when as_written."""
    pointer = _pointer(key)
    plain = f"line ->> {pointer}"
    if not as_written:
        return plain
    quoted = f"{_QUOTE_NUMBERS} ->> {pointer}"
    number = f"coalesce(json_type(line, {pointer}), '') IN ('UBIGINT', 'BIGINT', 'DOUBLE')"
    if re.fullmatch(r"\w+", key, re.ASCII):
        # Without a backslash in the line, the key can only be written one way, and a quote inside a string is
        # escaped: so `"key":` found once is this key, and the number after it is its written text.
        at = '"' + key + r'"\s*:'
        once = f"NOT contains(line, '\\') AND len(regexp_extract_all(line, {_lit(at)})) = 1"
        number_after = _lit(at + r"\s*(-?[0-9][0-9.eE+-]*)")
        written = f"regexp_extract(line, {number_after}, 1)"
        quoted = f"CASE WHEN {once} THEN {written} ELSE {quoted} END"
    return f"CASE WHEN {number} THEN {quoted} ELSE {plain} END"
