"""DuckDB as the package opens it: every connection, for evaluating, reading a database file, writing an output or
computing statistics, has extension autoinstall and autoload off. DuckDB's defaults would download an extension
the first time a query seems to need one (a SQLite file named .duckdb, an https:// path): nothing is fetched or
loaded behind the caller's back."""
from __future__ import annotations

import duckdb

NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def connect(database: str = ":memory:", read_only: bool = False, config: dict | None = None):
    return duckdb.connect(database, read_only=read_only, config={**NO_EXTENSIONS, **(config or {})})
