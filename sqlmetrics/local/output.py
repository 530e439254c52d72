"""The files sqlmetrics writes. An output file, replaced atomically: evaluate(output=...) writes the per-query
table, the command line's -o its text or a typed table, all through replace_file() (write_table() for typed
tables: Parquet, CSV, TSV, JSON, JSON Lines, or a table of a DuckDB file, written in one transaction). And
this process's temporary folder (process_folder()), where standard input is spooled and DuckDB spills past its
memory limit."""
from __future__ import annotations

import atexit
import decimal
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
from pathlib import Path

import duckdb

from .. import embedded
from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..results import json_text
from .databases import _split_duckdb_target

# The format each extension of an output file names. A command takes those it can write (FORMATS of
# cli/evaluate, cli/compare, cli/convert); evaluate(output=...) takes TABLE_FORMATS and DuckDB tables.
EXTENSIONS = {".txt": "trec", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet",
              ".json": "json", ".jsonl": "jsonl", ".md": "markdown", ".tex": "latex", ".html": "html"}
TABLE_FORMATS = ("parquet", "csv", "tsv", "json", "jsonl")  # what write_table() writes to a file
DUCKDB_FILES = (".duckdb", ".ddb")  # 'file.duckdb:table': a table of a DuckDB file

# The kernel's pseudo-files and devices: "writing" there is a system call in disguise, and the rename of a
# temporary file beside them fails or, worse, succeeds: /dev/stdout is a link through /proc/self/fd/1 to
# whatever standard output is, a file the shell opened, which a rename would replace. Never a place for results.
_PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
_ORDINARY = (Path("/dev/shm"),)  # a file system of ordinary files in memory, under /dev
_NOT_FILES = ((stat.S_ISDIR, "is a folder; give a file name"),
              (stat.S_ISCHR, "is a character device, not a file"),
              (stat.S_ISBLK, "is a block device, not a file"),
              (stat.S_ISFIFO, "is a FIFO (named pipe), not a file"),
              (stat.S_ISSOCK, "is a socket, not a file"))


def writable_target(path, name: str) -> Path:
    """The regular file that writing `path` replaces, checked before any work is done. A symbolic link is
    followed: its target gets the new content and the link stays. A folder, device, FIFO, socket, anything
    under /proc, /sys or /dev (a link through there too; /dev/shm is ordinary files), or a missing or read-only folder is refused with one line naming `name` (the
    option as the caller spelled it: "output='x'", "--output 'x'")."""
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise SqlmetricsError(f"{name}: cannot be used ({e.strerror or e}).") from None
    for test, what in _NOT_FILES:
        if mode is not None and test(mode):
            raise SqlmetricsError(f"{name} {what}.")
    if mode is not None and not stat.S_ISREG(mode):
        raise SqlmetricsError(f"{name} is not a regular file.")
    pseudo = next((p for hop in _hops(path) for p in _PSEUDO_FILESYSTEMS if (hop == Path(p) or Path(p) in hop.parents)
                   and not any(o == hop or o in hop.parents for o in _ORDINARY)), None)
    if pseudo:
        raise SqlmetricsError(f"{name} is under {pseudo}, the kernel's pseudo-files and devices, not a place for "
                              "results; give a file name elsewhere (or leave the option out to write to standard "
                              "output).")
    folder = real.parent
    if not folder.is_dir():
        raise SqlmetricsError(f"{name}: the folder {str(folder)!r} does not exist.")
    if not os.access(folder, os.W_OK):
        raise SqlmetricsError(f"{name}: the folder {str(folder)!r} is not writable.")
    return real


def _hops(path) -> list:
    """Every path a chain of symbolic links passes through, from `path` (absolute) to the file it names.
    realpath alone would hide a link through /proc (its last hop is a magic link to an ordinary file)."""
    hops, current = [], Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on links followed
        hops.append(current)
        try:
            target = os.readlink(current)
        except OSError:  # not a link (or missing): the end of the chain
            break
        current = Path(os.path.abspath(current.parent / target))
    return hops + [Path(os.path.realpath(path))]


