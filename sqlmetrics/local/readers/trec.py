"""TREC text (qrels, runs, and trec_eval's and ndeval's other qrels layouts): whitespace-separated fields,
split inside DuckDB, a bad line named as an editor numbers it."""
from __future__ import annotations

import mmap
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import duckdb

from ...errors import SqlmetricsError
from ...identifiers import sql_literal as _lit
from ...options import GROUP_ROLES, QRELS_ROLES, SUBTOPIC_ROLE
from .loaded import Loaded, _fresh
from .roles import RANKING_ROLES
from .text import _create, _reading, _trec_lines

# Whitespace is what trec_eval's isspace() finds in the C locale: space, \t, \n, \v, \f and \r (RE2's \s has no
# \v). A line of nothing else is blank: trec_eval skips it in a run (and refuses it in qrels, which
# `sqlmetrics trec_eval` checks; here it is skipped).
_SPACE = r"[ \t\n\v\f\r]"
_FIELD = r"[^ \t\n\v\f\r]+"
_NOT_BLANK = r"[^ \t\n\v\f\r]"
# A TREC line whose first non-blank character is '#' is a comment (trec_eval 10.0; 9.0.8 would read it as a
# judgment or ranking of a query named '#...', which is never what such a line means).
COMMENT = r"^[ \t\v\f\r]*#"
_LONE_CR = re.compile(rb"\r(?!\n)")
# The lines that hold data: not blank, not comments.
_DATA_LINE = f"line IS NOT NULL AND regexp_matches(line, {_lit(_NOT_BLANK)}) AND NOT regexp_matches(line, {_lit(COMMENT)})"
TREC_FIELDS = {
    "qrels": ("query_id", "iteration", "doc_id", "relevance"),
    # qrels_format='qrels_jg' and 'qrels_prefs': the second field is the judgment group (trec_eval -R)
    "qrels_jg": ("query_id", "judgment_group", "doc_id", "relevance"),
    "qrels_prefs": ("query_id", "judgment_group", "doc_id", "relevance"),
    # qrels_format='prefs': trec_eval's preferences, `query group subgroup document level`
    "prefs": ("query_id", "judgment_group", "judgment_subgroup", "doc_id", "relevance"),
    # qrels_format='subtopics': ndeval's diversity qrels, `query subtopic document grade`
    "subtopics": ("query_id", "subtopic", "doc_id", "relevance"),
    "run": ("query_id", "q0", "doc_id", "rank_position", "score", "tag"),
}


def _sniff_delimiter(head: bytes, width: int) -> str | None:
    """The one character (tab or space) that splits the file's first lines into `width`+ non-empty fields. A
    hundred lines tell: a later line that does not fit fails the strict read, which sends the file down the
    general path."""
    lines = [line for line in head.decode("utf-8", "replace").splitlines()[:-1][:100] if line.strip()]
    for delim, other in (("\t", " "), (" ", "\t")):  # no field may hold the other one
        if lines and all(other not in line and len(p := line.split(delim)) >= width and all(p) for line in lines):
            return delim
    return None


def _trec_view(con, path: Path, kind: str, label: str, compression: str, head: bytes,
               layout: str | None = None, scratch: str | None = None) -> Loaded:
    """TREC text: fields separated by any whitespace; fields after the expected ones are ignored.

    Read once into a temporary table with only the columns evaluation needs. Fast path: a file whose
    fields are separated by single tabs or single spaces goes through DuckDB's parallel CSV reader; any
    line that does not fit (other whitespace, extra or missing fields) sends the whole file down the
    general path, a regular expression per line (several times slower, but any whitespace goes). A file holding
    a carriage return is read there from a copy in `scratch` (or a folder of its own, then loaded.temporary).
    """
    fields = TREC_FIELDS[layout or kind]
    keep = [f for f in fields if f in QRELS_ROLES + RANKING_ROLES + GROUP_ROLES + (SUBTOPIC_ROLE,)]
    view = _fresh(kind)
    loaded = Loaded(view, {f: f for f in keep}, label, "line", _trec_numbered(path, fields, compression, None),
                    fixed_columns=True, integer_grades=True)
    if _split_by_one_delimiter(con, view, path, compression, head, fields, keep):
        return loaded
    if _holds_bytes(path, compression, (b"\r",)):
        path, loaded.temporary = _carriage_returns_as_spaces(path, scratch)
    matched = " AND ".join(f"f.{f} <> ''" for f in fields)  # regexp_extract gives '' when the line does not match
    size = _create(con, path, label, "trec", compression, lambda size: (
        f"CREATE OR REPLACE TEMP TABLE {view} AS SELECT {', '.join(f'f.{f} AS {f}' for f in keep)}, "
        f"{matched} AS well_formed FROM (SELECT {_trec_split(fields)} AS f FROM {_trec_lines(path, compression, size)} "
        f"WHERE {_DATA_LINE})"))
    loaded.numbered = _trec_numbered(path, fields, compression, size)
    _refuse_malformed(con, loaded, kind, fields)
    return loaded


