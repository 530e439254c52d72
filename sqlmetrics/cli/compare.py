"""`sqlmetrics compare`: per-run means and a significance test for every pair of runs and measure."""
from __future__ import annotations

from ..catalogue import parse_all
from ..options import COMPARE_CMD
from ..stats.compare import compare
from .common import Progress, UsageError, add_option_flags, check_output, command_runs, measures_from, option_values

DEFAULT_MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@1000"]
FORMATS = ("table", "markdown", "latex", "json")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("compare", parents=parents, help="compare runs with significance tests",
                       description="Per-run means and a significance test for every pair of runs (or every run "
                                   "against --baseline), segment and measure; superscript letters mark the runs "
                                   "each run beats significantly, ▲/▼ a significant gain/loss against the baseline. "
                                   "QRELS may be 'none' when the judgments are in the run (--label, --relevance); "
                                   "one RUN with --column run_name=COLUMN compares the runs of that column (A/B arms).")
    p.add_argument("qrels", metavar="QRELS", help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON Lines, "
                                                  "x.duckdb:table, or 'none'")
    p.add_argument("runs", metavar="RUN", nargs="+", help="one or more runs, named by file stem; '-' reads stdin")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="name the runs in order (default: file stems); repeat once per run")
    add_report_flags(p, DEFAULT_MEASURES)
    add_option_flags(p, COMPARE_CMD)
    p.set_defaults(func=run)


def add_report_flags(p, default_measures) -> None:
    """The flags of the comparison's printout (compare and demo)."""
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help=f"a measure in any spelling; repeatable or comma-separated (default: {' '.join(default_measures)})")
    p.add_argument("-f", "--format", choices=FORMATS, default="table")
    p.add_argument("--digits", type=int, default=4, metavar="N", help="decimals shown (default 4)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")


def report_text(args, qrels, runs: dict, measures: list, command: str = COMPARE_CMD) -> str:
    if args.digits < 0 or args.digits > 12:
        raise UsageError(f"--digits {args.digits}: give a number of decimals between 0 and 12.")
    options = option_values(args, command)
    if "run_name" in (options.get("columns") or {}):
        if len(runs) != 1:
            raise UsageError("--column run_name=COLUMN names the runs of one table: give one RUN.")
        runs = list(runs.values())
    elif len(runs) < 2:
        raise UsageError(f"compare needs at least two runs, got {len(runs)}.")
    if qrels is None and not (options.get("label") or options.get("relevance")):
        raise UsageError("QRELS 'none' means the judgments are in the run: say where with --label or --relevance.")
    with Progress(f"comparing {len(runs)} runs"):
        report = compare(qrels, runs, measures, **options)
    if args.format == "json":
        return report.to_json() + "\n"
    if args.format == "latex":
        return report.to_latex(digits=args.digits)
    if args.format == "markdown":
        return report.to_markdown(digits=args.digits)
    return report.to_table(digits=args.digits)


def run(args) -> tuple:
    check_output(args.output)
    measures = measures_from(args, DEFAULT_MEASURES)
    parse_all(measures, args.relevance_level, args.compat)
    runs = command_runs(args)
    qrels = None if args.qrels.lower() == "none" else args.qrels
    return report_text(args, qrels, runs, measures), args.output