def replace_file(path, name: str, write) -> None:
    """write(temporary_path) fills a temporary file beside the target of `path`, which then takes the
    target's place in one rename: a reader sees the old file or the whole new one, and a failure leaves
    neither a half-written file nor the temporary. An existing file keeps its permission bits; a new one gets
    0666 & ~umask, as open() would make it (mkstemp's 0600 would hide it from the group). OSError is raised
    as it is; the callers word it."""
    real = writable_target(path, name)  # again: the target may have changed while the work ran
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp = _temporary_beside(real)
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the data on disk before the rename makes it visible
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:  # KeyboardInterrupt and SIGTERM (the command line raises for it) too
        _unlink(tmp)
        raise


def _temporary_beside(real: Path) -> str:
    """A new empty file beside `real`, named before it exists: a signal that lands while it is made (inside
    mkstemp, the name was not yet the caller's to remove) leaves nothing behind."""
    while True:
        tmp = str(real.parent / f".{real.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return tmp
        except FileExistsError:  # someone else's file by that name: left alone, another name tried
            continue
        except BaseException:  # KeyboardInterrupt or SIGTERM while it was made: the name is ours
            _unlink(tmp)
            raise


def _umask() -> int:
    # Reading the umask means setting it; the window is two system calls long.
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def database_target(output) -> tuple[Path, str] | None:
    """'results.duckdb:table' -> (the DuckDB file, the table); any other name -> None."""
    target = _split_duckdb_target(str(output))
    if target and target[0].suffix.lower() not in DUCKDB_FILES:
        raise SqlmetricsError(f"{str(output)!r}: tables are written to DuckDB files: name it file.duckdb:table.")
    return target


def output_format(output, given: str | None, formats, name: str, given_name: str = "-f/--format",
                  extensions: dict | None = None) -> str | None:
    """The format `output` is written in: 'duckdb' for 'file.duckdb:table', else its extension's (EXTENSIONS,
    overridden by `extensions`), which `given` (the -f a user gave, or None) must agree with; a name without
    an extension takes `given`. An unknown extension, one that contradicts `given`, or a format not in
    `formats` is an error naming both. Checked before any work is done."""
    if database_target(output):
        fmt = "duckdb"
    else:
        suffix = Path(str(output)).suffix.lower()
        if not suffix:
            return given
        fmt = {**EXTENSIONS, **(extensions or {})}.get(suffix)
        if fmt is None:
            said = f" and {given_name} says {given}" if given else ""
            raise SqlmetricsError(f"{name}: the extension {suffix!r} names no format{said}; name the file "
                                  f"{_endings(formats, extensions)}.")
    if given and given != fmt:
        raise SqlmetricsError(f"{name} names the format {fmt} but {given_name} says {given}: "
                              "make them agree (or leave one out).")
    if fmt not in formats:
        raise SqlmetricsError(f"{name}: {fmt} cannot be written here; name the file {_endings(formats, extensions)}.")
    return fmt


def _endings(formats, extensions: dict | None) -> str:
    suffixes = {**EXTENSIONS, **(extensions or {})}
    endings = [f"{next(s for s, g in suffixes.items() if g == f)} ({f})" for f in formats if f in suffixes.values()]
    return ", ".join(endings + (["file.duckdb:table"] if "duckdb" in formats else []))


def checked_output(output, into_mode: str = "create") -> str | None:
    """evaluate(output=..., into_mode=...): the format to write, checked before any work is done."""
    if output is None:
        if into_mode != "create":
            raise SqlmetricsError(f"into_mode={into_mode!r} says how to write into output='file.duckdb:table'; "
                                  "give output= too.")
        return None
    name = f"output={str(output)!r}"
    target = database_target(output)
    writable_target(target[0] if target else output, name)
    formats = (*TABLE_FORMATS, "duckdb")
    fmt = output_format(output, None, formats, name)
    if fmt is None:
        raise SqlmetricsError(f"{name}: the name has no extension to say the format; name the file "
                              f"{_endings(formats, None)}.")
    if fmt != "duckdb" and into_mode != "create":
        raise SqlmetricsError(f"into_mode={into_mode!r} says how to write into a DuckDB table; {name} is a file, "
                              "replaced whole: name a table (file.duckdb:table) or leave into_mode out.")
    return fmt


def write_table(table, output, fmt: str, name: str, into_mode: str = "create", key: tuple = ()) -> None:
    """Write a pyarrow Table to `output` in format `fmt` (TABLE_FORMATS through replace_file(); 'duckdb': the
    table of 'file.duckdb:table', see write_duckdb). `name` says the option as the caller spelled it."""
    if fmt == "duckdb":
        path, table_name = database_target(output)
        write_duckdb(table, path, table_name, into_mode, key, name)
        return
    try:
        replace_file(output, name, lambda tmp: _WRITERS[fmt](table, tmp))
    except OSError as e:
        raise SqlmetricsError(f"{name}: cannot be written ({e.strerror or e}).") from None


def arrow_column(values: list, type_name: str | None = None):
    """A pyarrow array of Python values, for a typed file: of pyarrow's type `type_name` ('float64', 'string'),
    else of the values' own, as pyarrow infers it, except where that fails or DuckDB could not read it back:
    integers past int64 (a UBIGINT, a HUGEINT segment) are uint64 when none is negative, else DECIMAL(38, 0),
    DuckDB's own Arrow type for a HUGEINT; a decimal of 39 digits (a HUGEINT read as DECIMAL(38, 0), near its
    ends) stays DECIMAL(38, 0) too, not the decimal256 that pyarrow infers and DuckDB cannot read."""
    import pyarrow as pa

    if type_name is not None:
        return pa.array(values, getattr(pa, type_name)())
    ints = [v for v in values if type(v) is int]
    if ints and not -2 ** 63 <= min(ints) <= max(ints) < 2 ** 63:
        if min(ints) >= 0 and max(ints) < 2 ** 64:
            return pa.array(values, pa.uint64())
        values = [None if v is None else decimal.Decimal(v) for v in values]
        return _decimal128(pa.array(values), 0)
    array = pa.array(values)
    return _decimal128(array, array.type.scale) if pa.types.is_decimal256(array.type) else array


def _decimal128(array, scale: int):
    """DECIMAL(38, scale) of a decimal array: unchecked, as DuckDB exports a HUGEINT (its 39 digits past 38 too):
    128 bits hold every HUGEINT."""
    import pyarrow as pa

    return array.cast(pa.decimal128(38, scale), safe=False)


def _parquet(table, tmp: str) -> None:
    # pyarrow is imported where it is needed: the command line's text outputs never pay its ~0.15 s import.
    import pyarrow.parquet as pq

    pq.write_table(table, tmp)


def _delimited(delimiter: str):
    def write(table, tmp: str) -> None:
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, tmp, pacsv.WriteOptions(delimiter=delimiter))
    return write


