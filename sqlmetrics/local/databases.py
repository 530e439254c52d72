"""Tables in database files, DuckDB or SQLite ('eval.duckdb:run', 'eval.db:run'), copied into the evaluation.

A database file is data, but it can hold SQL too: a view may call read_text('/etc/...') or read a URL,
and attached to the evaluation's connection it would run with the evaluation's rights (and its error
messages would show what it read). So a DuckDB file is opened on a connection of its own, read-only,
with file and network access and extension loading switched off and that configuration locked. A SQLite
file is read by Python's sqlite3, read-only: DuckDB would read it through an extension it downloads.

The table is copied, streamed in batches, into a temporary table of the evaluation's connection: DuckDB
holds it in memory or spills it past memory_limit, and the checks may read it again (locating a bad row
numbers its rows), which a stream would not allow.
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import duckdb

from .. import embedded
from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q

DATABASE_FILES = (".duckdb", ".ddb", ".db", ".sqlite", ".sqlite3")  # 'file<suffix>:table' names a table
SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
BATCH_ROWS = 1 << 17

# The DuckDB file's own connection: nothing outside the file is reachable, no extension is installed or
# loaded (a view needing one fails with DuckDB's reason), and SQL cannot switch any of that back on.
_LOCKED = {"enable_external_access": False, "autoinstall_known_extensions": False,
           "autoload_known_extensions": False, "lock_configuration": True}


def _split_duckdb_target(text: str):
    """'eval.duckdb:run_bm25' -> (Path('eval.duckdb'), 'run_bm25'); the same for a SQLite file
    ('eval.db:run', 'eval.sqlite:run'); anything else -> None."""
    path, sep, table = text.rpartition(":")
    if sep and table and path.lower().endswith(DATABASE_FILES):
        return Path(path), table
    return None


def copy_into(con, data, into: str) -> None:
    """Arrow data (a table, or a stream read once) -> the temporary table `into` on con."""
    source = f"{into}_source"
    con.register(source, data)
    try:
        con.execute(f"CREATE TEMP TABLE {into} AS SELECT * FROM {source}")
    finally:
        con.unregister(source)


def copy_table(con, path: Path, table: str, into: str, label: str) -> None:
    """The table (or view) `table` of the database file at `path` -> the temporary table `into` on con."""
    if not path.exists():
        raise SqlmetricsError(f"{label}: no such database file. Check the path.")
    if path.is_dir():
        raise SqlmetricsError(f"{label}: is a folder, not a database file.")
    try:
        sqlite = _is_sqlite(path)
    except OSError as e:
        raise SqlmetricsError(f"{label}: cannot read the file ({e.strerror}).") from None
    if sqlite:
        copy_into(con, _sqlite_table(path, table, label), into)
    else:
        _copy_duckdb(con, path, table, into, label)


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def _reason(e: Exception) -> str:
    """The database's reason: its first line, after the last 'Conversion Error: ' style prefix (an error
    inside the copied stream comes wrapped in the stream's own: 'reading the stream ... failed: IOError: ')."""
    return re.split(r"\b[A-Z]\w*(?: [A-Z]\w*)* ?Error: ", str(e).strip().splitlines()[0])[-1]


def _no_table(label: str, tables: list) -> SqlmetricsError:
    return SqlmetricsError(f"{label}: no such table or view (it has: {', '.join(sorted(tables)) or 'none'}).")


def _copy_duckdb(con, path: Path, table: str, into: str, label: str) -> None:
    try:
        source = embedded.connect(str(path), read_only=True, config=_LOCKED)
    except duckdb.Error as e:
        # DuckDB opens a file once per process with one configuration: a connection of the caller's own
        # to it (read-write, or without our locks) is in the way.
        also = (" This program has it open already: pass that connection's table instead, con.table(name)."
                if "different configuration" in str(e) else "")
        raise SqlmetricsError(f"{label}: cannot open it as a DuckDB database, read-only ({_reason(e)}).{also}") from None
    try:
        tables = [r[0] for r in source.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()]
        if table not in tables:
            raise _no_table(label, tables)
        copy_into(con, source.sql(f"SELECT * FROM {_q(table)}").to_arrow_reader(BATCH_ROWS), into)
    except duckdb.PermissionException as e:  # the message names the file or URL, never what it holds
        raise SqlmetricsError(
            f"{label}: it reads something outside the database ({_reason(e)}), and database files are read "
            "with file and network access switched off. Store the rows in a table of the database "
            "(CREATE TABLE t AS SELECT ...) and pass that table.") from None
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read ({_reason(e)}).") from None
    finally:
        source.close()


def _sqlite_table(path: Path, table: str, label: str):
    """A SQLite table as an Arrow table, read with sqlite3 in read-only mode (the file is never written)."""
    import pyarrow as pa

    try:
        # A URI, so that mode=ro applies; as_uri() escapes the characters a URI gives a meaning (? # %).
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise SqlmetricsError(f"{label}: cannot open it as a SQLite database, read-only ({e}).") from None
    try:
        # A view may only call functions SQLite marks harmless (no side effects), whoever wrote the file.
        db.execute("PRAGMA trusted_schema = OFF")
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite!_%' ESCAPE '!'")]
        if table not in tables:
            raise _no_table(label, tables)
        cursor = db.execute(f"SELECT * FROM {_q(table)}")
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    except sqlite3.Error as e:
        raise SqlmetricsError(f"{label}: cannot be read ({e}).") from None
    finally:
        db.close()
    columns = list(zip(*rows)) if rows else [()] * len(names)
    return pa.Table.from_arrays([_sqlite_column(pa, values) for values in columns], names=names)


def _sqlite_column(pa, values):
    """SQLite keeps a type per value, not per column. A column of one type keeps it; a column mixing
    types (ids 7 and 'd7', or 1 and 1.5) becomes text, each value as written (7 -> '7', 1.5 -> '1.5'),
    which is how ids are compared anyway (scores and grades are converted to numbers by the evaluation)."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) > 1:
        return pa.array([None if v is None else v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                         for v in values], pa.string())
    kind = kinds.pop() if kinds else str
    return pa.array(values, {int: pa.int64(), float: pa.float64(), str: pa.string(), bytes: pa.binary()}[kind])
