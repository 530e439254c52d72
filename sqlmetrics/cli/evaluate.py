"""`sqlmetrics eval`: evaluate runs against qrels, printed as a table, trec_eval's lines, CSV, TSV, JSON,
JSON Lines or Markdown, or written typed to Parquet or a DuckDB table."""
from __future__ import annotations

import csv
import decimal
import html as _html
import io
import math

from ..catalogue import parse_all, trec_name
from ..evaluation import evaluate
from ..local.collect import python_rows
from ..local.output import TABLE_FORMATS
from ..options import EVAL_CMD
from ..results import AVERAGED, fixed, json_text
from ..stats.report import _cell, _md_escape, aligned, html, markdown
from .common import (ArrowOutput, Progress, TableOutput, UsageError, add_option_flags, check_output, chosen_format,
                     command_runs, measures_from, option_values, trec_line, trec_tag)

# trec_eval's default ("official") measures, in its order, plus nDCG@10.
DEFAULT_MEASURES = (
    ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"]
    + [f"iprec_at_recall_{r / 10:.2f}" for r in range(11)]
    + [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    + ["nDCG@10"]
)
FORMATS = ("table", "trec", "csv", "tsv", "json", "jsonl", "markdown", "html", "parquet")
_HIDDEN_NUM_RET = "NumRet()"  # asked for in `--format trec -q` to know which queries a run ranks


def add_parser(sub, parents) -> None:
    p = sub.add_parser("eval", parents=parents, help="evaluate runs against qrels",
                       description="Evaluate one or more runs against qrels. Inputs: TREC text (.gz too), CSV, "
                                   "TSV, Parquet, JSON Lines, or file.duckdb:table; '-' reads a run from stdin. "
                                   "QRELS may be 'none' when the judgments are in the run (--label, --relevance). "
                                   "With --nuggets and --assignments alone (no QRELS, no RUN), the nugget measures "
                                   "of every run the assignments name.")
    # Both required, unless --nuggets and --assignments come alone (run() says so).
    p.add_argument("qrels", metavar="QRELS", nargs="?",
                   help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON Lines, x.duckdb:table")
    p.add_argument("runs", metavar="RUN", nargs="*", help="one or more runs, named by file stem; '-' reads stdin")
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help="a measure in any spelling (nDCG@10, P_10, map, ndcg_cut.10, mrr@10, ...); repeatable "
                        "or comma-separated; trec_eval's nicknames and lists too (official, all_trec, P.5,10). "
                        "Default: trec_eval's official set plus nDCG@10")
    p.add_argument("-q", "--per-query", action="store_true", help="also print every query's values")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="name the runs in order (default: file stems); repeat once per run")
    p.add_argument("-f", "--format", choices=FORMATS,
                   help="table (default), trec (trec_eval's own lines), csv, tsv, json, jsonl, markdown, html or parquet; "
                        "default: -o's extension")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically) instead of stdout, in the format its extension names: .txt (trec), "
                        ".csv, .tsv, .json, .jsonl, .md, .html, .parquet; or FILE.duckdb:TABLE, a typed table "
                        "(--into-mode)")
    add_option_flags(p, EVAL_CMD)
    # trec_eval's -c, for scripts moving over: every judged query is averaged (already this command's default).
    p.add_argument("-c", dest="queries", action="store_const", const="qrels",
                   help="as --queries qrels (trec_eval -c); see also `sqlmetrics trec_eval`")
    p.set_defaults(func=run, parser_error=p.error)


