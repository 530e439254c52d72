"""Measure names: the ir_measures grammar is canonical, trec_eval and ranx spellings are aliases.

    nDCG@10   P(rel=2)@5   RBP(p=0.8)   SetF(beta=0.5)   nDCG(gain='exp')@10   IPrec@0.5
    P_10  P.10  map_cut_100  ndcg_cut.10  iprec_at_recall_0.10  (trec_eval)
    precision@5  ndcg_burges@10  rbp.95  r-precision  ndcg@10-l2  (ranx; -l2 sets rel=2)

Every name is parsed and its parameters validated before any data is read.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ..caches import Stored
from ..errors import SqlmetricsError
from ..options import BY_NAME
from .templates import ABSENT, PARAM_TYPES, Alias, Measure, Param, built_from, measures


@dataclass(frozen=True)
class MeasureCall:
    """One requested measure: the string as the caller wrote it, its template and bound parameters."""

    text: str
    measure: Measure
    params: tuple  # ((name, value), ...) for every declared parameter, defaults filled in
    given: frozenset = frozenset()  # the parameters the caller wrote (the rest are defaults)
    # ir_measures' AP(judged_only=True): this measure alone sees each list without its unjudged documents
    # (trec_eval's -J for one measure); the local evaluation computes it in a second statement beside the rest.
    judged_only: bool = False

    @property
    def values(self) -> dict:
        return dict(self.params)

    @property
    def canonical(self) -> str:
        """The ir_measures spelling, with only the parameters that differ from their defaults."""
        m, vals = self.measure, self.values
        inner = []
        for p in m.params.values():
            if p.name == m.at or p.name not in self.given:
                continue
            v = vals[p.name]
            if p.type == "gains":
                inner.append(f"{p.name}={{{','.join(f'{g}:{_fmt(x)}' for g, x in v)}}}")
            else:
                inner.append(f"{p.name}={v!r}" if isinstance(v, str) else f"{p.name}={_fmt(v)}")
        if self.judged_only:
            inner.append("judged_only=True")
        text = m.name + (f"({','.join(inner)})" if inner else "")
        if m.at and vals[m.at] is not ABSENT:
            text += f"@{_fmt(vals[m.at])}"
        return text


def _fmt(v) -> str:
    if isinstance(v, tuple):  # gains, as trec_eval writes them: 1=3,2=9
        return ",".join(f"{g}={_fmt(x)}" for g, x in v)
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


_NUMBER = r"[0-9]*\.?[0-9]+"
_CANONICAL = re.compile(r"^(?P<name>[A-Za-z_][\w-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<at>[^@()]+))?$")
_RANX_LEVEL = re.compile(r"^(?P<base>.+)-l(?P<rel>-?\d+)$")


def _alias_regex(alias: Alias, measure: Measure) -> re.Pattern:
    """`map_cut_{k}` -> a regex with a named group per parameter (`{r:.2f}` reads any number too; a `real`
    parameter's number may be negative: `utility.2,-1,0,0`)."""
    regex = ""
    for part in re.split(r"(\{\w+(?::[^}]*)?\})", alias.text):
        name = re.fullmatch(r"\{(\w+)(?::[^}]*)?\}", part)
        ptype = name and measure.params[name.group(1)].type
        if ptype == "gains":  # trec_eval's pairs: ndcg.1=3,2=9,4=4.5
            pair = rf"-?[0-9]+=-?{_NUMBER}(?:[eE][+-]?[0-9]+)?"  # a gain as trec_eval's atof reads it: 1e2 too
            regex += rf"(?P<{name.group(1)}>{pair}(?:,{pair})*)"
        elif name:
            sign = "-?" if ptype == "real" else ""
            regex += rf"(?P<{name.group(1)}>{sign}{_NUMBER})"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}$", re.IGNORECASE)


@lru_cache(maxsize=None)
def _aliases() -> list:
    return [(_alias_regex(a, m), a.fixed, m) for m in measures().values() for a in m.aliases]


# A value each type of parameter takes, to spell an alias as a suggestion that works (`iprec_at_recall_0.50`, not
# `iprec_at_recall_10`, which a fraction refuses).
_EXAMPLE_VALUE = {"cutoff": "10", "level": "1", "count": "10", "prob": "0.5", "fraction": "0.50", "number": "1",
                  "real": "1", "grade": "1", "gains": "1=3"}


def _all_spellings() -> list[str]:
    names = []
    for m in measures().values():
        names.append(f"{m.name}@k" if m.at and m.params[m.at].required else m.name)
        for a in m.aliases:
            params = {**m.params, **m.absent_params}
            names.append(re.sub(r"\{(\w+)(?::[^}]*)?\}", lambda g: _EXAMPLE_VALUE.get(params[g[1]].type, "10")
                                if g[1] in params else "10", a.text))
    return list(dict.fromkeys(names))  # once each: a measure and its alias may be spelled alike