def _carriage_returns_as_spaces(path: Path, scratch: str | None) -> tuple[Path, str]:
    """(a copy of the file with each carriage return a space, the folder holding it: `scratch`, or a new one).
    trec_eval reads a carriage return as whitespace within its line; DuckDB's line reader ends a line there,
    and refuses a file that mixes CRLF and LF line ends. The copy keeps every line and its number."""
    folder = scratch or tempfile.mkdtemp(prefix="sqlmetrics-input-")
    copy = Path(folder) / f"cr-as-space-{path.name}"
    try:
        with open(path, "rb") as source, open(copy, "wb") as target:
            while chunk := source.read(1 << 20):
                target.write(chunk.replace(b"\r", b" "))
    except OSError as e:
        if not scratch:
            shutil.rmtree(folder, ignore_errors=True)
        raise SqlmetricsError(f"cannot copy {str(path)!r} to {folder} to read its carriage returns as trec_eval does "
                              f"({e.strerror or e}); free space or set TMPDIR to a writable folder.") from None
    return copy, folder


def _split_by_one_delimiter(con, view: str, path: Path, compression: str, head: bytes, fields: tuple,
                            keep: list) -> bool:
    """The fast path: the file read into `view` by DuckDB's CSV reader, when a single tab or a single space
    separates the fields of every line; False (and no table) when a line does not fit: the general path then."""
    delim = _sniff_delimiter(head, len(fields))
    # The other whitespace characters inside a field (a tab when splitting on spaces; \v, \f) would split it in
    # TREC. A NUL byte sends the file down the general path, whose line reader refuses it naming the line (the
    # lines read again to name a bad value could not be read either). So does a carriage return that ends no
    # line (\r\n is a line end to both; a lone \r is one to DuckDB only). An uncompressed file is searched
    # for these bytes as a whole (a tab in a comment line sends it down the general path too, which reads it
    # alike); a compressed one row by row below.
    stray = None if delim is None else (
        _holds_bytes(path, compression, (b"\t" if delim == " " else b" ", b"\0", b"\v", b"\f"))
        or _holds_lone_carriage_return(path, compression))
    if delim is None or stray:
        return False
    columns = "{" + ", ".join(f"{_lit(f)}: 'VARCHAR'" for f in fields) + "}"
    # Two delimiters in a row give an empty field, which DuckDB reads as NULL: in whitespace-separated
    # TREC that line has a field fewer, a malformed line (trec_eval rejects it).
    clean = " AND ".join(f"{f} IS NOT NULL" for f in fields)
    if stray is None:  # all looked for in the fields joined once (sqlm_text): as fast as one look per field
        other = "chr(9)" if delim == " " else "' '"
        clean += "".join(f" AND NOT contains(sqlm_text, {c})" for c in (other, "chr(0)", "chr(11)", "chr(12)"))
    # DuckDB's cast reads `1_000` as 1000, where trec_eval's strtod stops at the `_`: a score or grade
    # holding `_` sends the file down the general path too, which keeps it as text for the input check
    # to refuse, naming the line and showing the value.
    clean += "".join(f" AND NOT contains({f}, '_')" for f in ("score", "relevance") if f in fields)
    try:
        # Scores and grades are parsed to numbers once, here; one that does not parse becomes NULL, which
        # the input check reports with the line's text (read again from the file).
        typed = [f"TRY_CAST({f} AS DOUBLE) AS {f}" if f in ("score", "relevance") else f for f in keep]
        joined = f", concat({', '.join(fields)}) AS sqlm_text" if stray is None else ""
        con.execute(f"CREATE TEMP TABLE {view} AS SELECT {', '.join(typed)}, {clean} AS well_formed FROM "
                    f"(SELECT *{joined} FROM read_csv({_lit(str(path))}, "
                    f"delim = {_lit(delim)}, header = false, columns = {columns}, quote = '', escape = '', "
                    f"auto_detect = false, strict_mode = true, {_reading(compression, None)})) "
                    f"WHERE {fields[0]} IS NULL OR NOT starts_with({fields[0]}, '#')")
        if not _malformed(con, view):
            return True
        con.execute(f"DROP TABLE {view}")
    except duckdb.Error:
        pass  # a line the single delimiter does not split into exactly the fields (or any other failure,
        # which the general path explains): the general path
    return False


