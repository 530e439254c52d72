"""evaluate(output=...): the per-query table written atomically as Parquet or CSV."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import SqlmetricsError

OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def output_path(output) -> Path | None:
    """The output file, checked before any work is done."""
    if output is None:
        return None
    path = Path(output)
    fmt = OUTPUT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SqlmetricsError(f"output={str(output)!r}: write .parquet or .csv.")
    if not path.parent.is_dir():
        raise SqlmetricsError(f"output={str(output)!r}: the folder {str(path.parent)!r} does not exist.")
    return path


def write_atomically(table, path: Path) -> None:
    """Write a pyarrow Table to `path` through a temporary file in the same folder and os.replace: a reader
    sees the old file or the whole new one, and an error leaves no file (and no temporary) behind."""
    # pyarrow is imported here, not at the top: the command line never writes through here and never
    # pays its ~0.15 s import.
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if OUTPUT_FORMATS[path.suffix.lower()] == "parquet":
            pq.write_table(table, tmp)
        else:
            pacsv.write_csv(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
