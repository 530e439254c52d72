"""The measure templates: every `sql/<Name>.sql` file is one measure, its header comment is its metadata.

A header is the block of `--` lines before the SQL body. Each line is one key, or an indented (`--   `)
continuation of the key above it. Keys, parsed strictly (an unknown key, a missing required one or a bad
value is an error naming the file and line):

    measure: Name                          required; the file's name
    description: text                      required
    reference: text                        required: where the definition comes from
    param NAME: TYPE [= DEFAULT]           a typed parameter (PARAM_TYPES); no default: required. A
                                           `choice` lists its options on continuation lines `NAME: SQL`.
                                           A choice named `compat` with options `trec_eval-9.0.8` and
                                           `trec_eval-10.0` takes the evaluation's compat= unless given
    at: NAME                               the parameter that `@` binds (`P@10` -> k=10, `IPrec@0.5` -> r)
    aliases: A (tool), B [p=v], ...        other spellings, separated by `, `: `{k}` captures a parameter
                                           (`{r:.2f}` also says how trec_eval prints it), `[p=v,q=w]` fixes
                                           some, `(tool)` says whose name it is (trec_eval, ranx, ir_measures)
    aggregate: mean | sum | geometric | once
                                           how per-list values become one number (default mean); `once`: the
                                           value is the run's own (rows: recommendations or ratings), repeated
                                           on each of its lists, and reported once; rows: ratings under
                                           another aggregate is one value per list (user), over its own pairs
    better: higher | lower                 (default higher)
    empty: 0 | null | NUMBER               the value of a list with no ranked document (default 0)
    range: LO..HI                          the bounds of a per-list value (HI may be empty: unbounded)
    body: NAME                             this measure's per-list value is NAME's (its SQL and sections,
                                           its params declared alike here): the file has no SQL of its own
                                           and changes what else it says (aggregate, aliases, examples).
                                           A param of NAME's that defaults to none may be left out: it
                                           stays absent (GMAP is AP over the whole ranking, no `k`)
    rows: ranking | preferences | positions | subtopics | recommendations | ratings | items | verdicts | embeddings
          | nuggets | overlap
                                           what the body aggregates (default ranking): the ranked rows of a
                                           list, its preferences' rows, its subtopic rows (diversity measures),
                                           its overlap rows (one per depth 1..max(length, relevant documents):
                                           how much its top and its ideal ranking's top have in common),
                                           one row per position 1..1000 (cwl_eval's depth) whether a
                                           document is there or not: rnk, relevance (NULL when the
                                           position is empty or its document unjudged) and num_ret (read
                                           MAX(num_ret): NULL when the list ranks nothing); its windows run over
                                           these rows, which also carry the collection columns, or (aggregate:
                                           once) over the whole run: one row per item it recommends, with the
                                           item's counts in the run and in the training interactions
                                           (history=), or one row per run row with a grade (its score the
                                           prediction); `items`: one row per ranked item of a list, with its
                                           similarities to the items above it and to the user's training
                                           items; or (RAG) the judged statements of the list's query
                                           (verdicts=), or the questions generated from its answer, each with
                                           its cosine to the question asked (embeddings=), or the nuggets of the
                                           list's topic with the run's support of each (nuggets=,
                                           assignments=); sql/_shared.sql
                                           lists the columns of each kind of row
    kind: ranking | rag | recsys           what it evaluates, for `sqlmetrics list` (default: recsys for the
                                           measures of a whole run and rows: items, rag for rows: verdicts,
                                           embeddings and nuggets, else ranking)
    window NAME: SQL                       a running value over the ranked list, read by the body as NAME
    ideal NAME: SQL                        an aggregate over the query's ideal ranking, read as NAME
    ideal_running NAME: SQL                a running value down the query's ideal ranking (by ideal_rnk), read
                                           by the body at the row's rank as NAME (NULL past the ideal's end);
                                           without OVER, a value of the position itself
    ideal_suffix NAME: SQL                 a window over the ideal_running values (by their names) in the
                                           ideal ranking's order, its frame as written (e.g. from the current
                                           position to the end), read by the body at the row's rank as NAME
    ideal_order: SQL                       what the ideal ranking (ideal_rnk) sorts by, descending (default
                                           relevance): a gain mapping may reorder the grades
    note: text                             a remark about the SQL, for the reader (continuation lines)
    example: [PARAMS] qrels: Q D G, ... run: Q D S, ... [history: U I, ...] [items: I DIM V, ...]
             [verdicts: Q OF V, ...] [embeddings: Q GENERATED X;Y;... NONCOMMITTAL, ...]
             [nuggets: Q N IMPORTANCE [WEIGHT], ... assignments: Q N ASSIGNMENT, ...] => VALUE
                                           required, repeatable: a hand-computed value of this measure with
                                           PARAMS (`@2`, `(p=0.5)@2`, nothing for the defaults), which the
                                           tests check on DuckDB and SQLite (VALUE: a decimal, a fraction
                                           a/b, or null). A `rows: subtopics` template's qrels entries
                                           are `Q S D G` (query, subtopic, document, grade); `history:` lists
                                           the training interactions (user, item) that `rows:
                                           recommendations` and `rows: items` measures read, `items:` the
                                           item features in long form (item, dimension, value); `verdicts:`
                                           the judged statements (query, what the statement is of, verdict)
                                           that `rows: verdicts` read; `embeddings:` the question embeddings
                                           (query, 0 for the question asked or 1.. for a generated one, the
                                           vector's numbers, noncommittal 0 or 1) that `rows: embeddings` read;
                                           `nuggets:` the topics' nuggets (query, nugget, vital or okay, and a
                                           weight on every entry or none) and `assignments:` the run's support
                                           of them (query, nugget, support, partial_support or not_support)
                                           that `rows: nuggets` read

`sql/_shared.sql` holds the columns every measure may read (row/window/query/collection scopes).
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from ..errors import SqlmetricsError

PARAM_TYPES = {
    "cutoff": "a positive integer (a rank cutoff)",
    "level": "an integer relevance grade",
    "count": "a non-negative integer (a number of documents)",
    "prob": "a number strictly between 0 and 1",
    "fraction": "a number between 0 and 1",
    "number": "a positive number",
    "real": "a finite number of either sign",
    "grade": "a positive number, or 'max' (the largest grade in the qrels)",
    "choice": "one of the listed options",
    "gains": "grade:gain pairs such as {1:3,2:9} (grades >= 0, gains at most 1e300 in magnitude; an unlisted grade "
             "gains its grade)",
}
TOOLS = ("trec_eval", "ranx", "ir_measures", "ndeval")
AGGREGATES = ("mean", "sum", "geometric", "once")
ROWS = ("ranking", "preferences", "positions", "subtopics", "recommendations", "ratings", "items", "verdicts",
        "embeddings", "nuggets", "overlap")
KINDS = ("ranking", "rag", "recsys")
# What a judged statement (rows: verdicts) is of: the answer's claims (checked against the retrieved context),
# the reference answer's claims (attributable to the context or not), the context's sentences (relevant to the
# question or not).
STATEMENTS_OF = ("answer", "reference", "context")
# A nugget's importance and a run's answer's support of it (nuggets=, assignments=: the AutoNuggetizer's labels, as
# nuggetizer writes them).
IMPORTANCES = ("vital", "okay")
ASSIGNMENTS = ("support", "partial_support", "not_support")

# `none` as a default means "absent": a comparison with an absent parameter is always true (no cutoff),
# and `relevance_level` means the evaluation's relevance level.
ABSENT = None


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: object  # a value, ABSENT, "relevance_level", "max_relevance" (a column) for `number`, "max" for `grade`
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
class Alias:
    pattern: str  # as written, without its tool tag: `map_cut_{k}`, `ndcg_burges@{k} [gain=exp]`
    tool: str | None  # whose spelling it is, when the header says so
    line: int

    @property
    def text(self) -> str:
        """The spelling without its fixed parameters."""
        return self.pattern.split("[")[0].strip()

    @property
    def fixed(self) -> dict:
        m = re.search(r"\[(.*)\]\s*$", self.pattern)
        if not m:
            return {}
        return dict((k.strip(), v.strip()) for k, _, v in (p.partition("=") for p in m.group(1).split(",")))

    @property
    def captures(self) -> dict:
        """{parameter: format spec} of the `{name}` / `{name:spec}` placeholders."""
        return {m.group(1): m.group(2) or "" for m in re.finditer(r"\{(\w+)(?::([^}]*))?\}", self.text)}


@dataclass(frozen=True)
class Example:
    line: int
    call: str  # the measure string: the template's name and the example's parameters
    qrels: tuple  # ((query, doc, grade), ...); with `rows: subtopics`, ((query, subtopic, doc, grade), ...)
    run: tuple  # ((query, doc, score), ...)
    value: str  # as written: a decimal, a fraction a/b, or null
    history: tuple = ()  # ((user, item), ...): the training interactions, for `rows: recommendations`
    items: tuple = ()  # ((item, dimension, value), ...): the item features in long form, for `rows: items`
    verdicts: tuple = ()  # ((query, statement_of, verdict), ...): the judged statements, for `rows: verdicts`
    embeddings: tuple = ()  # ((query, generated, (x, y, ...), noncommittal), ...): for `rows: embeddings`
    nuggets: tuple = ()  # ((query, nugget, importance, weight or None), ...): the topics' nuggets, for `rows: nuggets`
    assignments: tuple = ()  # ((query, nugget, assignment), ...): the run's support of them, for `rows: nuggets`


@dataclass(frozen=True)
class Measure:
    name: str
    description: str
    reference: str
    params: dict  # name -> Param, in declaration order
    at: str | None
    aliases: tuple  # Alias, in order
    aggregate: str
    better: str
    empty: float | None
    range: tuple  # (low, high); high None: unbounded
    body: str
    windows: dict  # name -> SQL
    ideals: dict  # name -> SQL
    ideal_order: str | None  # SQL the ideal ranking sorts by (None: relevance)
    ideal_running: dict  # name -> SQL (a window over the ideal ranking, read at the row's rank)
    ideal_suffix: dict  # name -> SQL (a window over the ideal_running values, from the row's rank to the end)
    examples: tuple  # Example, in order
    path: Path
    rows: str = "ranking"  # what the body aggregates: the ranked rows, the list's preferences or positions (ROWS)
    body_of: str | None = None  # the measure whose SQL and sections this one takes (`body:`)
    absent_params: dict = field(default_factory=dict)  # name -> Param: body_of's params left out here, absent
    kind_of: str | None = None  # the header's `kind:`, when it says one

    @property
    def kind(self) -> str:
        """What it evaluates (`sqlmetrics list`): ranked lists, a RAG pipeline's answers and contexts (rag), or a
        recommender's whole run or its items (recsys)."""
        if self.kind_of:
            return self.kind_of
        return {"recommendations": "recsys", "ratings": "recsys", "items": "recsys", "verdicts": "rag",
                "embeddings": "rag", "nuggets": "rag"}.get(self.rows, "ranking")


