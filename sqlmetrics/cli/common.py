"""What the subcommands share: usage errors, option flags built from the declarations in
sqlmetrics.options, runs from the command line (stdin too), atomic output, and a progress line."""
from __future__ import annotations

import argparse
import errno
import gzip
import io
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..catalogue import split_measure_list
from ..catalogue.fusion import DEFAULT_NORM, normalisations
from ..catalogue.names import COMPAT, parse
from ..catalogue.trec import expand as trec_eval_measures
from ..catalogue.trec import family as trec_eval_family
from ..errors import SqlmetricsError
from ..local.databases import _split_duckdb_target
from ..local.output import (arrow_column, database_target, output_format, process_folder, replace_file, writable_target,
                            write_table)
from ..local.readers.files import file_format
from ..local.readers.roles import KNOWN_NAMES
from ..local.readers.text import last_line_matching
from ..local.runs import unique_names
from ..options import ROLES, taken_by


class UsageError(Exception):
    """Bad command-line usage that argparse cannot see (exit status 2, or exit_status: `sqlmetrics trec_eval`
    exits as trec_eval does where a script would notice)."""

    def __init__(self, message: str, exit_status: int = 2):
        super().__init__(message)
        self.exit_status = exit_status


def add_option_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The command's flags for every option declared as taken by it, grouped as declared."""
    groups: dict = {}
    for o in taken_by(command):
        if o.kind == "object":
            continue
        if o.group not in groups:
            groups[o.group] = parser.add_argument_group(o.group)
        shown = "none" if o.default is None else o.default
        default = f" (default {shown})" if o.default is not None or o.choices else ""
        kwargs = {"help": o.help + default, "dest": o.name}
        if o.metavar:
            kwargs["metavar"] = o.metavar
        if o.kind in ("mapping", "names", "shares"):
            kwargs["action"] = "append"
        elif o.kind == "flag":
            kwargs.update(action="store_true", help=o.help)
        elif o.choices:
            kwargs.update(choices=["none" if c is None else c for c in o.choices],
                          default="none" if o.default is None else o.default)
        else:
            kwargs.update(type={"int": int, "float": float}.get(o.kind, str), default=o.default)
        groups[o.group].add_argument(*o.cli_flags, **kwargs)


def option_values(args, command: str) -> dict:
    """The keyword options of the command's flags, ready for evaluate(), compare() or render()."""
    values = {}
    for o in taken_by(command):
        value = getattr(args, o.name, None)
        if o.kind == "mapping":
            value = role_pairs(value, o.cli_flags[0])
        elif o.kind == "shares":
            value = name_shares(value, o.cli_flags[0])
        elif value == "none" and None in o.choices:
            value = None
        if value is not None:
            values[o.name] = value
    return values


def measures_from(args, default) -> list:
    """-m values (repeated or comma-separated; trec_eval's `official`, `all_trec`, `P.5,10` too), or the
    command's default when -m is not given; an empty -m '' is a mistake, not a request for the defaults."""
    if args.measure is None:
        return list(default)
    measures = []
    for value in args.measure:  # trec_eval's nicknames and parameter lists first: `-m P.5,10` is one request
        expanded = trec_eval_measures(value.strip(), getattr(args, "compat", COMPAT))
        if expanded is None and not _a_measure(value.strip()):
            expanded = trec_eval_family(value.strip())  # `-m iprec_at_recall`: its 11 points, as trec_eval reads it
        # trec_eval merges what its nicknames and lists repeat (`-m official -m P.5,10`); so does this
        measures += split_measure_list([value]) if expanded is None else [m for m in expanded if m not in measures]
    if not measures:
        raise UsageError("-m/--measure was given without a measure; name one (e.g. -m nDCG@10) or leave -m out "
                         "for the default set.")
    return measures


def _a_measure(text: str) -> bool:
    """Whether the text is a measure of the catalogue in its own right (`recall` is SetR, not trec_eval's family)."""
    try:
        parse(text)
    except SqlmetricsError:
        return False
    return True


