"""decide()'s input, checked: the rows of render_compare()'s statement, exported from a warehouse (and perhaps
edited, filtered or re-typed on the way), read back by name and held against what the statement promises before
any number is computed from them.

Names are read case-insensitively (Snowflake upper-cases the unquoted ones); the segment columns are the ones the
rows name in group_by, so neither the order of an export's columns (JSON Lines sorts them) nor a column added on
the way matters. Each row is typed (a number may come as text, as BigQuery's JSON gives an INT64, or as a Decimal)
and held to its kind's bounds: counts are integers, n positive, moments finite, sums of squares not negative. Then
the rows together: one setting for all, no key twice, each row's run and segment in its 'lists' row (with unit=,
its 'unit_lists' row) and within its counts, and as many rows as the statement gave (n_rows) — else the message
names what is missing: the row's kind, run, segment and measure."""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..engines import as_text
from ..errors import SqlmetricsError
from .aggregates import COLUMNS, IN_ENGINE, LABELS

_FIX = ("export every row of the statement as it gave them (to compare a part of the data, filter the log in the "
        "statement instead)")
# Each kind of row: its scopes (sc), n's least value, and its values v1 .. (the others are not read): 'x' a finite
# number, '+' a finite number not negative, 'p' a positive one, 'c' a count (an integer not negative), 'q' a finite
# number or empty (the bootstrap's quantiles, empty when a run has no value).
_KINDS = {
    "lists": ((0,), 1, "c"),  # shared lists
    "moments": ((0, 1, 2), 1, "x+x"),  # mean, sum of squared deviations, sum
    "ranks": ((0,), 1, "++"),  # rank sum, tie term
    "diffs": ((0,), 1, "x+ccc"),  # mean, sum of squared deviations, above, level, below
    "boot": ((0, 1), 0, "qqqq"),  # the resampled differences at bootstrap_ranks()
    "unit_count": ((0,), 0, "cccc"),  # lists without a unit id, lists, units of several arms, their lists here
    "unit_lists": ((0,), 1, "c"),  # a segment's units (its lists: n)
    "units": ((0,), 1, "xp++x"),  # mean y, mean l, Σ(y - ȳ)², Σ(l - l̄)², Σ(y - ȳ)(l - l̄)
    "units_pre": ((0,), 1, "x+++x"),  # the same of yp and lp (lp is 0 for a unit without a pre-period)
    "units_cross": ((0,), 1, "xxxx"),  # the cross-products of y, l with yp, lp
}
UNIT_KINDS = ("unit_count", "unit_lists", "units", "units_pre", "units_cross")
PER_RUN = ("lists", "moments", *UNIT_KINDS)  # rx = ry: one run's row
_SCOPES = {0: "own lists", 1: "shared lists", 2: "complete lists"}


@dataclass(frozen=True)
class Statistics:
    """The checked rows: the statement's settings, its segment columns' and measures' names, and its rows as
    dicts of aggregates.COLUMNS (segment: a tuple of text or None; n an int; v1 .. v5 floats or None)."""

    test: str
    max_p: float
    n_resamples: int
    seed: int
    pairing: str
    unit: str | None
    segments: tuple
    measures: list
    rows: list


def read(stats) -> Statistics:
    """The rows of render_compare()'s statement, typed and checked: a file (Parquet, CSV, TSV or JSON Lines, by
    its extension), a pyarrow table, a pandas frame or a list of dicts. A SqlmetricsError names the row, column or
    missing row and says what to do."""
    rows = _rows(stats)
    if not rows:
        raise SqlmetricsError("decide(): there are no rows: give the rows of render_compare()'s statement "
                              "(`sqlmetrics sql --compare`), run where the data lives.")
    key = _columns(rows)
    settings = _settings(rows, key)
    segs = tuple(settings.pop("group_by"))
    for g in segs:
        if key(g) is None:
            raise SqlmetricsError(f"decide(): the rows have no column {g!r}, a segment of the statement (its "
                                  f"group_by column names {list(segs)!r}); {_FIX}.")
    n_rows = settings.pop("n_rows")
    typed = [_row(i, r, key, segs, settings) for i, r in enumerate(rows, 1)]
    measures = _measures(typed)
    out = Statistics(**settings, segments=segs, measures=measures, rows=typed)
    _unique(out)
    _complete(out, n_rows)
    _consistent(out)
    return out