def _json(lines: bool):
    """JSON (an array of objects, json.dump(rows, indent=2)'s layout) or JSON Lines, each value as json_text()
    writes it: numbers as numbers (Python's repr), NaN and +-inf as null, dates and times as ISO text, decimals as
    their digits in text. The lines are made by DuckDB (_json_in_sql), which formats a double as
    Python's repr does (checked on half a million values, random bit patterns among them) and a string as json
    does, and written from its buffers: millions of rows without a Python loop. What it would spell otherwise (a
    control character DuckDB escapes in capitals, a type without its formatting here) is written by Python's json
    encoder, a batch of rows at a time."""
    def write(table, tmp: str) -> None:
        if not _json_in_sql(table, tmp, lines):
            _json_in_python(table, tmp, lines)
    return write


# The control characters json escapes as \u00xx with a hex letter, which DuckDB writes in capitals (\u001F).
_CAPITAL_ESCAPES = "[\x0b\x0e\x0f\x1a-\x1f]"


def _json_value(name: str, arrow_type) -> str | None:
    """SQL: the column's value as json_text() spells it, or None for a type not formatted here."""
    import pyarrow as pa

    c = _q(name)
    if pa.types.is_floating(arrow_type):  # a float32 as the double Python widens it to
        x = f"CAST({c} AS DOUBLE)"
        return f"CASE WHEN isfinite({x}) THEN CAST({x} AS VARCHAR) ELSE 'null' END"  # NULL is not finite either
    if pa.types.is_integer(arrow_type):
        return f"COALESCE(CAST({c} AS VARCHAR), 'null')"
    if pa.types.is_boolean(arrow_type):
        return f"CASE WHEN {c} IS NULL THEN 'null' WHEN {c} THEN 'true' ELSE 'false' END"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return f"COALESCE(to_json({c}), 'null')"
    if pa.types.is_date32(arrow_type):  # str(date): YYYY-MM-DD
        return f"COALESCE(to_json(CAST({c} AS VARCHAR)), 'null')"
    return None


