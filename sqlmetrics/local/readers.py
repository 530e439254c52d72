"""Inputs: files, frames, dicts and DuckDB tables become DuckDB views with known column roles.

DuckDB scans every file itself (TREC text is split by a regular expression inside DuckDB, CSV, Parquet
and JSON Lines by its readers); nothing is parsed line by line in Python. Each input is checked before
evaluation, and every problem is a SqlmetricsError naming the input, the line or row, and the fix.
"""
from __future__ import annotations

import dataclasses
import gzip
import itertools
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..errors import SqlmetricsError
from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..options import QRELS_ROLES

RANKING_ROLES = ("query_id", "doc_id", "score", "rank_position")  # run_name only when mapped

# Column names recognised without a mapping (case-insensitive). A role is guessed only when exactly one
# of its names is present; anything else needs columns={role: name}.
KNOWN_NAMES = {
    "query_id": ("query_id", "qid", "query", "topic", "topic_id", "q_id", "queryid"),
    "doc_id": ("doc_id", "docid", "docno", "doc", "document", "document_id", "pid", "item_id", "item"),
    "relevance": ("relevance", "rel", "label", "grade", "judgment", "judgement", "qrel", "rating"),
    "score": ("score", "sim", "similarity", "rsv"),
    "rank_position": ("rank", "position", "pos", "rank_position"),
}

TREC_FIELDS = {
    "qrels": ("query_id", "iteration", "doc_id", "relevance"),
    "run": ("query_id", "q0", "doc_id", "rank_position", "score", "tag"),
}
TABULAR = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".json": "jsonl"}
DUCKDB_FILES = (".duckdb", ".ddb", ".db")

_counter = itertools.count()


@dataclass
class Loaded:
    """One input as a DuckDB view: the view's name, its column for each role, and how to name its rows."""

    view: str
    columns: dict  # role -> column in the view
    label: str  # "qrels file 'x.txt'" / "run 'bm25' (pandas DataFrame)"
    row_word: str  # "line" for text files (numbered as in an editor), "row" otherwise
    numbered: str  # a relation with line_no and the view's columns, read only to locate a bad row
    fixed_columns: bool = False  # TREC text: its fields are positional, a column mapping does not apply
    attached: str | None = None  # a DuckDB file attached to read this table: detached after the evaluation
    temporary: str | None = None  # a folder of ours (a link to the input): removed after the evaluation


def _fresh(prefix: str) -> str:
    return f"sqlm_{prefix}_{next(_counter)}"


