"""The command line: `sqlmetrics eval | compare | list | demo`.

    sqlmetrics eval qrels.txt run.txt [run2 ...] [-m nDCG@10 -m map] [-q] [--format trec]
    sqlmetrics compare qrels.txt bm25.run dense.run -m nDCG@10 -m AP --test fisher --format latex
    sqlmetrics list [NAME ...]
    sqlmetrics demo

Exit status: 0 on success, 2 on bad usage or bad input (one paragraph on stderr, no traceback unless
--debug), 1 on an internal error. Warnings about the data go to stderr, one line each. Beyond DuckDB and
sqlglot, only what a command uses is imported: scipy, pandas and pyarrow load only on the paths that need them.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from .errors import SqlmetricsError, SqlmetricsWarning

# trec_eval's default ("official") measures, in its order, plus nDCG@10.
DEFAULT_MEASURES = (
    ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"]
    + [f"iprec_at_recall_{r / 10:.2f}" for r in range(11)]
    + [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    + ["nDCG@10"]
)
COMPARE_MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@1000"]
DEMO_MEASURES = ["nDCG@10", "AP", "RR", "P@10", "R@100"]
EVAL_FORMATS = ("table", "trec", "csv", "tsv", "json", "jsonl", "markdown")
COMPARE_FORMATS = ("table", "markdown", "latex", "json")
_HIDDEN_NUM_RET = "NumRet()"  # asked for in `--format trec -q` to know which queries a run ranks


class UsageError(Exception):
    """Bad command-line usage that argparse cannot see (exit status 2)."""


# ---------------------------------------------------------------------------------------------- parser


def _measure_list(values) -> list:
    """-m may repeat and may hold several names separated by commas outside parentheses."""
    out = []
    for value in values or []:
        depth, start = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                out.append(value[start:i])
                start = i + 1
        out.append(value[start:])
    return [m.strip() for m in out if m.strip()]


def _mapping(pairs, option: str) -> dict | None:
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        role, eq, name = pair.partition("=")
        if not eq or not role.strip() or not name.strip():
            raise UsageError(f"{option} takes ROLE=COLUMN, such as {option} query_id=qid; got {pair!r}.")
        out[role.strip()] = name.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the Python traceback of an error")

    from .statement import QUERY_SETS, SCORE_PRECISIONS, TIES
    from .validate import DUPLICATE_POLICIES

    inputs = argparse.ArgumentParser(add_help=False)
    g = inputs.add_argument_group("evaluation options")
    g.add_argument("--queries", choices=QUERY_SETS, default="qrels",
                   help="average over every judged query, missing ones scoring 0 (qrels: trec_eval -c, the "
                        "default) or only over queries in both (intersection: trec_eval without -c)")
    g.add_argument("--ties", choices=TIES, default="docid_desc",
                   help="order within equal scores: trec_eval's document id descending (default), ascending, "
                        "or the run's own rank column")
    g.add_argument("-l", "--relevance-level", type=int, default=1, metavar="N",
                   help="grades >= N are relevant (trec_eval -l; default 1)")
    g.add_argument("--score-precision", choices=SCORE_PRECISIONS, default="float64",
                   help="float32 rounds scores as trec_eval <= 9.0.8 and pytrec_eval do")
    g.add_argument("--column", action="append", metavar="ROLE=NAME",
                   help="map a run column to a role (query_id, doc_id, score, rank_position); repeatable")
    g.add_argument("--qrels-column", action="append", metavar="ROLE=NAME",
                   help="map a qrels column to a role (query_id, doc_id, relevance); repeatable")
    g.add_argument("--duplicates", choices=DUPLICATE_POLICIES, default="error",
                   help="a document ranked twice for a query: refuse (default, as trec_eval), keep the "
                        "highest score, or keep the first line")
    g.add_argument("--name", action="append", metavar="NAME",
                   help="name the runs in order (default: file stems); repeat once per run")
    g = inputs.add_argument_group("resources (DuckDB's)")
    g.add_argument("--memory-limit", metavar="SIZE", help="e.g. 2GB; past it DuckDB spills to disk instead of failing")
    g.add_argument("--threads", type=int, metavar="N", help="worker threads (default: all cores)")
    g.add_argument("--temp-directory", metavar="DIR", help="where DuckDB spills past the memory limit")

    parser = argparse.ArgumentParser(
        prog="sqlmetrics",
        description="Ranked-retrieval evaluation as SQL on DuckDB, trec_eval-exact.",
        epilog="Try `sqlmetrics demo`. Each command has its own --help.",
    )
    parser.add_argument("--version", action="version", version=f"sqlmetrics {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("eval", parents=[common, inputs], help="evaluate runs against qrels",
                       description="Evaluate one or more runs against qrels. Inputs: TREC text (.gz too), CSV, "
                                   "TSV, Parquet, JSON Lines, or file.duckdb:table; '-' reads a run from stdin.")
    p.add_argument("qrels", metavar="QRELS", help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON Lines, x.duckdb:table")
    p.add_argument("runs", metavar="RUN", nargs="+", help="one or more runs, named by file stem; '-' reads stdin")
    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help="a measure in any spelling (nDCG@10, P_10, map, ndcg_cut.10, mrr@10, ...); repeatable "
                        "or comma-separated. Default: trec_eval's official set plus nDCG@10")
    p.add_argument("-q", "--per-query", action="store_true", help="also print every query's values")
    g = p.add_argument_group("logs (QRELS may be 'none': the judgments are in the run)")
    g.add_argument("--group-by", action="append", metavar="COLUMN",
                   help="a segment column (date, market, arm, ...); repeatable: one row per segment")
    g.add_argument("--label", metavar="COLUMN", help="the run's column holding each document's grade")
    g.add_argument("--relevance", metavar="EXPR",
                   help="a grade computed from the run's columns, e.g. '2*purchased + clicked'")
    p.add_argument("-f", "--format", choices=EVAL_FORMATS, default="table",
                   help="table (default), trec (trec_eval's own lines), csv, tsv, json, jsonl or markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("compare", parents=[common, inputs], help="compare runs with significance tests",
                       description="Per-run means and a significance test for every pair of runs and measure; "
                                   "superscript letters mark the runs each run beats significantly.")
    p.add_argument("qrels", metavar="QRELS", help="the judgments: TREC qrels, CSV, TSV, Parquet, JSON Lines, x.duckdb:table")
    p.add_argument("runs", metavar="RUN", nargs="+", help="one or more runs, named by file stem; '-' reads stdin")
    _compare_options(p, COMPARE_MEASURES)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("list", parents=[common], help="the measure catalogue",
                       description="The measures: names, aliases, parameters and defaults, what each is, and "
                                   "its reference. With names, shows what each one resolves to.")
    p.add_argument("names", metavar="NAME", nargs="*", help="measure names to resolve (any spelling)")
    p.add_argument("-f", "--format", choices=("table", "json", "markdown"), default="table")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("demo", parents=[common], help="compare the two demo runs shipped with the package",
                       description="Evaluate and compare two small demo runs (50 queries, graded qrels) "
                                   "shipped with the package.")
    _compare_options(p, DEMO_MEASURES)
    p.add_argument("--path", action="store_true", help="print the folder holding the demo files and exit")
    p.set_defaults(func=cmd_demo)

    from .dialects import add_sql_command

    add_sql_command(sub, parents=[common])
    return parser


def _compare_options(p, default_measures) -> None:
    from .compare import TESTS

    p.add_argument("-m", "--measure", action="append", metavar="MEASURE",
                   help=f"a measure in any spelling; repeatable or comma-separated (default: {' '.join(default_measures)})")
    p.add_argument("--test", choices=list(TESTS), default="student",
                   help="student (paired t-test, default), fisher (randomization), bootstrap, wilcoxon, tukey")
    p.add_argument("--max-p", type=float, default=0.01, metavar="P", help="significance threshold (default 0.01)")
    p.add_argument("--correction", choices=("none", "bonferroni", "holm"), default="none",
                   help="multiple-comparison correction over the pairs of each measure")
    p.add_argument("--seed", type=int, default=42, help="seed of the resampling tests (default 42)")
    p.add_argument("--n-resamples", type=int, default=10000, metavar="N",
                   help="resamples of fisher and bootstrap (default 10000)")
    p.add_argument("-f", "--format", choices=COMPARE_FORMATS, default="table")
    p.add_argument("--digits", type=int, default=4, metavar="N", help="decimals shown (default 4)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")


# ---------------------------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    stdin_names: dict = {}
    args._stdin_names = stdin_names  # temp file path -> how to call it in messages
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SqlmetricsWarning)
        try:
            text, output = args.func(args)
            _flush_warnings(caught, stdin_names)  # before the output, so a terminal shows them first
            write_output(text, output)
        except (SqlmetricsError, UsageError) as e:
            _flush_warnings(caught, stdin_names)
            if debug:
                raise
            print(f"sqlmetrics {args.command}: error: {_clean(str(e), stdin_names)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            _flush_warnings(caught, stdin_names)
            print("sqlmetrics: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # `sqlmetrics eval ... | head`: the reader left; that is fine
            _quiet_broken_pipe()
            return 0
        except Exception as e:  # noqa: BLE001 - a bug of ours: say so, briefly
            _flush_warnings(caught, stdin_names)
            if debug:
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"sqlmetrics {args.command}: internal error: {type(e).__name__}: {first} "
                  "(run again with --debug for the traceback, and please report it)", file=sys.stderr)
            return 1
        finally:
            for tmp in list(stdin_names):
                _remove(Path(tmp))
                _remove(Path(tmp).parent, folder=True)
    return 0


def _flush_warnings(caught: list, stdin_names: dict) -> None:
    seen = set()
    for w in caught:
        text = _clean(str(w.message), stdin_names)
        if text in seen:
            continue
        seen.add(text)
        kind = "warning" if issubclass(w.category, SqlmetricsWarning) else w.category.__name__
        print(f"sqlmetrics: {kind}: {text}", file=sys.stderr)
    caught.clear()


# The core's messages name Python keyword arguments; on the command line the options are spelled so.
_OPTION_SPELLINGS = (
    (re.compile(r"queries='(\w+)'"), r"--queries \1"),
    (re.compile(r"duplicates='(\w+)'"), r"--duplicates \1"),
    (re.compile(r"ties='(\w+)'"), r"--ties \1"),
    (re.compile(r"columns=\{'(\w+)': '([^']*)'\}"), r"{column} \1=\2"),
    (re.compile(r"columns=\{'(\w+)': \.\.\.\}"), r"{column} \1=..."),
    (re.compile(r"columns=\{role: name\}"), r"{column} ROLE=NAME"),
    (re.compile(r"columns="), r"{column}"),
    (re.compile(r"test='(\w+)'"), r"--test \1"),
    (re.compile(r"\bmax_p=(\S+)"), r"--max-p \1"),
    (re.compile(r"\bn_resamples=(\S+)"), r"--n-resamples \1"),
    (re.compile(r"\bseed=(\S+)"), r"--seed \1"),
    (re.compile(r"\bcorrection="), r"--correction "),
)


def _clean(text: str, stdin_names: dict) -> str:
    for tmp, name in stdin_names.items():
        text = text.replace(repr(tmp), name).replace(tmp, name)
    column = "--qrels-column" if text.startswith("qrels") else "--column"
    for pattern, replacement in _OPTION_SPELLINGS:
        text = pattern.sub(replacement.replace("{column}", column), text)
    return " ".join(text.split())


def _quiet_broken_pipe() -> None:
    try:  # point stdout at devnull so the interpreter's final flush does not complain again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _remove(path: Path, folder: bool = False) -> None:
    try:
        path.rmdir() if folder else path.unlink()
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------- inputs


def _sniff_suffix(head: bytes) -> str:
    """A suffix for data arriving on stdin, so the reader picks the right format."""
    import gzip

    if head.startswith(b"\x1f\x8b"):
        try:
            inner = gzip.decompress(head) if len(head) < 65536 else gzip.GzipFile(fileobj=io.BytesIO(head)).read(4096)
        except (OSError, EOFError):
            inner = b""
        return _sniff_suffix(inner) + ".gz" if inner else ".txt.gz"
    if head.startswith(b"PAR1"):
        return ".parquet"
    text = head[:4096].decode("utf-8", "replace").lstrip()
    if text.startswith("{"):
        return ".jsonl"
    first = text.splitlines()[0] if text else ""
    from .inputs import KNOWN_NAMES

    fields = [f.strip().strip('"').lower() for f in first.replace(",", "\t").split("\t")]
    if any(f in KNOWN_NAMES["query_id"] for f in fields):  # a header row: tabular
        return ".csv" if "," in first else ".tsv"
    return ".txt"


def _spool_stdin(args) -> str:
    data = sys.stdin.buffer.read()
    if not data.strip():
        raise UsageError("the run '-' (standard input) is empty: pipe a run into the command, "
                         "e.g. `cat run.txt | sqlmetrics eval qrels.txt -`.")
    folder = tempfile.mkdtemp(prefix="sqlmetrics-stdin-")
    path = os.path.join(folder, "stdin" + _sniff_suffix(data[:65536]))
    with open(path, "wb") as f:
        f.write(data)
    args._stdin_names[path] = "<stdin>"
    return path


def _runs(args) -> dict:
    """{name: path} for the command's runs; '-' is standard input, spooled to a temp file."""
    from .compare import unique_names

    if args.runs.count("-") > 1:
        raise UsageError("standard input ('-') can hold only one run.")
    names = unique_names(args.runs)
    if args.name:
        if len(args.name) != len(args.runs):
            raise UsageError(f"--name was given {len(args.name)} time(s) for {len(args.runs)} run(s); "
                             "give one name per run, in order.")
        if len(set(args.name)) != len(args.name):
            raise UsageError("--name: the run names must differ.")
        names = list(args.name)
    if args.qrels == "-":
        raise UsageError("qrels cannot come from standard input ('-'); pass the qrels file, and the run as '-'.")
    paths = [_spool_stdin(args) if r == "-" else r for r in args.runs]
    return dict(zip(names, paths))