def _rows(stats) -> list:
    """decide()'s input as a list of dicts."""
    if isinstance(stats, list):
        if odd := next((i for i, r in enumerate(stats, 1) if not isinstance(r, dict)), None):
            raise SqlmetricsError(f"decide(): row {odd} is a {type(stats[odd - 1]).__name__}, not a row: give a dict "
                                  "{column: value} per row of the statement.")
        return stats
    if isinstance(stats, (str, Path)):
        path = Path(stats)
        suffix = path.suffix.lower()
        if suffix not in (".parquet", ".pq", ".csv", ".tsv", ".jsonl", ".ndjson", ".json"):
            raise SqlmetricsError(f"decide(): {str(stats)!r}: read the statistics from a .parquet, .csv, .tsv or "
                                  ".jsonl file.")
        if not path.is_file():
            raise SqlmetricsError(f"decide(): there is no file {str(stats)!r}.")
        try:
            if suffix in (".parquet", ".pq"):
                import pyarrow.parquet as pq

                stats = pq.read_table(path)
            else:
                return _text_rows(path.read_text(encoding="utf-8-sig"), suffix)  # a spreadsheet's BOM is no name
        except (OSError, ValueError) as e:
            raise SqlmetricsError(f"decide(): {str(stats)!r} cannot be read: {str(e).splitlines()[0]}") from None
    if hasattr(stats, "to_pylist"):  # pyarrow
        return stats.to_pylist()
    if hasattr(stats, "to_dict"):  # pandas
        # A text column's missing value is NULL, whatever pandas calls it (its string dtype turns None into NaN);
        # only a float column's NaN can be the NaN of a DOUBLE segment.
        texts = [c for c, kind in stats.dtypes.items() if getattr(kind, "kind", "O") != "f" and stats[c].isna().any()]
        if texts:
            stats = stats.astype({c: object for c in texts})
            stats[texts] = stats[texts].where(stats[texts].notna(), None)
        return stats.to_dict("records")
    raise SqlmetricsError(f"decide() takes a file, a pyarrow table, a pandas frame or a list of dicts; got "
                          f"{type(stats).__name__}.")


def _text_rows(text: str, suffix: str) -> list:
    """The rows of a CSV, TSV or JSON Lines file as they are written: a reader that infers types would turn a
    segment's '2024-06-01' into a timestamp (pyarrow's JSON reader) or '007' into 7; read() types the numbers. An
    empty CSV field is NULL."""
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
        return [{k: (None if v == "" else v) for k, v in row.items()} for row in reader]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError(f"line {number} is not JSON ({e})") from None
            if not isinstance(row, dict):
                raise ValueError(f"line {number} is not a JSON object (one row of the statement per line)")
            out.append(row)
    return out


def _columns(rows: list):
    """A lookup of the statement's column names in the rows' keys: the same name, else the one name that differs
    from it in case alone. The required columns must be there."""
    names = list(dict.fromkeys(k for r in rows for k in r))

    def key(name: str):
        if name in names:
            return name
        same = [k for k in names if isinstance(k, str) and k.casefold() == name.casefold()]
        if len(same) > 1:
            raise SqlmetricsError(f"decide(): the rows have {len(same)} columns named {name!r} but for their case "
                                  f"({', '.join(map(repr, same))}); keep one.")
        return same[0] if same else None

    required = [c for c in (*COLUMNS, "measure", *LABELS) if c != "segment"]
    missing = [c for c in required if key(c) is None]
    if missing == ["group_by", "n_rows"]:
        raise SqlmetricsError("decide(): these rows have no group_by and n_rows columns: they come from an older "
                              "sqlmetrics' statement. Render it again (`sqlmetrics sql --compare`) and run it.")
    if missing:
        raise SqlmetricsError(f"decide() reads the rows of render_compare()'s statement (`sqlmetrics sql --compare`); "
                              f"these rows have no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}.")
    return key


