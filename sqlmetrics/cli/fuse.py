"""`sqlmetrics fuse`: two or more runs fused into one (sql/fusion/), written as TREC text, Parquet, CSV or a
DuckDB table."""
from __future__ import annotations

import os

from ..local.fuse import fuse
from ..local.output import process_folder
from ..options import FUSE_CMD
from .common import STDOUT_NAMES, add_fusion_flags, add_option_flags, command_runs, fusion_params, option_values


def add_parser(sub, parents) -> None:
    p = sub.add_parser("fuse", parents=parents, help="fuse two or more runs into one (RRF, CombSUM, ...)",
                       description="Fuse runs into one, in one SQL statement on DuckDB: each method is a template "
                                   "of sql/fusion/ (`sqlmetrics list` shows them), equal to ranx's fuse. Runs: "
                                   "TREC text (.gz too), CSV, TSV, Parquet, JSON Lines or file.duckdb:table. "
                                   "The fused run is ranked by score, ties by document id descending.")
    p.add_argument("runs", metavar="RUN", nargs="+", help="two or more runs; '-' reads one from stdin")
    add_fusion_flags(p)
    p.add_argument("--name", action="append", metavar="NAME", help="name the runs in order (default: file stems)")
    p.add_argument("--tag", default="fused", help="the TREC run tag (6th field) of the fused run (default fused)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically): .parquet, .csv, .tsv, .json, .jsonl, file.duckdb:table, "
                        "else TREC text; default stdout (TREC text)")
    add_option_flags(p, FUSE_CMD)
    p.set_defaults(func=run, qrels=None)


def run(args) -> tuple:
    params = {**fusion_params(args), **option_values(args, FUSE_CMD)}
    runs = command_runs(args)
    if args.output and args.output not in STDOUT_NAMES:
        fuse(runs, args.method, norm=args.norm, output=args.output, tag=args.tag, **params)
        return "", None
    path = os.path.join(process_folder(), f"fused-{os.getpid()}.run")
    try:
        fuse(runs, args.method, norm=args.norm, output=path, tag=args.tag, **params)
        with open(path, encoding="utf-8") as f:
            return f.read(), None
    finally:
        if os.path.exists(path):
            os.unlink(path)
