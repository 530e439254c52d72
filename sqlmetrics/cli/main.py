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
    sqlmetrics clicks log.parquet --model pbm -o params.parquet   (a click model fitted to a click log)
    sqlmetrics agreement human.qrels llm.qrels --per-query   (how far two judgment sets agree: κ, α)
    sqlmetrics pool bm25.run dense.run --depth 10 --qrels qrels.txt -o next.qrels   (the documents to judge next)
    sqlmetrics holes qrels.txt bm25.run dense.run -m P@10   (values with unjudged non-relevant and condensed)
    sqlmetrics ppi llm_qrels.txt human_qrels.txt a.run b.run -m nDCG@10   (a mean over LLM labels, corrected by humans')

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
            "ips": "counterfactual", "pbm-ips": "counterfactual", "interleaving": "counterfactual",
            "clicks": "clicks", "agreement": "agreement", "pool": "pools", "holes": "pools", "ppi": "ppi"}


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
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    args._accepted = _Accepted(commands[args.command]._option_string_actions, args.command)
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
            print(f"sqlmetrics {args.command}: error: {_clean(str(e), stdin_names, args._accepted)}",
                  file=sys.stderr)
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
        text = _clean(str(w.message), stdin_names, args._accepted)
        if text in seen:
            continue
        seen.add(text)
        kind = "warning" if issubclass(w.category, SqlmetricsWarning) else w.category.__name__
        print(f"sqlmetrics: {kind}: {text}", file=sys.stderr)
    caught.clear()


# The core's messages name Python keyword arguments; on the command line the options are spelled as flags: one
# pass over the message (a flag written for one keyword is never read again as another: `--qrels-column
# relevance=X` once became `--qrels-column --relevance X`). A keyword is matched whole (not inside qrels_columns=,
# nor a measure's own parameter: AP(judged_only=True)), with the value it is given: 'text', a mapping
# {'role': 'name'} / {'role': ...} / {role: name}, or a bare value after it.
_KEYWORD = re.compile(r"(?<![\w-])(?<!\w\()(?P<keyword>[a-z][a-z_]*)=(?:(?P<mapping>\{'(?P<role>\w+)': "
                      r"(?:'(?P<name>[^']*)'|\.\.\.)\})|(?P<any_role>\{role: name\})|'(?P<text>[^']*)')?")


@functools.cache
def _options() -> dict:
    """{keyword: Option} of the options that have a command-line flag."""
    return {o.name: o for o in OPTIONS if o.cli_flags and o.kind != "object"}


def _flag(keyword: str, accepted: frozenset) -> str | None:
    """The flag the command spells the option of `keyword` with; None when it takes no such option."""
    flag = next((f for f in reversed(_options()[keyword].cli_flags) if f in accepted), None)
    if flag is None and keyword == "qrels_columns":  # a command of one input (convert) maps it with --column
        return _flag("columns", accepted)
    return flag


def _flagged(text: str, accepted: frozenset) -> str:
    """The message's keywords as the flags of a command that accepts `accepted` (its option strings). A hint never
    names a flag the command would refuse: a parenthesis naming an option the command does not take is left out
    (the hints are written so: "they score 0 (queries='intersection' averages only the queries in both)"), and
    such a keyword elsewhere stays a keyword, said to be Python's."""
    foreign = [m for m in _KEYWORD.finditer(text) if m["keyword"] in _options() and _flag(m["keyword"], accepted) is None]
    for m in reversed(foreign):
        opened = text.rfind("(", 0, m.start())
        closed = text.find(")", m.end())
        if opened >= 0 and closed >= 0 and ")" not in text[opened:m.start()] and "(" not in text[m.end():closed]:
            text = text[:opened].rstrip() + text[closed + 1:]

    def spelled(m: re.Match) -> str:
        if m["keyword"] not in _options():  # not an option's keyword (a measure's parameter, an example's text)
            return m[0]
        option, flag = _options()[m["keyword"]], _flag(m["keyword"], accepted)
        if flag is None:
            return f"{m[0]} (in Python; `sqlmetrics {accepted.command}` takes no such option)"
        if option.kind == "mapping":
            value = f" {m['role']}={m['name'] if m['name'] is not None else '...'}" if m["mapping"] else \
                " ROLE=NAME" if m["any_role"] else ""
            return flag + value
        if m["text"] is not None:  # `name='value'` as `--flag value`, quoted where the value has spaces
            value = m["text"] if re.fullmatch(r"[\w.:/-]*", m["text"]) else f"'{m['text']}'"
            return f"{flag} {value}"
        following = m.string[m.end():m.end() + 1]
        return flag if following in ("", " ", ",", ".", ")", ";", "\n") else flag + " "

    return _KEYWORD.sub(spelled, text)


class _Accepted(frozenset):
    """A command's option strings, and its name (for a message about an option it lacks)."""

    def __new__(cls, flags, command: str):
        accepted = super().__new__(cls, flags)
        accepted.command = command
        return accepted


def _clean(text: str, stdin_names: dict, accepted: frozenset) -> str:
    """A message as the command line prints it: spooled standard input by its name, keywords as the command's flags,
    URLs without their secrets, on one line."""
    for tmp, name in stdin_names.items():
        text = text.replace(repr(tmp), name).replace(tmp, name)
    return " ".join(redacted(_flagged(text, accepted)).split())


def _quiet_broken_pipe() -> None:
    try:  # point stdout at devnull so the interpreter's final flush does not complain again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