def _json_in_sql(table, tmp: str, lines: bool) -> bool:
    """_json()'s bytes made by DuckDB; False (nothing written) when a column's type or a string's control
    character is not spelled here as json spells it."""
    import pyarrow as pa

    names = table.column_names
    values = [_json_value(name, table.schema.field(i).type) for i, name in enumerate(names)]
    if not names or None in values or len(set(names)) < len(names):
        return False
    con = embedded.connect()
    try:
        con.execute("SET enable_progress_bar = false")  # DuckDB's own bar on standard error, past two seconds
        con.register("sqlm_rows", table)
        texts = [_q(n) for n, t in zip(names, table.schema.types) if pa.types.is_string(t) or pa.types.is_large_string(t)]
        if texts and con.execute("SELECT COUNT(*) FROM sqlm_rows WHERE " + " OR ".join(
                f"regexp_matches({c}, {_lit(_CAPITAL_ESCAPES)})" for c in texts)).fetchall()[0][0]:
            return False
        fields = [f"{_lit(json_text(n) + ': ')} || {v}" for n, v in zip(names, values)]
        if lines:
            row = "'{' || " + " || ', ' || ".join(fields) + " || '}' || chr(10)"
        else:  # each object indented inside the array, after a ",\n" (the first one's becomes "[\n")
            inside = " || ',' || chr(10) || '    ' || ".join(fields)
            row = f"',' || chr(10) || '  {{' || chr(10) || '    ' || {inside} || chr(10) || '  }}'"
        first = True
        with open(tmp, "wb") as f:
            for batch in con.sql(f"SELECT {row} FROM sqlm_rows").to_arrow_reader(1 << 16):
                text = _string_bytes(batch.column(0))
                if not lines and first and len(text):
                    f.write(b"[\n")
                    text = text[2:]
                first = first and not len(text)
                f.write(text)
            if not lines:
                f.write(b"[]\n" if first else b"\n]\n")
        return True
    finally:
        con.close()


def _string_bytes(array) -> memoryview:
    """The UTF-8 bytes of a string array's values, one after another, straight from its data buffer."""
    import pyarrow as pa

    buffers = array.buffers()
    offsets = memoryview(buffers[1]).cast("q" if pa.types.is_large_string(array.type) else "i")
    return memoryview(buffers[2])[offsets[array.offset]:offsets[array.offset + len(array)]]


def _json_in_python(table, tmp: str, lines: bool) -> None:
    """_json()'s bytes by Python's json encoder, a batch of rows at a time (millions of rows as dicts at once
    took gigabytes)."""
    indent = None if lines else 2
    with open(tmp, "w", encoding="utf-8") as f:
        first = True
        for batch in table.to_batches(max_chunksize=65536):
            for row in batch.to_pylist():
                text = json_text(row, indent)
                # json.dump(rows, indent=2)'s layout, one object at a time: each indented inside the array
                f.write(text + "\n" if lines else ("[\n  " if first else ",\n  ") + text.replace("\n", "\n  "))
                first = False
        if not lines:
            f.write("[]\n" if first else "\n]\n")