def add_fusion_flags(p, method_flags=("--method",), required=True) -> None:
    p.add_argument(*method_flags, dest="method", required=required, metavar="METHOD",
                   help="the fusion method: RRF, CombSUM, CombMNZ, CombMAX, CombMIN, CombMED, CombANZ, WSum, ISR, "
                        "LogISR, Borda, RBC, or ranx's name (rrf, sum, mnz, wsum, bordafuse, ...)")
    p.add_argument("--norm", default=DEFAULT_NORM, choices=normalisations(),
                   help=f"the score normalisation, per query and run (default {DEFAULT_NORM}, as ranx)")
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                   help="a parameter of the method, e.g. -p k=60 (RRF), -p phi=0.8 (RBC); repeatable")
    p.add_argument("--weights", metavar="W,W,...", help="WSum's weights, one per run in order, e.g. 0.3,0.7")


def fusion_params(args) -> dict:
    params = {}
    for pair in args.param or []:
        name, eq, value = (s.strip() for s in pair.partition("="))
        if not eq or not name:
            raise UsageError(f"-p/--param takes NAME=VALUE, such as -p k=60; got {pair!r}.")
        if name in params:
            raise UsageError(f"-p {name}= is given twice ({name}={params[name]}, {pair}); give it once.")
        params[name] = _number(value, f"-p {pair!r}")
    if args.weights is not None:
        params["weights"] = [_number(w.strip(), f"--weights {args.weights!r}") for w in args.weights.split(",")]
    return params


