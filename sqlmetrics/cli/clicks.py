"""`sqlmetrics clicks LOG --model pbm -o params.parquet`: a click model fitted to a click log (sqlmetrics.clicks). The
parameters go to -o's file (one long table, in the format its extension names, atomically); the fit's summary (per
segment: sessions, iterations, last change, log-likelihood) to standard output. Without -o the parameters follow the
summary as text, or go alone to standard output with -f csv, tsv, json or jsonl. With --held-out FILE each model
(--model cascade,sdbn,pbm) is fitted to LOG and judged on FILE: its held-out log-likelihood, perplexity and CTR error
per segment, the table -o then writes. With --render DIALECT the fit is printed as a SQL script for that engine, LOG
naming the log's table there (sqlmetrics.render_clicks())."""
from __future__ import annotations

from types import SimpleNamespace

from ..clicks import MODELS, fit_clicks, propensities, render_clicks
from ..clicks.fit import model_named
from ..clicks.log import ROLES
from ..clicks.propensity import METHODS
from ..clicks.render import DEFAULT_ITERATIONS
from ..dialects.info import DIALECTS, dialect_info
from ..errors import SqlmetricsError
from ..local.output import write_table
from ..options import CLICKS_CMD
from ..stats.report import aligned
from .common import (STDOUT_NAMES, ArrowOutput, UsageError, add_option_flags, chosen_format, option_values,
                     role_pairs)

FORMATS = ("text", "csv", "tsv", "json", "jsonl", "parquet")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("clicks", parents=parents, help="fit a click model (cascade, sdbn, pbm, ubm, dcm, dbn) to a "
                                                       "click log",
                       description="Fit a click model to a click log by maximum likelihood, in SQL on DuckDB: one row "
                                   "per shown (session, position) with session, query, doc, position (1..n within "
                                   "the session) and clicked (0/1) (map other names with --column). Cascade and SDBN "
                                   "have closed forms; PBM, UBM, DCM and DBN are fitted by EM from every parameter at "
                                   "0.5. See "
                                   "docs/clicks.md.")
    p.add_argument("log", metavar="LOG", help="the click log: a CSV, TSV, Parquet or JSON Lines file, or "
                                              "file.duckdb:table; with --render, the log's table on the engine "
                                              "(schema.table)")
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
    p.add_argument("--propensities", choices=METHODS, metavar="METHOD",
                   help="write position-bias propensities (normalised to position 1) instead of the parameters: "
                        "pivot or adjacent (intervention harvesting), or pbm (a PBM's examination)")
    p.add_argument("--pivot", type=int, metavar="K", help="the pivot position of --propensities pivot "
                                                                     "(default 1)")
    p.add_argument("--qrels", action="store_true",
                   help="write the fitted model's judgments (query, doc, relevance) instead of the parameters, "
                        "for sqlmetrics eval QRELS")
    p.add_argument("--parameter", metavar="NAME",
                   help="with --qrels: the parameter keyed by (query, doc) taken as relevance (default "
                        "attractiveness; sdbn: satisfaction too)")
    p.add_argument("--min-impressions", type=int, metavar="N",
                   help="with --qrels: leave unjudged a (query, doc) with fewer impressions (default 1)")
    p.add_argument("--levels", metavar="T1,T2,...",
                   help="with --qrels: integer grades, the count of these increasing thresholds at or below the "
                        "probability (default: the probability itself)")
    p.add_argument("--held-out", metavar="FILE", dest="held_out",
                   help="judge each fitted model on this click log (same columns): held-out log-likelihood, "
                        "perplexity and CTR prediction error per segment, to pick the model that fits; --model may "
                        "then name several, repeated or comma-separated (cascade,sdbn,pbm); -o writes the scores")
    p.add_argument("--runs", nargs="+", metavar="RUN",
                   help="rankings to compare under the fitted model (run files, as evaluate reads them): expected "
                        "clicks and, for sdbn, satisfaction per query, with a paired t-test (compare()'s report); -o "
                        "writes the per-query values")
    p.add_argument("--depth", type=int, default=10, metavar="N",
                   help="with --runs: the positions a user is shown of each list (default 10)")
    p.add_argument("--baseline", metavar="RUN", help="with --runs: compare each run with this one (its file stem)")
    p.add_argument("--render", metavar="DIALECT",
                   help=f"print the fit as a SQL script for this engine ({', '.join(DIALECTS)}) instead of fitting: "
                        "run there over the table LOG, it creates the parameter tables (EM runs --iterations, default "
                        "20, with no stopping rule); -o writes it to a file")
    p.add_argument("--prefix", metavar="PREFIX",
                   help="with --render: the beginning of the created tables' names (default clicks_; may be "
                        "qualified: analytics.clicks_)")
    add_option_flags(p, CLICKS_CMD)
    p.set_defaults(func=run, into_mode="replace")