@dataclass(frozen=True)
class SharedColumn:
    name: str
    scope: str  # row | window | query | collection
    sql: str


_LINE = re.compile(r"^--(.*)$")
_KEY = re.compile(r"^ ?(?P<key>[A-Za-z_]+)(?:\s+(?P<name>\w+))?\s*:\s?(?P<value>.*)$")
_CONTINUATION = re.compile(r"^ {2,}(?P<text>\S.*)$")
_SINGLE = ("measure", "description", "reference", "at", "aliases", "aggregate", "better", "empty", "range",
           "ideal_order", "rows", "body", "kind")
_NAMED = ("param", "window", "ideal", "ideal_running", "ideal_suffix")
_REPEATED = ("note", "example")
_REQUIRED = ("measure", "description", "reference", "range", "example")
_EXAMPLE = re.compile(r"^(?P<call>[@(]\S*)?\s*qrels:\s*(?P<qrels>.+?)\s+run:\s*(?P<run>.+?)(?:\s+history:\s*(?P<history>.+?))?"
                      r"(?:\s+items:\s*(?P<items>.+?))?(?:\s+verdicts:\s*(?P<verdicts>.+?))?"
                      r"(?:\s+embeddings:\s*(?P<embeddings>.+?))?"
                      r"(?:\s+nuggets:\s*(?P<nuggets>.+?)\s+assignments:\s*(?P<assignments>.+?))?\s*=>\s*(?P<value>\S+)$")
