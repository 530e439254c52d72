"""The fusion methods: every `sql/fusion/<Name>.sql` file is one method, its header comment its metadata,
read as strictly as a measure's (templates.py): an unknown key, a missing required one or a bad value is an
error naming the file and line. Keys:

    fusion: Name                    required; the file's name
    description: text               required
    reference: text                 required: where the definition comes from
    param NAME: TYPE [= DEFAULT]    a typed parameter (templates.PARAM_TYPES, or `weights`: one number per
                                    run, read by the body as the column `weight`); no default: required
    aliases: A (tool), B, ...       other spellings (ranx's method names tagged `(ranx)`)
    note: text                      a remark for the reader (continuation lines)
    example: [(KEY=VALUE, ...)] runs: Q D S, ... | Q D S, ... => Q D VALUE, ...
                                    required, repeatable: a hand-computed fused run, in its ranked order, of
                                    the runs separated by `|`; the keys are the method's parameters and
                                    `norm` (default min-max), written as Python literals (weights=[0.3, 0.7])

The body is one aggregate expression over a (query, document)'s rows; `sql/fusion/_shared.sql` lists the
columns it may read and the normalisations.
"""
from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import SqlmetricsError
from .templates import Param, _Reader, _split, catalogue_folder, catalogue_loader, sql_dir, template_text

DEFAULT_NORM = "min-max"  # ranx fuse()'s default
_EXAMPLE = re.compile(r"^(?P<call>\(.*\))?\s*runs:\s*(?P<runs>.+?)\s*=>\s*(?P<fused>.+)$")
_VALUE = re.compile(r"^-?(\d+(\.\d+)?(e-?\d+)?|\d+/\d+)$")
_SCOPES = ("list", "query", "doc", "norm")


@dataclass(frozen=True)
class FusionExample:
    line: int
    options: dict  # norm and the method's parameters
    runs: tuple  # (((query, doc, score), ...), ...), one tuple per run
    fused: tuple  # ((query, doc, value as written), ...) in ranked order


@dataclass(frozen=True)
class FusionMethod:
    name: str
    description: str
    reference: str
    params: dict  # name -> Param
    aliases: tuple  # templates.Alias
    body: str
    examples: tuple
    notes: tuple
    path: object


class _FusionReader(_Reader):
    def param(self, line: int, name: str, value: str) -> Param:
        if value.strip() == "weights":
            return Param(name, "weights", None, True)
        return super().param(line, name, value)

    def example(self, line: int, value: str) -> FusionExample:
        m = _EXAMPLE.match(value.strip())
        if not m:
            raise self.fail(line, "example: write `example: [(KEY=VALUE, ...)] runs: Q D S, ... | Q D S, ... => "
                                  "Q D VALUE, ...`.")
        options = {}
        if m.group("call"):
            try:
                call = ast.parse("f" + m.group("call"), mode="eval").body
                options = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
            except (SyntaxError, ValueError):
                raise self.fail(line, f"example: {m.group('call')} is not (KEY=VALUE, ...) with literal values.") from None
        runs = tuple(self._rows(line, part, "run") for part in m.group("runs").split("|"))
        fused = self._rows(line, m.group("fused"), "fused")
        for _q, _d, v in fused:
            if not _VALUE.match(v):
                raise self.fail(line, f"example: the fused value {v!r} is not a decimal or a fraction a/b.")
        return FusionExample(line, options, runs, fused)

    def _rows(self, line: int, text: str, what: str) -> tuple:
        rows = []
        for entry in text.split(","):
            fields = entry.split()
            if len(fields) != 3:
                raise self.fail(line, f"example: each {what} entry is `query doc number`, got {entry.strip()!r}.")
            value = fields[2] if what == "fused" else self.number(line, fields[2], f"example {what} entry")
            rows.append((fields[0], fields[1], value))
        return tuple(rows)

    def read(self) -> FusionMethod:
        header, body, body_line = _split(template_text(self.path))
        single, params, examples, notes = {}, {}, [], []
        last = None
        keys = ("fusion", "description", "reference", "aliases", "param NAME", "note", "example")
        for line, text in header:
            if m := re.match(r"^ {2,}(\S.*)$", text):
                if last not in ("note", "description"):
                    raise self.fail(line, "an indented line continues a note or a description only.")
                if last == "note":
                    notes[-1] += " " + m.group(1)
                else:
                    single["description"] = (single["description"][0] + " " + m.group(1), single["description"][1])
                continue
            m = re.match(r"^ ?(?P<key>[A-Za-z_]+)(?:\s+(?P<name>\w+))?\s*:\s?(?P<value>.*)$", text)
            key = m.group("key") if m else None
            if key not in ("fusion", "description", "reference", "aliases", "param", "note", "example") or \
                    (key == "param") != bool(m.group("name")):
                raise self.fail(line, f"unknown header key {text.strip()!r}; the keys are {', '.join(keys)}.")
            value = m.group("value").strip()
            if key == "param":
                if m.group("name") in params:
                    raise self.fail(line, f"param {m.group('name')} is declared twice.")
                params[m.group("name")] = self.param(line, m.group("name"), value)
            elif key == "note":
                notes.append(value)
            elif key == "example":
                examples.append(self.example(line, value))
            elif key in single:
                raise self.fail(line, f"{key} is given twice (first on line {single[key][1]}).")
            else:
                single[key] = (value, line)
            last = key
        for key in ("fusion", "description", "reference"):
            if key not in single:
                raise self.fail(1, f"the header has no `{key}:` line; every fusion method needs one.")
        if not examples:
            raise self.fail(1, "the header has no `example:` line; every fusion method needs one.")
        name, name_line = single["fusion"]
        if name != self.path.stem:
            raise self.fail(name_line, f"the method is named {name!r} but the file {self.path.name!r}: they must "
                                       "be the same.")
        if not body:
            raise self.fail(body_line, "the template has no SQL body after its header.")
        for example in examples:
            for key in example.options:
                if key != "norm" and key not in params:
                    raise self.fail(example.line, f"example: {key!r} is not a parameter of {name} (nor norm).")
        aliases = self.aliases(single["aliases"][1], single["aliases"][0], params) if "aliases" in single else ()
        return FusionMethod(name, single["description"][0], single["reference"][0], params, aliases, body,
                            tuple(examples), tuple(notes), self.path)


