"""A local file: its format, from its name's suffix (or format=), read by that format's reader."""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from pathlib import Path

from ...errors import SqlmetricsError
from .csv_tsv import _csv_view
from .loaded import Loaded
from .objects import _ranx_file
from .parquet_json import _json_view, _parquet_view
from .roles import _empty_view
from .text import _compression, _text_head
from .trec import TREC_FIELDS, _trec_view

TABULAR = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".json": "jsonl"}
_GLOB = re.compile(r"[*?\[\]{}]")


def file_format(path: Path) -> str:
    """'trec', or the TABULAR format its suffix names (a .gz or .zst compression suffix skipped)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] == ".lz4":
        return "ranx"  # ranx's Run.save('run.lz4'): its own compressed binary, read by ranx
    return (TABULAR.get(suffixes[-1]) if suffixes else None) or "trec"


def _file_view(con, path: Path, kind: str, label: str, columns: dict | None, fmt: str | None,
               own_columns: bool, layout: str | None = None) -> Loaded:
    """A local file, read by its format's reader; a name DuckDB would read as a pattern is read through a link."""
    if not path.exists():
        pattern = " (a name holding * ? [ ] { } is one file; glob=True, --glob, reads it as a pattern)"
        raise SqlmetricsError(f"{label}: no such file{pattern if _GLOB.search(str(path)) else ''}. Check the path.")
    if path.is_dir():
        raise SqlmetricsError(f"{label}: is a folder, not a file.")
    fmt = fmt or file_format(path)
    source, temporary = _literal(path)
    try:
        if fmt not in ("trec", "parquet", "csv", "tsv", "jsonl", "json", "ranx"):
            raise SqlmetricsError(f"{label}: unknown format {fmt!r}; use trec, csv, tsv, parquet, jsonl or ranx.")
        if fmt == "trec" and kind not in TREC_FIELDS:  # items=, verdicts=, embeddings=: columns named in a header
            raise SqlmetricsError(f"{label}: is read as TREC text, which holds qrels and runs; give the columns by "
                                  "name, in a CSV, TSV, Parquet or JSON Lines file (named .csv, .tsv, .parquet or "
                                  ".jsonl).")
        if fmt == "ranx":
            return dataclasses.replace(_ranx_file(con, source, kind, label), temporary=temporary)
        if fmt != "parquet":
            compression = _compression(source, label)
            head = _text_head(con, source, compression, label, fmt)
        if fmt == "trec":
            if columns and own_columns:
                raise SqlmetricsError(f"{label}: TREC text has fixed columns; qrels_columns= applies to CSV, "
                                      "Parquet and tables.")
            return _kept(_trec_view(con, source, kind, label, compression, head, layout, temporary), temporary)
        if fmt != "parquet" and not head.strip():
            # Nothing in it, not even a header: a run that retrieved nothing (every judged query scores 0);
            # empty qrels are refused by the checks, naming the file.
            return dataclasses.replace(_empty_view(con, kind, label), temporary=temporary)
        if fmt in ("jsonl", "json"):
            return dataclasses.replace(_json_view(con, source, kind, label, columns, compression, head),
                                       temporary=temporary)
        if fmt == "parquet":
            return dataclasses.replace(_parquet_view(con, str(source), kind, label, columns), temporary=temporary)
        return _kept(_csv_view(con, source, kind, label, columns, fmt, compression, head, layout, temporary),
                     temporary)
    except BaseException:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        raise


def _kept(loaded: Loaded, temporary: str | None) -> Loaded:
    """The loaded file with the folder to remove after the evaluation: ours, or the one its reader made (a TREC
    file's copy, put in ours when there is one)."""
    return dataclasses.replace(loaded, temporary=temporary or loaded.temporary)


def _literal(path: Path) -> tuple[Path, str | None]:
    """(the path DuckDB is given, a temporary folder to remove afterwards or None). DuckDB reads a file name
    as a glob, so a name holding * ? [ ] { } would open other files (`r[1].txt` opens `r1.txt`): such a
    file is read through a link with a plain name in a folder of ours (a copy where links are refused)."""
    if not _GLOB.search(str(path)):
        return path, None
    folder = tempfile.mkdtemp(prefix="sqlmetrics-input-")
    suffixes = "".join(s for s in path.suffixes if not _GLOB.search(s))
    link = Path(folder) / f"input{suffixes}"
    try:
        os.symlink(path.resolve(), link)
    except OSError:
        shutil.copyfile(path, link)
    return link, folder
