"""trec_eval's measures as its command line knows them: their names, print order, default parameters and
nicknames (its measures.c), each with the sqlmetrics measure string that computes it. `sqlmetrics trec_eval`
prints with it; `sqlmetrics eval -m` reads trec_eval's nicknames and parameter lists through it.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..errors import SqlmetricsError

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_POINTS = tuple(i / 10 for i in range(11))


@dataclass(frozen=True)
class TrecMeasure:
    """One measure as trec_eval knows it: its name, how it prints, and our spelling of it."""

    name: str
    kind: str  # count (printed as an integer) | value | cutoffs (one per integer) | points (one per number)
    #            | relstring | runid
    spelling: str = ""  # our measure string; `{}` takes each cutoff or point
    defaults: tuple = ()  # the cutoffs or points without parameters
    summary_only: bool = False  # printed for 'all' only (num_q and the geometric means)

    def printed_names(self, params: tuple | None) -> list:
        """[(the name trec_eval prints, our measure string)], in trec_eval's order. The measure string is a
        tuple of them for 11pt_avg with recall points: the value is their mean (trec_eval's definition)."""
        if self.kind in ("cutoffs", "points"):
            values = self.defaults if params is None else self._parsed(params)
            shown = "{}" if self.kind == "cutoffs" else "{:.2f}"
            return [(f"{self.name}_{shown.format(v)}", self.spelling.format(v)) for v in values]
        if params is not None:  # printed as trec_eval prints it, `utility_2,-1,0,0`, which is also our alias
            shown = f"{self.name}_{','.join(params)}"
            if self.name == "11pt_avg":  # the mean of IPrec at the given points: a tuple of measures to average
                return [(shown, tuple(f"IPrec@{v}" for v in TrecMeasure("", "points")._parsed(params)))]
            return [(shown, shown)]
        return [(self.name, self.spelling)]

    def _parsed(self, params: tuple) -> list:
        """trec_eval's reading of the parameters: cutoffs with atol (23.4 is 23), points with atof; sorted."""
        try:
            values = [float(p) for p in params]
        except ValueError:
            raise SqlmetricsError(f"-m {self.name}.{','.join(params)}: each parameter must be a number.") from None
        if self.kind == "cutoffs":
            values = [int(v) for v in values]
            if any(v < 1 for v in values):
                raise SqlmetricsError(f"-m {self.name}.{','.join(params)}: cutoffs must be at least 1.")
        return sorted(set(values))


PREFS_COUNTS = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret")
PREFS_VALUES = ("prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret",
                "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp")

# trec_eval's measures in the order it computes and prints them (its measures.c), where sqlmetrics has them.
MEASURES = [
    TrecMeasure("runid", "runid"),
    TrecMeasure("num_q", "count", "num_q", summary_only=True),
    TrecMeasure("num_ret", "count", "num_ret"),
    TrecMeasure("num_rel", "count", "num_rel"),
    TrecMeasure("num_rel_ret", "count", "num_rel_ret"),
    TrecMeasure("map", "value", "map"),
    TrecMeasure("gm_map", "value", "gm_map", summary_only=True),
    TrecMeasure("Rprec", "value", "Rprec"),
    TrecMeasure("bpref", "value", "bpref"),
    TrecMeasure("recip_rank", "value", "recip_rank"),
    TrecMeasure("iprec_at_recall", "points", "IPrec@{}", RECALL_POINTS),
    TrecMeasure("P", "cutoffs", "P@{}", CUTOFFS),
    TrecMeasure("relstring", "relstring", "", (10,)),
    TrecMeasure("recall", "cutoffs", "R@{}", CUTOFFS),
    TrecMeasure("infAP", "value", "infAP"),
    TrecMeasure("gm_bpref", "value", "gm_bpref", summary_only=True),
    TrecMeasure("Rprec_mult", "points", "RprecMult(mult={})", tuple(i / 10 for i in range(2, 21, 2))),
    TrecMeasure("utility", "value", "utility"),
    TrecMeasure("11pt_avg", "value", "11pt_avg"),
    TrecMeasure("binG", "value", "binG"),
    TrecMeasure("G", "value", "G"),
    TrecMeasure("dcg", "value", "dcg"),
    TrecMeasure("ideal_dcg", "value", "ideal_dcg"),
    TrecMeasure("ndcg", "value", "ndcg"),
    TrecMeasure("ndcg_rel", "value", "ndcg_rel"),
    TrecMeasure("Rndcg", "value", "Rndcg"),
    TrecMeasure("ndcg_cut", "cutoffs", "nDCG@{}", CUTOFFS),
    TrecMeasure("map_cut", "cutoffs", "AP@{}", CUTOFFS),
    TrecMeasure("relative_P", "cutoffs", "RelP@{}", CUTOFFS),
    TrecMeasure("success", "cutoffs", "Success@{}", (1, 5, 10)),
    TrecMeasure("set_P", "value", "set_P"),
    TrecMeasure("set_relative_P", "value", "set_relative_P"),
    TrecMeasure("set_recall", "value", "set_recall"),
    TrecMeasure("set_map", "value", "set_map"),
    TrecMeasure("set_F", "value", "set_F"),
    TrecMeasure("num_nonrel_judged_ret", "count", "num_nonrel_judged_ret"),
    *(TrecMeasure(name, "count", name) for name in PREFS_COUNTS),
    *(TrecMeasure(name, "value", name) for name in PREFS_VALUES),
    TrecMeasure("map_avgjg", "value", "map_avgjg"),
    TrecMeasure("P_avgjg", "cutoffs", "P_avgjg_{}", CUTOFFS),
    TrecMeasure("Rprec_mult_avgjg", "points", "Rprec_mult_avgjg_{}", tuple(i / 10 for i in range(2, 21, 2))),
    TrecMeasure("yaap", "value", "yaap"),
    TrecMeasure("rbp", "value", "rbp"),
    TrecMeasure("rbp_resid", "value", "rbp_resid"),
    TrecMeasure("unj", "cutoffs", "Unjudged@{}", (5, 10, 20)),
]
BY_TREC_NAME = {m.name: m for m in MEASURES}

# trec_eval's nicknames (measures.c), per version; a name sqlmetrics lacks makes the nickname an error.
_OFFICIAL = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
             "recip_rank", "iprec_at_recall", "P"]
