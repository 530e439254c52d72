"""`sqlmetrics agreement A B`: how far two judgment sets agree (sqlmetrics.judgments): Cohen's κ, Krippendorff's α
and the confusion table on the pairs both judged, and with --per-query one row per query. With --runs RUN... and
-m MEASURE... instead: how alike the two sets order those systems (Kendall's τ, τ_AP with A as the truth, Spearman's
ρ, per measure). -o FILE writes the table (per query, the statistics, or the correlations) atomically, in the format
its extension names; standard output then has the text summary."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from ..judgments import agreement, ranking_agreement
from ..local.output import write_table
from ..options import AGREEMENT_CMD, QRELS_ROLES
from ..stats.report import aligned
from .common import STDOUT_NAMES, ArrowOutput, UsageError, add_option_flags, chosen_format, option_values, role_pairs

FORMATS = ("text", "csv", "tsv", "json", "jsonl", "parquet")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("agreement", parents=parents, help="how far two judgment sets agree (kappa, alpha), and how "
                                                          "alike they rank systems (tau, tau_AP, rho)",
                       description="Agreement between two judgment sets (e.g. a human's and an LLM's) over the "
                                   "(query, document) pairs both judged: Cohen's kappa (unweighted, linear, "
                                   "quadratic), Krippendorff's alpha (nominal, ordinal, interval), the confusion "
                                   "table. A negative grade counts as not judged. See docs/rag.md.")
    p.add_argument("a", metavar="A", help="the reference judgments (qrels: TREC, CSV, TSV, Parquet, JSON Lines, "
                                          "file.duckdb:table)")
    p.add_argument("b", metavar="B", help="the judgments compared with A, read as A is")
    p.add_argument("--per-query", action="store_true", dest="per_query",
                   help="one row per query (a note where a statistic is undefined); -o then writes these rows")
    p.add_argument("--runs", nargs="+", metavar="RUN",
                   help="rank these systems under A and under B and correlate the orders per measure (-m): run "
                        "files named by their stem, or one table with --column run_name=COLUMN")
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help="with --runs: a measure to order the systems by (repeatable)")
    p.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help=f"a column playing a role in both inputs ({', '.join(QRELS_ROLES)}; with --runs also "
                        "run_name, score)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the table to FILE (atomically), in the format its extension names: .parquet, .csv, "
                        ".tsv, .json, .jsonl, or FILE.duckdb:TABLE; the text summary goes to standard output")
    p.add_argument("-f", "--format", choices=FORMATS,
                   help="text (default), or the table alone as csv, tsv, json, jsonl (parquet only with -o)")
    add_option_flags(p, AGREEMENT_CMD)
    p.set_defaults(func=run, into_mode="replace")


def run(args) -> tuple:
    fmt = chosen_format(SimpleNamespace(output=args.output, format=args.format, into_mode="create"),
                        (*FORMATS, "duckdb"), "text")
    resources = option_values(args, AGREEMENT_CMD)
    if args.runs:
        if not args.measures:
            raise UsageError("--runs orders systems by measures: give at least one, -m nDCG@10.")
        if args.per_query:
            raise UsageError("--per-query is for the label agreement; with --runs each row is a measure: leave it out.")
        columns = role_pairs(args.column, "--column")
        runs = args.runs[0] if len(args.runs) == 1 else _named(args.runs)
        result = ranking_agreement(args.a, args.b, runs, args.measures, columns=columns, **resources)
        table, key, text = result.correlations, ("measure",), result.text()
    else:
        if args.measures:
            raise UsageError("-m orders systems: give --runs RUN... too, or leave it out.")
        result = agreement(args.a, args.b, per_query=args.per_query,
                           columns=role_pairs(args.column, "--column", QRELS_ROLES), **resources)
        table = result.per_query if args.per_query else result.overall
        key = ("query_id",) if args.per_query else ()
        text = result.text() + (f"\n\nper query:\n{_rows_text(table)}" if args.per_query else "")
    if args.output and args.output not in STDOUT_NAMES:
        write_table(table, args.output, fmt, f"--output {args.output!r}", "replace", key)
        return text + "\n", None
    if fmt != "text":
        return ArrowOutput(table, key, fmt), None
    return text + "\n", None


def _named(paths: list) -> dict:
    """{file stem: path}, refusing two files of one stem (their results would share a name)."""
    named: dict = {}
    for path in paths:
        stem = Path(path).name.split(".")[0]
        if stem in named:
            raise UsageError(f"--runs: {named[stem]!r} and {path!r} are both named {stem!r}: rename one.")
        named[stem] = path
    return named


def _rows_text(table) -> str:
    """The per-query rows as aligned text: the query and the note left, the numbers right."""
    rows = [table.column_names, *([_cell(v) for v in r.values()] for r in table.to_pylist())]
    return aligned(rows, ["l", *["r"] * (len(rows[0]) - 2), "l"])


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