def _settings(rows: list, key) -> dict:
    """The settings every row carries (LABELS), the same on all of them, each a valid value."""
    parse = {"test": _text, "max_p": _float, "n_resamples": _int, "seed": _int, "pairing": _text, "unit": _text,
             "group_by": _names, "n_rows": _int}
    seen: dict = {}
    for i, r in enumerate(rows, 1):
        for name in LABELS:
            try:
                value = parse[name](r.get(key(name)))
            except ValueError as e:
                raise SqlmetricsError(f"decide(): row {i}: {name} {_shown(r.get(key(name)))} {e}; {_FIX}.") from None
            first = seen.setdefault(name, (value, i))
            if first[0] != value:
                raise SqlmetricsError(f"decide(): the rows disagree on {name}: {first[0]!r} on row {first[1]}, "
                                      f"{value!r} on row {i}. One statement gives every row the same; decide each "
                                      f"statement's rows apart, and {_FIX}.")
    s = {name: value for name, (value, _) in seen.items()}
    bad = {"test": s["test"] not in IN_ENGINE, "max_p": s["max_p"] is None or not 0 < s["max_p"] < 1,
           "n_resamples": s["n_resamples"] is None or not 1 <= s["n_resamples"] <= 10**7,
           "seed": s["seed"] is None or not 0 <= s["seed"] < 2**32,
           "pairing": s["pairing"] not in ("auto", "paired", "unpaired"),
           "unit": s["unit"] is not None and (s["test"] not in ("student", "welch") or s["pairing"] == "paired"),
           "n_rows": s["n_rows"] is None or s["n_rows"] < 1}
    if wrong := [name for name, is_bad in bad.items() if is_bad]:
        raise SqlmetricsError(f"decide(): the rows' {wrong[0]} {s[wrong[0]]!r} is not one render_compare() gives "
                              f"(test {s['test']!r}, pairing {s['pairing']!r}); {_FIX}.")
    return s


def _row(i: int, r: dict, key, segs: tuple, settings: dict) -> dict:
    """Row i (1-based) typed as COLUMNS, its values held to its kind's bounds."""
    unit = settings["unit"] is not None

    def value(name: str, parse):
        try:
            return parse(r.get(key(name)))
        except ValueError as e:
            raise SqlmetricsError(f"decide(): row {i}: {name} {_shown(r.get(key(name)))} {e}; {_FIX}.") from None

    kind = value("kind", _text)
    kinds = UNIT_KINDS if unit else tuple(k for k in _KINDS if k not in UNIT_KINDS)
    if kind not in kinds:
        raise SqlmetricsError(f"decide(): row {i}: kind {kind!r} is not one of this statement's ({', '.join(kinds)}); "
                              f"{_FIX}.")
    scopes, least, spec = _KINDS[kind]
    row = {"kind": kind, "sc": value("sc", _int), "rx": value("rx", _text), "ry": value("ry", _text),
           "segment": tuple(value(g, _segment) for g in segs), "m": value("m", _int),
           "measure": value("measure", _text), "n": value("n", _int),
           **{f"v{j}": value(f"v{j}", _float) for j in range(1, 6)}}
    at = f"decide(): row {i} ({kind})"
    for name in ("rx", "ry", "measure"):
        if not row[name]:
            raise SqlmetricsError(f"{at}: its {name} is empty; {_FIX}.")
    if row["sc"] not in scopes or (kind == "moments" and row["sc"] == 2 and settings["test"] != "tukey"):
        raise SqlmetricsError(f"{at}: sc {row['sc']!r} is not a scope of a {kind} row of a {settings['test']} "
                              f"statement; {_FIX}.")
    if (row["rx"] == row["ry"]) != (kind in PER_RUN):
        raise SqlmetricsError(f"{at}: rx {row['rx']!r} and ry {row['ry']!r} must be "
                              f"{'the same run' if kind in PER_RUN else 'two runs'}; {_FIX}.")
    if row["m"] is None or row["m"] < 0 or (kind in ("lists", "unit_count", "unit_lists") and row["m"] != 0):
        raise SqlmetricsError(f"{at}: m {row['m']!r} is not a measure's index of a {kind} row; {_FIX}.")
    at = f"decide(): row {i}, {describe(row, segs)}"
    top = settings["n_resamples"] if kind == "boot" else math.inf
    if row["n"] is None or not least <= row["n"] <= top:
        raise SqlmetricsError(f"{at}: n = {row['n']!r}, where the statement gives a count "
                              f"{'of at least 1' if least else 'not negative'}"
                              f"{f' and at most n_resamples {top}' if kind == 'boot' else ''}; {_FIX}.")
    for j, code in enumerate(spec, 1):
        v = row[f"v{j}"]
        if code == "q" and v is None:
            continue
        if v is None or not math.isfinite(v) or (code in "+c" and v < 0) or (code == "p" and v <= 0) or (
                code == "c" and v != int(v)):
            what = {"x": "a finite number", "+": "a finite number not negative", "p": "a positive number",
                    "c": "a count (an integer not negative)", "q": "a finite number or empty"}[code]
            fix = _FIX if kind not in ("units_pre", "units_cross") else (  # CUPED's sums: NaN in, NaN out
                "a covariate= column holding NaN or infinite values gives them: make those values NULL (no "
                "covariate) or fix them, then run the statement again; else " + _FIX)
            raise SqlmetricsError(f"{at}: v{j} is {'empty (NULL or NaN)' if v is None else v}, "
                                  f"where the statement gives {what}; {fix}.")
    if kind == "boot" and (row["v1"] is None) != (row["v4"] is None or row["v2"] is None or row["v3"] is None):
        raise SqlmetricsError(f"{at}: its resampled differences v1 .. v4 are partly empty; {_FIX}.")
    if kind == "lists" and row["v1"] > row["n"] or kind == "diffs" and row["v3"] + row["v4"] + row["v5"] != row["n"] \
            or kind == "unit_count" and (row["v1"] + row["v4"] > row["v2"] or row["n"] > row["v2"]) \
            or kind == "unit_lists" and not 1 <= row["v1"] <= row["n"]:
        raise SqlmetricsError(f"{at}: its counts do not add up (n = {row['n']}, v1 .. v5 = "
                              f"{[row[f'v{j}'] for j in range(1, 6)]}); {_FIX}.")
    return row