def _sniff_delimiter(path: Path, width: int) -> str | None:
    """The one character (tab or space) that splits the file's first lines into `width`+ non-empty fields."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rb") as f:
            head = f.read(1 << 16).decode("utf-8", "replace").splitlines()[:-1] or []
    except (OSError, EOFError):
        return None
    head = [line for line in head if line.strip()]
    for delim in ("\t", " "):
        if head and all(len(p := line.split(delim)) >= width and all(p) and not any(
                c in field for field in p for c in " \t") for line in head):
            return delim
    return None


def _trec_view(con, path: Path, kind: str, label: str) -> Loaded:
    """TREC text: fields separated by any whitespace; fields after the expected ones are ignored.

    Read once into a temporary table with only the columns evaluation needs. Fast path: a file whose
    fields are separated by single tabs or single spaces goes through DuckDB's parallel CSV reader; any
    line that does not fit (other whitespace, extra or missing fields) sends the whole file down the
    general path, a regular expression per line (several times slower, but any whitespace goes).
    """
    fields = TREC_FIELDS[kind]
    keep = [f for f in fields if f in QRELS_ROLES + RANKING_ROLES]
    view = _fresh(kind)
    loaded = Loaded(view, {f: f for f in keep}, label, "line", _trec_numbered(path, fields), fixed_columns=True)
    delim = _sniff_delimiter(path, len(fields))
    if delim is not None:
        columns = "{" + ", ".join(f"{_lit(f)}: 'VARCHAR'" for f in fields) + "}"
        # Two delimiters in a row give an empty field, which DuckDB reads as NULL: in whitespace-separated
        # TREC that line has a field fewer, a malformed line (trec_eval rejects it). The other whitespace
        # character inside a field (a tab when splitting on spaces) would split it in TREC.
        other = "chr(9)" if delim == " " else "' '"
        clean = " AND ".join(f"{f} IS NOT NULL AND NOT contains({f}, {other})" for f in fields)
        try:
            # Scores and grades are parsed to numbers once, here; one that does not parse becomes NULL, which
            # the input check reports with the line's text (read again from the file).
            typed = [f"TRY_CAST({f} AS DOUBLE) AS {f}" if f in ("score", "relevance") else f for f in keep]
            con.execute(f"CREATE TEMP TABLE {view} AS SELECT {', '.join(typed)}, {clean} AS well_formed FROM "
                        f"read_csv({_lit(str(path))}, delim = {_lit(delim)}, header = false, columns = {columns}, "
                        "quote = '', escape = '', auto_detect = false, strict_mode = true)")
            if not _malformed(con, view):
                return loaded
            con.execute(f"DROP TABLE {view}")
        except duckdb.Error:
            pass  # a line the single delimiter does not split into exactly the fields: the general path
    matched = " AND ".join(f"f.{f} <> ''" for f in fields)  # regexp_extract gives '' when the line does not match
    con.execute(f"CREATE OR REPLACE TEMP TABLE {view} AS SELECT {', '.join(f'f.{f} AS {f}' for f in keep)}, "
                f"{matched} AS well_formed FROM "
                f"(SELECT {_trec_split(fields)} AS f FROM {_trec_lines(path)} WHERE line IS NOT NULL AND trim(line) <> '')")
    if _malformed(con, view):
        line_no, line = con.execute(f"SELECT line_no, line FROM {loaded.numbered} WHERE {fields[-1]} = '' "
                                    "ORDER BY line_no LIMIT 1").fetchall()[0]
        raise SqlmetricsError(
            f"{label}, line {line_no}: expected {len(fields)} whitespace-separated fields ({' '.join(fields)}), "
            f"got {line!r}. Fix or remove that line"
            + ("; is this a qrels file passed as a run?" if kind == "run" else ".")
        )
    if kind == "qrels":
        # A qrels line has exactly four fields: a longer one is most likely a run passed as qrels (which
        # would otherwise evaluate every run to a perfect score), or a format that needs its own reader.
        longer = rf"^\s*(\S+\s+){{{len(fields)}}}\S"
        extra = con.execute(f"SELECT line_no, line FROM {_trec_numbered(path, fields)} WHERE regexp_matches(line, "
                            f"{_lit(longer)}) ORDER BY line_no LIMIT 1").fetchall()
        if extra:
            line_no, line = extra[0]
            raise SqlmetricsError(
                f"{label}, line {line_no}: a qrels line has {len(fields)} fields ({' '.join(fields)}), this one has "
                f"more: {line!r}. Is this a run (query Q0 doc rank score tag) passed as qrels? Pass the judgments "
                "file first, then the runs.")
    return loaded


def _malformed(con, view: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM {view} WHERE NOT well_formed").fetchall()[0][0]


def _trec_lines(path: Path) -> str:
    return (f"read_csv({_lit(str(path))}, columns = {{'line': 'VARCHAR'}}, header = false, delim = '\x1f', "
            "quote = '', escape = '', auto_detect = false, strict_mode = false)")


def _trec_split(fields) -> str:
    """One line -> a struct of its first len(fields) whitespace-separated fields ('' when it has fewer)."""
    pattern = _lit(r"^\s*" + r"\s+".join([r"(\S+)"] * len(fields)))
    return f"regexp_extract(line, {pattern}, [{', '.join(_lit(f) for f in fields)}])"


def _trec_numbered(path: Path, fields) -> str:
    """Every line numbered as in an editor (blank ones too), read only to name a bad line in an error."""
    return (f"(SELECT line_no, line, {', '.join(f'f.{f} AS {f}' for f in fields)} FROM (SELECT line_no, line, "
            f"{_trec_split(fields)} AS f FROM (SELECT ROW_NUMBER() OVER () AS line_no, line FROM {_trec_lines(path)}) "
            "WHERE line IS NOT NULL AND trim(line) <> ''))")


def _numbered(view: str, offset: int) -> str:
    return f"(SELECT ROW_NUMBER() OVER () + {offset} AS line_no, * FROM {view})"


def file_format(path: Path) -> str:
    """'trec', or the TABULAR format its suffix names (a .gz or .zst compression suffix skipped)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".zst"):
        suffixes = suffixes[:-1]
    return (TABULAR.get(suffixes[-1]) if suffixes else None) or "trec"


