"""Kept: the few things built again and again from the same inputs (a plan of measures, a statement's text, the
aggregates' SQL), built once and kept. Stored: such values kept on disk for the next process."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import importlib.util
import json
import math
import os
import secrets
import stat
import threading
import time
from pathlib import Path

from .errors import warn


class Kept:
    """At most `size` values by key, the oldest dropped first; get(key, make) builds a key's value once. Safe on
    threads: evaluations run on several, and sqlglot, which builds most of these, holds the GIL anyway."""

    def __init__(self, size: int = 64):
        self._values: dict = {}
        self._size = size
        self._lock = threading.Lock()

    def get(self, key, make):
        with self._lock:
            if key not in self._values:
                if len(self._values) >= self._size:
                    self._values.pop(next(iter(self._values)))
                self._values[key] = make()
            return self._values[key]

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


class Stored:
    """Values kept on disk between processes: a script calling `sqlmetrics trec_eval` in a loop binds the same
    templates into the same statement on every call. get(key, make) returns make()'s value, from the cache
    folder when a process made it before. The entry's name is a digest of the key and of everything the value
    is built from: the package's Python code and the measure templates, byte for byte (`sources`), and
    sqlglot's version. A changed template or upgraded code therefore names other entries,
    and a stale value cannot be read. The folder is $SQLMETRICS_CACHE_DIR (empty: no cache), else the user's
    cache folder (XDG_CACHE_HOME, LOCALAPPDATA, ~/.cache) + /sqlmetrics; a folder that cannot be written, or
    an entry that cannot be read, leaves the value built as if there were no cache.

    An entry holds its own name (the digest of its key), then the SHA-256 of its value, then the value as JSON,
    one line each. JSON, not a pickle: reading it can build only text, numbers, lists and the dataclasses named
    in `classes`, never run code, whoever wrote the file. The name inside it means an entry copied or synced over
    another's is not taken for it; the digest, that a byte changed on the disk or by hand (a number in a
    statement) is not read. It is read only from a folder that is the caller's alone (owned by them, not writable
    by group or others: as pip and ssh treat theirs), only as a regular file the caller owns, opened without
    following a symbolic link. Anything else is built anew."""

    KEEP = 500  # entries per kind; past it, the least recently written half go

    def __init__(self, kind: str, sources, valid=lambda value: isinstance(value, str), classes: tuple = ()):
        self._kind = kind
        self._sources = sources  # () -> the folders whose files build the values, with the file pattern of each
        self._valid = valid  # what a value read must be (default: a text), else it is built anew
        self._classes = {c.__name__: c for c in classes}  # the dataclasses a value may hold (MeasureCall, ...)

    def get(self, key, make):
        folder = _private_folder(self._kind)
        if folder is None:
            return make()
        name = hashlib.sha256(f"{_fingerprint(self._sources())}\0{key!r}".encode()).hexdigest()
        path = folder / f"{name}.entry"
        try:
            said, digest, body = _read_own(path).split(b"\n", 2)
            if said.decode() == name and digest.decode() == hashlib.sha256(body).hexdigest():
                value = _decoded(json.loads(body), self._classes)
                if self._valid(value):
                    return value
        except Exception:  # noqa: BLE001 - absent, damaged, foreign or forged: whatever it is, built anew below
            pass
        value = make()
        with contextlib.suppress(OSError, ValueError, TypeError, RecursionError):
            body = json.dumps(_encoded(value, self._classes), separators=(",", ":"), allow_nan=False).encode()
            _store(folder, path, f"{name}\n{hashlib.sha256(body).hexdigest()}\n".encode() + body, self.KEEP)
        return value


def cache_folder() -> Path | None:
    if "SQLMETRICS_CACHE_DIR" in os.environ:
        return Path(os.environ["SQLMETRICS_CACHE_DIR"]) if os.environ["SQLMETRICS_CACHE_DIR"] else None
    base = os.environ.get("XDG_CACHE_HOME") or os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/.cache")
    return Path(base) / "sqlmetrics"


def _fingerprint(sources) -> str:
    """sources: (folder, "*.py") for code, read once per process (the code a process runs does not change under
    it), or a digest the caller made of what it read (the templates: catalogue.templates.built_from)."""
    digest = hashlib.sha256(_SQLGLOT.encode())
    for source in sources:
        digest.update(source if isinstance(source, bytes) else _code_digest(str(source[0]), source[1]))
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def _code_digest(folder: str, pattern: str) -> bytes:
    digest = hashlib.sha256(folder.encode())  # a value names its files: a moved copy builds anew
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "**", pattern), recursive=True)):
        digest.update(b"\0" + os.path.relpath(path, folder).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.digest()


def _sqlglot_version() -> str:
    # Its version file, read rather than imported: a cached call imports no sqlglot for this.
    spec = importlib.util.find_spec("sqlglot")
    version = Path(spec.origin).parent / "_version.py" if spec and spec.origin else None
    return version.read_text() if version is not None and version.exists() else "sqlglot: unknown"


_SQLGLOT = _sqlglot_version()


# An entry is a few KB; a file far larger is not one of ours (and is not read into memory to find out).
_LARGEST_ENTRY = 16 << 20
# A temporary file left by a process killed while it wrote (SIGKILL, a power cut) goes once it is this old.
_STALE_TMP_SECONDS = 3600
_warned: set = set()


def _private_folder(kind: str) -> Path | None:
    """The kind's folder in the cache folder, made if missing, when both are the caller's alone: owned by them and
    not writable by group or others. A folder that another user made (a shared SQLMETRICS_CACHE_DIR, /tmp/...)
    could hold entries planted there, so it is not used: no cache, and one warning per process saying why."""
    root = cache_folder()
    if root is None:
        return None
    folder = root / kind
    try:
        # Both made private (mode 700) whatever the umask: a umask of 002 would make a group-writable root.
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        for path in (root, folder):
            st = path.stat()
            if not stat.S_ISDIR(st.st_mode):
                return None
            why = _not_private(st)
            if why:
                _warn_once(root, f"the cache folder {str(path)!r} {why}, so sqlmetrics neither reads nor keeps "
                                 "statements there: make it yours alone (chmod go-w), or set SQLMETRICS_CACHE_DIR to "
                                 "a folder of your own, or to nothing to turn the cache off.")
                return None
    except OSError:  # cannot be made or read: no cache, as with none asked for
        return None
    return folder


def _not_private(st: os.stat_result) -> str:
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid})"
    if hasattr(os, "getuid") and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def _warn_once(root: Path, message: str) -> None:
    if root not in _warned:
        _warned.add(root)
        warn(message)


def _read_own(path: Path) -> bytes:
    """The entry's text, when it is a regular file of the caller's: opened without following a symbolic link (a
    link planted in the folder names some other file), without waiting on a FIFO, and checked on the open file
    itself, so nothing can be swapped in between the check and the read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or _not_private(st) or st.st_size > _LARGEST_ENTRY:
            raise ValueError("not an entry of the caller's")
        return f.read()