def _number(text: str, flag: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not a number.") from None
    return int(value) if value.is_integer() else value


def role_pairs(pairs, flag: str, roles: tuple = ROLES) -> dict | None:
    """ROLE=NAME pairs (NAME=ROLE is taken too, when only the right side is one of the roles)."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        left, eq, right = (s.strip() for s in pair.partition("="))
        if not eq or not left or not right:
            raise UsageError(f"{flag} takes ROLE=NAME, such as {flag} query_id=qid; got {pair!r}.")
        if left not in roles and right in roles:
            left, right = right, left
        out[left] = right
    return out


def name_shares(pairs, flag: str) -> dict | None:
    """NAME=NUMBER pairs, such as --split control=1 --split treatment=1."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        name, eq, share = (s.strip() for s in pair.rpartition("="))
        try:
            out[name] = float(share)
        except ValueError:
            name = ""
        if not eq or not name:
            raise UsageError(f"{flag} takes NAME=SHARE, such as {flag} control=1; got {pair!r}.")
    return out


# Names of standard output: written to as such, never replaced by a file (local.output refuses /dev, /proc).
STDOUT_NAMES = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


def check_output(path: str | None) -> None:
    """Fail before any work when --output cannot be written (see local.output.writable_target)."""
    if path and path not in STDOUT_NAMES:
        target = database_target(path)
        writable_target(target[0] if target else path, f"--output {path!r}")


# Formats that are not text: written to a file (-o), never to standard output.
BINARY_FORMATS = ("parquet", "duckdb")


def chosen_format(args, formats, default: str, extensions: dict | None = None) -> str:
    """The command's output format: -o's extension (or file.duckdb:table) and -f, which must agree, else the
    default; --into-mode only with a DuckDB table. Checked before any work is done."""
    path = args.output
    fmt = args.format
    if path and path not in STDOUT_NAMES:
        fmt = output_format(path, args.format, formats, f"--output {path!r}", extensions=extensions)
    fmt = fmt or default
    if fmt in BINARY_FORMATS and (not path or path in STDOUT_NAMES):
        raise UsageError(f"-f {fmt} is not text for a terminal: write it to a file, -o results.parquet.")
    if getattr(args, "into_mode", "create") != "create" and fmt != "duckdb":
        raise UsageError(f"--into-mode {args.into_mode} says how to write into a DuckDB table: -o file.duckdb:table.")
    return fmt


@dataclass
class TableOutput:
    """Rows for -o to write typed (Parquet, a DuckDB table, and compare's CSV, TSV, JSON Lines). types: pyarrow
    type names of the columns that need one (measures 'float64', ids 'string'); the others keep the type of
    their values (a date stays a date). key: the columns naming a row, for --into-mode merge."""

    names: list
    rows: list
    types: dict
    key: tuple
    fmt: str
    into_mode: str = "create"

    def arrow(self):
        import pyarrow as pa  # only on this path: the command line's text outputs never pay its import

        return pa.table({n: arrow_column([r[i] for r in self.rows], self.types.get(n)) for i, n in enumerate(self.names)})


@dataclass
class ArrowOutput:
    """A pyarrow Table for -o to write as a TableOutput is, built by DuckDB: millions of rows, no Python loop."""

    table: object
    key: tuple
    fmt: str
    into_mode: str = "create"

    def arrow(self):
        return self.table


@dataclass
class TextFile:
    """Text DuckDB wrote to a file in this process's folder (millions of lines, never in memory whole): copied
    to stdout in chunks, or into place atomically; removed afterwards."""

    path: str


def write_output(content, path: str | None) -> None:
    """Write text to stdout, or atomically to a file: a temp file beside it, then a rename (local.output);
    a TableOutput or ArrowOutput through local.output.write_table; a TextFile's text the same way, streamed."""
    if isinstance(content, (TableOutput, ArrowOutput)):
        if not path or path in STDOUT_NAMES:  # text rows (compare -f csv without -o): written, then printed
            if content.fmt in ("parquet", "duckdb"):
                raise UsageError(f"-f {content.fmt} writes a file: give -o FILE.")
            text = os.path.join(process_folder(), f"stdout-{os.getpid()}-{threading.get_ident()}.{content.fmt}")
            write_table(content.arrow(), text, content.fmt, "standard output")
            write_output(TextFile(text), None)
            return
        write_table(content.arrow(), path, content.fmt, f"--output {path!r}", content.into_mode, content.key)
        return
    if isinstance(content, TextFile):
        try:
            if not path or path in STDOUT_NAMES:
                with open(content.path, encoding="utf-8", newline="") as f:
                    while chunk := f.read(1 << 20):
                        _to_stdout(chunk)
                return
            _to_file(path, lambda tmp: shutil.copyfile(content.path, tmp))
        finally:
            os.unlink(content.path)
        return
    if not path or path in STDOUT_NAMES:
        _to_stdout(content)
        return

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(content)

    _to_file(path, write)


def _to_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a terminal that cannot show superscripts or dashes: never fail on that
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
    sys.stdout.flush()


def _to_file(path: str, write) -> None:
    try:
        replace_file(path, f"--output {path!r}", write)
    except OSError as e:
        raise UsageError(f"cannot write --output {path!r}: {e.strerror or e}.") from None


class Progress:
    """A progress line on stderr while something slow runs, only when stderr is a terminal: the label, the
    time, the step the evaluation is at and the rows it has read (given through stage(), which evaluate()
    calls as `_progress`), and a bar of DuckDB's progress through the step's query when DuckDB knows it.

    Nothing is shown for the first `delay` seconds (SQLMETRICS_PROGRESS_DELAY, default 2), nor ever when
    stderr is piped or redirected, or with `quiet` (--quiet).
    """

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    BAR = 10  # characters

    def __init__(self, label: str, stream=None, delay: float | None = None, interval: float = 0.1,
                 quiet: bool = False):
        if delay is None:
            delay = float(os.environ.get("SQLMETRICS_PROGRESS_DELAY", "2"))
        self.label, self.delay, self.interval, self.quiet = label, delay, interval, quiet
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._drawing = threading.Lock()
        self._thread = None
        self._step, self._rows, self._con = "", None, None
        self._frame = 0
        self.shown = False

    def _tty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __enter__(self):
        if self._tty() and not self.quiet:
            self._start = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="sqlmetrics-progress", daemon=True)
            self._thread.start()
        return self

    @property
    def listener(self):
        """stage, for evaluate(_progress=) while the line may show; None when it never will (piped, --quiet)."""
        return self.stage if self._thread is not None else None

    def stage(self, step: str, rows: int | None = None, con=None) -> None:
        """The evaluation is at `step`, having read `rows` rows; `con` runs the step's queries (asked for
        its progress). Drawn at once when the line is showing, so that no step goes unseen."""
        self._step, self._rows, self._con = step, rows if rows is not None else self._rows, con
        if self._thread is not None and time.monotonic() - self._start >= self.delay:
            self._draw()

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set() and self._draw():
            self._stop.wait(self.interval)

    def _percent(self) -> float | None:
        """DuckDB's progress through the query `con` runs (0-100), None when it has none to give."""
        try:
            done = self._con.query_progress() if self._con is not None else -1
        except duckdb.Error:  # closed at the end of the evaluation: no bar this time
            return None
        return done if 0 <= done <= 100 else None

    def _draw(self) -> bool:
        with self._drawing:
            if self._stop.is_set():
                return False
            # The time before the step: a line cut to a narrow terminal loses the bar first.
            parts = [f"{self.FRAMES[self._frame % len(self.FRAMES)]} {self.label}",
                     f"{time.monotonic() - self._start:.0f} s"]
            parts += [self._step] if self._step else []
            parts += [f"{self._rows:,} rows"] if self._rows else []
            percent = self._percent()
            if percent is not None:
                filled = int(percent / 100 * self.BAR)
                parts.append(f"{'█' * filled}{'░' * (self.BAR - filled)} {percent:3.0f}%")
            line = " · ".join(parts)
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns or 80  # 0: a terminal of unknown size
            except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
                width = 80
            try:  # one line, cut to the terminal's width: a wrapped line could not be redrawn in place
                self.stream.write(f"\r{line[:width - 1]}\033[K")
                self.stream.flush()
            except (OSError, ValueError):
                return False
            self.shown = True
            self._frame += 1
            return True

    def __exit__(self, *exc) -> None:
        with self._drawing:
            self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.shown:
                try:
                    self.stream.write("\r\033[K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass


def _sniff_suffix(head: bytes) -> str:
    """A suffix for data arriving on stdin, so the reader picks the right format."""
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
    fields = [f.strip().strip('"').lower() for f in first.replace(",", "\t").split("\t")]
    if any(f in KNOWN_NAMES["query_id"] for f in fields):  # a header row: tabular
        return ".csv" if "," in first else ".tsv"
    return ".txt"


def spool_stdin(args, kind: str = "run", example: str = "cat run.txt | sqlmetrics eval qrels.txt -") -> str:
    """Standard input saved to a file (the readers take files) in this process's temporary folder, copied in
    chunks so that a large run never sits in memory whole. main() removes the file, whatever happens.
    kind and example word the error for empty input: what '-' stands for, and a command that pipes one."""
    stdin = sys.stdin.buffer
    head = stdin.read(65536)  # enough to tell the format
    blank = not head.strip()
    folder = tempfile.gettempdir()
    try:
        folder = process_folder()
        fd, path = tempfile.mkstemp(dir=folder, prefix="stdin-", suffix=_sniff_suffix(head))
        args._stdin_names[path] = "<stdin>"
        with open(fd, "wb") as f:
            chunk = head
            while chunk:
                f.write(chunk)
                chunk = stdin.read(1 << 20)
                blank = blank and not chunk.strip()
    except OSError as e:
        # A full or read-only TMPDIR is the usual cause; say where, and what to do.
        if e.errno == errno.ENOSPC:
            raise UsageError(f"no space left on device while saving standard input to {folder}; free space or "
                             "set TMPDIR to a folder on a disk with room.") from None
        raise UsageError(f"cannot save standard input to {folder}: {e.strerror or e}; free space or set TMPDIR "
                         "to a writable folder.") from None
    if blank:
        raise UsageError(f"the {kind} '-' (standard input) is empty: pipe the {kind} into the command, "
                         f"e.g. `{example}`.")
    return path


def command_runs(args) -> dict:
    """{name: path} for the command's runs; '-' is standard input, spooled to a temp file."""
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
    paths = [spool_stdin(args) if r == "-" else r for r in args.runs]
    return dict(zip(names, paths))


def remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def trec_line(name: str, qid: str, value, prefix: str = "") -> str:
    """One line as trec_eval prints it: the name padded to 22 (after the prefix, 'Z' for z-scores), the query,
    the value: an integer as it is, a number with 4 decimals, text as it is."""
    text = value if isinstance(value, (str, int)) else f"{value:6.4f}" if value == value else "  -nan"  # C's 0.0/0.0
    return f"{prefix}{name:<22}\t{qid}\t{text}\n"


# A TREC line that holds data: not blank, not a comment (trec_eval 10.0), as the reader reads them.
_TREC_DATA_LINE = re.compile(rb"^[ \t\v\f\r]*[^ \t\n\v\f\r#]")


def trec_tag(path: str) -> str | None:
    """The run tag of a TREC run file as trec_eval prints it for `runid`: the 6th field of its last line
    (trec_eval keeps each line's tag as it reads them; get_trec_results.c). None for what Python cannot read."""
    if _split_duckdb_target(path) or file_format(Path(path)) != "trec":
        return None
    line = last_line_matching(Path(path), _TREC_DATA_LINE)
    fields = (line or b"").split()  # bytes split at C's whitespace, as trec_eval splits
    return fields[5].decode("utf-8", "replace") if len(fields) >= 6 else None