def _edits(a: str, b: str) -> int:
    """Levenshtein distance, ignoring case: how far a spelling is from what was typed."""
    a, b = a.lower(), b.lower()
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def _unknown(text: str, what: str) -> SqlmetricsError:
    base = re.split(r"[@(_.]", text)[0] or text
    spellings = _all_spellings()
    candidates = difflib.get_close_matches(text, spellings, n=20, cutoff=0.5) or difflib.get_close_matches(
        base, spellings, n=20, cutoff=0.5)
    # The nearest spellings first, by edits to what was typed: nDGC@10 is nDCG@10 with two letters swapped
    close = sorted(candidates, key=lambda c: (_edits(text, c), candidates.index(c)))[:4]
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return SqlmetricsError(f"unknown measure {text!r}: {what}.{hint} `sqlmetrics list` shows the catalogue.")


_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _convert(measure: Measure, p: Param, raw, text: str):
    """Validate one parameter value (from the name string or a default) against its type."""
    where = f"measure {text!r}, parameter {p.name!r}"
    if p.type == "choice":
        value = str(raw).strip().strip("'\"")
        if value not in p.options:
            raise SqlmetricsError(f"{where}: {value!r} is not one of {', '.join(p.options)}.")
        return value
    if p.type == "gains":
        return _gains(str(raw), where)
    if p.type == "grade" and isinstance(raw, str) and raw.strip().strip("'\"") == "max":
        return "max"  # the largest grade in the qrels, bound to the max_relevance column
    if isinstance(raw, str):
        raw = raw.strip().strip("'\"")
        # A decimal number as C's strtod reads it: Python's float() would also take `1_000`, `inf`, `nan`.
        if not _DECIMAL.fullmatch(raw):
            raise SqlmetricsError(f"{where}: {raw!r} is not a number; it must be {PARAM_TYPES[p.type]}.")
    value = float(raw)
    if math.isnan(value) or math.isinf(value):  # 1e309 reads as infinity
        raise SqlmetricsError(f"{where}: must be {PARAM_TYPES[p.type]}, got {_fmt(raw)!r}, which is not finite.")
    if p.type in ("cutoff", "level", "count"):
        if not value.is_integer() or (p.type == "cutoff" and value < 1) or (p.type == "count" and value < 0):
            raise SqlmetricsError(f"{where}: must be {PARAM_TYPES[p.type]}, got {_fmt(raw)!r}.")
        return int(value)
    ok = {"prob": 0 < value < 1, "fraction": 0 <= value <= 1, "number": value > 0, "real": True,
          "grade": value > 0}[p.type]
    if not ok:
        raise SqlmetricsError(f"{where}: must be {PARAM_TYPES[p.type]}, got {_fmt(raw)!r}.")
    return value


def _gains(raw: str, where: str) -> tuple:
    """`{1:3,2:9}` (ir_measures) or `1=3,2=9` (trec_eval) -> ((1, 3.0), (2, 9.0)), sorted by grade."""
    text = raw.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    out = {}
    for pair in text.split(","):
        grade, sep, gain = pair.replace("=", ":").partition(":")
        grade, gain = grade.strip(), gain.strip()
        if not sep or not re.fullmatch(r"[0-9]+", grade) or not _DECIMAL.fullmatch(gain) or int(grade) in out:
            raise SqlmetricsError(f"{where}: write grade:gain pairs such as {{1:3,2:9}} (grades >= 0, each once), "
                                  f"got {raw!r}.")
        out[int(grade)] = float(gain)
    # A sum of gains down a ranking (DCG, the ideal DCG) must stay finite: past 1e300 three gains could reach
    # infinity, and an infinite ideal DCG would make nDCG 0 as if measured.
    if any(abs(v) > MAX_GAIN for v in out.values()):
        raise SqlmetricsError(f"{where}: a gain must be at most {MAX_GAIN:g} in magnitude (its sums down a ranking "
                              f"must stay finite), got {raw!r}.")
    return tuple(sorted(out.items()))


MAX_GAIN = 1e300


COMPAT = BY_NAME["compat"].default