def _file_view(con, path: Path, kind: str, label: str, columns: dict | None, fmt: str | None,
               own_columns: bool) -> Loaded:
    if not path.exists():
        raise SqlmetricsError(f"{label}: no such file. Check the path.")
    if path.is_dir():
        raise SqlmetricsError(f"{label}: is a folder, not a file.")
    fmt = fmt or file_format(path)
    source, temporary = _literal(path)
    try:
        if fmt == "trec":
            if columns and own_columns:
                raise SqlmetricsError(f"{label}: TREC text has fixed columns; qrels_columns= applies to CSV, "
                                      "Parquet and tables.")
            return dataclasses.replace(_trec_view(con, source, kind, label), temporary=temporary)
        # CSV and TSV are read as text: ids are compared as written (`007`, `1.50`), and scores and grades
        # are checked and converted by the evaluation, whatever DuckDB's sniffer would have guessed.
        readers = {
            "parquet": f"read_parquet({_lit(str(source))})",
            "csv": f"read_csv({_lit(str(source))}, header = true, all_varchar = true)",
            "tsv": f"read_csv({_lit(str(source))}, header = true, delim = '\t', all_varchar = true)",
            "jsonl": f"read_json({_lit(str(source))}, format = 'newline_delimited')",
        }
        if fmt not in readers:
            raise SqlmetricsError(f"{label}: unknown format {fmt!r}; use trec, csv, tsv, parquet or jsonl.")
        view = _fresh(kind)
        try:
            con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {readers[fmt]}")
            con.execute(f"SELECT * FROM {view} LIMIT 0")
        except duckdb.Error as e:
            raise SqlmetricsError(f"{label}: cannot be read as {fmt} ({_first_line(e)}).") from None
        offset = 1 if fmt in ("csv", "tsv") else 0  # a CSV header is line 1
        row_word = "row" if fmt == "parquet" else "line"
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, row_word, _numbered(view, offset),
                      temporary=temporary)
    except BaseException:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        raise


_GLOB = re.compile(r"[*?\[\]{}]")


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


def _first_line(e: Exception) -> str:
    """DuckDB's reason without its 'Invalid Input Error:' prefix."""
    return re.sub(r"^[A-Z][\w ]* Error: ", "", str(e).strip().splitlines()[0])


def _map_columns(con, view: str, kind: str, label: str, columns: dict | None) -> dict:
    present = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
    lower = {c.lower(): c for c in present}
    roles = QRELS_ROLES if kind == "qrels" else RANKING_ROLES
    required = ("query_id", "doc_id", "relevance") if kind == "qrels" else ("query_id", "doc_id")
    columns = dict(columns or {})
    if kind == "run" and "run_name" in columns:
        roles = ("run_name", *roles)
    mapping = {}
    for role in roles:
        if role in columns:
            if columns[role] not in present:
                also = (" (columns= maps both tables; qrels_columns= overrides it for the qrels)"
                        if kind == "qrels" else "")
                raise SqlmetricsError(
                    f"{label}: columns= maps {role!r} to {columns[role]!r}, which is not a column "
                    f"(columns: {', '.join(present)}){also}."
                )
            mapping[role] = columns[role]
            continue
        found = [lower[n] for n in KNOWN_NAMES[role] if n in lower]
        if len(found) == 1:
            mapping[role] = found[0]
        elif len(found) > 1 and role in required:
            raise SqlmetricsError(
                f"{label}: several columns could be {role!r} ({', '.join(found)}); "
                f"say which with columns={{{role!r}: ...}}."
            )
    missing = [r for r in required if r not in mapping]
    if kind == "run" and "score" not in mapping and "rank_position" not in mapping:
        missing.append("score")
    if missing:
        raise SqlmetricsError(
            f"{label}: no column for {', '.join(map(repr, missing))} (columns: {', '.join(present)}). "
            f"Rename it or map it, e.g. columns={{{missing[0]!r}: '<your column>'}}."
        )
    return mapping