def _store(folder: Path, path: Path, data: bytes, keep: int) -> None:
    # The temporary file's name is chosen before it exists, so that whatever interrupts the writing (a signal
    # raising KeyboardInterrupt at any instruction) finds the name in hand and removes the file.
    tmp = folder / f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # whole or absent: a reader in another process never sees half an entry
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _prune(folder, keep)


def _prune(folder: Path, keep: int) -> None:
    """Past `keep` entries the least recently written half go; and the temporary files of killed writers."""
    now = time.time()
    for tmp in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            if now - tmp.lstat().st_mtime > _STALE_TMP_SECONDS:
                tmp.unlink()
    entries = list(folder.glob("*.entry"))
    if len(entries) > keep:
        with contextlib.suppress(OSError):
            entries.sort(key=lambda p: p.lstat().st_mtime)
        for old in entries[: len(entries) // 2]:
            with contextlib.suppress(OSError):
                old.unlink()


# Values as JSON: text, whole numbers and bools as themselves; the rest tagged by a one-key object, so that
# reading builds exactly what was written and only that (a dataclass only when its class was named to Stored).
def _encoded(value, classes: dict):
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list):
        return [_encoded(v, classes) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encoded(v, classes) for v in value]}
    if isinstance(value, frozenset):
        return {"frozenset": [_encoded(v, classes) for v in sorted(value, key=repr)]}
    if isinstance(value, dict):
        return {"dict": [[_encoded(k, classes), _encoded(v, classes)] for k, v in value.items()]}
    if isinstance(value, Path):
        return {"path": str(value)}
    if dataclasses.is_dataclass(value) and classes.get(type(value).__name__) is type(value):
        return {"dataclass": [type(value).__name__,
                              {f.name: _encoded(getattr(value, f.name), classes) for f in dataclasses.fields(value)}]}
    raise TypeError(f"{type(value).__name__} is not kept on disk")


def _decoded(data, classes: dict):
    if data is None or isinstance(data, (str, bool, int, float)):
        return data
    if isinstance(data, list):
        return [_decoded(v, classes) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("not a value sqlmetrics wrote")
    (tag, inner), = data.items()
    if tag == "float":
        return float(inner)
    if tag == "tuple":
        return tuple(_decoded(v, classes) for v in inner)
    if tag == "frozenset":
        return frozenset(_decoded(v, classes) for v in inner)
    if tag == "dict":
        return {_decoded(k, classes): _decoded(v, classes) for k, v in inner}
    if tag == "path":
        return Path(inner)
    if tag == "dataclass":
        name, fields = inner
        return classes[name](**{k: _decoded(v, classes) for k, v in fields.items()})
    raise ValueError(f"unknown tag {tag!r}")
