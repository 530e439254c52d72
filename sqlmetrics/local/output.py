"""The files sqlmetrics writes. An output file, replaced atomically: evaluate(output=...) writes the per-query
table as Parquet or CSV, the command line's -o its text, both through replace_file(). And this process's
temporary folder (process_folder()), where standard input is spooled and DuckDB spills past its memory limit."""
from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from ..errors import SqlmetricsError

OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}

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
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    os.close(fd)
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


def output_path(output) -> Path | None:
    """evaluate(output=...): the file, checked before any work is done."""
    if output is None:
        return None
    path = Path(output)
    writable_target(path, f"output={str(output)!r}")
    if OUTPUT_FORMATS.get(path.suffix.lower()) is None:
        raise SqlmetricsError(f"output={str(output)!r}: write .parquet or .csv.")
    return path


def write_atomically(table, path: Path) -> None:
    """Write a pyarrow Table to `path` (.parquet or .csv) through replace_file()."""
    # pyarrow is imported here, not at the top: the command line never writes through here and never
    # pays its ~0.15 s import.
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if OUTPUT_FORMATS[path.suffix.lower()] == "parquet":
        replace_file(path, f"output={str(path)!r}", lambda tmp: pq.write_table(table, tmp))
    else:
        replace_file(path, f"output={str(path)!r}", lambda tmp: pacsv.write_csv(table, tmp))


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
