"""`sqlmetrics report`: one self-contained HTML page (results with significance marks, per-query differences
against a baseline, precision–recall curves, per-segment intervals and tests for logs, the SQL), and --plot one chart."""
from __future__ import annotations

from ..options import REPORT
from ..stats import charts
from ..stats.html import build_report
from .common import Progress, UsageError, add_option_flags, command_runs, measures_from, option_values

DEFAULT_MEASURES = ["nDCG@10", "AP", "RR", "P@10"]


def add_parser(sub, parents) -> None:
    p = sub.add_parser("report", parents=parents, help="write an HTML report with charts",
                       description="Write one self-contained HTML file (inline SVG charts, no script, nothing "
                                   "fetched when viewed): the results with significance marks, per-query "
                                   "differences against the baseline, precision-recall curves, per-segment means "
                                   "with 95% t intervals and tests against the baseline (with --group-by; one RUN "
                                   "with --column run_name=COLUMN holds the arms), and the SQL. QRELS may be 'none' when "
                                   "the judgments are in the run (--label, --relevance). Needs matplotlib: "
                                   "pip install \".[report]\" in a clone of sqlmetrics.")
    p.add_argument("qrels", metavar="QRELS", help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON Lines, x.duckdb:table")
    p.add_argument("runs", metavar="RUN", nargs="+", help="the runs (a log, with --group-by), named by file stem")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="name the runs in order (default: file stems); repeat once per run")
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help=f"a measure in any spelling; repeatable or comma-separated (default: {' '.join(DEFAULT_MEASURES)})")
    p.add_argument("--baseline", metavar="RUN", help="the run the others are compared with per query (default: the first)")
    p.add_argument("-o", "--output", metavar="FILE.html", required=True, help="the HTML file to write (atomically)")
    p.add_argument("--plot", metavar="FILE.png|FILE.svg",
                   help="also write one chart: the per-query differences on the first measure (with --group-by: "
                        "the first measure per segment)")
    add_option_flags(p, REPORT)
    p.set_defaults(func=run)


def run(args) -> tuple:
    if args.plot:
        charts.chart_path(args.plot, f"--plot {args.plot!r}")
    charts.figure_class()  # matplotlib missing: say so before any work
    measures = measures_from(args, DEFAULT_MEASURES)
    qrels = None if args.qrels.lower() == "none" else args.qrels
    if qrels is None and not (args.label or args.relevance):
        raise UsageError("QRELS 'none' means the judgments are in the run: say where with --label or --relevance.")
    runs = command_runs(args)
    with Progress(f"reporting on {len(runs)} run{'s' if len(runs) > 1 else ''}", quiet=args.quiet) as progress:
        report = build_report(qrels, runs, measures, baseline=args.baseline, **option_values(args, REPORT),
                              _progress=progress.listener)
        page = report.to_html()
        if args.plot:
            charts.save(report.chart(*report.chart_names()[0]), args.plot, f"--plot {args.plot!r}")
    return page, args.output
