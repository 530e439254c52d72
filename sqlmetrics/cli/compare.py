"""`sqlmetrics compare`: per-run means and a significance test for every pair of runs and measure."""
from __future__ import annotations

from ..catalogue import parse_all
from ..options import COMPARE_CMD
from ..stats.compare import compare
from .common import (Progress, TableOutput, UsageError, add_option_flags, check_output, chosen_format, command_runs,
                     measures_from, option_values)

DEFAULT_MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@1000"]
TABLES = ("csv", "tsv", "jsonl", "parquet")  # one row per pair of runs and measure, typed
FORMATS = ("table", "markdown", "latex", "html", "json", *TABLES)
# The columns of those rows, with the type of each (the others' values say it: counts, flags).
PAIR_TYPES = {"measure": "string", "run": "string", "baseline": "string", "run_mean": "float64",
              "baseline_mean": "float64", "difference": "float64", "statistic": "float64", "p_value": "float64",
              "p_adjusted": "float64", "significant": "bool_", "winner": "string", "n": "int64", "wins": "int64",
              "ties": "int64", "losses": "int64", "exact": "bool_", "ci_low": "float64", "ci_high": "float64"}
DELTA_TYPES = {"measure": "string", "run": "string", "baseline": "string", "query_id": "string",
               "run_value": "float64", "baseline_value": "float64", "difference": "float64"}


def add_parser(sub, parents) -> None:
    p = sub.add_parser("compare", parents=parents, help="compare runs with significance tests",
                       description="Per-run means and a significance test for every pair of runs (or every run "
                                   "against --baseline), segment and measure; superscript letters mark the runs "
                                   "each run beats significantly, ▲/▼ a significant gain/loss against the baseline. "
                                   "QRELS may be 'none' when the judgments are in the run (--label, --relevance); "
                                   "one RUN with --column run_name=COLUMN compares the runs of that column (A/B arms). "
                                   "With --nuggets and --assignments alone (no QRELS, no RUN), the runs the "
                                   "assignments name, on the nugget measures.")
    # Both required, unless --nuggets and --assignments come alone (run() says so).
    p.add_argument("qrels", metavar="QRELS", nargs="?", help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON "
                                                             "Lines, x.duckdb:table, or 'none'")
    p.add_argument("runs", metavar="RUN", nargs="*", help="one or more runs, named by file stem; '-' reads stdin")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="name the runs in order (default: file stems); repeat once per run")
    add_report_flags(p, DEFAULT_MEASURES)
    add_option_flags(p, COMPARE_CMD)
    p.set_defaults(func=run, parser_error=p.error)


def add_report_flags(p, default_measures) -> None:
    """The flags of the comparison's printout (compare and demo)."""
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help=f"a measure in any spelling; repeatable or comma-separated (default: {' '.join(default_measures)})")
    p.add_argument("-f", "--format", choices=FORMATS,
                   help="table (default), markdown, latex, html, json (the whole report), or one row per pair of runs and "
                        "measure: csv, tsv, jsonl, parquet; default: -o's extension")
    p.add_argument("--digits", type=int, default=4, metavar="N", help="decimals shown (default 4)")
    p.add_argument("-q", "--per-query", action="store_true",
                   help="with csv, tsv, jsonl, parquet or a DuckDB table: one row per pair, measure and query (both "
                        "values and the difference) instead of one per pair and measure")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically) instead of stdout, in the format its extension names: .txt "
                        "(table), .md, .tex, .html, .json, .csv, .tsv, .jsonl, .parquet; or FILE.duckdb:TABLE")