_WRITERS = {"parquet": _parquet, "csv": _delimited(","), "tsv": _delimited("\t"), "json": _json(False),
            "jsonl": _json(True)}


# trec_eval splits its lines on C's whitespace (isspace): a TREC text field can hold none of these.
_WHITESPACE = ("chr(32)", "chr(9)", "chr(10)", "chr(11)", "chr(12)", "chr(13)")


def trec_number(column: str) -> str:
    """SQL for a grade or score as TREC text: a whole number without a decimal point (2, not 2.0), any other
    in its shortest round-trip form (DuckDB's text of a DOUBLE is Python's repr)."""
    return (f"CASE WHEN {column} = trunc({column}) AND abs({column}) < 1e38 THEN CAST(CAST({column} AS HUGEINT) "
            f"AS VARCHAR) ELSE CAST({column} AS VARCHAR) END")


def refuse_spaced_ids(con, loaded, name: str) -> None:
    """Before writing TREC text from a loaded input: an id holding whitespace would split its line into other
    fields; refused, naming it. An input read from TREC text cannot hold one (its fields were split so)."""
    if loaded.fixed_columns:
        return
    ids = [f"CAST({_q(loaded.columns[r])} AS VARCHAR)" for r in ("query_id", "doc_id")]
    spaced = " OR ".join(f"contains({c}, {w})" for c in ids for w in _WHITESPACE)
    found = con.execute(f"SELECT {', '.join(ids)} FROM {loaded.view} WHERE {spaced} LIMIT 1").fetchall()
    if found:
        value = next(v for v in found[0] if any(ch.isspace() for ch in v))
        raise SqlmetricsError(f"{name}: TREC text cannot hold the id {value!r}: its whitespace would split the line "
                              "into other fields. Write another format (e.g. .parquet or .csv), or change the id.")


def refuse_spaced_tag(tag: str, shown: str) -> None:
    """A TREC run's tag is its sixth field: whitespace in it would make more. `shown`: the option as given."""
    if any(ch.isspace() for ch in tag):
        raise SqlmetricsError(f"{shown}: a TREC run's tag is one field; give one without whitespace.")


def write_trec(con, query: str, path: str) -> None:
    """The rows of `query` (TREC text's fields, in their order; ids without whitespace) written by DuckDB to
    `path`, a line each, fields separated by one space: millions of lines, no Python loop, never all in memory."""
    con.execute(f"COPY ({query}) TO {_lit(path)} (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')")