def run(args) -> tuple:
    if args.render is not None:
        return _rendered(args), args.output
    if args.prefix is not None:
        raise UsageError("--prefix names the tables --render's script creates; give --render DIALECT too, or leave "
                         "--prefix out.")
    fmt = chosen_format(_creating(args), (*FORMATS, "duckdb"), "text")
    _refuse_stray_flags(args)
    jobs = [flag for flag, given in (("--held-out", args.held_out), ("--runs", args.runs),
                                     ("--propensities", args.propensities), ("--qrels", args.qrels)) if given]
    if len(jobs) > 1:
        raise UsageError(f"{' and '.join(jobs)} each write a table of their own: give one of them.")
    if args.held_out:
        return _held_out(args, fmt), None
    models = _models(args.model)
    if len(models) > 1:
        raise UsageError(f"--model {','.join(models)}: fitting takes one model; several are compared on a held-out "
                         "log (--held-out FILE).")
    args.model = models[0]
    if args.propensities or args.qrels:
        return _derived(args, fmt)
    if args.runs:
        return _rankings(args, fmt), None
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


def _rendered(args) -> str:
    """--render DIALECT: the fit as a SQL script (render_clicks()), its statements ended by ';', after a comment
    saying what it does. Nothing is fitted here: a flag that asks for a fit's table, its stopping rule or DuckDB's
    resources is refused."""
    given = {k: v for k, v in option_values(args, CLICKS_CMD).items() if k not in ("model", "iterations")}
    others = [flag for flag, value in (("--held-out", args.held_out), ("--runs", args.runs),
                                       ("--propensities", args.propensities), ("--qrels", args.qrels),
                                       ("--format", args.format)) if value] + \
        [f"--{k.replace('_', '-')}" for k in given]
    if others:
        raise UsageError(f"--render prints the fit's SQL script; {others[0]} asks for work it does not do: leave it "
                         "out (the script runs every --iterations: it has no stopping rule).")
    models = _models(args.model)
    if len(models) > 1:
        raise UsageError(f"--model {','.join(models)}: --render prints one model's script.")
    try:
        dialect_info(args.render)
    except SqlmetricsError:
        raise UsageError(f"--render {args.render}: no such dialect; one of {', '.join(DIALECTS)}.") from None
    kwargs = {"iterations": args.iterations} if args.iterations is not None else {}
    script = render_clicks(models[0], args.render, args.log, role_pairs(args.column, "--column", ROLES),
                           args.group_by, prefix="clicks_" if args.prefix is None else args.prefix, **kwargs)
    n = args.iterations or DEFAULT_ITERATIONS
    what = (f"EM from every parameter at 0.5, {n} iteration{'s' if n > 1 else ''}, no stopping rule"
            if MODELS[models[0]].iterates else "closed form")
    header = (f"-- sqlmetrics: the click model {models[0]} fitted to a click log ({what}), rendered for "
              f"{args.render}\n-- the log is not checked here: one row per (session, position), positions 1..n, "
              "clicks 0 or 1 (sqlmetrics clicks LOG checks a file)\n")
    # A statement of several lines stands apart from the next; the DROPs of a line each do not.
    return header + "".join(f"{s};\n" + ("\n" if "\n" in s else "") for s in script).rstrip("\n") + "\n"


def _derived(args, fmt: str) -> tuple:
    """--propensities or --qrels: one table (propensities by position, or judgments) to -o's file or standard
    output."""
    columns, options = role_pairs(args.column, "--column", ROLES), option_values(args, CLICKS_CMD)
    if args.propensities:
        model = options.pop("model", "pbm")  # the default, which says nothing here
        if model.lower() != "pbm":
            raise UsageError(f"--model {model} with --propensities {args.propensities}: the propensities come from "
                             "intervention harvesting (pivot, adjacent) or from a PBM (pbm); leave --model out.")
        table = propensities(args.log, args.propensities, columns, args.group_by,
                             1 if args.pivot is None else args.pivot, **options)
        key = ("position",)
    else:
        fit = fit_clicks(args.log, columns=columns, group_by=args.group_by, **options)
        table = fit.qrels(1 if args.min_impressions is None else args.min_impressions,
                          args.parameter or "attractiveness", _levels(args.levels))
        key = ("query", "doc")
    segments = tuple(table.column_names[:table.column_names.index(key[0])])
    text = f"{table.num_rows} rows written to {args.output}\n" if _to_file(args) else \
        text_table(table, "propensities:" if args.propensities else "qrels:")
    return _table_or_text(args, fmt, table, (*segments, *key), text), None


def _refuse_stray_flags(args) -> None:
    """A flag of --propensities pivot or of --qrels given without it would be ignored: say so instead."""
    if args.pivot is not None and args.propensities != "pivot":
        raise UsageError("--pivot K is the pivot position of --propensities pivot; give both, or leave --pivot out.")
    stray = [flag for flag, value in (("--parameter", args.parameter), ("--min-impressions", args.min_impressions),
                                      ("--levels", args.levels)) if value is not None]
    if stray and not args.qrels:
        raise UsageError(f"{stray[0]} says how --qrels judges; give --qrels too, or leave {stray[0]} out.")