def _measures(rows: list) -> list:
    """The measures' names by their index m: one name per index, every index from 0 up."""
    names: dict = {}
    for i, r in enumerate(rows, 1):
        first = names.setdefault(r["m"], (r["measure"], i))
        if first[0] != r["measure"]:
            raise SqlmetricsError(f"decide(): measure m = {r['m']} is {first[0]!r} on row {first[1]} and "
                                  f"{r['measure']!r} on row {i}; {_FIX}.")
    if missing := [j for j in range(max(names) + 1) if j not in names]:
        raise SqlmetricsError(f"decide(): no row holds measure m = {missing[0]} (the measures are numbered 0 .. "
                              f"{max(names)}); {_FIX}.")
    return [names[j][0] for j in range(len(names))]


def _key(r: dict) -> tuple:
    pair = (r["rx"], r["ry"]) if r["kind"] == "boot" else tuple(sorted((r["rx"], r["ry"])))
    return r["kind"], r["sc"], pair, r["segment"], r["m"]


def _unique(s: Statistics) -> None:
    seen: dict = {}
    for i, r in enumerate(s.rows, 1):
        if (first := seen.setdefault(_key(r), i)) != i:
            raise SqlmetricsError(f"decide(): row {i} repeats row {first}: {describe(r, s.segments, s.measures)}; "
                                  f"{_FIX}, each once.")