def _refuse_malformed(con, loaded: Loaded, kind: str, fields: tuple) -> None:
    """The first line without the expected fields, named; in qrels, the first line with more (a run?)."""
    label = loaded.label
    if _malformed(con, loaded.view):
        line_no, line = con.execute(f"SELECT line_no, line FROM {loaded.numbered} WHERE {fields[-1]} = '' "
                                    "ORDER BY line_no LIMIT 1").fetchall()[0]
        raise SqlmetricsError(
            f"{label}, line {line_no}: expected {len(fields)} whitespace-separated fields ({' '.join(fields)}), "
            f"got {line!r}. Fix or remove that line"
            + ("; is this a qrels file passed as a run?" if kind == "run" else ".")
        )
    if kind == "qrels":
        # A qrels line has exactly four fields: a longer one is most likely a run passed as qrels (which
        # would otherwise evaluate every run to a perfect score), or a format that needs its own reader.
        longer = f"^{_SPACE}*({_FIELD}{_SPACE}+){{{len(fields)}}}{_NOT_BLANK}"
        extra = con.execute(f"SELECT line_no, line FROM {loaded.numbered} WHERE regexp_matches(line, "
                            f"{_lit(longer)}) ORDER BY line_no LIMIT 1").fetchall()
        if extra:
            line_no, line = extra[0]
            raise SqlmetricsError(
                f"{label}, line {line_no}: a qrels line has {len(fields)} fields ({' '.join(fields)}), this one has "
                f"more: {line!r}. Is this a run (query Q0 doc rank score tag) passed as qrels? Pass the judgments "
                "file first, then the runs.")


def _holds_bytes(path: Path, compression: str, needles: tuple) -> bool | None:
    """Whether an uncompressed file holds any of these bytes: a memchr over the mapped file (~0.1 s for
    250 MB, several times faster than looking inside every field in SQL). None for a compressed file, which
    only DuckDB decompresses in parallel, and for anything but a regular file (which cannot be mapped)."""
    if compression != "none":
        return None
    with open(path, "rb") as f:
        status = os.fstat(f.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        if status.st_size == 0:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return any(data.find(n) >= 0 for n in needles)


def _holds_lone_carriage_return(path: Path, compression: str) -> bool | None:
    """Whether an uncompressed file holds a carriage return not followed by a line feed (None as _holds_bytes)."""
    held = _holds_bytes(path, compression, (b"\r",))
    if not held:
        return held
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _LONE_CR.search(data) is not None


def _malformed(con, view: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM {view} WHERE NOT well_formed").fetchall()[0][0]


def _trec_split(fields) -> str:
    """One line -> a struct of its first len(fields) whitespace-separated fields ('' when it has fewer)."""
    pattern = _lit(f"^{_SPACE}*" + f"{_SPACE}+".join([f"({_FIELD})"] * len(fields)))
    return f"regexp_extract(line, {pattern}, [{', '.join(_lit(f) for f in fields)}])"


def _trec_numbered(path: Path, fields, compression: str, line_size: int | None) -> str:
    """Every line numbered as in an editor (blank ones too), read only to name a bad line in an error."""
    lines = _trec_lines(path, compression, line_size)
    return (f"(SELECT line_no, line, {', '.join(f'f.{f} AS {f}' for f in fields)} FROM (SELECT line_no, line, "
            f"{_trec_split(fields)} AS f FROM (SELECT ROW_NUMBER() OVER () AS line_no, line FROM {lines}) "
            f"WHERE {_DATA_LINE}))")