_PREFS = {  # the same in both versions
    "all_prefs": ["runid", "num_q", *PREFS_COUNTS, *PREFS_VALUES],
    "prefs": ["runid", "num_q", *PREFS_COUNTS, *PREFS_VALUES[:3]],
    "qrels_jg": ["runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"],
}
_SET = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P",
        "set_map", "set_F"]
NICKNAMES = {
    "trec_eval-9.0.8": {
        "official": _OFFICIAL,
        "all_trec": [*_OFFICIAL, "relstring", "recall", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
                     "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G",
                     "set_P", "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"],
        "set": _SET,
        **_PREFS,
    },
    "trec_eval-10.0": {
        "official": _OFFICIAL,
        "all_trec": [*_OFFICIAL, "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
                     "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel",
                     "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
                     "num_nonrel_judged_ret"],
        "set": _SET,
        **_PREFS,
    },
}


def requested(values: list, compat: str) -> dict:
    """{trec_eval measure name: parameters or None}, from -m values (nicknames expanded; the first -m with
    parameters holds, as trec_eval takes the first it finds for a measure: meas_init.c)."""
    requested: dict = {}
    for value in values:
        name, dot, params = value.partition(".")
        if not dot and name in NICKNAMES[compat]:
            for member in NICKNAMES[compat][name]:
                if member not in BY_TREC_NAME:
                    raise SqlmetricsError(f"-m {name}: sqlmetrics does not compute trec_eval's {member} yet, "
                                          f"which {name} includes; name the measures you need instead.")
                requested.setdefault(member, None)
            continue
        if name not in BY_TREC_NAME:
            raise SqlmetricsError(f"-m {value}: {name!r} is not a trec_eval measure sqlmetrics computes."
                                  f"{_did_you_mean(value, compat)} `sqlmetrics trec_eval -h -m all_trec` describes "
                                  "the measures it computes; `sqlmetrics eval` takes every spelling (-m nDCG@10).")
        if dot and not params:
            raise SqlmetricsError(f"-m {value}: no parameters after the dot (trec_eval: \"improper measure in "
                                  f"parameter\"); write -m {name} for its defaults.")
        if dot and requested.get(name) is None:
            requested[name] = tuple(p for p in params.split(",") if p != "") or None
        else:
            requested.setdefault(name, None)
    return requested


def _did_you_mean(value: str, compat: str) -> str:
    """The -m spellings nearest to a mistyped one: a measure name, or a name and its parameters as trec_eval writes
    them (`ndcg_cut10` and `ndcg_cut_10` are `ndcg_cut.10`)."""
    glued = re.fullmatch(r"(?P<name>\w+?)_?(?P<params>\d[\d.,]*)", value)
    close = [f"{glued['name']}.{glued['params']}"] if glued and glued["name"] in BY_TREC_NAME else []
    close += difflib.get_close_matches(value.partition(".")[0], [*NICKNAMES[compat], *BY_TREC_NAME], n=3, cutoff=0.6)
    close = list(dict.fromkeys(close))[:3]
    return f" Did you mean {', '.join(f'-m {c}' for c in close)}?" if close else ""


def family(value: str) -> list | None:
    """A trec_eval measure of cutoffs or points named bare (`iprec_at_recall`, `ndcg_cut`, `P`): our measure strings
    for all of its default parameters, as trec_eval's -m reads it; None for any other value."""
    measure = BY_TREC_NAME.get(value)
    if measure is None or measure.kind not in ("cutoffs", "points"):
        return None
    return [spelling for _, spelling in measure.printed_names(None)]


def relstring_names(params: tuple | None) -> list:
    """relstring (relstring_N with a length): the grade at each of the first N ranks, one measure each."""
    if params is not None and len(params) != 1:
        raise SqlmetricsError("-m relstring.N takes one length.")
    length = 10 if params is None else int(float(params[0]))
    name = "relstring" if params is None else f"relstring_{params[0]}"
    return [(name, f"Grade@{i}") for i in range(1, length + 1)]




_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")


def expand(value: str, compat: str) -> list | None:
    """Our measure strings for one -m value written in trec_eval's syntax — a nickname (`all_trec`) or a
    measure with a parameter list (`P.5,10,20`, `iprec_at_recall..10,.20`) — or None when it is not
    (a plain name, `P.5` and `ndcg_cut.10` included, is left to the aliases). runid and relstring, which are
    not numbers per query, are left out."""
    name, dot, params = value.partition(".")
    if not dot and name in NICKNAMES[compat]:
        wanted = requested([name], compat)
    elif dot and name in BY_TREC_NAME and "," in params and \
            all(_NUMBER.match(p) for p in params.split(",") if p) and BY_TREC_NAME[name].kind in ("cutoffs", "points"):
        wanted = requested([value], compat)
    else:
        return None
    return [spelling for n, params in wanted.items() if BY_TREC_NAME[n].kind not in ("runid", "relstring")
            for _, spelling in BY_TREC_NAME[n].printed_names(params)]
