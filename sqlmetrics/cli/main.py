"""The command line: `sqlmetrics eval | compare | list | demo | sql`, one module per subcommand.

    sqlmetrics eval qrels.txt run.txt [run2 ...] [-m nDCG@10 -m map] [-q] [--format trec]
    sqlmetrics compare qrels.txt bm25.run dense.run -m nDCG@10 -m AP --test fisher --format latex
    sqlmetrics list [NAME ...]
    sqlmetrics demo
    sqlmetrics sql -m nDCG@10 --dialect snowflake --qrels db.s.qrels --run db.s.run

Exit status: 0 on success, 2 on bad usage or bad input (one paragraph on stderr, no traceback unless
--debug), 1 on an internal error. Warnings about the data go to stderr, one line each. Beyond DuckDB and
sqlglot, only what a command uses is imported: scipy, pandas and pyarrow load only on the paths that need them.
"""
from __future__ import annotations

import argparse
import functools
import importlib.metadata
import os
import re
import sys
import warnings
from pathlib import Path

from ..errors import SqlmetricsError, SqlmetricsWarning
from . import compare, demo, evaluate, listing, sql
from .common import UsageError, remove, write_output

COMMANDS = (evaluate, compare, listing, demo, sql)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    parser = argparse.ArgumentParser(
        prog="sqlmetrics", allow_abbrev=False,
        description="Ranked-retrieval evaluation as SQL on DuckDB, trec_eval-exact.",
        epilog="Try `sqlmetrics demo`. Each command has its own --help.",
    )
    parser.add_argument("--version", action="version", version=f"sqlmetrics {importlib.metadata.version('sqlmetrics')}")
    # Abbreviated long options are refused: `--relevance 2` once silently meant --relevance-level.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=functools.partial(argparse.ArgumentParser, allow_abbrev=False))
    for command in COMMANDS:
        command.add_parser(sub, [common])
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # bare `sqlmetrics`: what it can do, not an error
        parser.print_help()
        return 0
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
                remove(Path(tmp))
                remove(Path(tmp).parent, folder=True)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
