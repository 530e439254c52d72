"""Inputs: files, frames, dicts and DuckDB tables become DuckDB views with known column roles.

DuckDB scans every file itself (TREC text is split by a regular expression inside DuckDB, CSV, Parquet
and JSON Lines by its readers); nothing is parsed line by line in Python. Each input is checked before
evaluation, and every problem is a SqlmetricsError naming the input, the line or row, and the fix.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import gzip
import io
import itertools
import mmap
import os
import re
import shutil
import stat
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from sqlglot import exp

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import GROUP_ROLES, ITEM_ROLES, QRELS_ROLES, SUBTOPIC_ROLE
from ..statement import LISTS, Source
from .databases import DATABASE_FILES, copy_into, copy_table

if TYPE_CHECKING:  # pyarrow is imported where a table is built: the command line never pays its import
    import pyarrow as pa

RANKING_ROLES = ("query_id", "doc_id", "score", "rank_position")  # run_name only when mapped

# Column names recognised without a mapping (case-insensitive). A role is guessed only when exactly one
# of its names is present; anything else needs columns={role: name}.
KNOWN_NAMES = {
    "query_id": ("query_id", "qid", "query", "topic", "topic_id", "q_id", "queryid", "query-id"),
    "doc_id": ("doc_id", "docid", "docno", "doc", "document", "document_id", "pid", "item_id", "item", "corpus-id"),
    "relevance": ("relevance", "rel", "label", "grade", "judgment", "judgement", "qrel", "rating"),
    "score": ("score", "sim", "similarity", "rsv"),
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
SHADOWED_BY = {"docid": "docno", "query": "qid"}
# Qrels layouts that call the grade `score`, recognised by their exact columns: BEIR's qrels TSV and
# ranx's Qrels.save("qrels.parquet"). Elsewhere a `score` column in qrels is a run passed as qrels.
GRADE_NAMED_SCORE = ({"query-id", "corpus-id", "score"}, {"q_id", "doc_id", "score"})

# A TREC line whose first non-blank character is '#' is a comment (trec_eval 10.0; 9.0.8 would read it as a
# judgment or ranking of a query named '#...', which is never what such a line means).
COMMENT = r"^\s*#"
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
TABULAR = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".json": "jsonl"}

_counter = itertools.count()


@dataclass
class Loaded:
    """One input as a DuckDB view: the view's name, its column for each role, and how to name its rows."""

    view: str
    columns: dict  # role -> column in the view
    label: str  # "qrels file 'x.txt'" / "run 'bm25' (pandas DataFrame)"
    row_word: str  # "line" for text files (numbered as in an editor), "row" otherwise
    numbered: str  # a relation with line_no and the view's columns, read only to locate a bad row
    fixed_columns: bool = False  # TREC text: its fields are positional, a column mapping does not apply
    integer_grades: bool = False  # TREC text: trec_eval reads a grade as an integer (0.5 would be 0 there)
    temporary: str | None = None  # a folder of ours (a link to the input): removed after the evaluation
    line_of: Callable[[int], int] | None = None  # row number in `numbered` -> the file's line, when they differ
    file_of: Callable[[int], tuple] | None = None  # many files read as one (glob=True): row -> (file, 'line', 7)
    # A lazily read file (Parquet: read where the statement needs it) may turn out damaged in any later
    # query: after a DuckDB error, this query reads its every value, to tell whether the file is to blame.
    read_all: str | None = None

    def at(self, *numbers: int) -> str:
        """'<label>, line 7': where a row of `numbered` is, for an error message."""
        return f"{self.label}, {self.lines(*numbers)}"

    def lines(self, *numbers: int) -> str:
        """'line 7', 'lines 7 and 9': rows of `numbered` as the file's lines (or rows)."""
        if self.file_of:
            return "; ".join(f"file {file!r}, {word} {row}" for file, word, row in map(self.file_of, numbers))
        lines = [self.line_of(n) if self.line_of else n for n in numbers]
        return f"{self.row_word}{'s' if len(lines) > 1 else ''} {' and '.join(map(str, lines))}"


def _fresh(prefix: str) -> str:
    return f"sqlm_{prefix}_{next(_counter)}"


# Compression is decided by a file's first bytes, not by its name: gzip data in `run.txt` is read as gzip,
# and a `run.txt.gz` holding plain text is read as plain text. DuckDB reads both without an extension.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))
# The longest line read. DuckDB's default limit (2 MB) is kept until a line passes it: a larger limit
# slows every read of a big file by about half.
LONG_LINE = 1 << 26
FORMAT_NAMES = {"trec": "TREC text", "csv": "CSV", "tsv": "TSV", "jsonl": "JSON Lines", "json": "JSON"}


def _compression(path: Path, label: str) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise SqlmetricsError(f"{label}: cannot be opened ({e.strerror or e}).") from None
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), "none")


def _open_bytes(path: Path, compression: str):
    """The file's (decompressed) bytes, for a look at its head or, after an error, for the bad line.
    None for zstd, which Python's standard library cannot read."""
    if compression == "zstd":
        return None
    return gzip.open(path, "rb") if compression == "gzip" else open(path, "rb")


def _head(path: Path, compression: str) -> bytes | None:
    """The first 64 kB of text, or None when Python cannot read them (zstd, damaged gzip)."""
    stream = _open_bytes(path, compression)
    if stream is None:
        return None
    try:
        with stream:
            return stream.read(1 << 16)
    except (OSError, EOFError, zlib.error):
        return None  # the reader in DuckDB fails too, and _unreadable says why


def first_bytes(path: Path) -> bytes | None:
    """The first 64 kB of a file's text, decompressed whatever its name says; None when Python cannot read
    them (a missing file, zstd, damaged gzip)."""
    try:
        return _head(path, _compression(path, str(path)))
    except SqlmetricsError:
        return None


def _text_head(con, path: Path, compression: str, label: str, fmt: str) -> bytes:
    """The first lines of a text file, to sniff its layout: read by Python, or, where Python cannot
    decompress them (zstd), by DuckDB. Data DuckDB cannot read either is explained by _unreadable."""
    head = _head(path, compression)
    if head is not None:
        return head
    try:
        lines = con.execute(f"SELECT line FROM {_trec_lines(path, compression, LONG_LINE)} LIMIT 100").fetchall()
    except duckdb.Error as e:
        raise _unreadable(path, label, fmt, compression, e) from None
    return "".join(line + "\n" for line, in lines).encode()


def _reading(compression: str, line_size: int | None) -> str:
    """read_csv / read_json options: the compression found, and the line limit when raised."""
    return f"compression = {_lit(compression)}" + (f", max_line_size = {line_size}" if line_size else "")


