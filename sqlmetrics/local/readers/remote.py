"""s3://, gs://, http(s):// inputs, read through fsspec's filesystems registered with DuckDB."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import threading
from pathlib import Path

from ...errors import SqlmetricsError
from .files import _file_view, file_format
from .loaded import Loaded
from .parquet_json import _parquet_view

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
                              'pip install ".[remote]" in a clone of sqlmetrics.') from None


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


_STATUS = {400: "bad request", 401: "unauthorized: no or wrong credentials", 403: "forbidden: the credentials may not "
           "read it", 408: "timed out", 429: "too many requests", 500: "internal server error", 502: "bad gateway",
           503: "service unavailable", 504: "gateway timeout"}


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
        cause = e.__cause__ if isinstance(e, FileNotFoundError) and e.__cause__ is not None else e
        status = getattr(cause, "status", None)  # aiohttp's answer of a web server, which fsspec words as not found
        if isinstance(status, int) and status != 404:
            raise SqlmetricsError(f"{label}: the server answered HTTP {status} ({_STATUS.get(status, 'an error')}). "
                                  + ("Check the credentials, or the URL's signature and its expiry."
                                     if status in (401, 403) else "Check the URL, or try again later.")) from None
        if isinstance(e, FileNotFoundError) and not isinstance(e.__cause__, OSError):
            raise SqlmetricsError(f"{label}: no such object. Check the URL.") from None
        reason = " ".join(str(cause).split()) or type(cause).__name__
        raise SqlmetricsError(f"{label}: cannot be read ({reason}). Check the URL, the network, and the "
                              "credentials fsspec finds (environment, config files).") from None
