"""`sqlmetrics pool RUN... --depth K [--qrels Q]`: the documents a depth-K pool of the runs sends to the assessors
(sqlmetrics.judgments.pools.pool()), and `sqlmetrics holes QRELS RUN... -m M`: each run's measure with unjudged
documents non-relevant and condensed (judged only), their spread, Judged@K, Unjudged@K and the share of the run's top
K outside the pool of the other runs (holes()).

pool's output: as text, the pooled documents (with --qrels, those still to judge) and the counts per topic; -f qrels
(or -o FILE.qrels), a qrels file of the documents to judge, each graded -1 (trec_eval reads a negative grade as
pooled but not judged: the assessors replace it); -f csv, tsv, json, jsonl or parquet (or -o's extension), the
documents' table (--topics: the counts' table instead)."""
from __future__ import annotations

from ..dialects.info import dialect_info
from ..errors import SqlmetricsError
from ..judgments.pools import ARRAY_DIALECTS, holes, pool, render_pool
from ..options import ROLES
from ..stats.report import aligned
from .common import ArrowOutput, UsageError, chosen_format, command_runs, role_pairs

TABLES = ("csv", "tsv", "json", "jsonl", "parquet")
POOL_FORMATS = ("text", "qrels", *TABLES)
HOLES_FORMATS = ("text", *TABLES)


def add_parser(sub, parents) -> None:
    p = sub.add_parser("pool", parents=parents, help="the documents a depth-k pool of runs sends to be judged",
                       description="Depth-k pooling, in one SQL statement on DuckDB: per topic, the union of each "
                                   "run's top K documents (ranked by score, ties by document id descending, as "
                                   "eval ranks them), with the runs that placed each there and its best rank. With "
                                   "--qrels, only the documents not judged yet (no qrels row, or a negative grade). "
                                   "See docs/rag.md, 'Pools and holes'.")
    p.add_argument("runs", metavar="RUN", nargs="+", help="the runs to pool; '-' reads one from stdin")
    p.add_argument("--depth", type=int, required=True, metavar="K", help="each run's top K documents per topic")
    p.add_argument("--qrels", metavar="QRELS", help="judgments already made: list only the documents still to judge")
    _common_flags(p, POOL_FORMATS, "text (default: the documents, then the counts per topic), qrels (the documents to "
                                   "judge as `query 0 doc -1` lines), or the documents' table as csv, tsv, json, "
                                   "jsonl (parquet only with -o)")
    p.add_argument("--render", metavar="DIALECT",
                   help=f"print the pool's SQL statement for this engine ({', '.join(ARRAY_DIALECTS)}) instead of "
                        "pooling: RUN and --qrels then name tables there (their names by --column)")
    p.add_argument("--topics", action="store_true",
                   help="write the counts per topic (pooled, and with --qrels judged and to_judge) instead of the "
                        "documents (not with -f text or qrels)")
    p.set_defaults(func=run_pool)
    h = sub.add_parser("holes", parents=parents, help="each run's measures with unjudged non-relevant, condensed, "
                                                      "and how far it falls outside the pool of the others",
                       description="Per run and measure: the value with unjudged documents non-relevant, the "
                                   "condensed value (judged documents only, trec_eval -J), their spread, Judged@K, "
                                   "Unjudged@K, and the share of the run's top K that no other run has in its top K "
                                   "(a leave-one-run-out pool). See docs/rag.md, 'Pools and holes'.")
    h.add_argument("qrels", metavar="QRELS", help="the judgments")
    h.add_argument("runs", metavar="RUN", nargs="+", help="the runs; '-' reads one from stdin")
    h.add_argument("-m", "--measure", action="append", required=True, metavar="MEASURE",
                   help="a measure of a ranked list (P@10, nDCG@10, AP, ...); repeatable")
    h.add_argument("--depth", type=int, default=10, metavar="K",
                   help="the depth of Judged@K, Unjudged@K and the leave-one-run-out pool (default 10)")
    h.add_argument("-q", "--per-query", action="store_true", dest="per_query",
                   help="one row per run, judged topic and measure instead of the means")
    _common_flags(h, HOLES_FORMATS, "text (default), or the table as csv, tsv, json, jsonl (parquet only with -o)")
    h.set_defaults(func=run_holes)


def _common_flags(p, formats, what: str) -> None:
    p.add_argument("--name", action="append", metavar="NAME", help="name the runs in order (default: file stems)")
    p.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help="the inputs' column playing a role (query_id, doc_id, score, relevance); by default found by "
                        "its name")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically), in the format its extension names (.qrels for pool's qrels "
                        "format, .csv, .tsv, .json, .jsonl, .parquet); default standard output")
    p.add_argument("-f", "--format", choices=formats, help=what)


