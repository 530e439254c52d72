"""What every reader gives: one input as a DuckDB view (Loaded), the view's rows numbered to name a bad one,
and DuckDB's reason when an input cannot be read."""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from ...errors import SqlmetricsError

# The numbers in the names of the views and tables readers make: one count for the process, or one for each
# connection of its own (own_names()).
_counter: contextvars.ContextVar = contextvars.ContextVar("sqlmetrics_view_numbers", default=itertools.count())


@dataclass
class Loaded:
    """One input as a DuckDB view: the view's name, its column for each role, and how to name its rows."""

    view: str
    columns: dict  # role -> column in the view
    label: str  # "qrels file 'x.txt'" / "run 'bm25' (pandas DataFrame)"
    row_word: str  # "line" for text files (numbered as in an editor), "row" otherwise
    numbered: str  # a relation with line_no and the view's columns, read only to locate a bad row
    fixed_columns: bool = False  # TREC text: its fields are positional, a column mapping does not apply
    integer_grades: bool = False  # TREC text: trec_eval reads a grade as an integer (0.5 would be 0 there)
    temporary: str | None = None  # a folder of ours (a link to the input): removed after the evaluation
    line_of: Callable[[int], int] | None = None  # row number in `numbered` -> the file's line, when they differ
    file_of: Callable[[int], tuple] | None = None  # many files read as one (glob=True): row -> (file, 'line', 7)
    # A lazily read file (Parquet: read where the statement needs it) may turn out damaged in any later
    # query: after a DuckDB error, this query reads its every value, to tell whether the file is to blame.
    read_all: str | None = None
    # How the caller wrote a value the view holds as NULL, by column: a pandas frame's float columns hold NaN
    # (pandas' missing value; Arrow and DuckDB read it as NULL), which a message then names as NaN, not None.
    missing_as: dict = field(default_factory=dict)

    def at(self, *numbers: int) -> str:
        """'<label>, line 7': where a row of `numbered` is, for an error message."""
        return f"{self.label}, {self.lines(*numbers)}"

    def lines(self, *numbers: int) -> str:
        """'line 7', 'lines 7 and 9': rows of `numbered` as the file's lines (or rows)."""
        if self.file_of:
            return "; ".join(f"file {file!r}, {word} {row}" for file, word, row in map(self.file_of, numbers))
        lines = [self.line_of(n) if self.line_of else n for n in numbers]
        return f"{self.row_word}{'s' if len(lines) > 1 else ''} {' and '.join(map(str, lines))}"


def _fresh(prefix: str) -> str:
    return f"sqlm_{prefix}_{next(_counter.get())}"


@contextlib.contextmanager
def own_names():
    """Within: names counted from 0, for a connection nobody else names views on (one evaluation's own). The
    same inputs then get the same view names, so the same evaluation is the same statement, text for text."""
    token = _counter.set(itertools.count())
    try:
        yield
    finally:
        _counter.reset(token)


def _numbered(view: str, offset: int) -> str:
    return f"(SELECT ROW_NUMBER() OVER () + {offset} AS line_no, * FROM {view})"


def _types(con, view: str) -> dict:
    """{column: DuckDB type name} of a view, in its order."""
    return dict(r[:2] for r in con.execute(f"DESCRIBE {view}").fetchall())


def _first_line(e: Exception) -> str:
    """DuckDB's reason without its 'Invalid Input Error:' prefix. A Python filesystem's failure (fsspec,
    registered with DuckDB) comes as a traceback: its last line is the reason (before DuckDB's `LINE 1:`)."""
    lines = str(e).strip().splitlines()
    first = re.sub(r"^[A-Z][\w ]* Error: ", "", lines[0])
    if not first.startswith("Traceback (most recent call last)"):
        return first
    trace = itertools.takewhile(lambda line: not line.startswith("LINE "), lines)
    return [line.strip() for line in trace if line.strip()][-1]


def damaged(con, inputs: list) -> SqlmetricsError | None:
    """After a DuckDB error: the first lazily read input whose every value cannot be read, as the error to
    give instead (DuckDB's own would name neither the file nor the fix); None when all read."""
    for loaded in inputs:
        if loaded.read_all:
            try:
                con.execute(loaded.read_all).fetchall()
            except duckdb.Error as e:
                return SqlmetricsError(f"{loaded.label}: cannot be read as Parquet, the file is damaged "
                                       f"({_first_line(e)}). Write it again, or fetch it again.")
    return None
