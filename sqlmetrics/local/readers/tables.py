"""A table of a DuckDB or SQLite file ('eval.duckdb:run'), copied in (../databases.py: how, and why)."""
from __future__ import annotations

from pathlib import Path

from ..databases import copy_table
from .loaded import Loaded, _fresh, _numbered
from .roles import _map_columns


def _database_table(con, path: Path, table: str, kind: str, columns: dict | None, what: str) -> Loaded:
    """A table of a DuckDB or SQLite file, copied into a temporary table (see databases.py: why)."""
    label = f"{what} table {table!r} in {str(path)!r}"
    view = _fresh(kind)
    copy_table(con, path, table, view, label)
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))