def _consistent(s: Statistics) -> None:
    """Each row within what its run's counts allow: a run's values in a segment come from its lists there (with
    unit=, its units), so every row's run and segment has its 'lists' ('unit_lists') row, and no more values."""
    if s.unit is not None:
        units = {r["rx"]: r for r in s.rows if r["kind"] == "unit_count"}
        mixed = {r["v3"] for r in units.values()}
        if len(mixed) > 1:
            raise SqlmetricsError(f"decide(): the unit_count rows disagree on the units seen in more than one arm "
                                  f"(v3: {sorted(mixed)}); {_FIX}.")
        segments = {(r["rx"], r["segment"]): r["v1"] for r in s.rows if r["kind"] == "unit_lists"}
        for r in s.rows:
            if r["kind"] == "unit_count":
                continue
            counted = r["v1"] if r["kind"] == "unit_lists" else r["n"]  # the units of the row's segment
            if r["rx"] not in units or counted > units[r["rx"]]["n"]:
                raise SqlmetricsError(f"decide(): {describe(r, s.segments, s.measures)} counts {int(counted)} units, "
                                      + (f"but run {r['rx']!r} has {int(units[r['rx']]['n'])}" if r["rx"] in units else
                                         f"but there is no unit_count row of run {r['rx']!r}") + f"; {_FIX}.")
            if r["kind"] != "unit_lists" and r["n"] > segments.get((r["rx"], r["segment"]), 0):
                raise SqlmetricsError(f"decide(): {describe(r, s.segments, s.measures)} counts {r['n']} units, but "
                                      + (f"its unit_lists row says {int(segments[r['rx'], r['segment']])}"
                                         if (r["rx"], r["segment"]) in segments else "it has no unit_lists row")
                                      + f"; {_FIX}.")
        kinds: dict = {}  # with CUPED, each units row has its units_pre and units_cross rows
        for r in s.rows:
            if r["kind"] not in ("unit_count", "unit_lists"):
                kinds.setdefault((r["rx"], r["segment"], r["m"]), set()).add(r["kind"])
        cuped = any(len(have) > 1 or "units" not in have for have in kinds.values())
        full = {"units", "units_pre", "units_cross"} if cuped else {"units"}
        for (run, seg, m), have in kinds.items():
            if have != full:
                raise SqlmetricsError(f"decide(): the {' and '.join(sorted(full - have))} row of run {run!r}"
                                      f"{_where(s.segments, seg)}, {s.measures[m]} is missing; {_FIX}.")
        return
    lists = {(r["rx"], r["segment"]): r for r in s.rows if r["kind"] == "lists"}
    own = {(r["rx"], r["segment"], r["m"]): r["n"] for r in s.rows if r["kind"] == "moments" and r["sc"] == 0}
    known = {run for run, _ in lists}
    for r in s.rows:
        runs = [r["rx"]] if r["kind"] in PER_RUN else [r["rx"], r["ry"]]
        if stranger := [run for run in runs if run not in known]:  # a pair row needs only one run's lists below
            raise SqlmetricsError(f"decide(): {describe(r, s.segments, s.measures)} names run {stranger[0]!r}, which "
                                  f"has no lists row in any segment; {_FIX}.")
        counted = [lists.get((run, r["segment"])) for run in runs]
        both = r["kind"] == "diffs" or r["kind"] == "boot" and r["sc"] == 1
        if all(c is None for c in counted) or both and None in counted:
            absent = next(run for run, c in zip(runs, counted) if c is None)
            raise SqlmetricsError(f"decide(): {describe(r, s.segments, s.measures)} has no lists row of run "
                                  f"{absent!r}{_where(s.segments, r['segment'])}; {_FIX}.")
        if r["kind"] == "moments" or r["kind"] == "diffs":  # values over lists (sc 0), over shared lists (sc 1, 2)
            allowed = min(c["n"] if r["sc"] == 0 and r["kind"] == "moments" else c["v1"] for c in counted)
        elif r["kind"] == "ranks":  # the pooled values of both runs
            allowed = sum(own.get((run, r["segment"], r["m"]), 0) for run in runs)
        else:
            continue
        if r["n"] > allowed or (r["kind"] == "ranks" and r["n"] != allowed):
            raise SqlmetricsError(f"decide(): {describe(r, s.segments, s.measures)} counts {r['n']} values, where its "
                                  f"runs' rows allow {int(allowed)}; {_FIX}.")


def _complete(s: Statistics, n_rows: int) -> None:
    """As many rows as the statement gave; when some are missing, which ones (of those its rows imply)."""
    if len(s.rows) == n_rows:
        return
    if len(s.rows) > n_rows:
        raise SqlmetricsError(f"decide(): there are {len(s.rows)} rows where the statement gave {n_rows}: rows of "
                              f"another statement, or rows added; {_FIX}.")
    present = {_key(r) for r in s.rows}
    missing = [k for k in _expected(s) if k not in present]
    named = "; ".join(describe({"kind": k, "sc": sc, "rx": pair[0], "ry": pair[1], "segment": seg, "m": m},
                               s.segments, s.measures) for k, sc, pair, seg, m in missing[:3])
    raise SqlmetricsError(f"decide(): the statement gave {n_rows} rows and these are {len(s.rows)}: "
                          + (f"missing {named}" + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
                             if missing else "a whole segment's or run's rows are missing") + f". {_FIX.capitalize()}.")


