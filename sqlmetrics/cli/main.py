"""The command line: `sqlmetrics eval | compare | report | list | demo | sql | trec_eval | convert`, one
module per subcommand. `sqlmetrics` alone prints the help and exits 0 (it asked for nothing that failed).

    sqlmetrics eval qrels.txt run.txt [run2 ...] [-m nDCG@10 -m map] [-q] [--format trec]
    sqlmetrics compare qrels.txt bm25.run dense.run -m nDCG@10 -m AP --test fisher --format latex
    sqlmetrics report qrels.txt bm25.run dense.run -m nDCG@10 -m AP --baseline bm25 -o report.html --plot deltas.png
    sqlmetrics fuse bm25.run dense.run --method rrf -o fused.run
    sqlmetrics list [NAME ...]
    sqlmetrics demo
    sqlmetrics sql -m nDCG@10 --dialect snowflake --qrels db.s.qrels --run db.s.run
    sqlmetrics trec_eval -q -m all_trec qrels.txt run.txt     (trec_eval's flags and output, byte for byte)
    sqlmetrics convert run run.parquet -o run.txt             (runs and qrels between formats)

Exit status: 0 on success, 2 on bad usage or bad input (one paragraph on stderr, no traceback unless
--debug), 1 on an internal error, 130 on Ctrl-C (SIGINT) and 143 on SIGTERM, after the same clean-up as
any other exit ("sqlmetrics <command>: interrupted" / "terminated"). Warnings about the data go to stderr,
one line each. Beyond DuckDB and sqlglot, only what a command uses is imported: scipy, pandas and pyarrow
load only on the paths that need them.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import importlib.metadata
import os
import re
import signal
import sys
import threading
import warnings
from pathlib import Path

import duckdb

from ..errors import SqlmetricsError, SqlmetricsWarning, redacted
from ..local.connection import interrupt_queries
from ..options import OPTIONS
from .common import UsageError, check_output, remove, write_output

# Each command's module, in the help's order. A call imports only its own command's module (a script calling
# `sqlmetrics trec_eval` in a loop pays for no other), the help and a mistyped command import them all.
COMMANDS = {"eval": "evaluate", "compare": "compare", "report": "report", "fuse": "fuse", "list": "listing",
            "demo": "demo", "sql": "sql", "decide": "decide", "trec_eval": "trec_eval", "convert": "convert",
            "ips": "counterfactual", "pbm-ips": "counterfactual", "interleaving": "counterfactual"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` alone when it is one (its subparser is the whole parser's), else of them all."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    common.add_argument("--quiet", action="store_true",
                        help="no progress line and no warnings on stderr (errors still print); for scripts that read it")
    parser = argparse.ArgumentParser(
        prog="sqlmetrics", allow_abbrev=False,
        description="Ranked-retrieval evaluation as SQL on DuckDB, trec_eval-exact.",
        epilog="Try `sqlmetrics demo`. Each command has its own --help.",
    )
    parser.add_argument("--version", action=_Version)
    # Abbreviated long options are refused: `--relevance 2` once silently meant --relevance-level.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=functools.partial(argparse.ArgumentParser, allow_abbrev=False))
    modules = [COMMANDS[command]] if command in COMMANDS else COMMANDS.values()
    for module in dict.fromkeys(modules):
        importlib.import_module(f".{module}", __package__).add_parser(sub, [common])
    return parser


class _Version(argparse.Action):
    """--version: the installed version, looked up only when asked (importlib.metadata reads the metadata of every
    installed package: 2-5 ms of every call)."""

    def __init__(self, option_strings, dest, **_):
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"sqlmetrics {importlib.metadata.version('sqlmetrics')}")
        parser.exit()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    if not argv:  # bare `sqlmetrics`: what it can do, not an error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    with _Signals() as signals:
        return _run(args, signals)


def _run(args, signals: _Signals) -> int:
    debug = getattr(args, "debug", False)
    stdin_names: dict = {}
    args._stdin_names = stdin_names  # temp file path -> how to call it in messages
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SqlmetricsWarning)
        try:
            check_output(getattr(args, "output", None))  # before any work, for every command that has -o
            text, output = args.func(args)
            if signals.number:  # a signal whose exception something swallowed: the work is not to be trusted
                raise KeyboardInterrupt
            _flush_warnings(caught, stdin_names, args)  # before the output, so a terminal shows them first
            write_output(text, output)
        except (KeyboardInterrupt, duckdb.InterruptException):
            return _interrupted(args, signals, caught, stdin_names)
        except (SqlmetricsError, UsageError) as e:
            if signals.number:  # DuckDB's "interrupted" error, worded as bad input by a reader
                return _interrupted(args, signals, caught, stdin_names)
            _flush_warnings(caught, stdin_names, args)
            if debug:
                raise
            print(f"sqlmetrics {args.command}: error: {_clean(str(e), stdin_names)}", file=sys.stderr)
            return getattr(e, "exit_status", 2)
        except BrokenPipeError:  # `sqlmetrics eval ... | head`: the reader left; that is fine
            _quiet_broken_pipe()
            return 0
        except Exception as e:  # noqa: BLE001 - a bug of ours: say so, briefly
            if signals.number:  # DuckDB answers a signal during a query with RuntimeError("Query interrupted")
                return _interrupted(args, signals, caught, stdin_names)
            _flush_warnings(caught, stdin_names, args)
            if debug:
                if getattr(e, "sql", None):  # the statement DuckDB rejected: kept out of the one-line message
                    print(f"-- the statement:\n{e.sql}", file=sys.stderr)
                raise
            first = redacted(str(e).strip().splitlines()[0]) if str(e).strip() else ""
            print(f"sqlmetrics {args.command}: internal error: {type(e).__name__}: {first} "
                  "(run again with --debug for the traceback, and please report it)", file=sys.stderr)
            return 1
        finally:
            signals.cleaning = True  # a second signal now must not cut the clean-up short
            for tmp in list(stdin_names):
                remove(Path(tmp))
    return 0


class _Signals:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, so that every `finally` runs (DuckDB's
    temporary tables and spill files, the spooled standard input, a half-written output) and the command
    exits 128 + the signal's number with one line. Python's default for SIGTERM is to die on the spot,
    leaving all of that behind. DuckDB's running queries are interrupted too: it checks Python's signals only
    between tasks, and its worker threads would otherwise finish theirs first (seconds on a large run)."""

    NAMES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}

    def __init__(self):
        self.number = None  # the first signal received
        self.cleaning = False
        self._previous: dict = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():  # signal.signal works only there
            for number in self.NAMES:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            if handler is not None:  # None: a handler set outside Python, which cannot be put back from here
                signal.signal(number, handler)

    def _handle(self, number, frame) -> None:
        first = self.number is None
        self.number = self.number or number
        interrupt_queries()
        if first and not self.cleaning:  # later signals are noted, not raised: the clean-up must finish
            raise KeyboardInterrupt