def _dict_table(obj: dict, kind: str, label: str) -> pa.Table:
    """{qid: {docid: value}} (ranx / pytrec_eval shape) -> an Arrow table."""
    import pyarrow as pa

    qids, docs, values = [], [], []
    for qid, docs_of in obj.items():
        if not isinstance(docs_of, dict):
            raise SqlmetricsError(
                f"{label}: expected {{query_id: {{doc_id: value}}}}, but query {qid!r} maps to a {type(docs_of).__name__}."
            )
        for doc, value in docs_of.items():
            qids.append(str(qid))
            docs.append(str(doc))
            values.append(value)
    value_role = "relevance" if kind == "qrels" else "score"
    try:
        column = pa.array(values, type=pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        bad = next((q, d, v) for q, d, v in zip(qids, docs, values) if not isinstance(v, (int, float)))
        raise SqlmetricsError(
            f"{label}: query {bad[0]!r}, document {bad[1]!r} has {value_role} {bad[2]!r}, which is not a number."
        ) from None
    return pa.table({"query_id": qids, "doc_id": docs, value_role: column})


def _split_duckdb_target(text: str):
    """'eval.duckdb:run_bm25' -> (Path('eval.duckdb'), 'run_bm25'); anything else -> None."""
    path, sep, table = text.rpartition(":")
    if sep and table and path.lower().endswith(DUCKDB_FILES):
        return Path(path), table
    return None


def _arrow_types() -> tuple:
    # pyarrow is imported here, not at the top: an object from pyarrow means it is loaded already, and
    # the command line (files in, text out) never needs it (importing it costs ~0.15 s of start-up).
    import pyarrow as pa

    return pa.Table, pa.RecordBatchReader


def load(con, obj, kind: str, columns: dict | None = None, name: str | None = None, fmt: str | None = None,
         own_columns: bool = False) -> Loaded:
    """Register one qrels or run input as a view on `con`. columns: {role: column} for this table's roles;
    own_columns: the mapping was given for this table alone (qrels_columns=), so a TREC file refuses it."""
    what = kind if name is None else f"run {name!r}"
    if isinstance(obj, (str, Path)):
        text = str(obj)
        if target := _split_duckdb_target(text):
            return _duckdb_table(con, *target, kind, columns, what)
        return _file_view(con, Path(text), kind, f"{what} file {text!r}", columns, fmt, own_columns)
    if isinstance(obj, dict):
        table, label = _dict_table(obj, kind, what), f"{what} (dict)"
    elif isinstance(obj, duckdb.DuckDBPyRelation):
        table, label = obj.to_arrow_table(), f"{what} (DuckDB relation)"
    elif type(obj).__module__.startswith("pyarrow") and isinstance(obj, _arrow_types()):
        table, label = obj, f"{what} (Arrow table)"
    elif type(obj).__module__.startswith("polars"):
        table, label = obj.to_arrow(), f"{what} (polars DataFrame)"
    elif type(obj).__module__.startswith("pandas"):
        import pyarrow as pa

        table, label = pa.Table.from_pandas(obj, preserve_index=False), f"{what} (pandas DataFrame)"
    elif hasattr(obj, "to_dict") and type(obj).__module__.startswith("ranx"):
        table, label = _dict_table(obj.to_dict(), kind, f"{what} (ranx)"), f"{what} (ranx)"
    else:
        raise SqlmetricsError(
            f"{what}: cannot read a {type(obj).__name__}; pass a file path (TREC, CSV, TSV, Parquet, JSON Lines), "
            "a pyarrow Table, a pandas or polars DataFrame, a {query_id: {doc_id: value}} dict, or 'file.duckdb:table'."
        )
    view = _fresh(kind)
    con.register(view, table)
    return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0))


def _duckdb_table(con, path: Path, table: str, kind: str, columns: dict | None, what: str) -> Loaded:
    label = f"{what} table {table!r} in {str(path)!r}"
    if not path.exists():
        raise SqlmetricsError(f"{label}: no such database file.")
    alias = _fresh("db")
    try:
        con.execute(f"ATTACH {_lit(str(path))} AS {alias} (READ_ONLY)")
    except duckdb.Error as e:
        raise SqlmetricsError(f"{label}: cannot open the database ({_first_line(e)}).") from None
    try:  # the database outlives this evaluation's cursor: detach it again if anything below fails
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = ?", [alias]).fetchall()]
        if table not in tables:
            raise SqlmetricsError(f"{label}: no such table or view (it has: {', '.join(sorted(tables)) or 'none'}).")
        view = _fresh(kind)
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {alias}.{_q(table)}")
        return Loaded(view, _map_columns(con, view, kind, label, columns), label, "row", _numbered(view, 0),
                      attached=alias)
    except BaseException:
        con.execute(f"DETACH {alias}")
        raise
