"""`sqlmetrics clicks LOG --model pbm -o params.parquet`: a click model fitted to a click log (sqlmetrics.clicks). The
parameters go to -o's file (one long table, in the format its extension names, atomically); the fit's summary (per
segment: sessions, iterations, last change, log-likelihood) to standard output. Without -o the parameters follow the
summary as text, or go alone to standard output with -f csv, tsv, json or jsonl."""
from __future__ import annotations

from types import SimpleNamespace

from ..clicks import fit_clicks
from ..clicks.log import ROLES
from ..local.output import write_table
from ..options import CLICKS_CMD
from ..stats.report import aligned
from .common import STDOUT_NAMES, ArrowOutput, add_option_flags, chosen_format, option_values, role_pairs

FORMATS = ("text", "csv", "tsv", "json", "jsonl", "parquet")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("clicks", parents=parents, help="fit a click model (cascade, sdbn, pbm, dbn) to a click log",
                       description="Fit a click model to a click log by maximum likelihood, in SQL on DuckDB: one row "
                                   "per shown (session, position) with session, query, doc, position (1..n within "
                                   "the session) and clicked (0/1) (map other names with --column). Cascade and SDBN "
                                   "have closed forms; PBM and DBN are fitted by EM from every parameter at 0.5. See "
                                   "docs/clicks.md.")
    p.add_argument("log", metavar="LOG", help="the click log: a CSV, TSV, Parquet or JSON Lines file, or "
                                              "file.duckdb:table")
    p.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help=f"the log's column playing a role ({', '.join(ROLES)}); by default found by its name")
    p.add_argument("--group-by", action="append", metavar="COLUMN", dest="group_by",
                   help="fit one model per segment of this column (repeatable: per market and device)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the parameters to FILE (atomically), in the format its extension names: .parquet, "
                        ".csv, .tsv, .json, .jsonl, or FILE.duckdb:TABLE; the summary goes to standard output")
    p.add_argument("-f", "--format", choices=FORMATS,
                   help="text (default without -o: the summary, then the parameters), or the parameters alone as "
                        "csv, tsv, json, jsonl (parquet only with -o)")
    add_option_flags(p, CLICKS_CMD)
    p.set_defaults(func=run, into_mode="replace")


def run(args) -> tuple:
    fmt = chosen_format(_creating(args), (*FORMATS, "duckdb"), "text")
    fit = fit_clicks(args.log, columns=role_pairs(args.column, "--column", ROLES), group_by=args.group_by,
                     **option_values(args, CLICKS_CMD))
    to_file = args.output and args.output not in STDOUT_NAMES
    if to_file:
        write_table(fit.table(), args.output, fmt, f"--output {args.output!r}", "replace",
                    ("model", *fit.group_by, "parameter", "query", "doc", "position"))
        return summary_text(fit), None
    if fmt != "text":
        return ArrowOutput(fit.table(), (), fmt), None
    return summary_text(fit) + "\n" + "\n".join(text_table(t, f"{name}:") for name, t in fit.parameters.items()), None


def _creating(args) -> SimpleNamespace:
    """chosen_format's view of the arguments: a DuckDB table is replaced (the fit is written whole), which it checks
    only against --into-mode, a flag this command does not have."""
    return SimpleNamespace(output=args.output, format=args.format, into_mode="create")


def summary_text(fit) -> str:
    """One line per segment: what was fitted, and how well."""
    lines = []
    for row in fit.summary.to_pylist():
        where = ", ".join(f"{g}={row[g]}" for g in fit.group_by)
        fitted = (f"{row['iterations']} iterations, last change {row['last_change']:.3g}"
                  f"{'' if row['converged'] else ' (not converged)'}" if row["iterations"] else "closed form")
        lines.append(f"{fit.model}{' ' + where if where else ''}: {row['sessions']} sessions, {row['rows']} rows; "
                     f"{fitted}; log-likelihood {row['log_likelihood']:.6g}")
    return "\n".join(lines) + "\n"


def text_table(table, title: str) -> str:
    """An Arrow table as aligned text: numbers to 6 significant digits, right-aligned; a null as '-'."""
    columns = [table[n].to_pylist() for n in table.column_names]
    align = ["r" if all(isinstance(v, (int, float)) or v is None for v in c) else "l" for c in columns]
    rows = [table.column_names, *zip(*([_cell(v) for v in c] for c in columns))]
    return f"{title}\n{aligned(rows, align)}\n"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
