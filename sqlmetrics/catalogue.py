"""The measure catalogue: every `sql/<Name>.sql` file is one measure, its header comment is its metadata.

A header is a block of `-- key: value` lines before the SQL body. Keys:

    measure, description, reference       text
    param NAME: TYPE [= DEFAULT]          a typed parameter (types below); `choice` lists its options on
                                          the following `--   option: SQL` lines
    at: NAME                              the parameter that `@` binds (`P@10` -> k=10, `IPrec@0.5` -> r)
    aliases: A, B [p=v], ...              other spellings; `{k}` captures a parameter, `[p=v]` fixes one
    aggregate: mean | sum | geometric     how per-list values become one number (default mean)
    better: higher | lower                (default higher)
    empty: 0 | null                       the value of a list with no ranked document (default 0)
    range: LO..HI                         documented bounds
    window NAME: SQL                      a running value over the ranked list, read by the body as NAME
    ideal NAME: SQL                       an aggregate over the query's ideal ranking (ideal_rnk), read as NAME

`sql/_shared.sql` holds the columns every measure may read (row/window/query/collection scopes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PARAM_TYPES = {
    "cutoff": "a positive integer (a rank cutoff)",
    "level": "an integer relevance grade",
    "prob": "a number strictly between 0 and 1",
    "fraction": "a number between 0 and 1",
    "number": "a positive number",
    "choice": "one of the listed options",
}

# `none` as a default means "absent": a comparison with an absent parameter is always true (no cutoff),
# and `relevance_level` means the evaluation's relevance level.
ABSENT = None


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object  # a value, ABSENT, "relevance_level", or a column name for `number` (max_relevance)
    required: bool
    options: dict = field(default_factory=dict)  # choice: option -> SQL fragment

    def describe_default(self) -> str:
        if self.required:
            return "required"
        if self.default is ABSENT:
            return "whole ranking" if self.type == "cutoff" else "none"
        if self.default == "relevance_level":
            return "the evaluation's level"
        return str(self.default)


@dataclass(frozen=True)
class Measure:
    name: str
    description: str
    reference: str
    params: dict  # name -> Param, in declaration order
    at: str | None
    aliases: tuple  # raw alias patterns
    aggregate: str
    better: str
    empty: float | None
    range: str
    body: str
    windows: dict  # name -> SQL
    ideals: dict  # name -> SQL
    path: Path


@dataclass(frozen=True)
class SharedColumn:
    name: str
    scope: str  # row | window | query | collection
    sql: str


_HEADER = re.compile(r"^--\s?(.*)$")
_KEY = re.compile(r"^(measure|description|reference|at|aliases|aggregate|better|empty|range)\s*:\s*(.*)$")
_PARAM = re.compile(r"^param\s+(\w+)\s*:\s*(\w+)\s*(?:=\s*(\S+))?\s*$")
_OPTION = re.compile(r"^\s+(\w+)\s*:\s*(.+)$")
_SECTION = re.compile(r"^(window|ideal|row|query|collection)\s+(\w+)\s*:\s*(.+)$")


def _split_file(text: str) -> tuple[list[str], str]:
    header, body = [], []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not m:
            body = lines[i:]
            break
        header.append(m.group(1))
    return header, "\n".join(body).strip()


def _coerce_default(ptype: str, raw: str | None):
    if raw is None:
        return ABSENT, True
    if raw == "none":
        return ABSENT, False
    if raw in ("relevance_level", "max_relevance"):
        return raw, False
    if ptype in ("cutoff", "level"):
        return int(raw), False
    if ptype == "choice":
        return raw, False
    return float(raw), False


def _parse_measure(path: Path) -> Measure:
    header, body = _split_file(path.read_text(encoding="utf-8"))
    meta: dict[str, str] = {}
    params: dict[str, Param] = {}
    windows: dict[str, str] = {}
    ideals: dict[str, str] = {}
    choice_for: str | None = None
    for line in header:
        if choice_for and (m := _OPTION.match(line)):
            params[choice_for].options[m.group(1)] = m.group(2).strip()
            continue
        choice_for = None
        if m := _PARAM.match(line):
            name, ptype, raw = m.groups()
            if ptype not in PARAM_TYPES:
                raise ValueError(f"{path.name}: unknown parameter type {ptype!r}")
            if ptype == "level" and raw is None:
                raw = "relevance_level"
            default, required = _coerce_default(ptype, raw)
            params[name] = Param(name, ptype, default, required, {})
            if ptype == "choice":
                choice_for = name
        elif m := _SECTION.match(line):
            kind, name, sql = m.groups()
            (windows if kind == "window" else ideals)[name] = sql
        elif m := _KEY.match(line):
            meta[m.group(1)] = m.group(2).strip()
    if "measure" not in meta or meta["measure"] != path.stem:
        raise ValueError(f"{path.name}: the header must name the measure as the file does (-- measure: {path.stem})")
    empty = meta.get("empty", "0")
    return Measure(
        name=meta["measure"],
        description=meta.get("description", ""),
        reference=meta.get("reference", ""),
        params=params,
        at=meta.get("at"),
        aliases=tuple(a.strip() for a in meta.get("aliases", "").split(",") if a.strip()),
        aggregate=meta.get("aggregate", "mean"),
        better=meta.get("better", "higher"),
        empty=None if empty == "null" else float(empty),
        range=meta.get("range", ""),
        body=body,
        windows=windows,
        ideals=ideals,
        path=path,
    )


def sql_dir() -> Path:
    """The catalogue folder: `sqlmetrics/sql` in a wheel, the top-level `sql/` in a checkout (or editable)."""
    here = Path(__file__).resolve().parent
    return here / "sql" if (here / "sql").is_dir() else here.parent / "sql"


@lru_cache(maxsize=None)
def measures() -> dict[str, Measure]:
    found = {}
    for path in sorted(sql_dir().glob("*.sql")):
        if not path.name.startswith("_"):
            m = _parse_measure(path)
            found[m.name] = m
    return found


@lru_cache(maxsize=None)
def shared_columns() -> dict[str, SharedColumn]:
    header, _ = _split_file((sql_dir() / "_shared.sql").read_text(encoding="utf-8"))
    cols = {}
    for line in header:
        if m := _SECTION.match(line):
            scope, name, sql = m.groups()
            cols[name] = SharedColumn(name, scope, sql)
    return cols


def markdown_table() -> str:
    """The README's measure table, generated from the sql/ headers (a test fails when the README drifts)."""
    rows = ["| measure | parameters (default) | aggregate | aliases | what it is | reference |",
            "|---|---|---|---|---|---|"]
    for m in measures().values():
        params = ", ".join(
            f"`{'@' if p.name == m.at else ''}{p.name}`"
            + (f" {'/'.join(p.options)}" if p.type == "choice" else f" {p.type}")
            + f" ({p.describe_default()})"
            for p in m.params.values()
        )
        aliases = ", ".join(f"`{a}`" for a in m.aliases)
        rows.append(f"| `{m.name}` | {params or '–'} | {m.aggregate} | {aliases or '–'} | {m.description} | {m.reference} |")
    return "\n".join(rows)


README_START, README_END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"


def readme_with_table(readme: str) -> str:
    head, _, rest = readme.partition(README_START)
    _, _, tail = rest.partition(README_END)
    return f"{head}{README_START}\n{markdown_table()}\n{README_END}{tail}"


if __name__ == "__main__":  # python -m sqlmetrics.catalogue README.md  (rewrites the table in place)
    import sys

    target = Path(sys.argv[1])
    target.write_text(readme_with_table(target.read_text(encoding="utf-8")), encoding="utf-8")
