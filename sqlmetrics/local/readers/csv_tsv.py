"""CSV and TSV files, read as text with the header parsed here; a headerless TSV of TREC's fields is TREC text."""
from __future__ import annotations

import csv
import functools
import io
import re
from pathlib import Path

from ...errors import SqlmetricsError
from ...identifiers import sql_literal as _lit
from .loaded import Loaded, _fresh, _numbered
from .roles import KNOWN_NAMES, RAG_ROLES, _map_columns
from .text import _create, _open_bytes, _reading
from .trec import TREC_FIELDS, _trec_view


def _csv_view(con, path: Path, kind: str, label: str, columns: dict | None, fmt: str, compression: str,
              head: bytes, layout: str | None, scratch: str | None = None) -> Loaded:
    """A CSV or TSV file, its first line the header.

    CSV and TSV are read as text: ids are compared as written (`007`, `1.50`), and scores and grades
    are checked and converted by the evaluation, whatever DuckDB's sniffer would have guessed. The
    file is read into a table here, once: a bad byte or line is found (and explained) now, not by
    a later query of the evaluation. `scratch`: a folder for the copy a headerless TSV read as TREC text may need.
    """
    view = _fresh(kind)
    delim = "\t" if fmt == "tsv" else ","
    names = _csv_header(head, delim, label)
    if _is_data(names, columns, kind):
        fields = TREC_FIELDS.get(layout or kind)  # None for the kinds TREC text has no layout for (RAG_ROLES, items)
        if fmt == "tsv" and fields and len(names) == len(fields):
            # Headerless, with TREC's fields (qrels `q 0 doc grade`, runs `q Q0 doc rank score tag`):
            # TREC text with tabs, read as such.
            return _trec_view(con, path, kind, label, compression, head, layout, scratch)
        example = {"qrels": ("query-id", "corpus-id", "score"),
                   **{k: required for k, (required, _) in RAG_ROLES.items()}}.get(kind, ("query_id", "doc_id", "score"))
        trec = (f", or give every line the {len(fields)} fields of TREC text ({' '.join(fields)})"
                if fmt == "tsv" and fields else "")
        raise SqlmetricsError(
            f"{label}, line 1: {delim.join(names)!r} is data, not a header naming the columns (it names no "
            f"known column and holds a number). Add a header line, e.g. {delim.join(example)!r}{trec}.")
    # The header is parsed here and the layout given (RFC 4180 quoting, this delimiter): DuckDB's
    # sniffer, on a file with one line of a field too many, guesses a one-column layout instead, and
    # may skip lines it finds odd. Given the layout, a line of another width is an error naming it.
    layout = "{" + ", ".join(f"{_lit(n)}: 'VARCHAR'" for n in names) + "}"
    _create(con, path, label, fmt, compression, lambda size: (
        f"CREATE TEMP TABLE {view} AS SELECT * FROM read_csv({_lit(str(path))}, header = true, "
        f"delim = {_lit(delim)}, quote = '\"', escape = '\"', columns = {layout}, auto_detect = false, "
        f"strict_mode = true, {_reading(compression, size)})"))
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "line", _numbered(view, 0),
                  line_of=functools.partial(_csv_line, path, compression, delim))


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


def _is_data(names: list, columns: dict | None, kind: str) -> bool:
    """A CSV or TSV first line that is a row, not a header: it names no known or mapped column, and one of
    its fields is a number (BEIR's and MS MARCO's TSV files are written with and without a header)."""
    known = {n for names_of in KNOWN_NAMES.values() for n in names_of}
    known.update(role for roles in RAG_ROLES.get(kind, ()) for role in roles)  # a RAG input's: named as its roles
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
