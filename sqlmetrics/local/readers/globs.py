"""glob=True: a pattern, or a folder (hive partitions: day=2024-06-01/arm=b/), of files read as one table, each
row keeping its file and line to be named by."""
from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

import duckdb

from ...errors import SqlmetricsError
from ...identifiers import quote_identifier as _q
from ...identifiers import sql_literal as _lit
from .files import _GLOB, _file_view, file_format
from .loaded import Loaded, _first_line, _fresh, _types
from .remote import _filesystem, _is_remote, _register, _remote_errors
from .roles import _map_columns


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