_VALUE = re.compile(r"^(null|-?\d+(\.\d+)?|-?\d+/\d+)$")
_ALIAS_TAG = re.compile(r"^(?P<pattern>.+?)\s*\((?P<tool>[\w-]+)\)$")


def _split(text: str) -> tuple[list[tuple[int, str]], str, int]:
    """(numbered header lines, body, the body's first line number)."""
    header = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if not m:
            return header, "\n".join(lines[i:]).strip(), i + 1
        header.append((i + 1, m.group(1)))
    return header, "", len(lines) + 1


class _Reader:
    """Reads one template's header, failing at the first line it cannot read."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, line: int, what: str) -> SqlmetricsError:
        return SqlmetricsError(f"{self.path}:{line}: {what}")

    def number(self, line, raw, what):
        try:
            return float(raw)
        except ValueError:
            raise self.fail(line, f"{what}: {raw!r} is not a number.") from None

    def param(self, line: int, name: str, value: str) -> Param:
        m = re.fullmatch(r"(\w+)\s*(?:=\s*(\S+))?", value.strip())
        if not m:
            raise self.fail(line, f"param {name}: write `param {name}: TYPE` or `param {name}: TYPE = DEFAULT`.")
        ptype, raw = m.groups()
        if ptype not in PARAM_TYPES:
            raise self.fail(line, f"param {name}: unknown type {ptype!r}; the types are {', '.join(PARAM_TYPES)}.")
        if raw is None:
            if ptype == "level":
                return Param(name, ptype, "relevance_level", False, {})
            return Param(name, ptype, ABSENT, True, {})
        if raw == "none":
            return Param(name, ptype, ABSENT, False, {})
        if ptype == "gains":
            raise self.fail(line, f"param {name}: a gains parameter's default is none (every grade gains itself).")
        if raw == "relevance_level" and ptype == "level" or raw == "max_relevance" and ptype == "number" \
                or raw == "max" and ptype == "grade":
            return Param(name, ptype, raw, False, {})
        if ptype == "choice":
            return Param(name, ptype, raw, False, {})
        value = self.number(line, raw, f"param {name}'s default")
        ok = {"cutoff": value.is_integer() and value >= 1, "level": value.is_integer(),
              "count": value.is_integer() and value >= 0, "prob": 0 < value < 1,
              "fraction": 0 <= value <= 1, "number": value > 0, "real": True, "grade": value > 0}[ptype]
        if not ok:
            raise self.fail(line, f"param {name}: the default {raw!r} is not {PARAM_TYPES[ptype]}.")
        return Param(name, ptype, int(value) if ptype in ("cutoff", "level", "count") else value, False, {})

    def aliases(self, line: int, value: str, params: dict) -> tuple:
        out = []
        # Aliases are separated by a comma and a space: `utility.{a},{b},{c},{d}` is one alias.
        for part in filter(None, (p.strip() for p in re.split(r",\s+", value))):
            tool = None
            if m := _ALIAS_TAG.match(part):
                part, tool = m.group("pattern"), m.group("tool")
                if tool not in TOOLS:
                    raise self.fail(line, f"alias {part!r}: unknown tool ({tool}); the tools are {', '.join(TOOLS)}.")
            alias = Alias(part, tool, line)
            for name in [*alias.captures, *alias.fixed]:
                if name not in params:
                    raise self.fail(line, f"alias {part!r} names {name!r}, which is not a parameter of this measure.")
            out.append(alias)
        return tuple(out)

    def example(self, line: int, value: str) -> Example:
        m = _EXAMPLE.match(value.strip())
        if not m:
            raise self.fail(line, "example: write `example: [@K or (P=V)@K] qrels: Q D GRADE, ... run: Q D SCORE, ... "
                                  "=> VALUE`.")
        tables = []
        for what in ("qrels", "run"):
            rows = []
            for entry in m.group(what).split(","):
                fields = entry.split()
                if len(fields) != 3 and not (what == "qrels" and len(fields) == 4):
                    raise self.fail(line, f"example: each {what} entry is `query doc number` (subtopic qrels: "
                                          f"`query subtopic doc number`), got {entry.strip()!r}.")
                rows.append((*fields[:-1], self.number(line, fields[-1], f"example {what} entry")))
            tables.append(tuple(rows))
        history = tuple(tuple(entry.split()) for entry in (m.group("history") or "").split(",") if entry.strip())
        if any(len(pair) != 2 for pair in history):
            raise self.fail(line, "example: each history entry is `user item`.")
        verdicts = tuple(tuple(entry.split()) for entry in (m.group("verdicts") or "").split(",") if entry.strip())
        if any(len(v) != 3 or v[1] not in STATEMENTS_OF or v[2] not in ("0", "1") for v in verdicts):
            raise self.fail(line, f"example: each verdicts entry is `query OF VERDICT`, OF one of "
                                  f"{', '.join(STATEMENTS_OF)} and VERDICT 0 or 1.")
        if not _VALUE.match(m.group("value")):
            raise self.fail(line, f"example: the value {m.group('value')!r} is not a decimal, a fraction a/b or null.")
        embeddings = []
        for entry in filter(str.strip, (m.group("embeddings") or "").split(",")):
            fields = entry.split()
            if len(fields) != 4 or not fields[1].isdigit() or fields[3] not in ("0", "1"):
                raise self.fail(line, "example: each embeddings entry is `query GENERATED X;Y;... NONCOMMITTAL`, "
                                      "GENERATED 0 (the question asked) or more, NONCOMMITTAL 0 or 1.")
            vector = tuple(self.number(line, x, "example embedding") for x in fields[2].split(";"))
            embeddings.append((fields[0], int(fields[1]), vector, int(fields[3])))
        items = tuple(tuple(entry.split()) for entry in (m.group("items") or "").split(",") if entry.strip())
        if any(len(row) != 3 for row in items):
            raise self.fail(line, "example: each items entry is `item dimension value` (a category: `item genre 1`).")
        items = tuple((item, dimension, self.number(line, value, "example items entry")) for item, dimension, value in items)
        nuggets = tuple(tuple(entry.split()) for entry in (m.group("nuggets") or "").split(",") if entry.strip())
        if any(len(n) not in (3, 4) or n[2] not in IMPORTANCES for n in nuggets) or len({len(n) for n in nuggets}) > 1:
            raise self.fail(line, f"example: each nuggets entry is `query nugget IMPORTANCE [WEIGHT]`, IMPORTANCE one of "
                                  f"{', '.join(IMPORTANCES)}, a weight on every entry or on none.")
        assignments = tuple(tuple(e.split()) for e in (m.group("assignments") or "").split(",") if e.strip())
        if any(len(a) != 3 or a[2] not in ASSIGNMENTS for a in assignments):
            raise self.fail(line, f"example: each assignments entry is `query nugget ASSIGNMENT`, ASSIGNMENT one of "
                                  f"{', '.join(ASSIGNMENTS)}.")
        nuggets = tuple((*n[:3], self.number(line, n[3], "example nugget weight") if len(n) == 4 else None)
                        for n in nuggets)
        return Example(line, self.path.stem + (m.group("call") or ""), tables[0], tables[1], m.group("value"), history,
                       items, tuple((q, of, int(v)) for q, of, v in verdicts), tuple(embeddings), nuggets, assignments)

    def read(self) -> Measure:
        header, body, body_line = _split(template_text(self.path))
        single, params, sections, examples = self.keys(header)
        value, line = self.check_keys(single, params, examples)
        empty, bounds = self.bounds(value, line)
        self.check_body(value, line, body, body_line, sections, examples)
        return Measure(
            name=value["measure"], description=value["description"], reference=value["reference"],
            params=params, at=value.get("at"),
            aliases=self.aliases(line.get("aliases"), value.get("aliases", ""), params),
            aggregate=value.get("aggregate", "mean"), better=value.get("better", "higher"), empty=empty,
            range=bounds, body=body, windows=sections["window"], ideals=sections["ideal"],
            ideal_order=value.get("ideal_order"), ideal_running=sections["ideal_running"],
            ideal_suffix=sections["ideal_suffix"],
            examples=tuple(examples), path=self.path, rows=value.get("rows", "ranking"), body_of=value.get("body"),
            kind_of=value.get("kind"))

    def keys(self, header: list) -> tuple[dict, dict, dict, list]:
        """The header's lines read into (single keys: key -> (value, line), params, sections, examples)."""
        single: dict = {}
        params: dict = {}
        sections: dict = {"window": {}, "ideal": {}, "ideal_running": {}, "ideal_suffix": {}}
        examples = []
        last = None  # (key, name) of the line a continuation belongs to
        for line, text in header:
            if m := _CONTINUATION.match(text):
                self.continuation(line, m.group("text"), last, single, params)
                continue
            m = _KEY.match(text)
            key = m.group("key") if m else None
            if key not in (*_SINGLE, *_NAMED, *_REPEATED):
                known = ", ".join((*_SINGLE, *(f"{k} NAME" for k in _NAMED), *_REPEATED))
                raise self.fail(line, f"unknown header key {(key or text.strip())!r}; the keys are {known}.")
            name, value = m.group("name"), m.group("value").strip()
            if (key in _NAMED) != (name is not None):
                raise self.fail(line, f"{key}: write `{key} NAME: ...`." if key in _NAMED else f"write `{key}: ...`.")
            if key in _SINGLE:
                if key in single:
                    raise self.fail(line, f"{key} is given twice (first on line {single[key][1]}).")
                single[key] = (value, line)
            elif key == "param":
                if name in params:
                    raise self.fail(line, f"param {name} is declared twice.")
                params[name] = self.param(line, name, value)
            elif key in sections:
                sections[key][name] = value
            elif key == "example":
                examples.append(self.example(line, value))
            last = (key, name)
        return single, params, sections, examples

    def continuation(self, line: int, text: str, last: tuple | None, single: dict, params: dict) -> None:
        """An indented line: one of a choice's options, or more of the description (a note's is for the reader)."""
        if last is None:
            raise self.fail(line, "an indented line must continue a key above it.")
        key, name = last
        if key == "param" and params[name].type == "choice":
            option = re.fullmatch(r"([\w.-]+)\s*:\s*(.+)", text)
            if not option:
                raise self.fail(line, f"param {name}: each option is `--   NAME: SQL`.")
            params[name].options[option.group(1)] = option.group(2).strip()
        elif key in ("note", "description"):
            if key == "description":
                single[key] = (single[key][0] + " " + text, single[key][1])
        else:
            raise self.fail(line, f"{key}: takes no continuation lines.")

    def check_keys(self, single: dict, params: dict, examples: list) -> tuple[dict, dict]:
        """The keys' values checked (required, allowed, consistent): ({key: value}, {key: its line})."""
        for key in _REQUIRED:
            if key not in single and not (key == "example" and examples):
                raise self.fail(1, f"the header has no `{key}:` line; every template needs one.")
        for p in params.values():
            if p.type == "choice" and (not p.options or p.default not in p.options):
                raise self.fail(1, f"param {p.name}: a choice needs options, and its default among them.")
        value = {k: v for k, (v, _) in single.items()}
        line = {k: n for k, (_, n) in single.items()}
        if value["measure"] != self.path.stem:
            raise self.fail(line["measure"], f"the measure is named {value['measure']!r} but the file "
                                             f"{self.path.name!r}: they must be the same.")
        checks = (("aggregate", AGGREGATES), ("better", ("higher", "lower")), ("rows", ROWS), ("kind", KINDS))
        for key, allowed in checks:
            if key in value and value[key] not in allowed:
                raise self.fail(line[key], f"{key}: {value[key]!r} is not one of {', '.join(allowed)}.")
        once = value.get("aggregate") == "once"
        if once and value.get("rows") not in ("recommendations", "ratings") or \
                value.get("rows") == "recommendations" and not once:
            raise self.fail(line.get("rows", line.get("aggregate", 1)), "a measure of the whole run (rows: "
                            "recommendations, or ratings) has the run's one value (aggregate: once), and only it "
                            "(rows: ratings under another aggregate is each user's value).")
        if "at" in value and value["at"] not in params:
            raise self.fail(line["at"], f"at: {value['at']!r} is not a parameter of this measure.")
        return value, line

    def bounds(self, value: dict, line: dict) -> tuple:
        """(the empty list's value, (low, high) of the range)."""
        empty = value.get("empty", "0")
        empty = None if empty == "null" else self.number(line.get("empty", 1), empty, "empty")
        low, sep, high = value.get("range", "..").partition("..")
        if not sep:
            raise self.fail(line["range"], "range: write LO..HI (HI may be left empty).")
        bounds = (self.number(line.get("range"), low, "range") if low else None,
                  self.number(line.get("range"), high, "range") if high else None)
        return empty, bounds

    def check_body(self, value: dict, line: dict, body: str, body_line: int, sections: dict, examples: list) -> None:
        """The SQL body and sections (or `body:` instead of them), and the examples' qrels for the rows read."""
        if "body" in value:
            if body or any(sections.values()) or "ideal_order" in value or "rows" in value:
                raise self.fail(line["body"], f"body: {value['body']} gives this measure {value['body']}'s SQL; "
                                              "the file must have no SQL or sections of its own.")
        elif not body:
            raise self.fail(body_line, "the template has no SQL body after its header.")
        if value.get("rows") == "positions" and any(sections[k] for k in ("ideal", "ideal_running", "ideal_suffix")):
            raise self.fail(line["rows"], "rows: positions reads the positions alone: no ideal sections.")
        subtopics = value.get("rows") == "subtopics"
        for e in examples:
            if any(len(r) != (4 if subtopics else 3) for r in e.qrels):
                raise self.fail(e.line, "example: a `rows: subtopics` template's qrels entries are `query subtopic "
                                        "doc grade`, every other template's `query doc grade`.")