def _levels(text):
    """--levels 0.1,0.3,0.6 as numbers."""
    if text is None:
        return None
    try:
        return [float(t) for t in text.split(",")]
    except ValueError:
        raise UsageError(f"--levels takes increasing thresholds separated by commas, such as 0.1,0.3,0.6; got "
                         f"{text!r}.") from None


def _held_out(args, fmt: str):
    """Each model fitted to the log and judged on the held-out log: the fits' summaries and the scores per model
    and segment as text, or the scores' long table (ClickScore.table()) to -o or in -f's format. --iterations and
    --tolerance go to the EM models among them (to all when none is one: a closed form refuses them, as alone)."""
    import pyarrow as pa

    options, columns, models = option_values(args, CLICKS_CMD), role_pairs(args.column, "--column", ROLES), \
        _models(args.model)
    em = {k: options.pop(k) for k in ("iterations", "tolerance") if k in options}
    options.pop("model", None)
    some_iterate = any(MODELS[m].iterates for m in models)
    summaries, scores = [], []
    for model in models:
        fit = fit_clicks(args.log, columns=columns, group_by=args.group_by, model=model, **options,
                         **(em if MODELS[model].iterates or not some_iterate else {}))
        summaries.append(summary_text(fit))
        scores.append(fit.score(args.held_out, columns=columns, **_resources(options)))
    text = "".join(summaries) + "\n" + held_out_text(scores)
    return _table_or_text(args, fmt, pa.concat_tables([s.table() for s in scores]),
                          ("model", *scores[0].group_by, "position"), text)


def _rankings(args, fmt: str):
    """The model fitted, then the runs compared on its per-query expected clicks (and satisfaction): the fit's
    summary and compare()'s report as text; -o (or -f) the per-query values (ClickFit.expected())."""
    options = option_values(args, CLICKS_CMD)
    fit = fit_clicks(args.log, columns=role_pairs(args.column, "--column", ROLES), group_by=args.group_by,
                     **options)
    report = fit.compare(args.runs, depth=args.depth, baseline=args.baseline, **_resources(options))
    text = summary_text(fit) + "\n" + report.to_table()
    if fmt == "text" and not _to_file(args):
        return text
    return _table_or_text(args, fmt, fit.expected(args.runs, depth=args.depth, **_resources(options)),
                          ("run", *fit.group_by, "query_id"), text)


def _table_or_text(args, fmt: str, table, key: tuple, text: str):
    """The table to -o's file (and the text to standard output), or in -f's format to standard output; else the
    text."""
    if _to_file(args):
        write_table(table, args.output, fmt, f"--output {args.output!r}", "replace", key)
        return text
    return ArrowOutput(table, (), fmt) if fmt != "text" else text


def _to_file(args) -> bool:
    return bool(args.output) and args.output not in STDOUT_NAMES


def _resources(options: dict) -> dict:
    """DuckDB's memory_limit, threads and temp_directory among the options, for score() and expected()."""
    return {k: options[k] for k in ("memory_limit", "threads", "temp_directory") if k in options}


def _models(given) -> list:
    """--model's names (repeated, or comma-separated: cascade,sdbn,pbm; pbm when none), each once, all checked before
    any is fitted."""
    spelled = given or ["pbm"]
    names = [m.strip() for value in spelled for m in value.split(",")]
    if not all(names):
        raise UsageError(f"--model {','.join(spelled)!r}: give model names separated by commas, such as "
                         "cascade,sdbn,pbm.")
    return list(dict.fromkeys(model_named(m)[0] for m in names))


def held_out_text(scores: list) -> str:
    """One line per model and segment of the held-out scores, and what each column is."""
    group_by = scores[0].group_by
    header = ["model", *group_by, "sessions", "rows", "unseen", "log_likelihood", "per_session", "perplexity",
              "ctr_rmse"]
    rows = [header]
    for s in scores:
        for r in s.segments.to_pylist():
            rows.append([s.model, *(_cell(r[g]) for g in group_by), r["sessions"], r["rows"], r["unseen_rows"],
                         *(_cell(r[c]) for c in ("log_likelihood", "log_likelihood_per_session", "perplexity",
                                                 "ctr_rmse"))])
    align = ["l"] * (1 + len(group_by)) + ["r"] * 7
    return (f"held-out log, per model and segment:\n{aligned(rows, align)}\n"
            "log_likelihood: the sum over rows of ln P(click as observed | the clicks above); per_session: its mean "
            "per session (higher is better)\n"
            "perplexity: per rank 2^-(mean log2 P(click as observed), not conditioned on clicks), averaged over ranks "
            "(1 is perfect, lower is better)\n"
            "ctr_rmse: the root mean square of observed minus predicted click-through rate per (query, doc, position), "
            "weighted by impressions\n"
            "unseen: rows whose (query, doc) or position the fit has no parameter for, scored with 0.5\n")


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