def _eval_options(args) -> dict:
    """evaluate()'s keyword options from the flags; one the command does not have keeps evaluate()'s default."""
    names = ("queries", "ties", "relevance_level", "score_precision", "duplicates", "memory_limit", "threads",
             "temp_directory", "group_by", "label", "relevance")
    options = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    options["columns"] = _mapping(getattr(args, "column", None), "--column")
    options["qrels_columns"] = _mapping(getattr(args, "qrels_column", None), "--qrels-column")
    return options


def _check_output(path: str | None) -> None:
    """Fail before any work when --output cannot be written."""
    if not path or path == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--output {path!r} is a folder; give a file name.")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"--output {path!r}: the folder {str(folder)!r} does not exist.")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--output {path!r}: the folder {str(folder)!r} is not writable.")


def write_output(text: str, path: str | None) -> None:
    """Write to stdout, or atomically to a file: a temp file in the same folder, then os.replace."""
    if not path or path == "-":
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:  # a terminal that cannot show superscripts or dashes: never fail on that
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
        sys.stdout.flush()
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException as e:
        _remove(Path(tmp))
        if isinstance(e, OSError):
            raise UsageError(f"cannot write --output {path!r}: {e.strerror or e}.") from None
        raise


# ---------------------------------------------------------------------------------------------- progress