def _interrupted(args, signals: _Signals, caught: list, stdin_names: dict) -> int:
    _flush_warnings(caught, stdin_names, args)
    number = signals.number or signal.SIGINT  # DuckDB's InterruptException without a signal: as Ctrl-C
    print(f"sqlmetrics {args.command}: {_Signals.NAMES[number]}", file=sys.stderr)
    return 128 + number


def _flush_warnings(caught: list, stdin_names: dict, args) -> None:
    if getattr(args, "quiet", False):  # trec_eval scripts parse stderr: --quiet leaves only errors there
        caught.clear()
        return
    seen = set()
    for w in caught:
        text = _clean(str(w.message), stdin_names)
        if text in seen:
            continue
        seen.add(text)
        kind = "warning" if issubclass(w.category, SqlmetricsWarning) else w.category.__name__
        print(f"sqlmetrics: {kind}: {text}", file=sys.stderr)
    caught.clear()


# The core's messages name Python keyword arguments; on the command line the options are spelled as flags.
# A keyword is matched whole (not inside qrels_columns=, nor a measure's own parameter: AP(judged_only=True)).
_KEYWORD = r"(?<![\w-])(?<!\w\(){}="


@functools.cache
def _spellings() -> tuple:
    """(pattern, replacement) for each keyword: compiled when a message is first printed, not on every call (122
    patterns: 8 ms of a `sqlmetrics trec_eval` that prints none)."""
    columns = tuple((re.compile(r"(?<![\w-])" + name + "=" + pattern), replacement.format(flag=flag))
                    for name, flag in (("qrels_columns", "--qrels-column"), ("columns", "--column"))
                    for pattern, replacement in ((r"\{'(\w+)': '([^']*)'\}", r"{flag} \1=\2"),
                                                 (r"\{'(\w+)': \.\.\.\}", r"{flag} \1=..."),
                                                 (r"\{role: name\}", "{flag} ROLE=NAME"), ("", "{flag}")))
    options = tuple((re.compile(_KEYWORD.format(o.name) + pattern), replacement)
                    for o in OPTIONS if o.cli_flags and o.kind not in ("mapping", "object")
                    for pattern, replacement in ((r"'([^']*)'", _flag_value(o.cli_flags[-1])),
                                                 (r"(?=[\s,.)])", o.cli_flags[-1]), ("", o.cli_flags[-1] + " ")))
    return columns + options


def _flag_value(flag: str):
    """`name='value'` as `--flag value`, quoted where the value has spaces (an expression)."""
    return lambda m: f"{flag} {m.group(1)}" if re.fullmatch(r"[\w.:/-]*", m.group(1)) else f"{flag} '{m.group(1)}'"



def _clean(text: str, stdin_names: dict) -> str:
    """A message as the command line prints it: spooled standard input by its name, keywords as flags, URLs
    without their secrets, on one line."""
    for tmp, name in stdin_names.items():
        text = text.replace(repr(tmp), name).replace(tmp, name)
    for pattern, replacement in _spellings():
        text = pattern.sub(replacement, text)
    return " ".join(redacted(text).split())


def _quiet_broken_pipe() -> None:
    try:  # point stdout at devnull so the interpreter's final flush does not complain again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