def report_text(args, qrels, runs: dict, measures: list, command: str = COMPARE_CMD):
    """The report in the format -o and -f say: text, or a TableOutput of its pairs."""
    fmt = chosen_format(args, (*FORMATS, "duckdb"), "table", extensions={".txt": "table"})
    if args.per_query and fmt not in (*TABLES, "duckdb"):
        raise UsageError(f"-q/--per-query writes rows, one per query: use -f csv, tsv, jsonl or parquet, or "
                         f"-o file.duckdb:table (not {fmt}).")
    if args.digits < 0 or args.digits > 12:
        raise UsageError(f"--digits {args.digits}: give a number of decimals between 0 and 12.")
    options = option_values(args, command)
    if runs is None:  # no qrels and runs: the nugget measures of the runs the assignments name
        pass
    elif "run_name" in (options.get("columns") or {}):
        if len(runs) != 1:
            raise UsageError("--column run_name=COLUMN names the runs of one table: give one RUN.")
        runs = list(runs.values())
    elif len(runs) < 2:
        raise UsageError(f"compare needs at least two runs, got {len(runs)}.")
    if qrels is None and runs is not None and not (options.get("label") or options.get("relevance")):
        raise UsageError("QRELS 'none' means the judgments are in the run: say where with --label or --relevance.")
    with Progress("comparing the runs assigned" if runs is None else f"comparing {len(runs)} runs",
                  quiet=args.quiet) as progress:
        report = compare(qrels, runs, measures, **options, _progress=progress.listener)
    return formatted(report, args, fmt)


def formatted(report, args, fmt: str):
    """The report in format `fmt`: text, or a TableOutput of its pairs (-q: of its per-query differences)."""
    if fmt in (*TABLES, "duckdb"):
        return deltas_table(report, fmt) if args.per_query else pairs_table(report, fmt)
    if fmt == "json":
        return report.to_json() + "\n"
    if fmt == "latex":
        return report.to_latex(digits=args.digits)
    if fmt == "html":
        return report.to_html(digits=args.digits)
    if fmt == "markdown":
        return report.to_markdown(digits=args.digits)
    return report.to_table(digits=args.digits)


def pairs_table(report, fmt: str) -> TableOutput:
    """Every comparison with both runs' means, one row each, keyed by its segment, measure, run and baseline."""
    segments = list(report.segment_names)
    rows = [{**c, **c.pop("segment"), "run_mean": report.segment_means[seg][c["run"]][c["measure"]],
             "baseline_mean": report.segment_means[seg][c["baseline"]][c["measure"]]}
            for c, seg in zip(report.to_dict()["comparisons"], (c.segment for c in report.comparisons))]
    return _rows(rows, segments, PAIR_TYPES, ("measure", "run", "baseline"), fmt)


def deltas_table(report, fmt: str) -> TableOutput:
    """Every pair, measure and query: both values and the difference, keyed by segment, measure, run, baseline
    and query."""
    rows = report.deltas()
    if not rows and report.comparisons:  # an empty table would say nothing of why
        raise UsageError("-q/--per-query writes each query's difference between two runs, but no query is in both "
                         "runs of any pair: the arms' lists are different sessions" +
                         (f" (and the tests are over units, {report.unit})" if report.unit else "") +
                         ". Leave -q out for one row per pair and measure.")
    return _rows(rows, list(report.segment_names), DELTA_TYPES, ("measure", "run", "baseline", "query_id"), fmt)


def _rows(rows: list, segments: list, types: dict, key: tuple, fmt: str) -> TableOutput:
    """Rows as a typed table, the segment columns (their values as the log has them) first."""
    names = [*segments, *types]
    return TableOutput(names, [[r[n] for n in names] for r in rows], types,
                       (*segments, *key), fmt)


def run(args) -> tuple:
    check_output(args.output)
    measures = measures_from(args, DEFAULT_MEASURES)
    parse_all(measures, args.relevance_level, args.compat)
    if args.qrels is None and args.nuggets and args.assignments:  # the runs the assignments name
        return report_text(args, None, None, measures), args.output
    if args.qrels is None or not args.runs:
        # argparse's own error (usage, exit 2), as when the positional arguments were required
        args.parser_error("the following arguments are required: QRELS, RUN (or, for the nugget measures alone, "
                          "--nuggets and --assignments without them)")
    runs = command_runs(args)
    qrels = None if args.qrels.lower() == "none" else args.qrels
    return report_text(args, qrels, runs, measures), args.output