class Progress:
    """An elapsed-time line on stderr while something slow runs, only when stderr is a terminal.

    Nothing is shown for the first `delay` seconds, nor ever when stderr is piped or redirected.
    """

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, label: str, stream=None, delay: float = 2.0, interval: float = 0.1):
        self.label, self.delay, self.interval = label, delay, interval
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._thread = None
        self.shown = False

    def _tty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __enter__(self):
        if self._tty():
            self._start = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="sqlmetrics-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        i = 0
        while not self._stop.is_set():
            elapsed = time.monotonic() - self._start
            try:
                self.stream.write(f"\r{self.FRAMES[i % len(self.FRAMES)]} {self.label} {elapsed:.0f} s ")
                self.stream.flush()
            except (OSError, ValueError):
                return
            self.shown = True
            i += 1
            self._stop.wait(self.interval)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.shown:
                try:
                    self.stream.write("\r\033[K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass


# ---------------------------------------------------------------------------------------------- eval


def cmd_eval(args) -> tuple:
    from .names import parse_all

    _check_output(args.output)
    measures = _measure_list(args.measure) or list(DEFAULT_MEASURES)
    calls = parse_all(measures, args.relevance_level)  # a bad name fails before any data is read
    options = _eval_options(args)
    runs = _runs(args)
    hidden = args.format == "trec" and args.per_query and _HIDDEN_NUM_RET not in measures
    wanted = measures + ([_HIDDEN_NUM_RET] if hidden else [])

    from .evaluate import evaluate, python_rows

    qrels = None if args.qrels.lower() == "none" else args.qrels
    if qrels is None and not (args.label or args.relevance):
        raise UsageError("QRELS 'none' means the judgments are in the run: say where with --label or --relevance.")
    if args.group_by and args.format == "trec":
        raise UsageError("--format trec has no place for segments; use table, csv, tsv, json, jsonl or markdown.")
    label = f"evaluating {len(runs)} run{'s' if len(runs) > 1 else ''}"
    with Progress(label):
        res = evaluate(qrels, runs, wanted, **options, _fetch=python_rows)
    if args.group_by:
        return _rows(res.per_query if args.per_query else res.per_group, args.format), args.output
    table = EvalTable(res, list(runs), calls)
    if args.format == "trec":
        tags = {name: _trec_tag(path) or name for name, path in runs.items()}
        return table.trec(tags, args.per_query, hidden=_HIDDEN_NUM_RET if args.per_query else None), args.output
    render = {"table": table.table, "markdown": table.markdown, "csv": table.csv, "tsv": table.tsv,
              "json": table.json, "jsonl": table.jsonl}[args.format]
    return render(args.per_query), args.output


def _rows(table: tuple, fmt: str) -> str:
    """A results table (per segment, or per list with -q) as (column names, rows), in any format but trec."""
    names, rows = table
    records = [dict(zip(names, row)) for row in rows]
    if fmt in ("json", "jsonl"):
        if fmt == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        return json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    if fmt in ("csv", "tsv"):
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        writer.writerow(names)
        writer.writerows([["" if v is None else v for v in r.values()] for r in records])
        return buf.getvalue()
    from .report import aligned, markdown

    cells = [[f"{v:.4f}" if isinstance(v, float) else "–" if v is None else str(v) for v in r.values()] for r in records]
    align = ["r" if isinstance(v, (int, float)) else "l" for v in (records[0].values() if records else names)]
    return (markdown if fmt == "markdown" else aligned)([names, *cells], align) + "\n"


def _trec_tag(path: str) -> str | None:
    """The run tag (6th field of the first line) of a TREC run file, as trec_eval prints for `runid`."""
    from .inputs import _split_duckdb_target, file_format

    p = Path(path)
    # Not TREC text, or compressed with zstd, which the standard library cannot read: no tag.
    if _split_duckdb_target(path) or file_format(p) != "trec" or p.suffix.lower() == ".zst":
        return None
    try:
        import gzip

        opener = gzip.open if p.suffix.lower() == ".gz" else open
        with opener(p, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if fields:
                    return fields[5] if len(fields) >= 6 else None
    except (OSError, EOFError):
        return None
    return None


def trec_name(call) -> str:
    """trec_eval's name for a measure where it has one (nDCG@10 -> ndcg_cut_10), else the text as given."""
    m, values, at = call.measure.name, call.values, call.measure.at
    if set(call.given) - ({at} if at else set()):
        return call.text  # a parameter trec_eval cannot express (rel=2, gain=exp, beta=...)
    cut = {"AP": "map_cut_{}", "P": "P_{}", "R": "recall_{}", "nDCG": "ndcg_cut_{}", "Success": "success_{}"}
    plain = {"AP": "map", "RR": "recip_rank", "Rprec": "Rprec", "Bpref": "bpref", "GMAP": "gm_map",
             "NumQ": "num_q", "NumRet": "num_ret", "NumRel": "num_rel", "NumRelRet": "num_rel_ret",
             "SetP": "set_P", "SetR": "set_recall", "SetF": "set_F", "nDCG": "ndcg"}
    k = values.get(at) if at else None
    if k is not None:
        if m == "IPrec":
            return f"iprec_at_recall_{k:.2f}"
        return cut[m].format(k) if m in cut else call.text
    return plain.get(m, call.text)


class EvalTable:
    """evaluate() results rendered in each output format of `sqlmetrics eval`."""

    def __init__(self, res, run_names: list, calls: list):
        self.runs = run_names
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
        return float(v)

    def _text(self, measure: str, v, digits: int = 4) -> str:
        v = self._value(measure, v)
        if v is None:
            return "–"
        return str(v) if isinstance(v, int) else f"{v:.{digits}f}"

    def _records(self, per_query: bool) -> list:
        """One record per run and query ('all' for the aggregate): run, query_id, one key per measure."""
        out = []
        for r in self.runs:
            if per_query:
                for q in sorted(self.per_query[r]):
                    vals = self.per_query[r][q]
                    out.append({"run": r, "query_id": q, **{m: self._value(m, vals[m]) for m in self.measures}})
            agg = self.aggregate[r]
            out.append({"run": r, "query_id": "all", **{m: self._value(m, agg[m]) for m in self.measures}})
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
        from .report import aligned

        header, rows, align = self._grid(per_query)
        return aligned([header, *rows], align) + "\n"

    def markdown(self, per_query: bool) -> str:
        from .report import markdown as render

        header, rows, align = self._grid(per_query)
        return render([header, *rows], align) + "\n"

    def trec(self, tags: dict, per_query: bool, hidden: str | None = None) -> str:
        """trec_eval's lines: `measure<TAB>query<TAB>value`, name padded to 22, 4 decimals, counts as integers.

        Per query (-q) come first, only for queries the run ranks and without num_q and gm_map (as trec_eval
        -c prints them), then `runid` and the `all` lines. Several runs: one such block per run.
        """
        names = {c.text: trec_name(c) for c in self.calls}
        per_query_calls = [c for c in self.calls if c.measure.name != "NumQ" and c.measure.aggregate != "geometric"]
        out = []

        def line(name, q, measure, v):
            v = self._value(measure, v)
            if v is not None:
                out.append(f"{name:<22}\t{q}\t{v if isinstance(v, int) else f'{v:6.4f}'}\n")

        for r in self.runs:
            if per_query:
                for q in sorted(self.per_query[r]):
                    vals = self.per_query[r][q]
                    if hidden and not vals.get(hidden):
                        continue  # the run does not rank this query: trec_eval prints nothing for it
                    for c in per_query_calls:
                        line(names[c.text], q, c.text, vals[c.text])
            out.append(f"{'runid':<22}\tall\t{tags[r]}\n")
            for c in self.calls:
                line(names[c.text], "all", c.text, self.aggregate[r][c.text])
        return "".join(out)

    def _delimited(self, per_query: bool, delimiter: str) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
        writer.writerow(["run", "query_id", *self.measures])
        for rec in self._records(per_query):
            writer.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in rec.values()])
        return buf.getvalue()

    def csv(self, per_query: bool) -> str:
        return self._delimited(per_query, ",")

    def tsv(self, per_query: bool) -> str:
        return self._delimited(per_query, "\t")

    def jsonl(self, per_query: bool) -> str:
        return "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in self._records(per_query))

    def json(self, per_query: bool) -> str:
        runs = {}
        for r in self.runs:
            entry = {"aggregate": {m: self._value(m, self.aggregate[r][m]) for m in self.measures}}
            if per_query:
                entry["per_query"] = {q: {m: self._value(m, v[m]) for m in self.measures}
                                      for q, v in sorted(self.per_query[r].items())}
            runs[r] = entry
        return json.dumps({"measures": self.measures, "runs": runs}, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------- compare, demo


def _run_compare(args, qrels, runs: dict, measures: list) -> str:
    from .compare import compare

    if args.digits < 0 or args.digits > 12:
        raise UsageError(f"--digits {args.digits}: give a number of decimals between 0 and 12.")
    if len(runs) < 2:
        raise UsageError(f"compare needs at least two runs, got {len(runs)}.")
    with Progress(f"comparing {len(runs)} runs"):
        report = compare(qrels, runs, measures, test=args.test, max_p=args.max_p,
                         correction=None if args.correction == "none" else args.correction, seed=args.seed,
                         n_resamples=args.n_resamples, **_eval_options(args))
    if args.format == "json":
        return report.to_json() + "\n"
    if args.format == "latex":
        return report.to_latex(digits=args.digits)
    if args.format == "markdown":
        return report.to_markdown(digits=args.digits)
    return report.to_table(digits=args.digits)


def cmd_compare(args) -> tuple:
    _check_output(args.output)
    measures = _measure_list(args.measure) or list(COMPARE_MEASURES)
    from .names import parse_all

    parse_all(measures, args.relevance_level)
    runs = _runs(args)
    return _run_compare(args, args.qrels, runs, measures), args.output


def cmd_demo(args) -> tuple:
    from . import demo

    if args.path:
        return f"{demo.folder()}\n", None
    _check_output(args.output)
    qrels, run_paths = demo.paths()
    measures = _measure_list(args.measure) or list(DEMO_MEASURES)
    runs = {Path(p).name.split(".")[0]: str(p) for p in run_paths}
    text = _run_compare(args, str(qrels), runs, measures)
    if args.format == "table" and not args.output:
        folder = demo.folder()
        opts = "".join(f" -m {m}" for m in measures)
        for flag, value, default in (("--test", args.test, "student"), ("--max-p", args.max_p, 0.01),
                                     ("--correction", args.correction, "none")):
            if value != default:
                opts += f" {flag} {value}"
        text = (f"Demo: two runs (bm25, rerank) of depth 100 on 50 queries with graded judgments (0-3), in\n"
                f"  {folder}\n"
                f"The same as: sqlmetrics compare {folder / demo.QRELS} "
                + " ".join(str(folder / r) for r in demo.RUNS) + opts + "\n\n" + text)
    return text, args.output


# ---------------------------------------------------------------------------------------------- list


def _measure_dict(m) -> dict:
    return {
        "name": m.name,
        "description": m.description,
        "reference": m.reference,
        "aggregate": m.aggregate,
        "better": m.better,
        "aliases": list(m.aliases),
        "parameters": [
            {"name": p.name, "type": p.type, "default": p.describe_default(), "required": p.required,
             "bound_by_at": p.name == m.at, **({"options": list(p.options)} if p.options else {})}
            for p in m.params.values()
        ],
    }


def _measure_text(m, width: int = 100) -> str:
    import textwrap

    pad = " " * 4
    params = ", ".join(f"{'@' if p.name == m.at else ''}{p.name} "
                       + ("/".join(p.options) if p.type == "choice" else p.type) + f" ({p.describe_default()})"
                       for p in m.params.values()) or "none"
    lines = [f"{m.name}  ({m.aggregate}, {m.better} is better)"]
    for label, text in (("", m.description), ("parameters: ", params),
                        ("aliases: ", ", ".join(m.aliases) or "none"), ("reference: ", m.reference)):
        lines.append(textwrap.fill(label + text, width=width, initial_indent=pad,
                                   subsequent_indent=pad + " " * len(label), break_on_hyphens=False))
    return "\n".join(lines)


def cmd_list(args) -> tuple:
    from .catalogue import markdown_table, measures
    from .names import parse

    catalogue = measures()
    if args.names:
        calls = [parse(n) for n in args.names]
        if args.format == "json":
            text = json.dumps([{"name": c.text, "canonical": c.canonical, "trec_eval": trec_name(c),
                                "parameters": {k: v for k, v in c.params}, "measure": _measure_dict(c.measure)}
                               for c in calls], indent=2, ensure_ascii=False) + "\n"
        else:
            blocks = []
            for c in calls:
                params = ", ".join(f"{k}={v}" for k, v in c.params if v is not None) or "none"
                blocks.append(f"{c.text} = {c.canonical}  (parameters: {params}; trec_eval: {trec_name(c)})\n"
                              + _measure_text(c.measure))
            text = "\n\n".join(blocks) + "\n"
    elif args.format == "json":
        text = json.dumps([_measure_dict(m) for m in catalogue.values()], indent=2, ensure_ascii=False) + "\n"
    elif args.format == "markdown":
        text = markdown_table() + "\n"
    else:
        text = (f"{len(catalogue)} measures. Names follow ir_measures (nDCG@10, P(rel=2)@5, RBP(p=0.9)); the "
                "aliases are trec_eval's and ranx's spellings.\n\n"
                + "\n\n".join(_measure_text(m) for m in catalogue.values()) + "\n")
    return text, None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
