"""`sqlmetrics decide`: compare's report from the statistics that `sqlmetrics sql --compare` computes in a
warehouse, fetched into a file."""
from __future__ import annotations

from ..options import DECIDE_CMD
from ..stats.compare import decide
from .common import UsageError, add_option_flags, check_output, chosen_format, option_values
from .compare import FORMATS, formatted


def add_parser(sub, parents) -> None:
    p = sub.add_parser(
        "decide", parents=parents, help="compare's report from the statistics `sqlmetrics sql --compare` computed",
        description="Print compare's report (means, summaries, each pair's difference, interval and test) from the "
                    "rows of the statement `sqlmetrics sql --compare TEST` prints: run that statement where the "
                    "tables live, save its rows as Parquet, CSV, TSV or JSON Lines, and give the file here. The "
                    "test and its settings are the statement's.")
    p.add_argument("stats", metavar="STATS", help="the statement's rows: a .parquet, .csv, .tsv or .jsonl file")
    p.add_argument("-f", "--format", choices=FORMATS,
                   help="table (default), markdown, latex, html, json (the whole report), or one row per pair and "
                        "measure: csv, tsv, jsonl, parquet; default: -o's extension")
    p.add_argument("--digits", type=int, default=4, metavar="N", help="decimals shown (default 4)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    add_option_flags(p, DECIDE_CMD)
    p.set_defaults(func=run, per_query=False)


def run(args) -> tuple:
    check_output(args.output)
    fmt = chosen_format(args, (*FORMATS, "duckdb"), "table", extensions={".txt": "table"})
    if args.digits < 0 or args.digits > 12:
        raise UsageError(f"--digits {args.digits}: give a number of decimals between 0 and 12.")
    report = decide(args.stats, **option_values(args, DECIDE_CMD))
    return formatted(report, args, fmt), args.output
