"""`sqlmetrics convert`: a run or qrels in any format the readers take, written in another: TREC text, CSV,
TSV, JSON Lines, Parquet or a table of a DuckDB file, atomically (as every output)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..identifiers import quote_identifier as _q
from ..identifiers import sql_literal as _lit
from ..local import checks
from ..local.connection import connect
from ..local.output import process_folder, refuse_spaced_ids, refuse_spaced_tag, trec_number, write_trec
from ..local.readers import load
from ..options import CONVERT_CMD
from .common import (ArrowOutput, TextFile, UsageError, add_option_flags, chosen_format, option_values, role_pairs,
                     spool_stdin, trec_tag)

FORMATS = ("trec", "csv", "tsv", "jsonl", "parquet")
# The columns written, in order, with their types; a run's rank_position only when it has one.
COLUMNS = {"qrels": {"query_id": "string", "doc_id": "string", "relevance": "float64"},
           "run": {"query_id": "string", "doc_id": "string", "rank_position": "int64", "score": "float64"}}
SQL_TYPES = {"string": "VARCHAR", "float64": "DOUBLE", "int64": "BIGINT"}


def add_parser(sub, parents) -> None:
    p = sub.add_parser("convert", parents=parents, help="write a run or qrels in another format",
                       description="Read a run or qrels (TREC text, .gz too, CSV, TSV, Parquet, JSON Lines, "
                                   "file.duckdb:table, a SQLite file.db:table), check it as an evaluation would, and "
                                   "write it as TREC text (to stdout without -o), CSV, TSV, JSON Lines, Parquet or a "
                                   "DuckDB table. Columns are written under their role's name: query_id, doc_id, "
                                   "relevance (qrels); query_id, doc_id, rank_position, score (run).")
    p.add_argument("kind", choices=("run", "qrels"), help="what INPUT holds")
    p.add_argument("input", metavar="INPUT", help="the file (or file.duckdb:table) to read; '-' reads standard input")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically), in the format its extension names: .txt (trec), .csv, .tsv, "
                        ".jsonl, .parquet; or FILE.duckdb:TABLE (--into-mode)")
    p.add_argument("-f", "--format", choices=FORMATS, help="trec (default), csv, tsv, jsonl or parquet")
    p.add_argument("--column", action="append", metavar="ROLE=NAME", help="the input's column playing a role")
    p.add_argument("--tag", help="a TREC run's tag (6th field; default: the input's own tag, or its file stem)")
    add_option_flags(p, CONVERT_CMD)
    p.set_defaults(func=run)


def run(args) -> tuple:
    fmt = chosen_format(args, (*FORMATS, "duckdb"), "trec")
    if fmt != "trec" and not args.output:
        raise UsageError(f"-f {fmt}: give the file to write, -o FILE; standard output gets TREC text.")
    source = args.input
    if source == "-":  # saved to a file of ours first, its format told by its first bytes (as eval's '-')
        source = spool_stdin(args, args.kind, f"cat {args.kind}.txt | sqlmetrics convert {args.kind} - -o out.parquet")
    options = option_values(args, CONVERT_CMD)
    con = connect(**{k: options[k] for k in ("memory_limit", "threads", "temp_directory") if k in options})
    try:
        loaded = load(con, source, args.kind, role_pairs(args.column, "--column"))
        if args.kind == "run":
            if "score" not in loaded.columns:
                raise UsageError(f"{loaded.label}: has no score column; map one with --column score=NAME.")
            checks.check(con, loaded, "run")
        else:
            checks.check(con, loaded, "qrels")
        present = {r: t for r, t in COLUMNS[args.kind].items() if r in loaded.columns}
        casts = [f"CAST({_q(loaded.columns[r])} AS {SQL_TYPES[t]}) AS {r}" for r, t in present.items()]
        typed = f"SELECT {', '.join(casts)} FROM {loaded.view}"
        if fmt != "trec":
            import pyarrow as pa  # only here: TREC text, the default, is written without it

            table = con.sql(f"{typed} ORDER BY ALL").to_arrow_table()
            table = table.cast(pa.schema([(r, getattr(pa, t)()) for r, t in present.items()]))
            return ArrowOutput(table, ("query_id", "doc_id"), fmt, args.into_mode), args.output
        # TREC text, written by DuckDB: a Python line per row took 20-35 s and 3-5 GB for 7M rows.
        if args.kind == "qrels":
            query = f"SELECT query_id, '0', doc_id, {trec_number('relevance')} FROM ({typed}) ORDER BY ALL"
        else:
            stem = "stdin" if source != args.input else Path(args.input).name.split(".")[0]
            tag = args.tag or trec_tag(source) or stem
            refuse_spaced_tag(tag, f"--tag {tag!r}")
            if "rank_position" not in present:
                # TREC text needs a rank: trec_eval's own order, score descending, then document id descending
                typed = (f"SELECT *, ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) "
                         f"AS rank_position FROM ({typed})")
            query = (f"SELECT query_id, 'Q0', doc_id, rank_position, {trec_number('score')}, {_lit(tag)} "
                     f"FROM ({typed}) ORDER BY query_id, rank_position, doc_id")
        refuse_spaced_ids(con, loaded, f"--output {args.output!r}" if args.output else "standard output")
        fd, spool = tempfile.mkstemp(dir=process_folder(), prefix="convert-", suffix=".txt")
        os.close(fd)
        try:
            write_trec(con, query, spool)
        except BaseException:
            os.unlink(spool)
            raise
        return TextFile(spool), args.output
    finally:
        con.close()