def _expected(s: Statistics) -> list:
    """The keys of the rows the statement gives, as far as the rows at hand tell (a measure whose every value is
    NULL has no row, so they are named only when rows are known to be missing), in the order a reader fixes them:
    counts first, then moments, then the pairs' rows."""
    measures = range(len(s.measures))
    runs = sorted({r["rx"] for r in s.rows} | {r["ry"] for r in s.rows})
    if s.unit is not None:
        cuped = any(r["kind"] in ("units_pre", "units_cross") for r in s.rows)
        seen = sorted({(r["rx"], r["segment"]) for r in s.rows if r["kind"] != "unit_count"}, key=repr)
        return ([("unit_count", 0, (run, run), (None,) * len(s.segments), 0) for run in runs]
                + [("unit_lists", 0, (run, run), seg, 0) for run, seg in seen]
                + [(kind, 0, (run, run), seg, m) for kind in ("units", *(("units_pre", "units_cross") if cuped else ()))
                   for run, seg in seen for m in measures])
    having = {(r["rx"], r["segment"]) for r in s.rows if r["kind"] in ("lists", "moments")}
    shared = {r["segment"] for r in s.rows if r["kind"] == "diffs" or r["sc"] == 1
              or r["kind"] == "lists" and r["v1"] > 0}
    having |= {(run, seg) for run in runs for seg in shared}  # a shared list is in every run
    having = sorted(having, key=repr)
    segments = sorted({seg for _, seg in having}, key=repr)
    pairs = [(a, b) for a in runs for b in runs if a < b]
    either = [(seg, a, b) for seg in segments for a, b in pairs if (a, seg) in having or (b, seg) in having]
    keys = [("lists", 0, (run, run), seg, 0) for run, seg in having]
    keys += [("moments", 0, (run, run), seg, m) for run, seg in having for m in measures]
    keys += [("moments", sc, (run, run), seg, m) for sc in ((1, 2) if s.test == "tukey" else (1,))
             for run, seg in having if seg in shared for m in measures]
    keys += [("ranks", 0, (a, b), seg, m) for seg, a, b in either for m in measures]
    keys += [("diffs", 0, (a, b), seg, m) for seg in segments if seg in shared for a, b in pairs for m in measures]
    if s.test == "bootstrap":
        scopes = {"paired": (1,), "unpaired": (0,)}.get(s.pairing, (0, 1))
        keys += [("boot", 0, pair, seg, m) for seg, a, b in either for pair in ((a, b), (b, a)) for m in measures
                 if 0 in scopes]
        keys += [("boot", 1, pair, seg, m) for seg in segments if seg in shared for a, b in pairs
                 for pair in ((a, b), (b, a)) for m in measures if 1 in scopes]
    return keys


def describe(r: dict, segs: tuple, measures: list | None = None) -> str:
    """A row as a message names it: its kind, run (or runs), segment, measure and scope."""
    measure = "" if r["kind"] in ("lists", "unit_count", "unit_lists") else (
        f", {measures[r['m']] if measures else r['measure']}")
    where = _where(segs, r["segment"]) + measure
    if r["kind"] == "moments":
        return f"the moments row of run {r['rx']!r}{where} ({_SCOPES.get(r['sc'], r['sc'])})"
    if r["kind"] == "boot":
        return f"the boot row of {r['rx']!r} against {r['ry']!r}{where} ({('un', '')[r['sc'] == 1]}paired)"
    if r["kind"] in PER_RUN:
        return f"the {r['kind']} row of run {r['rx']!r}{where}"
    return f"the {r['kind']} row of {r['rx']!r} and {r['ry']!r}{where}"


def _where(segs: tuple, segment: tuple) -> str:
    return "".join(f", {g}={v!r}" for g, v in zip(segs, segment))


# ---------------------------------------------------------------------------------------------- values


def _shown(v) -> str:
    """A value as a message quotes it: its repr, cut short."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _empty(v) -> bool:
    """NULL as an export gives it: None, or NaN (pandas' NULL in a float column)."""
    return v is None or isinstance(v, float) and math.isnan(v)


def _text(v):
    try:
        return None if _empty(v) else as_text(v)
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 text") from None


def _segment(v):
    """A segment's value as text: NULL is None, but a NaN is the segment 'nan' (a DOUBLE segment's NaN is a value of
    its own, one segment, as compare() and DuckDB's GROUP BY keep it apart from NULL)."""
    return None if v is None else _text(v) if not (isinstance(v, float) and math.isnan(v)) else as_text(v)


def _float(v):
    """A number as an export may give it: a float, an int, a Decimal or their text; NULL (or NaN) is None."""
    if _empty(v):
        return None
    if isinstance(v, bool):
        raise ValueError("is not a number")
    if isinstance(v, (bytes, bytearray, memoryview)):
        v = bytes(v).decode("utf-8", "replace")
    try:
        out = float(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError("is not a number") from None
    return None if math.isnan(out) else out


def _int(v):
    """A count or an index: an integer, or a number or text with an integral value."""
    if _empty(v):
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        out = _float(v)
        if out is None or not math.isfinite(out) or out != int(out):
            raise ValueError("is not an integer")
        v = int(out)
    if abs(v) >= 2**63:  # no engine's count: BIGINT's range
        raise ValueError("is out of a count's range")
    return v


def _names(v) -> list:
    """group_by: the segment columns' names, a JSON list of distinct names."""
    text = _text(v)
    try:
        names = json.loads(text) if text is not None else None
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(g, str) and g for g in names) or len(set(names)) < len(names):
        raise ValueError("is not the statement's list of segment columns (a JSON list of names, such as [\"date\"])")
    return names