def _create(con, path: Path, label: str, fmt: str, compression: str, statement) -> int | None:
    """Run statement(line_size), which reads the file into a table. A line longer than DuckDB's default
    limit is read on a second try with LONG_LINE; the limit used is returned, for later reads of the
    file. Any other failure is explained by _unreadable: never DuckDB's message alone."""
    for size in (None, LONG_LINE):
        try:
            con.execute(statement(size))
            return size
        except duckdb.Error as e:
            if size is None and "Maximum line size" in str(e):
                continue
            raise _unreadable(path, label, fmt, compression, e) from None
    raise AssertionError("unreachable")


def _unreadable(path: Path, label: str, fmt: str, compression: str, error: Exception) -> SqlmetricsError:
    """Why DuckDB could not read a text file. The file is read again in Python to find the line (only on
    this error path): damaged gzip data, a byte that is not UTF-8, a NUL byte, a line past LONG_LINE.
    Anything else is DuckDB's reason, in one line."""
    found = _bad_bytes(path, compression, label)
    if found:
        return SqlmetricsError(found)
    return SqlmetricsError(f"{label}: cannot be read as {FORMAT_NAMES.get(fmt, fmt)} ({_reason(error)}). "
                           "Fix the file at that place, or check that its name's suffix says its format.")


def _bad_bytes(path: Path, compression: str, label: str) -> str | None:
    """The first damaged gzip block, non-UTF-8 byte, NUL byte or over-long line, as a message naming the
    line and the byte offset (counted from 0 in the decompressed text); None if there is none."""
    stream = _open_bytes(path, compression)
    if stream is None:
        return None
    line_no, offset, carry = 1, 0, b""
    try:
        with stream:
            while True:
                chunk = stream.read(1 << 20)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1 if chunk else len(data)  # whole lines only: no character split
                block, carry = data[:cut], data[cut:]
                if len(carry) > LONG_LINE:
                    block, carry = data, b""
                problem = _block_problem(block)
                if problem:
                    at, what = problem
                    line_no += block.count(b"\n", 0, at)
                    return f"{label}, line {line_no}, byte {offset + at}: {what}"
                line_no += block.count(b"\n")
                offset += len(block)
                if not chunk:
                    return None
    except (OSError, EOFError, zlib.error) as e:
        return (f"{label}: truncated or damaged gzip data after line {line_no} ({e}). Compress the file "
                "again (gzip -t tests it), or fetch it again.")


def _block_problem(block: bytes) -> tuple[int, str] | None:
    problems = []
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append((e.start, "not UTF-8; re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)."))
    if (nul := block.find(b"\0")) >= 0:
        problems.append((nul, "a NUL byte (0x00), which text holds nowhere; remove it (is the file UTF-16, "
                              "or binary?)."))
    start = 0
    for line in block.split(b"\n"):
        if len(line) > LONG_LINE:
            problems.append((start, f"a line longer than {LONG_LINE >> 20} MB; is this really a text file of "
                                    "ids and scores?"))
            break
        start += len(line) + 1
    return min(problems) if problems else None


def _reason(error: Exception) -> str:
    """DuckDB's reason in one line; for a CSV error its line and why ('line 5: Expected Number of
    Columns: 3 Found: 4'), without the line's text, the options and the possible fixes."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    first = _first_line(error)
    if m := re.match(r"CSV Error on Line: (\d+)", first):
        why = next((line for line in lines[1:] if not line.startswith(("Original Line", "Possible", "*"))), "")
        return f"line {m.group(1)}: {why}" if why else f"line {m.group(1)}"
    return first


def _sniff_delimiter(head: bytes, width: int) -> str | None:
    """The one character (tab or space) that splits the file's first lines into `width`+ non-empty fields."""
    lines = [line for line in head.decode("utf-8", "replace").splitlines()[:-1] if line.strip()]
    for delim, other in (("\t", " "), (" ", "\t")):  # no field may hold the other one
        if lines and all(other not in line and len(p := line.split(delim)) >= width and all(p) for line in lines):
            return delim
    return None


def _trec_view(con, path: Path, kind: str, label: str, compression: str, head: bytes,
               layout: str | None = None) -> Loaded:
    """TREC text: fields separated by any whitespace; fields after the expected ones are ignored.

    Read once into a temporary table with only the columns evaluation needs. Fast path: a file whose
    fields are separated by single tabs or single spaces goes through DuckDB's parallel CSV reader; any
    line that does not fit (other whitespace, extra or missing fields) sends the whole file down the
    general path, a regular expression per line (several times slower, but any whitespace goes).
    """
    fields = TREC_FIELDS[layout or kind]
    keep = [f for f in fields if f in QRELS_ROLES + RANKING_ROLES + GROUP_ROLES + (SUBTOPIC_ROLE,)]
    view = _fresh(kind)
    loaded = Loaded(view, {f: f for f in keep}, label, "line", _trec_numbered(path, fields, compression, None),
                    fixed_columns=True, integer_grades=True)
    delim = _sniff_delimiter(head, len(fields))
    # The other whitespace character inside a field (a tab when splitting on spaces) would split it in TREC.
    # A NUL byte sends the file down the general path, whose line reader refuses it naming the line (the
    # lines read again to name a bad value could not be read either). An uncompressed file is searched for
    # both bytes at once, as a whole (a tab in a comment line sends it down the general path too, which
    # reads it alike); a compressed one row by row below.
    stray = None if delim is None else _holds_bytes(path, compression, (b"\t" if delim == " " else b" ", b"\0"))
    if delim is not None and not stray:
        columns = "{" + ", ".join(f"{_lit(f)}: 'VARCHAR'" for f in fields) + "}"
        # Two delimiters in a row give an empty field, which DuckDB reads as NULL: in whitespace-separated
        # TREC that line has a field fewer, a malformed line (trec_eval rejects it).
        clean = " AND ".join(f"{f} IS NOT NULL" for f in fields)
        if stray is None:  # both looked for in the fields joined once (sqlm_text): as fast as one look per field
            other = "chr(9)" if delim == " " else "' '"
            clean += f" AND NOT contains(sqlm_text, {other}) AND NOT contains(sqlm_text, chr(0))"
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
                return loaded
            con.execute(f"DROP TABLE {view}")
        except duckdb.Error:
            pass  # a line the single delimiter does not split into exactly the fields (or any other failure,
            # which the general path explains): the general path
    matched = " AND ".join(f"f.{f} <> ''" for f in fields)  # regexp_extract gives '' when the line does not match
    size = _create(con, path, label, "trec", compression, lambda size: (
        f"CREATE OR REPLACE TEMP TABLE {view} AS SELECT {', '.join(f'f.{f} AS {f}' for f in keep)}, "
        f"{matched} AS well_formed FROM (SELECT {_trec_split(fields)} AS f FROM {_trec_lines(path, compression, size)} "
        f"WHERE line IS NOT NULL AND trim(line) <> '' AND NOT regexp_matches(line, {_lit(COMMENT)}))"))
    loaded.numbered = _trec_numbered(path, fields, compression, size)
    if _malformed(con, view):
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
        longer = rf"^\s*(\S+\s+){{{len(fields)}}}\S"
        extra = con.execute(f"SELECT line_no, line FROM {loaded.numbered} WHERE regexp_matches(line, "
                            f"{_lit(longer)}) ORDER BY line_no LIMIT 1").fetchall()
        if extra:
            line_no, line = extra[0]
            raise SqlmetricsError(
                f"{label}, line {line_no}: a qrels line has {len(fields)} fields ({' '.join(fields)}), this one has "
                f"more: {line!r}. Is this a run (query Q0 doc rank score tag) passed as qrels? Pass the judgments "
                "file first, then the runs.")
    return loaded


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