def run(args) -> tuple:
    check_output(args.output)
    fmt = chosen_format(args, (*FORMATS, "duckdb"), "table")
    measures = measures_from(args, DEFAULT_MEASURES)
    calls = parse_all(measures, args.relevance_level, args.compat)  # a bad name fails before any data is read
    options = option_values(args, EVAL_CMD)
    options.pop("into_mode", None)  # how -o writes a DuckDB table: this command writes it (TableOutput)
    if args.qrels is None and options.get("nuggets") and options.get("assignments"):
        return _nuggets_alone(args, fmt, measures, calls, options)
    if args.qrels is None or not args.runs:
        # argparse's own error (usage, exit 2), as when the positional arguments were required
        args.parser_error("the following arguments are required: QRELS, RUN (or, for the nugget measures alone, "
                          "--nuggets and --assignments without them)")
    runs = command_runs(args)
    # trec_eval 9.0.8 -c -q prints no line for a judged query the run does not rank (10.0 prints its zeros)
    hidden = fmt == "trec" and args.per_query and args.compat == "trec_eval-9.0.8" and _HIDDEN_NUM_RET not in measures
    wanted = measures + ([_HIDDEN_NUM_RET] if hidden else [])

    qrels = None if args.qrels.lower() == "none" else args.qrels
    if qrels is None and not (args.label or args.relevance):
        raise UsageError("QRELS 'none' means the judgments are in the run: say where with --label or --relevance.")
    if args.group_by and fmt == "trec":
        raise UsageError("--format trec has no place for segments; use table, csv, tsv, json, jsonl, markdown or "
                         "parquet.")
    by_column = "run_name" in (options.get("columns") or {})  # the runs of one table, named by its column
    if by_column and len(runs) != 1:
        raise UsageError("--column run_name=COLUMN names the runs of one table: give one RUN.")
    label = "evaluating the runs of one table" if by_column else f"evaluating {len(runs)} run{'s' if len(runs) > 1 else ''}"
    typed = fmt in ("parquet", "duckdb")
    # Segments as a table (CSV, TSV, JSON, JSON Lines, Parquet, a DuckDB table): the evaluation's own Arrow tables,
    # each column typed as DuckDB has it (a DECIMAL keeps its precision, a column of NULLs its type), written as
    # evaluate(output=...) writes them. Else Python rows: the other formats never import pyarrow.
    arrow = bool(args.group_by) and fmt in (*TABLE_FORMATS, "duckdb")
    with Progress(label, quiet=args.quiet) as progress:
        res = evaluate(qrels, next(iter(runs.values())) if by_column else runs, wanted, **options,
                       **({} if arrow else {"_fetch": python_rows}), _progress=progress.listener)
    if by_column:  # the table's run names, as the results have them
        runs = {name: name for name in res.aggregate}
    if args.group_by:
        rows = res.per_query if args.per_query else res.per_group
        if arrow:
            key = tuple(n for n in rows.column_names if n not in measures and n != "num_lists")
            return ArrowOutput(rows, key, fmt, args.into_mode), args.output
        return _rows(rows, fmt, measures), args.output
    # A log's lists are whatever it holds (no qrels to miss): the footer is about runs judged by qrels.
    footer = AVERAGED[options.get("queries") or "qrels"] if qrels is not None else ""
    table = EvalTable(res, list(runs), calls, judgment_groups=options.get("qrels_format") == "qrels_jg", footer=footer)
    if typed:
        records = table.records(args.per_query)
        types = {"run": "string", "query_id": "string", **{m: "float64" for m in measures}}
        return TableOutput(["run", "query_id", *measures], [list(r.values()) for r in records], types,
                           ("run", "query_id"), fmt, args.into_mode), args.output
    if fmt == "trec":
        tags = {name: trec_tag(path) or name for name, path in runs.items()}
        return table.trec(tags, args.per_query, hidden=_HIDDEN_NUM_RET if hidden else None), args.output
    render = {"table": table.table, "markdown": table.markdown, "html": table.html, "csv": table.csv, "tsv": table.tsv,
              "json": table.json, "jsonl": table.jsonl}[fmt]
    return render(args.per_query), args.output


def _nuggets_alone(args, fmt: str, measures: list, calls: list, options: dict) -> tuple:
    """The nugget measures of the nuggets' topics for each run the assignments name: one column per run."""
    if fmt in ("trec", "parquet", "duckdb") or args.group_by:
        raise UsageError("--nuggets and --assignments alone print a table, CSV, TSV, JSON, JSON Lines, Markdown or "
                         "HTML, without --group-by.")
    with Progress("scoring nuggets", quiet=args.quiet) as progress:
        res = evaluate(None, None, measures, **options, _fetch=python_rows, _progress=progress.listener)
    table = EvalTable(res, list(res.aggregate), calls)
    render = {"table": table.table, "markdown": table.markdown, "html": table.html, "csv": table.csv, "tsv": table.tsv,
              "json": table.json, "jsonl": table.jsonl}[fmt]
    return render(args.per_query), args.output


def _rows(table: tuple, fmt: str, measures: list) -> str:
    """A results table (per segment, or per list with -q) as (column names, rows): an aligned table, Markdown or
    HTML. A measure's value has four decimals; any other value (a segment's: 0.1, 1e+300, a date) is shown as it
    is (_cell)."""
    names, rows = table
    shown = [_measure_cell if n in measures else _cell for n in names]
    cells = [["–" if v is None else show(v) for v, show in zip(row, shown)] for row in rows]
    align = ["r" if any(isinstance(r[i], (int, float, decimal.Decimal)) and not isinstance(r[i], bool) for r in rows)
             else "l" for i in range(len(names))]
    if fmt == "html":
        return html([[_html.escape(c) for c in row] for row in (names, *cells)], align) + "\n"
    if fmt == "markdown":
        return markdown([[*map(_md_escape, row)] for row in (names, *cells)], align) + "\n"
    return aligned([names, *cells], align) + "\n"


def _measure_cell(v) -> str:
    return fixed(v) if isinstance(v, float) else str(v)