def fusion_dir():
    return sql_dir() / "fusion"


@catalogue_loader
def fusion_methods() -> dict[str, FusionMethod]:
    """Every fusion method of sql/fusion/, by name. An alias two files claim is an error."""
    found, claimed = {}, {}
    for path in catalogue_folder(fusion_dir()).texts:
        if path.name.startswith("_"):
            continue
        method = _FusionReader(path).read()
        for spelling in (method.name, *(a.text for a in method.aliases)):
            key = spelling.lower()
            if key in claimed and claimed[key] != method.name:
                raise SqlmetricsError(f"{path}: {spelling!r} already names the fusion method {claimed[key]}.")
            claimed[key] = method.name
        found[method.name] = method
    return found


@lru_cache(maxsize=None)
def fusion_columns() -> dict[str, dict[str, str]]:
    """{scope: {name: SQL}} of sql/fusion/_shared.sql: the columns a body reads, and the normalisations."""
    header, _, _ = _split(template_text(fusion_dir() / "_shared.sql"))
    columns: dict = {scope: {} for scope in _SCOPES}
    for _line, text in header:
        if m := re.match(r"^ ?(list|query|doc|norm)\s+([\w-]+)\s*:\s*(.+)$", text):
            columns[m.group(1)][m.group(2)] = m.group(3)
    return columns


def normalisations() -> tuple:
    return tuple(fusion_columns()["norm"])


def _did_you_mean(given: str, known) -> str:
    close = difflib.get_close_matches(str(given).lower(), [k.lower() for k in known], n=1, cutoff=0.5)
    return f" Did you mean {next(k for k in known if k.lower() == close[0])!r}?" if close else ""


def fusion_method(name: str) -> FusionMethod:
    """The method a name or alias (any case: rrf, CombSUM, comb_sum, sum) names."""
    methods = fusion_methods()
    spellings = {}
    for m in methods.values():
        for spelling in (m.name, *(a.text for a in m.aliases)):
            spellings[spelling.lower()] = m
    if isinstance(name, str) and name.lower() in spellings:
        return spellings[name.lower()]
    ranx = ", ".join(a.text for m in methods.values() for a in m.aliases if a.tool == "ranx")
    raise SqlmetricsError(f"method={name!r} is not a fusion method.{_did_you_mean(name, methods)} The methods: "
                          f"{', '.join(methods)} (or ranx's names: {ranx}).")


def normalisation(name) -> str:
    """The normalisation's name as sql/fusion/_shared.sql spells it (ranx's min_max is min-max; None is none)."""
    if name is None:
        return "none"
    known = normalisations()
    text = str(name).lower().replace("_", "-")
    if text in known:
        return text
    raise SqlmetricsError(f"norm={name!r} is not a normalisation.{_did_you_mean(text, known)} The "
                          f"normalisations: {', '.join(known)}.")