def sql_dir() -> Path:
    """The catalogue folder: `sqlmetrics/sql` in a wheel, the top-level `sql/` in a checkout (or editable)."""
    package = Path(__file__).resolve().parent.parent
    return package / "sql" if (package / "sql").is_dir() else package.parent / "sql"


def built_from() -> list:
    """What decides a parsed measure and a generated statement (caches.Stored's sources): the package's code,
    and the templates as this process read them (their digest)."""
    return [(Path(__file__).resolve().parent.parent, "*.py"), catalogue_folder(sql_dir()).digest,
            catalogue_folder(sql_dir() / "fusion").digest]


@dataclass(frozen=True)
class _Folder:
    texts: dict  # {path: text} of the folder's *.sql
    digest: bytes


@lru_cache(maxsize=None)
def catalogue_folder(folder: Path) -> _Folder:
    """A catalogue folder's templates, read once per process: the catalogue is parsed from these texts, and the
    entries kept on disk are named by their digest, so an entry always names the bytes its value was built from
    (a template edited while a process runs is seen by neither, until the caches are cleared)."""
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.sql"))}
    digest = hashlib.sha256(str(folder).encode())  # a value names its files (a measure's path): a moved copy builds anew
    for path, text in texts.items():
        digest.update(b"\0" + path.name.encode() + b"\0" + text.encode())
    return _Folder(texts, digest.digest())