def run_pool(args) -> tuple:
    columns = role_pairs(args.column, "--column", ROLES)
    if args.render:
        if args.format or args.topics:
            raise UsageError(f"--render prints the pool's SQL statement; {'--topics' if args.topics else '-f'} asks "
                             "for a table it does not make: leave it out.")
        try:
            usable = dialect_info(args.render).name in ARRAY_DIALECTS
        except SqlmetricsError:
            usable = False
        if not usable:
            raise UsageError(f"--render {args.render}: not a dialect with an array aggregate to hold each document's "
                             f"runs; one of {', '.join(ARRAY_DIALECTS)}.")
        names = args.name or [t.rpartition(".")[2] for t in args.runs]
        if len(names) != len(args.runs) or len(set(names)) != len(names):
            raise UsageError(f"the run tables are named {', '.join(names)}: give one name per run table, each once, "
                             "in order (--name NAME, repeated).")
        return render_pool(dict(zip(names, args.runs)), args.depth, args.render, qrels=args.qrels,
                           columns=columns) + ";\n", args.output
    fmt = chosen_format(args, POOL_FORMATS, "text", {".qrels": "qrels"})
    if args.topics and fmt in ("text", "qrels"):
        raise UsageError(f"--topics writes the counts' table: give -f csv, tsv, json or jsonl, or -o with one of "
                         f"those extensions (not {fmt}, which has the counts {'already' if fmt == 'text' else 'not'}).")
    result = pool(command_runs(args), args.depth, qrels=args.qrels, columns=columns)
    if fmt == "qrels":  # the documents to judge, each pooled and not judged: trec_eval's -1
        pairs = list(zip(result.docs["query_id"].to_pylist(), result.docs["doc_id"].to_pylist()))
        spaced = next(((q, d) for q, d in pairs if len(q.split()) != 1 or len(d.split()) != 1), None)
        if spaced:
            raise UsageError(f"query {spaced[0]!r}, document {spaced[1]!r}: an id with a space (or none) cannot be a "
                             "field of a qrels line; write the pool as a table instead (-o pool.csv, .parquet, ...).")
        return "".join(f"{q} 0 {d} -1\n" for q, d in pairs), args.output
    if fmt == "text":
        what = "to judge" if args.qrels else "pooled"
        return (_text(result.docs, f"documents {what} (depth {result.depth}):") + "\n" +
                _text(result.topics, "per topic:")), args.output
    table = result.topics if args.topics else result.docs
    if fmt in ("csv", "tsv") and not args.topics:  # a list has no CSV cell: the run names joined by commas
        import pyarrow.compute as pc

        table = table.set_column(4, "runs", pc.binary_join(table["runs"], ","))
    return ArrowOutput(table, ("query_id",) if args.topics else ("query_id", "doc_id"), fmt), args.output


def run_holes(args) -> tuple:
    fmt = chosen_format(args, HOLES_FORMATS, "text")
    if args.qrels == "-":
        raise UsageError("qrels cannot come from standard input ('-'); pass the qrels file, and a run as '-'.")
    table = holes(args.qrels, command_runs(args), args.measure, args.depth, per_query=args.per_query,
                  columns=role_pairs(args.column, "--column", ROLES))
    if fmt == "text":
        k = args.depth
        return (_text(table, f"holes (judged, unjudged and outside at depth {k}):") +
                "value: unjudged documents count as not relevant; condensed: over the judged documents only "
                f"(trec_eval -J); spread = condensed - value\njudged: Judged@{k}; unjudged: Unjudged@{k}; outside: the "
                f"share of the run's top {k} that no other run has in its top {k}"
                f"{'' if args.per_query else ' (mean over the judged topics it ranks)'}\n"
                ), args.output
    return ArrowOutput(table, ("run", *(["query_id"] if args.per_query else []), "measure"), fmt), args.output


def _text(table, title: str) -> str:
    """An Arrow table as aligned text: numbers to 4 decimals, lists joined by commas, a null as '-'."""
    columns = [table[n].to_pylist() for n in table.column_names]
    align = ["r" if all(isinstance(v, (int, float)) or v is None for v in c) else "l" for c in columns]

    def cell(v) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.4f}"
        return ",".join(v) if isinstance(v, list) else str(v)

    rows = [table.column_names, *zip(*([cell(v) for v in c] for c in columns))]
    return f"{title}\n{aligned(rows, align)}\n"

