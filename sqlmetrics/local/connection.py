"""The DuckDB connection an evaluation runs on (its resources: memory, threads, the spill folder), interrupting
it, and the errors DuckDB's resources give, worded with the option that helps."""
from __future__ import annotations

import itertools
import os
import shutil
import threading
import weakref

import duckdb

from .. import embedded
from ..errors import SqlmetricsError
from ..options import Settings
from .output import process_folder
from .readers.loaded import _first_line, damaged

_SHARED: list = []  # the process's in-memory DuckDB database, opened by the first evaluation that needs it
_SHARED_LOCK = threading.Lock()
_LIVE: weakref.WeakSet = weakref.WeakSet()  # the connections connect() gave, for interrupt_queries()
_SPILLS = itertools.count()


def connect(memory_limit=None, threads=None, temp_directory=None):
    """A DuckDB connection for one evaluation. Without resource options, a cursor on the process's
    in-memory database: opening a database costs ~30 ms, a cursor nothing, and the temporary tables and
    views of an evaluation belong to its cursor and go with it. With memory_limit (e.g. "2GB"), threads
    or temp_directory, a database of its own, which spills to temp_directory past the limit.

    An in-memory database spills to ./.tmp by default, in whatever folder the caller happens to be in.
    Here it spills to temp_directory or, without one, to a folder of its own inside this process's
    temporary folder (output.process_folder, removed at exit). No extension is ever installed or loaded."""
    resources = {}
    for name, value in (("memory_limit", memory_limit), ("threads", threads), ("temp_directory", temp_directory)):
        if value is not None:
            resources[name] = str(value) if name != "threads" else value
    if not resources:
        with _SHARED_LOCK:
            if not _SHARED:
                _SHARED.append(embedded.connect(config={"temp_directory": _spill_folder()}))
            con = _SHARED[0].cursor()
    else:
        if "temp_directory" not in resources:
            resources["temp_directory"] = _spill_folder()
        try:
            con = embedded.connect(config=resources)
        except (duckdb.Error, TypeError, ValueError) as e:
            raise SqlmetricsError(f"memory_limit/threads/temp_directory: {_first_line(e)} "
                                  "(e.g. memory_limit='2GB', threads=2, temp_directory='/tmp/spill').") from None
    _LIVE.add(con)
    return con


def _spill_folder() -> str:
    # One per database: DuckDB makes it when it first spills and removes it when the database closes; two
    # databases never share one. Its parent, the process's folder, exists (DuckDB would not make it).
    return os.path.join(process_folder(), f"spill-{next(_SPILLS)}")


def interrupt_queries() -> None:
    """Interrupt what DuckDB runs for this process's evaluations (the command line's SIGINT and SIGTERM):
    its worker threads stop now instead of finishing their tasks. An idle connection is unaffected."""
    for con in list(_LIVE):
        try:
            con.interrupt()
        except duckdb.Error:  # closed meanwhile
            pass


class GeneratedSQLError(RuntimeError):
    """DuckDB rejected the statement sqlmetrics generated from checked inputs: a bug of ours. The message
    is one line; the statement is on .sql (the command line prints it with --debug)."""

    def __init__(self, message: str, sql: str):
        super().__init__(message)
        self.sql = sql


def _resource_error(e: BaseException, con, o: Settings) -> BaseException | None:
    """DuckDB out of memory, out of room to spill, or interrupted: the error to raise instead (one line
    naming the option that helps), or None when `e` is none of these."""
    text = str(e)
    if isinstance(e, duckdb.InterruptException) or (type(e) is RuntimeError and text == "Query interrupted"):
        return KeyboardInterrupt()  # DuckDB's answer to Ctrl-C during a query
    disk_full = "max_temp_directory_size" in text or "failed to offload" in text or "No space left" in text
    if disk_full and isinstance(e, (duckdb.OutOfMemoryException, duckdb.IOException)):
        return SqlmetricsError(
            f"DuckDB ran out of disk space while spilling to temp_directory={_temp_directory(con, o)!r} "
            f"({_first_line(e).rstrip('.')}). Free space there, or set temp_directory= to a folder on a disk "
            "with room.")
    if isinstance(e, duckdb.OutOfMemoryException):
        limit = f"memory_limit={o.memory_limit!r}" if o.memory_limit is not None else \
            "memory_limit= is DuckDB's default, 80% of RAM"
        return SqlmetricsError(
            f"DuckDB ran out of memory ({limit}; {_first_line(e).rstrip('.')}). Raise memory_limit= (e.g. "
            "memory_limit='8GB'), use fewer threads=, or set temp_directory= to a folder on a disk with room: "
            "past the limit DuckDB spills there.")
    return None


def _temp_directory(con, o: Settings) -> str:
    if o.temp_directory is not None:
        return str(o.temp_directory)
    try:
        return con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    except duckdb.Error:
        return "DuckDB's temporary folder"


def _error_instead(e: BaseException, con, o: Settings, inputs: list) -> BaseException | None:
    """The error to raise instead of `e`, which struck during an evaluation: DuckDB out of memory, out of room to
    spill, or interrupted (_resource_error), or a damaged input file (readers' damaged); None to raise `e`."""
    # A reader may have worded DuckDB's error as an unreadable input; DuckDB's own stays its __context__.
    cause = e.__context__ if isinstance(e, SqlmetricsError) else e
    instead = _resource_error(cause, con, o) if cause is not None else None
    if instead is None and not isinstance(e, SqlmetricsError):  # DuckDB's error: a damaged input file?
        instead = damaged(con, inputs)
    return instead


def _release(con, inputs: list) -> None:
    """After an evaluation: its connection closed, and the temporary folders made to read its inputs removed."""
    con.close()
    for folder in {i.temporary for i in inputs if i.temporary}:
        shutil.rmtree(folder, ignore_errors=True)
