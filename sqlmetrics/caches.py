"""Kept: the few things built again and again from the same inputs (a plan of measures, a statement's text, the
aggregates' SQL), built once and kept. Stored: such values kept on disk for the next process."""
from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import importlib.util
import os
import pickle
import tempfile
import threading
from pathlib import Path


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
    an entry that cannot be read, leaves the value built as if there were no cache."""

    KEEP = 500  # entries per kind; past it, the least recently written half go

    def __init__(self, kind: str, sources):
        self._kind = kind
        self._sources = sources  # () -> the folders whose files build the values, with the file pattern of each

    def get(self, key, make):
        folder = cache_folder()
        if folder is None:
            return make()
        folder = folder / self._kind
        name = hashlib.sha256(f"{_fingerprint(self._sources())}\0{key!r}".encode()).hexdigest()
        path = folder / f"{name}.pickle"
        try:
            if _ours(path):
                with open(path, "rb") as f:
                    return pickle.load(f)
        except Exception:  # noqa: BLE001 - damaged or unreadable: built again, below
            pass
        value = make()
        with contextlib.suppress(OSError, pickle.PicklingError):
            _store(folder, path, value, self.KEEP)
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


def _ours(path: Path) -> bool:
    """The entry exists and, where files have owners, is the caller's own: a pickle is read only from there."""
    st = path.stat()
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def _store(folder: Path, path: Path, value, keep: int) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # whole or absent: a reader in another process never sees half an entry
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    entries = list(folder.glob("*.pickle"))
    if len(entries) > keep:
        entries.sort(key=lambda p: p.stat().st_mtime)
        for old in entries[: len(entries) // 2]:
            with contextlib.suppress(OSError):
                old.unlink()