def _committed(con) -> bool:
    """Whether the connection's transaction is committed: a ROLLBACK then finds none to roll back."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        return True
    return False


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def write_duckdb(table, path: Path, table_name: str, into_mode: str, key: tuple, name: str) -> None:
    """The rows of a pyarrow Table into the table `table_name` of the DuckDB file at `path`, in one
    transaction (an error leaves the table as it was), its columns typed as the Arrow table's (text, DOUBLE,
    DATE). into_mode: 'create' a new table (an existing one is an error saying which mode to use), 'replace'
    it, 'append' the rows, or 'merge' them: rows with the same `key` (the result's key columns) are replaced."""
    writable_target(path, name)
    new_file = not path.exists()
    if not new_file and _is_sqlite(path):  # DuckDB would want its sqlite extension for it, which is never loaded
        raise SqlmetricsError(f"{name}: {str(path)!r} is a SQLite database, not a DuckDB one. Write the table into a "
                              "DuckDB file (a new name, e.g. results.duckdb:table), or read the SQLite file as an input.")
    try:
        con = embedded.connect(str(path))
    except duckdb.Error as e:
        raise SqlmetricsError(f"{name}: cannot open {str(path)!r} as a DuckDB database ({_first_line(e)}).") from None
    target, columns = _q(table_name), ", ".join(_q(c) for c in table.column_names)
    try:
        con.register("sqlm_new_rows", table)
        existing = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND lower(table_name) = lower(?) ORDER BY ordinal_position", [table_name]).fetchall()]  # as DuckDB's names
        if existing and into_mode == "create":
            raise SqlmetricsError(f"{name}: the table {table_name!r} exists already; say what to do with it: "
                                  "into_mode='replace' (drop it, write these rows), into_mode='append' (add them) or "
                                  "into_mode='merge' (replace the rows with the same key, add the others).")
        missing = [c for c in table.column_names if c.lower() not in {e.lower() for e in existing}]
        if existing and into_mode in ("append", "merge") and missing:
            raise SqlmetricsError(f"{name}: the table {table_name!r} has no column {', '.join(map(repr, missing))} "
                                  f"(it has {', '.join(existing)}); into_mode='replace' writes a new table.")
        con.execute("BEGIN TRANSACTION")
        if not existing or into_mode == "replace":
            con.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT {columns} FROM sqlm_new_rows")
        else:
            if into_mode == "merge":
                same = " AND ".join(f"n.{_q(k)} IS NOT DISTINCT FROM {target}.{_q(k)}" for k in key)
                con.execute(f"DELETE FROM {target} WHERE EXISTS (SELECT 1 FROM sqlm_new_rows n WHERE {same})")
            con.execute(f"INSERT INTO {target} ({columns}) SELECT {columns} FROM sqlm_new_rows")
        con.execute("COMMIT")
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and _committed(con):
            # Ctrl-C or SIGTERM as the COMMIT returned: the rows are written, once. The work is finished, not
            # interrupted: a script that retried would write them twice.
            con.close()
            return
        con.close()  # an open transaction is rolled back
        if new_file:  # nothing was there: nothing stays, not even an empty database
            for leftover in (path, Path(f"{path}.wal")):
                _unlink(leftover)
        if isinstance(e, duckdb.Error):
            raise SqlmetricsError(f"{name}: the table {table_name!r} was not written ({_first_line(e)}); "
                                  "it is as it was.") from None
        raise
    con.close()


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


# ---------------------------------------------------------------------------------------------- temporary folder

_FOLDER: dict = {}  # (pid, temp dir) -> the folder: a forked child makes its own, as does a changed TMPDIR
_FOLDER_LOCK = threading.Lock()
_OURS = re.compile(r"sqlmetrics-(\d+)-")


def process_folder() -> str:
    """This process's temporary folder, sqlmetrics-<pid>-XXXXXXXX under tempfile.gettempdir() (TMPDIR):
    standard input spooled to disk and DuckDB's spill files go there, never into the current directory.
    Made on first use and removed at exit, including after SIGINT or SIGTERM on the command line (its
    handlers unwind to a normal exit). A process killed outright leaves its folder; the next one to start
    removes the folders whose process is gone."""
    pid, base = os.getpid(), tempfile.gettempdir()
    key = (pid, base)
    with _FOLDER_LOCK:
        folder = _FOLDER.get(key)
        if folder is None or not os.path.isdir(folder):
            _remove_stale(base)
            folder = tempfile.mkdtemp(prefix=f"sqlmetrics-{pid}-", dir=base)
            _FOLDER[key] = folder
            atexit.register(_remove_own, folder, pid)
        return folder


def _remove_own(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits the parent's exit handlers, not its folder
        shutil.rmtree(folder, ignore_errors=True)


def _remove_stale(base: str) -> None:
    """Remove the folders sqlmetrics-<pid>-* in `base` of processes that are gone: only those, only ours
    (same owner), never through a symbolic link."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        m = _OURS.match(entry.name)
        if not m:
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        if not _alive(int(m.group(1))):
            shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid <= 0 or os.name == "nt":  # not a process id we made; on Windows os.kill(pid, 0) is a Ctrl-C
        return True
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, and is someone else's
        return True
    return True