class EvalTable:
    """evaluate() results rendered in each output format of `sqlmetrics eval`."""

    def __init__(self, res, run_names: list, calls: list, judgment_groups: bool = False, footer: str = ""):
        self.runs = run_names
        self.footer = footer  # under the tables a person reads: which queries the means are over
        self.judgment_groups = judgment_groups  # trec_eval's names are then the *_avgjg ones
        self.calls = calls
        self.measures = [c.text for c in calls]
        self.counts = {c.text for c in calls if c.measure.aggregate == "sum"}
        self.aggregate = res.aggregate
        names, rows = res.per_query  # ["run", "query_id", measures...], Python rows
        self.per_query: dict = {r: {} for r in run_names}  # run -> {qid: {measure: value}}
        for r, q, *values in rows:
            self.per_query[r][q] = dict(zip(names[2:], values))
        self.queries = sorted({q for per in self.per_query.values() for q in per})

    # values -------------------------------------------------------------------------------------

    def _value(self, measure: str, v):
        """A JSON/CSV value: counts as integers, None for an undefined value."""
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if measure in self.counts and float(v).is_integer():
            return int(v)
        return float(v) + 0.0  # never -0.0

    def _text(self, measure: str, v, digits: int = 4) -> str:
        v = self._value(measure, v)
        if v is None:
            return "–"
        return str(v) if isinstance(v, int) else fixed(v, digits)

    def records(self, per_query: bool) -> list:
        """One record per run and query: run, query_id, one key per measure. The aggregate's query_id is
        None (empty in CSV, null in JSON Lines), which no query can be: a query named 'all' stays itself."""
        out = []
        for r in self.runs:
            if per_query:
                for q in sorted(self.per_query[r]):
                    vals = self.per_query[r][q]
                    out.append({"run": r, "query_id": q, **{m: self._value(m, vals[m]) for m in self.measures}})
            agg = self.aggregate[r]
            out.append({"run": r, "query_id": None, **{m: self._value(m, agg[m]) for m in self.measures}})
        return out

    # formats ------------------------------------------------------------------------------------

    def _grid(self, per_query: bool) -> tuple:
        """Rows of measures (and queries with -q) by runs, for the table and Markdown formats."""
        if not per_query:
            header = ["measure", *self.runs]
            rows = [[m, *(self._text(m, self.aggregate[r][m]) for r in self.runs)] for m in self.measures]
            return header, rows, ["l"] + ["r"] * len(self.runs)
        header = ["query", "measure", *self.runs]
        rows = []
        for q in self.queries:
            for m in self.measures:
                cells = [self._text(m, self.per_query[r][q][m]) if q in self.per_query[r] else "–" for r in self.runs]
                rows.append([q, m, *cells])
        for m in self.measures:
            rows.append(["all", m, *(self._text(m, self.aggregate[r][m]) for r in self.runs)])
        return header, rows, ["l", "l"] + ["r"] * len(self.runs)

    def table(self, per_query: bool) -> str:
        header, rows, align = self._grid(per_query)
        return aligned([header, *rows], align) + "\n" + (self.footer and self.footer + "\n")

    def markdown(self, per_query: bool) -> str:
        header, rows, align = self._grid(per_query)
        return markdown([header, *rows], align) + "\n" + (self.footer and f"\n{self.footer}\n")

    def html(self, per_query: bool) -> str:
        header, rows, align = self._grid(per_query)
        return html([[_html.escape(str(c)) for c in row] for row in (header, *rows)], align) + "\n" + (
            self.footer and f"<p>{_html.escape(self.footer)}</p>\n")

    def trec(self, tags: dict, per_query: bool, hidden: str | None = None) -> str:
        """trec_eval's lines: `measure<TAB>query<TAB>value`, name padded to 22, 4 decimals, counts as integers.

        Per query (-q) come first, without num_q and gm_map (as trec_eval -c prints them; with `hidden`, the
        measure telling whether the run ranks a query, only for those: 9.0.8's), then `runid` and the `all` lines.
        Several runs: one such block per run.
        """
        names = {c.text: trec_name(c, self.judgment_groups) for c in self.calls}
        per_query_calls = [c for c in self.calls if c.measure.name != "NumQ" and c.measure.aggregate != "geometric"]
        out = []

        def line(name, q, measure, v):
            v = self._value(measure, v)
            if v is not None:
                out.append(trec_line(name, q, v))

        for r in self.runs:
            if per_query:
                for q in sorted(self.per_query[r]):
                    vals = self.per_query[r][q]
                    if hidden and not vals.get(hidden):
                        continue  # the run does not rank this query: trec_eval prints nothing for it
                    for c in per_query_calls:
                        line(names[c.text], q, c.text, vals[c.text])
            out.append(trec_line("runid", "all", tags[r]))
            for c in self.calls:
                line(names[c.text], "all", c.text, self.aggregate[r][c.text])
        return "".join(out)

    def _delimited(self, per_query: bool, delimiter: str) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
        writer.writerow(["run", "query_id", *self.measures])
        for rec in self.records(per_query):
            writer.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in rec.values()])
        return buf.getvalue()

    def csv(self, per_query: bool) -> str:
        return self._delimited(per_query, ",")

    def tsv(self, per_query: bool) -> str:
        return self._delimited(per_query, "\t")

    def jsonl(self, per_query: bool) -> str:
        return "".join(json_text(rec) + "\n" for rec in self.records(per_query))

    def json(self, per_query: bool) -> str:
        runs = {}
        for r in self.runs:
            entry = {"aggregate": {m: self._value(m, self.aggregate[r][m]) for m in self.measures}}
            if per_query:
                entry["per_query"] = {q: {m: self._value(m, v[m]) for m in self.measures}
                                      for q, v in sorted(self.per_query[r].items())}
            runs[r] = entry
        return json_text({"measures": self.measures, "runs": runs}, indent=2) + "\n"