def catalogue_loader(load):
    """lru_cache for a function that parses the catalogue's templates (measures, fusion methods): when it fails,
    the folders are read again on the next call (the templates are being edited)."""
    @lru_cache(maxsize=None)
    @functools.wraps(load)
    def cached():
        try:
            return load()
        except SqlmetricsError:
            catalogue_folder.cache_clear()
            raise
    return cached


def template_text(path: Path) -> str:
    """A template's text, as this process read its folder (catalogue_folder); a file not there, from the disk (which
    then says why: no such file)."""
    text = catalogue_folder(path.parent).texts.get(path)
    return path.read_text(encoding="utf-8") if text is None else text


def _alias_key(alias: Alias) -> str:
    """What two aliases must not share: the spelling with every placeholder made the same."""
    return re.sub(r"\{\w+(?::[^}]*)?\}", "{}", alias.text).lower()


@catalogue_loader
def measures() -> dict[str, Measure]:
    """Every measure of sql/, by name. A bad header, or an alias two files claim, is an error."""
    found: dict[str, Measure] = {}
    claimed: dict[str, tuple] = {}  # alias key -> (path, line)
    for path in catalogue_folder(sql_dir()).texts:
        if path.name.startswith("_"):
            continue
        m = _Reader(path).read()
        for alias in m.aliases:
            key = _alias_key(alias)
            if key in claimed and claimed[key][0] != path:
                other, other_line = claimed[key]
                raise SqlmetricsError(f"{path}:{alias.line}: the alias {alias.text!r} is already {other.stem}'s "
                                      f"({other}:{other_line}); an alias must name one measure.")
            claimed[key] = (path, alias.line)
        found[m.name] = m
    for name, m in list(found.items()):
        if m.body_of:
            other = found.get(m.body_of)
            if other is None or other.body_of:
                raise SqlmetricsError(f"{m.path}: body: {m.body_of!r} is not a measure with SQL of its own.")
            absent = {n: p for n, p in other.params.items() if n not in m.params}
            if m.params != {n: p for n, p in other.params.items() if n in m.params} \
                    or any(p.required or p.default is not ABSENT for p in absent.values()):
                raise SqlmetricsError(f"{m.path}: body: {other.name} reads its own parameters; declare them as "
                                      f"{other.path.name} does (one that defaults to none may be left out).")
            found[name] = replace(m, body=other.body, windows=other.windows, ideals=other.ideals,
                                  ideal_order=other.ideal_order, ideal_running=other.ideal_running,
                                  ideal_suffix=other.ideal_suffix, rows=other.rows, absent_params=absent)
    lowered = {n.lower(): n for n in found}
    for key, (path, line) in claimed.items():
        if key in lowered and lowered[key] != path.stem:
            raise SqlmetricsError(f"{path}:{line}: the alias {key!r} is the name of the measure {lowered[key]}.")
    return found


@lru_cache(maxsize=None)
def shared_columns() -> dict[str, SharedColumn]:
    header, _, _ = _split(template_text(sql_dir() / "_shared.sql"))
    cols = {}
    for _line, text in header:
        if m := re.match(r"^ ?(row|window|query|collection)\s+(\w+)\s*:\s*(.+)$", text):
            scope, name, sql = m.groups()
            cols[name] = SharedColumn(name, scope, sql)
    return cols
