"""Text files (TREC, CSV, TSV, JSON Lines): their compression, found by their first bytes; their head, to sniff
the layout; their lines, read by DuckDB; and, when DuckDB cannot read one, why, naming the line and byte."""
from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path

import duckdb

from ...errors import SqlmetricsError
from ...identifiers import sql_literal as _lit
from .loaded import _first_line

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


# A blank line in trec_eval's sense (C's isspace() but \n), found from the \n that ends the line before it (a
# search with a literal first byte: eight times as fast as one anchored at every line's start).
_BLANK_AFTER_NEWLINE = re.compile(rb"\n[ \t\v\f\r]*\n")


def first_blank_line(path: Path) -> int | None:
    """The number (from 1, as an editor counts) of the first line of nothing but whitespace, the file's lines split
    at \\n alone and decompressed; None when there is none or Python cannot read the file."""
    number, carry = 1, b""
    try:
        stream = _open_bytes(path, _compression(path, str(path)))
        if stream is None:
            return None
        with stream:
            while True:
                chunk = stream.read(1 << 20)
                data = carry + chunk
                if chunk:  # whole lines only
                    cut = data.rfind(b"\n") + 1
                    block, carry = data[:cut], data[cut:]
                else:  # the last line, ended as trec_eval ends it
                    block = data + b"\n" if data else b""
                found = _BLANK_AFTER_NEWLINE.search(b"\n" + block)  # the block's first line follows a \n too
                if found:
                    return number + block.count(b"\n", 0, found.start())
                number += block.count(b"\n")
                if not chunk:
                    return None
    except (OSError, EOFError, zlib.error, SqlmetricsError):
        return None  # the reader says why it cannot be read


def last_line_matching(path: Path, pattern: re.Pattern) -> bytes | None:
    """The last line that `pattern` finds (its search), the file's lines split at \\n alone and decompressed; None when
    none is found or Python cannot read the file. A plain file is read from its end, a compressed one through."""
    try:
        compression = _compression(path, str(path))
        if compression == "none":
            return next((line for line in _lines_from_end(path) if pattern.search(line)), None)
        stream = _open_bytes(path, compression)
        if stream is None:
            return None
        found, carry = None, b""
        with stream:
            while chunk := stream.read(1 << 20):
                *lines, carry = (carry + chunk).split(b"\n")
                found = next((line for line in reversed(lines) if pattern.search(line)), found)
        return carry if pattern.search(carry) else found
    except (OSError, EOFError, zlib.error, SqlmetricsError):
        return None  # the reader says why it cannot be read


def _lines_from_end(path: Path):
    """A plain file's lines, split at \\n alone, the last first."""
    with open(path, "rb") as f:
        end, carry = f.seek(0, os.SEEK_END), b""
        while end > 0:
            start = max(0, end - (1 << 16))
            f.seek(start)
            first, *lines = (f.read(end - start) + carry).split(b"\n")
            yield from reversed(lines)
            end, carry = start, first
        yield carry


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


def _trec_lines(path: Path, compression: str, line_size: int | None) -> str:
    """The file's lines, whole. An empty delimiter splits nothing (no byte of the data can cut a line, as
    the 0x1F of an earlier version did); DuckDB's empty delimiter is a NUL byte, which strict mode makes an
    error (explained by _unreadable) rather than the end of the line."""
    return (f"read_csv({_lit(str(path))}, columns = {{'line': 'VARCHAR'}}, header = false, delim = '', "
            f"quote = '', escape = '', auto_detect = false, strict_mode = true, {_reading(compression, line_size)})")


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