def _bind(measure: Measure, given: dict, text: str, relevance_level: int, compat: str,
          judged_only: bool = False) -> MeasureCall:
    for name in given:
        if name not in measure.params:
            close = difflib.get_close_matches(name, list(measure.params), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            known = ", ".join(measure.params) or "none"
            raise SqlmetricsError(
                f"measure {text!r}: {measure.name} has no parameter {name!r} (its parameters: {known}).{hint}"
            )
    bound = []
    for p in measure.params.values():
        if p.name in given:
            value = _convert(measure, p, given[p.name], text)
        elif p.required:
            if p.name == measure.at:
                raise SqlmetricsError(
                    f"measure {text!r}: {measure.name} needs a cutoff, e.g. {measure.name}@10"
                    + (" (or SetP for set precision)" if measure.name == "P" else "")
                    + (" (or SetR for set recall)" if measure.name == "R" else "")
                    + "."
                )
            raise SqlmetricsError(f"measure {text!r}: parameter {p.name!r} is required.")
        elif p.default == "relevance_level":
            value = relevance_level
        elif p.name == "compat":  # the trec_eval version whose definition applies (options.py's compat=)
            value = compat
        else:
            value = p.default
        bound.append((p.name, value))
    return MeasureCall(text, measure, tuple(bound), frozenset(given), judged_only)


def _split_params(raw: str, text: str) -> dict:
    given = {}
    # A comma inside braces belongs to the value: gains={1:3,2:9}.
    for pair in filter(None, (s.strip() for s in re.split(r",(?![^{]*\})", raw))):
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise SqlmetricsError(f"measure {text!r}: parameters are written name=value, got {pair!r}.")
        if key.strip() in given:
            raise SqlmetricsError(f"measure {text!r}: parameter {key.strip()!r} is given twice; give it once.")
        given[key.strip()] = value.strip()
    return given


def parse(text: str, relevance_level: int = 1, compat: str = COMPAT) -> MeasureCall:
    """Parse one measure string, in any accepted spelling, into a bound MeasureCall."""
    if not isinstance(text, str) or not text.strip():
        raise SqlmetricsError(f"a measure must be a non-empty string such as 'nDCG@10', got {text!r}.")
    s = text.strip()
    catalogue = measures()
    by_lower = {name.lower(): m for name, m in catalogue.items()}

    given: dict = {}
    base = s
    if m := _RANX_LEVEL.match(s):  # ranx: ndcg@10-l2
        base, given["rel"] = m.group("base"), m.group("rel")

    # trec_eval and ranx aliases first: `map`, `P_10` and `ndcg_cut.10` are not canonical syntax. A measure's
    # own name, as spelled in the catalogue, is never an alias: `RBP` is ir_measures', `rbp` trec_eval 10.0's.
    exact = _CANONICAL.match(base)
    aliases = [] if exact and exact.group("name") in catalogue else _aliases()
    for regex, fixed, measure in aliases:
        if m := regex.match(base):
            captured = {k: v for k, v in m.groupdict().items() if v is not None}
            if "p" in captured and "." not in captured["p"]:
                captured["p"] = "0." + captured["p"]  # ranx rbp.95 means p = 0.95
            return _bind(measure, {**fixed, **captured, **given}, text, relevance_level, compat)

    m = _CANONICAL.match(base)
    if not m:
        raise _unknown(text, "it is not of the form Name, Name@k or Name(param=value)@k")
    name = m.group("name")
    measure = catalogue.get(name) or by_lower.get(name.lower())
    if measure is None:
        raise _unknown(text, f"there is no measure called {name!r}")
    if m.group("params"):
        given.update(_split_params(m.group("params"), text))
    if m.group("at") is not None:
        if not measure.at:
            raise SqlmetricsError(f"measure {text!r}: {measure.name} takes no @ value (it has no cutoff).")
        if measure.at in given:  # P(k=5)@3: two values for one parameter
            raise SqlmetricsError(f"measure {text!r}: parameter {measure.at!r} is given twice (the @ value is "
                                  f"{measure.at}); give it once.")
        given[measure.at] = m.group("at")
    measure, given, judged_only = _ir_measures_parameters(measure, given, text, catalogue)
    return _bind(measure, given, text, relevance_level, compat, judged_only)


# ir_measures' parameters that are spelled differently here: (measure, parameter) -> {value: (measure, params)}.
_IRM_SPELLINGS = {
    **{(name, "dcg"): {"log2": (name, {"gain": "linear"}), "exp-log2": (name, {"gain": "exp"})}
       for name in ("nDCG", "DCG")},
    ("SetP", "relative"): {"False": ("SetP", {}), "True": ("SetRelP", {})},
}


def _ir_measures_parameters(measure: Measure, given: dict, text: str, catalogue: dict) -> tuple:
    """ir_measures' spellings of what is here a parameter of another name or another measure:
    nDCG(dcg='exp-log2') is nDCG(gain='exp'), SetP(relative=True) is SetRelP; and judged_only (True: the
    measure's lists without their unjudged documents, as trec_eval's -J does for all). (measure, the other
    parameters, judged_only)."""
    given = dict(given)
    for name in [n for n in given if (measure.name, n) in _IRM_SPELLINGS]:
        raw = str(given.pop(name)).strip().strip("'\"")
        choices = _IRM_SPELLINGS[measure.name, name]
        if raw not in choices:
            raise SqlmetricsError(f"measure {text!r}, parameter {name!r}: {raw!r} is not one of "
                                  f"{', '.join(choices)} (ir_measures' values).")
        target, params = choices[raw]
        measure = catalogue[target]
        given.update(params)
    if "judged_only" not in given or "judged_only" in measure.params:
        return measure, given, False
    raw = str(given.pop("judged_only")).strip()
    if raw not in ("True", "False"):
        raise SqlmetricsError(f"measure {text!r}, parameter 'judged_only': write True or False, got {raw!r}.")
    if measure.rows != "ranking":
        raise SqlmetricsError(f"measure {text!r}: judged_only applies to the measures of a ranked list; "
                              f"{measure.name} reads its {measure.rows}. Write it without judged_only.")
    return measure, given, raw == "True"


def parse_all(texts, relevance_level: int = 1, compat: str = COMPAT) -> list[MeasureCall]:
    """Measure strings, or ir_measures measure objects (`ir_measures.nDCG@10`): an object is the string
    ir_measures prints for it, which is this module's canonical grammar, and its results are keyed so.

    A process that has not read the catalogue yet (a command line call) takes the calls from the disk cache
    when an earlier process parsed the same strings against the same templates and code: reading the 107
    templates costs more than the rest of a small evaluation. An error is raised, never kept."""
    if isinstance(texts, str) or _is_ir_measure(texts):
        texts = [texts]
    texts = [str(t) if _is_ir_measure(t) else t for t in texts]
    if not texts:
        raise SqlmetricsError("no measure was given: pass at least one, e.g. ['nDCG@10', 'AP'].")
    if measures.cache_info().currsize or not all(isinstance(t, str) for t in texts):
        return _parse_all(texts, relevance_level, compat)
    return _PARSED.get((tuple(texts), relevance_level, compat),
                       lambda: [replace(c, measure=replace(c.measure, examples=()))
                                for c in _parse_all(texts, relevance_level, compat)])


def _parse_all(texts: list, relevance_level: int, compat: str) -> list[MeasureCall]:
    calls = [parse(t, relevance_level, compat) for t in texts]
    seen = set()
    for c in calls:
        if c.text in seen:
            raise SqlmetricsError(f"measure {c.text!r} is listed twice; results are keyed by the string as passed.")
        seen.add(c.text)
    return calls


# Kept on disk as the dataclasses themselves (caches.Stored's JSON builds these classes and no other), without
# their measures' examples: those document the catalogue (sqlmetrics list, docs/measures.md, the tests read them
# from measures()), no evaluation reads them from a call, and they are half an entry's size and reading time.
_PARSED = Stored("measures", built_from, valid=lambda calls: isinstance(calls, list) and bool(calls)
                 and all(isinstance(c, MeasureCall) for c in calls),
                 classes=(MeasureCall, Measure, Param, Alias))


def _is_ir_measure(obj) -> bool:
    return type(obj).__module__.startswith("ir_measures.") and hasattr(obj, "NAME")


def trec_name(call: MeasureCall, judgment_groups: bool = False) -> str:
    """trec_eval's name for a measure (nDCG@10 -> ndcg_cut_10), from the header's `(trec_eval)` aliases: the
    first one whose placeholders are exactly the parameters the caller gave. Else the text as given.
    judgment_groups (qrels_format='qrels_jg'): the name of its mean over judgment groups (AP -> map_avgjg)."""
    given = set(call.given)
    for alias in call.measure.aliases:
        if (alias.tool == "trec_eval" and not alias.fixed and set(alias.captures) == given
                and (JUDGMENT_GROUPS in alias.text) == judgment_groups):
            text = alias.text
            for name, spec in alias.captures.items():
                value = call.values[name]
                shown = format(value, spec) if spec else _fmt(value)
                text = re.sub(r"\{" + name + r"(?::[^}]*)?\}", shown, text)
            return text
    return call.text


# trec_eval's spelling of a measure averaged over judgment groups (-R qrels_jg): map_avgjg, P_avgjg_10, ...
JUDGMENT_GROUPS = "_avgjg"


def split_measure_list(values) -> list:
    """Measure strings from repeated and comma-separated options: `-m P@5,nDCG(gain='exp')@10 -m AP`
    (commas inside parentheses belong to the measure)."""
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