def _malformed(con, view: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM {view} WHERE NOT well_formed").fetchall()[0][0]


def _trec_lines(path: Path, compression: str, line_size: int | None) -> str:
    """The file's lines, whole. An empty delimiter splits nothing (no byte of the data can cut a line, as
    the 0x1F of an earlier version did); DuckDB's empty delimiter is a NUL byte, which strict mode makes an
    error (explained by _unreadable) rather than the end of the line."""
    return (f"read_csv({_lit(str(path))}, columns = {{'line': 'VARCHAR'}}, header = false, delim = '', "
            f"quote = '', escape = '', auto_detect = false, strict_mode = true, {_reading(compression, line_size)})")


def _trec_split(fields) -> str:
    """One line -> a struct of its first len(fields) whitespace-separated fields ('' when it has fewer)."""
    pattern = _lit(r"^\s*" + r"\s+".join([r"(\S+)"] * len(fields)))
    return f"regexp_extract(line, {pattern}, [{', '.join(_lit(f) for f in fields)}])"


def _trec_numbered(path: Path, fields, compression: str, line_size: int | None) -> str:
    """Every line numbered as in an editor (blank ones too), read only to name a bad line in an error."""
    lines = _trec_lines(path, compression, line_size)
    return (f"(SELECT line_no, line, {', '.join(f'f.{f} AS {f}' for f in fields)} FROM (SELECT line_no, line, "
            f"{_trec_split(fields)} AS f FROM (SELECT ROW_NUMBER() OVER () AS line_no, line FROM {lines}) "
            f"WHERE line IS NOT NULL AND trim(line) <> '' AND NOT regexp_matches(line, {_lit(COMMENT)})))")


def _numbered(view: str, offset: int) -> str:
    return f"(SELECT ROW_NUMBER() OVER () + {offset} AS line_no, * FROM {view})"


def file_format(path: Path) -> str:
    """'trec', or the TABULAR format its suffix names (a .gz or .zst compression suffix skipped)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] == ".lz4":
        return "ranx"  # ranx's Run.save('run.lz4'): its own compressed binary, read by ranx
    return (TABULAR.get(suffixes[-1]) if suffixes else None) or "trec"


def _file_view(con, path: Path, kind: str, label: str, columns: dict | None, fmt: str | None,
               own_columns: bool, layout: str | None = None) -> Loaded:
    if not path.exists():
        pattern = " (a name holding * ? [ ] { } is one file; glob=True, --glob, reads it as a pattern)"
        raise SqlmetricsError(f"{label}: no such file{pattern if _GLOB.search(str(path)) else ''}. Check the path.")
    if path.is_dir():
        raise SqlmetricsError(f"{label}: is a folder, not a file.")
    fmt = fmt or file_format(path)
    source, temporary = _literal(path)
    try:
        if fmt not in ("trec", "parquet", "csv", "tsv", "jsonl", "json", "ranx"):
            raise SqlmetricsError(f"{label}: unknown format {fmt!r}; use trec, csv, tsv, parquet, jsonl or ranx.")
        if fmt == "ranx":
            return dataclasses.replace(_ranx_file(con, source, kind, label), temporary=temporary)
        if fmt != "parquet":
            compression = _compression(source, label)
            head = _text_head(con, source, compression, label, fmt)
        if fmt == "trec":
            if columns and own_columns:
                raise SqlmetricsError(f"{label}: TREC text has fixed columns; qrels_columns= applies to CSV, "
                                      "Parquet and tables.")
            return dataclasses.replace(_trec_view(con, source, kind, label, compression, head, layout),
                                       temporary=temporary)
        if fmt != "parquet" and not head.strip():
            # Nothing in it, not even a header: a run that retrieved nothing (every judged query scores 0);
            # empty qrels are refused by the checks, naming the file.
            return dataclasses.replace(_empty_view(con, kind, label), temporary=temporary)
        if fmt in ("jsonl", "json"):
            return dataclasses.replace(_json_view(con, source, kind, label, columns, compression, head),
                                       temporary=temporary)
        if fmt == "parquet":
            return dataclasses.replace(_parquet_view(con, str(source), kind, label, columns), temporary=temporary)
        view = _fresh(kind)
        # CSV and TSV are read as text: ids are compared as written (`007`, `1.50`), and scores and grades
        # are checked and converted by the evaluation, whatever DuckDB's sniffer would have guessed. The
        # file is read into a table here, once: a bad byte or line is found (and explained) now, not by
        # a later query of the evaluation.
        delim = "\t" if fmt == "tsv" else ","
        names = _csv_header(head, delim, label)
        if _is_data(names, columns):
            fields = TREC_FIELDS[layout or kind]
            if fmt == "tsv" and len(names) == len(fields):
                # Headerless, with TREC's fields (qrels `q 0 doc grade`, runs `q Q0 doc rank score tag`):
                # TREC text with tabs, read as such.
                return dataclasses.replace(_trec_view(con, source, kind, label, compression, head, layout),
                                           temporary=temporary)
            raise SqlmetricsError(
                f"{label}, line 1: {delim.join(names)!r} is data, not a header naming the columns (it names no "
                f"known column and holds a number). Add a header line, e.g. "
                f"{delim.join(('query-id', 'corpus-id', 'score') if kind == 'qrels' else ('query_id', 'doc_id', 'score'))!r}"
                f"{f', or give every line the {len(fields)} fields of TREC text ({chr(32).join(fields)})' if fmt == 'tsv' else ''}.")
        # The header is parsed here and the layout given (RFC 4180 quoting, this delimiter): DuckDB's
        # sniffer, on a file with one line of a field too many, guesses a one-column layout instead, and
        # may skip lines it finds odd. Given the layout, a line of another width is an error naming it.
        layout = "{" + ", ".join(f"{_lit(n)}: 'VARCHAR'" for n in names) + "}"
        _create(con, source, label, fmt, compression, lambda size: (
            f"CREATE TEMP TABLE {view} AS SELECT * FROM read_csv({_lit(str(source))}, header = true, "
            f"delim = {_lit(delim)}, quote = '\"', escape = '\"', columns = {layout}, auto_detect = false, "
            f"strict_mode = true, {_reading(compression, size)})"))
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, "line", _numbered(view, 0),
                      temporary=temporary, line_of=functools.partial(_csv_line, source, compression, delim))
    except BaseException:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        raise


def _ranx_file(con, path: Path, kind: str, label: str) -> Loaded:
    """A file ranx wrote as `.lz4` (CBOR in LZ4 frames, its own layout): read by ranx, when installed."""
    try:
        import ranx
    except ImportError:
        raise SqlmetricsError(f"{label}: a .lz4 file is ranx's format, read through the ranx package; install it "
                              "(pip install ranx), or save the run as .trec or .json.") from None
    try:
        content = ranx.Run.from_file(str(path), kind="lz4").to_dict()
    except Exception as e:  # whatever lz4 or cbor2 raise on data that is not theirs
        raise SqlmetricsError(f"{label}: cannot be read as ranx's LZ4 format ({type(e).__name__}: {e}).") from None
    return _registered(con, _dict_table(content, kind, label), kind, label, None)


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


def _glob_view(con, text: str, kind: str, label: str, columns: dict | None, own_columns: bool,
               layout: str | None) -> Loaded:
    """glob=True: a pattern, or a folder, of files read as one table. Hive partition keys in the folder names
    (day=2024-06-01/arm=b/) become columns; each row keeps its file's name and line or row there, to name the
    file in an error. Parquet files alone are read by DuckDB as one lazy scan; a pattern matching CSV, TSV,
    JSON Lines or TREC text files reads each file with its own reader (_text_glob_view)."""
    folder = not _GLOB.search(text)
    pattern = text.rstrip("/") + "/**/*.parquet" if folder else text
    if pattern.lower().startswith(("http://", "https://")):
        raise SqlmetricsError(f"{label}: glob=True lists the files a pattern matches, and a web server has no list "
                              "of its files; pass each URL, or use an object store (s3://, gs://).")
    if _is_remote(pattern):
        _register(con, _filesystem(pattern, label))
    files = _matched(con, pattern, label)
    if folder and not files:  # no Parquet file in the folder: its text files
        files = [f for f in _matched(con, text.rstrip("/") + "/**/*", label) if _text_file(f)]
    if not files:
        raise SqlmetricsError(f"{label}: the pattern {pattern!r} matches no file"
                              + (" (glob=True reads a folder's .parquet files, in it or below, or else its CSV, TSV, "
                                 "JSON Lines and TREC text files: " + ", ".join(TEXT_SUFFIXES) + ")" if folder else "")
                              + ". Check the pattern; without glob=True a name is one file.")
    if any(file_format(Path(f.split("://")[-1])) != "parquet" for f in files):
        return _text_glob_view(con, files, kind, label, columns, own_columns, layout)
    parquet = _fresh("files")
    try:
        con.execute(f"CREATE TEMP VIEW {parquet} AS SELECT * FROM read_parquet({_lit(pattern)}, hive_partitioning = "
                    "true, union_by_name = true, filename = 'sqlm_file', file_row_number = true)")
        con.execute(f"SELECT * FROM {parquet} LIMIT 0")
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read as Parquet ({_first_line(e)}).") from None
    view = _fresh(kind)
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (sqlm_file, file_row_number) FROM {parquet}")
    numbered = (f"(SELECT ROW_NUMBER() OVER (ORDER BY sqlm_file, file_row_number) AS line_no, * "
                f"FROM {parquet})")
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", numbered,
                  file_of=functools.partial(_file_row, con, numbered),
                  read_all=f"SELECT max(hash(t)) FROM {view} AS t")


# The text files a folder read with glob=True holds (a .gz or .zst after the suffix too); files of other
# names (_SUCCESS, .crc, README) are not data.
TEXT_SUFFIXES = (".txt", ".trec", ".run", ".qrels", ".csv", ".tsv", ".jsonl", ".ndjson", ".json")


def _text_file(name: str) -> bool:
    suffixes = [s.lower() for s in Path(name).suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] in TEXT_SUFFIXES and not Path(name).name.startswith((".", "_"))


def _matched(con, pattern: str, label: str) -> list:
    """The files a pattern matches, in name order (DuckDB's glob, through a registered filesystem for a store)."""
    try:
        return [r[0] for r in con.execute(f"SELECT file FROM glob({_lit(pattern)}) ORDER BY file").fetchall()]
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot list the files of {pattern!r} ({_first_line(e)}).") from None


def _hive_keys(file: str) -> dict:
    """{key: value} of the file's folders named key=value (hive partitioning), outermost first."""
    return dict(re.findall(r"(?:^|/)([^/=]+)=([^/]*)(?=/)", file.split("://")[-1]))


def _hive_type(con, values: list) -> str:
    """The type DuckDB gives a hive key whose folders hold these values: the first type every value reads as."""
    for sql_type in ("DATE", "TIMESTAMP", "BIGINT", "DOUBLE"):
        if con.execute(f"SELECT bool_and(TRY_CAST(v AS {sql_type}) IS NOT NULL) FROM unnest(?) AS t(v)",
                       [values]).fetchall()[0][0]:
            return sql_type
    return "VARCHAR"


def _text_glob_view(con, files: list, kind: str, label: str, columns: dict | None, own_columns: bool,
                    layout: str | None) -> Loaded:
    """Text files (and any Parquet among them) matched by a pattern, each read by its own reader (a bad line
    is named by its file and line), then as one table: UNION ALL BY NAME, the hive keys of each file's
    folders as typed columns. Each file is read through a link with a plain name in one folder of ours (a
    copy of an object in a store), so that no file name is read as a pattern again."""
    keys = {k: None for f in files for k in _hive_keys(f)}
    types = {k: _hive_type(con, [_hive_keys(f)[k] for f in files if k in _hive_keys(f)]) for k in keys}
    # The mapping of a hive key (columns={'run_name': 'arm'}) is the whole table's, not a file's.
    own = {r: c for r, c in (columns or {}).items() if c not in keys} or None
    folder = tempfile.mkdtemp(prefix="sqlmetrics-input-")
    try:
        parts = []
        for i, file in enumerate(files):
            suffixes = "".join(s for s in Path(file).suffixes if not _GLOB.search(s))
            local = Path(folder) / f"{i}{suffixes}"
            if _is_remote(file):
                with _remote_errors(f"{label}, file {file!r}"):
                    _filesystem(file, label).get_file(file, str(local))
            else:
                try:
                    os.symlink(Path(file).resolve(), local)
                except OSError:
                    shutil.copyfile(file, local)
            parts.append(_file_view(con, local, kind, f"{label}, file {file!r}", own, None, own_columns, layout))
        selects, numbered = [], []
        for i, (file, part) in enumerate(zip(files, parts)):
            present = set(_types(con, part.view))
            hive = "".join(f"CAST({_lit(v)} AS {types[k]}) AS {_q(k)}, " for k, v in _hive_keys(file).items()
                           if k not in present)
            selects.append(f"SELECT {hive}* FROM {part.view}")
            numbered.append(f"SELECT {i} AS sqlm_file, line_no AS sqlm_line, {hive}* EXCLUDE (line_no) "
                            f"FROM {part.numbered}")
        view = _fresh(kind)
        try:
            con.execute(f"CREATE TEMP VIEW {view} AS " + " UNION ALL BY NAME ".join(selects))
            con.execute(f"SELECT * FROM {view} LIMIT 0")
        except duckdb.Error as e:
            raise SqlmetricsError(f"{label}: the files cannot be read as one table ({_first_line(e)}); give them "
                                  "the same columns.") from None
        lines = ("(SELECT ROW_NUMBER() OVER (ORDER BY sqlm_file, sqlm_line) AS line_no, * FROM ("
                 + " UNION ALL BY NAME ".join(numbered) + "))")
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, parts[0].row_word, lines,
                      fixed_columns=all(p.fixed_columns for p in parts) and not keys,
                      integer_grades=all(p.integer_grades for p in parts), temporary=folder,
                      file_of=functools.partial(_file_line, con, lines, files, parts),
                      read_all=f"SELECT max(hash(t)) FROM {view} AS t" if any(p.read_all for p in parts) else None)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _file_line(con, numbered: str, files: list, parts: list, line_no: int) -> tuple:
    """(file, 'line', its line) of a row of text files read as one: the line as the file's reader numbers it."""
    i, line = con.execute(f"SELECT sqlm_file, sqlm_line FROM {numbered} WHERE line_no = ?", [line_no]).fetchall()[0]
    part = parts[i]
    return files[i], part.row_word, part.line_of(line) if part.line_of else line


def _file_row(con, numbered: str, line_no: int) -> tuple:
    """(file, 'row', its row counted from 1) of a row of Parquet files read as one."""
    file, row = con.execute(f"SELECT sqlm_file, file_row_number + 1 FROM {numbered} WHERE line_no = ?",
                            [line_no]).fetchall()[0]
    return file, "row", row


# Object stores and web servers, read through fsspec's filesystems (the `remote` extra) registered with
# DuckDB: never through a DuckDB extension (none is downloaded or loaded). fsspec finds credentials and
# settings where it always does (the environment, ~/.aws, fsspec's configuration).
REMOTE = ("s3://", "s3a://", "gs://", "gcs://", "http://", "https://")
_REGISTERING = threading.Lock()
_REGISTERED: dict = {}  # protocol -> the filesystem last registered for it


def _is_remote(text: str) -> bool:
    return text.lower().startswith(REMOTE)


def _filesystem(url: str, label: str):
    scheme = url.split("://")[0].lower()
    try:
        import fsspec

        return fsspec.filesystem(scheme)
    except ImportError as e:
        raise SqlmetricsError(f"{label}: reading {scheme}:// paths needs fsspec and its filesystem for them ({e}); "
                              'pip install "sqlmetrics[remote]".') from None


def _register(con, fs) -> None:
    """Make fs DuckDB's filesystem for its protocol. fsspec gives the same filesystem while its configuration
    is the same: then the one registered stays (another evaluation may be reading through it). A new one
    (other settings or credentials) replaces it."""
    name = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    with _REGISTERING:
        present = name in con.list_filesystems()
        if present and _REGISTERED.get(name) is fs:
            return
        if present:
            con.unregister_filesystem(name)
        con.register_filesystem(fs)
        _REGISTERED[name] = fs


def _remote_view(con, url: str, kind: str, label: str, columns: dict | None, fmt: str | None,
                 own_columns: bool, layout: str | None) -> Loaded:
    """s3://, gs://, https://... A Parquet object in a store is read by DuckDB through the registered
    filesystem, lazily. A text object is copied once into a folder of ours and read as a local file: the
    text readers read a file more than once (its head, the scan, and after an error the bad line). So is
    anything over http(s), whose fsspec filesystem gives no modification time, which DuckDB asks for."""
    fs = _filesystem(url, label)
    fmt = fmt or file_format(Path(url.split("://", 1)[1]))
    with _remote_errors(label):
        # A missing object or an unreachable host is found here, not inside a DuckDB query.
        if fs.info(url).get("type") == "directory":
            raise SqlmetricsError(f"{label}: is a folder, not a file (glob=True reads a pattern of Parquet files).")
    if fmt == "parquet" and not url.lower().startswith(("http://", "https://")):
        _register(con, fs)
        return _parquet_view(con, url, kind, label, columns)
    folder = tempfile.mkdtemp(prefix="sqlmetrics-input-")
    try:
        with _remote_errors(label):
            fs.get_file(url, os.path.join(folder, "input"))
        return dataclasses.replace(_file_view(con, Path(folder) / "input", kind, label, columns, fmt, own_columns,
                                              layout), temporary=folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


@contextlib.contextmanager
def _remote_errors(label: str):
    """A filesystem's failure as a SqlmetricsError naming the URL. Each filesystem raises its own errors
    (botocore's, aiohttp's, google-auth's...): anything but our own is worded here."""
    try:
        yield
    except SqlmetricsError:
        raise
    except Exception as e:
        # fsspec's http filesystem says FileNotFoundError when the host cannot be reached too: the
        # connection's error is then its cause.
        if isinstance(e, FileNotFoundError) and not isinstance(e.__cause__, OSError):
            raise SqlmetricsError(f"{label}: no such object. Check the URL.") from None
        cause = e.__cause__ if isinstance(e, FileNotFoundError) else e
        reason = " ".join(str(cause).split()) or type(cause).__name__
        raise SqlmetricsError(f"{label}: cannot be read ({reason}). Check the URL, the network, and the "
                              "credentials fsspec finds (environment, config files).") from None


def _empty_view(con, kind: str, label: str) -> Loaded:
    """An input without rows, with the columns of its roles."""
    view = _fresh(kind)
    value = "relevance" if kind == "qrels" else "score"
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT NULL::VARCHAR AS query_id, NULL::VARCHAR AS doc_id, "
                f"NULL::DOUBLE AS {value} WHERE false")
    roles = {"query_id": "query_id", "doc_id": "doc_id", value: value}
    return Loaded(view, roles, label, "line", _numbered(view, 0))


def damaged(con, inputs: list) -> SqlmetricsError | None:
    """After a DuckDB error: the first lazily read input whose every value cannot be read, as the error to
    give instead (DuckDB's own would name neither the file nor the fix); None when all read."""
    for loaded in inputs:
        if loaded.read_all:
            try:
                con.execute(loaded.read_all).fetchall()
            except duckdb.Error as e:
                return SqlmetricsError(f"{loaded.label}: cannot be read as Parquet, the file is damaged "
                                       f"({_first_line(e)}). Write it again, or fetch it again.")
    return None


def _csv_header(head: bytes, delim: str, label: str) -> list:
    """The column names on a CSV or TSV file's first line (a UTF-8 byte-order mark dropped)."""
    first = head.decode("utf-8", "replace").removeprefix("\ufeff").splitlines()[:1]
    names = next(csv.reader(first, delimiter=delim), []) if first else []
    what = "CSV" if delim == "," else "TSV"
    if not names or not any(n.strip() for n in names):
        raise SqlmetricsError(f"{label}: line 1 is empty, and a {what} file's first line names its columns "
                              "(e.g. query_id,doc_id,score). Add the header, or remove the blank line.")
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None or "" in names:
        problem = f"names the column {twice!r} twice" if twice is not None else "has a column without a name"
        raise SqlmetricsError(f"{label}, line 1: the header {problem}; each column needs a name of its own.")
    return names


def _is_data(names: list, columns: dict | None) -> bool:
    """A CSV or TSV first line that is a row, not a header: it names no known or mapped column, and one of
    its fields is a number (BEIR's and MS MARCO's TSV files are written with and without a header)."""
    known = {n for names_of in KNOWN_NAMES.values() for n in names_of}
    mapped = set((columns or {}).values())
    if any(n.strip().lower() in known or n in mapped for n in names):
        return False
    return any(re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", n) for n in names)


def _csv_line(path: Path, compression: str, delim: str, row: int) -> int:
    """The line (as an editor numbers them) where data row `row` of a CSV or TSV file starts: blank lines
    and quoted fields spanning lines make the two differ. Read again in Python, only for an error message."""
    stream = _open_bytes(path, compression)
    if stream is None:  # zstd: the best guess, the row after the header
        return row + 1
    with stream, io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline="") as text:
        reader = csv.reader(text, delimiter=delim)
        next(reader, None)  # the header
        seen, end = 0, reader.line_num
        for fields in reader:
            start, end = end + 1, reader.line_num
            if fields:  # a blank line is no row (DuckDB skips it too)
                seen += 1
                if seen == row:
                    return start
    return row + 1


# DuckDB 1.3 brought `lambda t: ...`; 2.0 refuses the older `t -> ...`.
_LAMBDA = "lambda t: " if tuple(map(int, re.findall(r"\d+", duckdb.__version__)[:2])) >= (1, 3) else "t -> "
# Every number outside a JSON string quoted, so that ->> gives its written text. The text is cut into
# strings and what lies between them (a string's quotes inside are escaped, so none is cut in two).
_QUOTE_NUMBERS = (r"""list_aggregate(list_transform(regexp_extract_all(line, '(?s)"(?:[^"\\]|\\.)*"|[^"]+'), """
                  + _LAMBDA + r"""CASE WHEN starts_with(t, '"') THEN t ELSE regexp_replace(t, """
                  r"""'(-?[0-9][0-9.eE+-]*)', '"\1"', 'g') END), 'string_agg', '')""")
_NUMBER_ROLES = ("score", "relevance", "rank_position")


def _json_view(con, path: Path, kind: str, label: str, columns: dict | None, compression: str,
               head: bytes) -> Loaded:
    """JSON Lines (one object per line; a .json file too), or one JSON array of objects.

    Every value is read as text, as CSV's are, and scores and grades are converted by the checks. DuckDB's
    JSON reader guesses column types from the first 20,480 lines (a later value of another type fails the
    whole read), and parses a number to a double, which would make the id `1.50` the id `1.5` (and `1e3`
    `1000.0`). Ids are compared as text, so a number keeps its written text (in every column but the score,
    grade and rank ones, whose value alone matters): found by a regular expression on the line where the
    key is written once and the line has no escapes, else
    by quoting every number of the line (_QUOTE_NUMBERS, several times slower).
    """
    if _NESTED_JSON.match(head) and (nested := _nested_json_view(con, path, kind, label, compression)):
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
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT {', '.join(f'NULL::VARCHAR AS {_q(n)}' for n in names)}")
    mapping = _map_columns(con, view, kind, label, columns)  # names only: which columns hold numbers
    numbers = {mapping[r] for r in _NUMBER_ROLES if r in mapping}
    con.execute(f"DROP VIEW {view}")
    values = ", ".join(f"{_json_value(n, n not in numbers)} AS {_q(n)}" for n in names)
    table = _fresh("json")  # the values with each one's line number; the view shows the values alone
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT line_no, {values} FROM {raw}")
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read as JSON ({_reason(e)}).") from None
    con.execute(f"DROP TABLE {raw}")
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * EXCLUDE (line_no) FROM {table}")
    return Loaded(view, mapping, label, row_word, f"(SELECT * FROM {table})")


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
    pointer = _lit("/" + key.replace("~", "~0").replace("/", "~1"))  # JSON pointer: any key, literally
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


_GLOB = re.compile(r"[*?\[\]{}]")


def _literal(path: Path) -> tuple[Path, str | None]:
    """(the path DuckDB is given, a temporary folder to remove afterwards or None). DuckDB reads a file name
    as a glob, so a name holding * ? [ ] { } would open other files (`r[1].txt` opens `r1.txt`): such a
    file is read through a link with a plain name in a folder of ours (a copy where links are refused)."""
    if not _GLOB.search(str(path)):
        return path, None
    folder = tempfile.mkdtemp(prefix="sqlmetrics-input-")
    suffixes = "".join(s for s in path.suffixes if not _GLOB.search(s))
    link = Path(folder) / f"input{suffixes}"
    try:
        os.symlink(path.resolve(), link)
    except OSError:
        shutil.copyfile(path, link)
    return link, folder


def _first_line(e: Exception) -> str:
    """DuckDB's reason without its 'Invalid Input Error:' prefix. A Python filesystem's failure (fsspec,
    registered with DuckDB) comes as a traceback: its last line is the reason (before DuckDB's `LINE 1:`)."""
    lines = str(e).strip().splitlines()
    first = re.sub(r"^[A-Z][\w ]* Error: ", "", lines[0])
    if not first.startswith("Traceback (most recent call last)"):
        return first
    trace = itertools.takewhile(lambda line: not line.startswith("LINE "), lines)
    return [line.strip() for line in trace if line.strip()][-1]


def _map_columns(con, view: str, kind: str, label: str, columns: dict | None) -> dict:
    types = _types(con, view)
    present = list(types)
    lower = {c.lower(): c for c in present}
    # The judgment group and subtopic are optional: read only by the qrels_format that says when one is missing.
    roles = {"qrels": (*QRELS_ROLES, *GROUP_ROLES, SUBTOPIC_ROLE), "items": ("doc_id", *ITEM_ROLES)}.get(kind, RANKING_ROLES)
    required = {"qrels": ("query_id", "doc_id", "relevance"), "items": ("doc_id",)}.get(kind, ("query_id", "doc_id"))
    names = {**KNOWN_NAMES, **ITEM_NAMES}
    columns = dict(columns or {})
    if kind == "run" and "run_name" in columns:
        roles = ("run_name", *roles)
    mapping = {}
    for role in roles:
        if role in columns:
            if columns[role] not in present:
                also = (" (columns= maps both tables; qrels_columns= overrides it for the qrels)"
                        if kind == "qrels" else "")
                raise SqlmetricsError(
                    f"{label}: columns= maps {role!r} to {columns[role]!r}, which is not a column "
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
    if missing:
        raise SqlmetricsError(
            f"{label}: no column for {', '.join(map(repr, missing))} (columns: {', '.join(present)}). "
            f"Rename it or map it, e.g. columns={{{missing[0]!r}: '<your column>'}}."
        )
    return mapping


def _dict_table(obj: dict, kind: str, label: str) -> pa.Table:
    """{qid: {docid: value}} (ranx / pytrec_eval shape) -> an Arrow table."""
    import pyarrow as pa

    qids, docs, values = [], [], []
    query_keys: dict = {}
    for qid, docs_of in obj.items():
        if not isinstance(docs_of, dict):
            raise SqlmetricsError(
                f"{label}: expected {{query_id: {{doc_id: value}}}}, but query {qid!r} maps to a {type(docs_of).__name__}."
            )
        query = _id_text(qid, query_keys, "query ids", label)
        doc_keys: dict = {}
        for doc, value in docs_of.items():
            qids.append(query)
            docs.append(_id_text(doc, doc_keys, f"query {query!r}: document ids", label))
            values.append(value)
    value_role = "relevance" if kind == "qrels" else "score"
    try:
        column = pa.array(values, type=pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        bad = next((q, d, v) for q, d, v in zip(qids, docs, values) if not isinstance(v, (int, float)))
        raise SqlmetricsError(
            f"{label}: query {bad[0]!r}, document {bad[1]!r} has {value_role} {bad[2]!r}, which is not a number."
        ) from None
    return pa.table({"query_id": qids, "doc_id": docs, value_role: column})


def _id_text(key, seen: dict, what: str, label: str) -> str:
    """A dict key as the text id it becomes. Ids are compared as text, so two keys written alike (1 and
    '1') would be one id: refused, since merging them would silently drop or double a judgment."""
    text = str(key)
    if text in seen:
        raise SqlmetricsError(f"{label}: {what} {seen[text]!r} and {key!r} both become {text!r} (ids are "
                              "compared as text); keep one of them, or spell the ids one way.")
    seen[text] = key
    return text


def _pandas_table(frame) -> pa.Table:
    """A pandas DataFrame as an Arrow table. A column of Python objects mixing types (ids [1, 'd2', 3])
    has no Arrow type: it becomes text, each value as str() writes it (1 -> '1'), which is how ids are
    compared anyway (a score column so converted is read as numbers by the checks and the evaluation)."""
    import pandas as pd
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    frame = frame.copy(deep=False)
    for i in range(frame.shape[1]):  # by position: column names may repeat
        column = frame.iloc[:, i]
        try:
            pa.array(column, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # None, NaN, NaT and pd.NA stay missing (an empty id is then reported with its row).
            frame.isetitem(i, column.map(lambda v: None if pd.api.types.is_scalar(v) and pd.isna(v) else str(v)))
    return pa.Table.from_pandas(frame, preserve_index=False)


def _split_duckdb_target(text: str):
    """'eval.duckdb:run_bm25' -> (Path('eval.duckdb'), 'run_bm25'); the same for a SQLite file
    ('eval.db:run', 'eval.sqlite:run'); anything else -> None."""
    path, sep, table = text.rpartition(":")
    if sep and table and path.lower().endswith(DATABASE_FILES):
        return Path(path), table
    return None


def _arrow_types() -> tuple:
    # pyarrow is imported here, not at the top: an object from pyarrow means it is loaded already, and
    # the command line (files in, text out) never needs it (importing it costs ~0.15 s of start-up).
    import pyarrow as pa

    return pa.Table, pa.RecordBatchReader


def _is_arrow(obj) -> bool:
    return type(obj).__module__.startswith("pyarrow") and isinstance(obj, _arrow_types())


IR_DATASETS = "irds:"  # irds:<dataset id>: the dataset's qrels or scored documents, through ir_datasets
TUPLES_PER_BATCH = 1 << 16


def _ir_dataset_items(text: str, kind: str, what: str) -> Iterator:
    """The qrels_iter() or scoreddocs_iter() of the ir_datasets dataset `irds:<id>` names."""
    try:
        import ir_datasets
    except ImportError:
        raise SqlmetricsError(f"{what} {text!r}: irds: datasets are read through the ir_datasets package; "
                              "install it (pip install ir_datasets).") from None
    dataset_id = text[len(IR_DATASETS):]
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise SqlmetricsError(f"{what} {text!r}: ir_datasets has no dataset {dataset_id!r}; see "
                              "https://ir-datasets.com for the ids, or register your own.") from None
    part = "qrels" if kind == "qrels" else "scoreddocs"
    if not getattr(dataset, f"has_{part}")():
        raise SqlmetricsError(f"{what} {text!r}: that dataset has no {part}; pass the {kind} another way.")
    return getattr(dataset, f"{part}_iter")()


def _named_tuples(con, items: Iterator, kind: str, what: str, columns: dict | None) -> Loaded:
    """An iterator of named tuples (ir_datasets' qrels_iter() and scoreddocs_iter() give TrecQrel and
    ScoredDoc), streamed into a table of ours in Arrow batches: never a Python list of every item. The
    fields are the columns; score and grade fields are read as doubles, the others as the first batch's
    types (text ids stay text)."""
    import pyarrow as pa

    first = next(items, None)
    if first is None:
        return _empty_view(con, kind, what)
    if not (isinstance(first, tuple) and hasattr(first, "_fields")):
        raise SqlmetricsError(f"{what} (iterator): yields {type(first).__name__} items; an iterator must yield named tuples "
                              "(ir_datasets' qrels_iter() or scoreddocs_iter(), or a collections.namedtuple with "
                              "query_id, doc_id and score or relevance fields).")
    kind_of_item, fields = type(first), first._fields
    label = f"{what} ({kind_of_item.__name__} items)"
    failure: list = []  # a problem found while DuckDB reads the stream, raised as ours afterwards

    def chunks():
        number = 1  # of the chunk's first item
        rest = itertools.chain([first], items)
        while chunk := list(itertools.islice(rest, TUPLES_PER_BATCH)):
            other = next((i for i, item in enumerate(chunk) if type(item) is not kind_of_item), None)
            if other is not None:
                failure.append(SqlmetricsError(
                    f"{label}: item {number + other} is a {type(chunk[other]).__name__}, not a "
                    f"{kind_of_item.__name__} as the items before it. Pass one kind of item per input "
                    "(qrels_iter() as qrels, scoreddocs_iter() as the run)."))
                raise failure[-1]
            yield number, list(zip(*chunk))
            number += len(chunk)

    stream = chunks()
    number, values = next(stream)
    sample = pa.table({f: pa.array(v) for f, v in zip(fields, values)})
    probe = _fresh(kind)
    con.register(probe, sample.slice(0, 0))
    mapping = _map_columns(con, probe, kind, label, columns)
    con.unregister(probe)
    numbers = {mapping[r] for r in ("score", "relevance") if r in mapping}
    schema = pa.schema([pa.field(f, pa.float64() if f in numbers else sample.schema.field(f).type) for f in fields])

    def batch(number: int, values: list):
        try:
            return pa.record_batch([pa.array(v, type=t) for v, t in zip(values, schema.types)], schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            for field, column, t in zip(fields, values, schema.types):
                for i, value in enumerate(column):
                    try:
                        pa.array([value], type=t)
                    except (pa.ArrowInvalid, pa.ArrowTypeError):
                        failure.append(SqlmetricsError(
                            f"{label}: item {number + i} has {field} {value!r}, which is not a {t} as in the "
                            f"items before it. Give the field one type."))
                        raise failure[-1] from None
            raise

    reader = pa.RecordBatchReader.from_batches(schema, itertools.starmap(
        batch, itertools.chain([(number, values)], stream)))
    view = _fresh(kind)
    try:
        copy_into(con, reader, view)
    except duckdb.Error:
        if failure:
            raise failure[-1] from None
        raise
    return Loaded(view, mapping, label, "item", _numbered(view, 0))


def load(con, obj, kind: str, columns: dict | None = None, name: str | None = None, fmt: str | None = None,
         own_columns: bool = False, layout: str | None = None, glob: bool = False, what: str | None = None) -> Loaded:
    """Register one qrels or run input as a view on `con`. columns: {role: column} for this table's roles;
    own_columns: the mapping was given for this table alone (qrels_columns=), so a TREC file refuses it;
    layout: the fields of a TREC text file when they are not kind's (TREC_FIELDS, e.g. 'qrels_jg');
    glob: a name holding * ? [ ] { }, or a folder, is a pattern of Parquet files (else it is one file);
    what: the input's name in messages, when it is not the kind's (e.g. 'verdicts', read as qrels are).
    A run whose doc_id column is a list (one row per query) is unnested: see _unnested."""
    loaded = _load(con, obj, kind, columns, name, fmt, own_columns, layout, glob, what)
    return _unnested(con, loaded) if kind == "run" and _column_type(con, loaded, "doc_id").endswith("[]") else loaded


def _column_type(con, loaded: Loaded, role: str) -> str:
    return _types(con, loaded.view)[loaded.columns[role]]


def _types(con, view: str) -> dict:
    """{column: DuckDB type name} of a view, in its order."""
    return dict(r[:2] for r in con.execute(f"DESCRIBE {view}").fetchall())


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
    view = _fresh(kind)
    if isinstance(obj, dict):
        table, label = _dict_table(obj, kind, f"{what} (dict)"), f"{what} (dict)"
    elif isinstance(obj, duckdb.DuckDBPyRelation):
        # Streamed into a table of ours: the relation lives on the caller's connection, and is not copied
        # whole into Python memory first.
        copy_into(con, obj.to_arrow_reader(), view)
        table, label = None, f"{what} (DuckDB relation)"
    elif _is_arrow(obj):
        if isinstance(obj, _arrow_types()[1]):
            # A RecordBatchReader can be read once; the checks read the input again (to locate a bad row).
            copy_into(con, obj, view)
            table, label = None, f"{what} (Arrow stream)"
        else:
            table, label = obj, f"{what} (Arrow table)"
    elif type(obj).__module__.startswith("polars"):
        table, label = obj.to_arrow(), f"{what} (polars DataFrame)"
    elif type(obj).__module__.startswith("pandas"):
        table, label = _pandas_table(obj), f"{what} (pandas DataFrame)"
    elif type(obj).__module__.startswith("datasets.") and hasattr(obj, "with_format"):
        # A Hugging Face Dataset: its Arrow table (memory-mapped, not copied), rows selected as it shows them.
        table, label = obj.with_format("arrow")[:], f"{what} (Hugging Face Dataset)"
    elif hasattr(obj, "to_dict") and type(obj).__module__.startswith("ranx"):
        table, label = _dict_table(obj.to_dict(), kind, f"{what} (ranx)"), f"{what} (ranx)"
    else:
        raise SqlmetricsError(
            f"{what}: cannot read a {type(obj).__name__}; pass a file path (TREC, CSV, TSV, Parquet, JSON Lines), "
            "a pyarrow Table, a pandas or polars DataFrame, a Hugging Face Dataset, ranx Qrels or Run, an iterator of "
            "named tuples (ir_datasets), a {query_id: {doc_id: value}} dict, 'irds:<dataset id>' or 'file.duckdb:table'."
        )
    if table is None:
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))
    return _registered(con, table, kind, label, columns)


def _registered(con, table, kind: str, label: str, columns: dict | None) -> Loaded:
    """An Arrow table registered as a view (not copied), with its roles."""
    view = _fresh(kind)
    con.register(view, table)
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))


def _database_table(con, path: Path, table: str, kind: str, columns: dict | None, what: str) -> Loaded:
    """A table of a DuckDB or SQLite file, copied into a temporary table (see databases.py: why)."""
    label = f"{what} table {table!r} in {str(path)!r}"
    view = _fresh(kind)
    copy_table(con, path, table, view, label)
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))
