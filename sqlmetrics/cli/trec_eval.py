"""`sqlmetrics trec_eval`: trec_eval's command line, flag for flag, printing what trec_eval prints, byte for
byte, so that a script changes only the program name:

    trec_eval -m all_trec -q -c -M100 qrels run   ->   sqlmetrics trec_eval -m all_trec -q -c -M100 qrels run

Its defaults are trec_eval's, not `sqlmetrics eval`'s: the queries of both files unless -c, the 'official'
measures, and trec_eval 10.0's definitions (`--compat trec_eval-9.0.8` gives 9.0.8's, nicknames included).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import math
import os
import textwrap
from pathlib import Path

from ..catalogue import parse, parse_all
from ..catalogue.trec import BY_TREC_NAME, MEASURES, TrecMeasure, relstring_names, requested
from ..errors import SqlmetricsError
from ..evaluation import evaluate
from ..local.checks import RepeatedDocument
from ..identifiers import quote_identifier
from ..local.collect import python_rows
from ..local.connection import connect
from ..local.databases import _split_duckdb_target
from ..local.readers import load
from ..local.readers.files import file_format
from ..local.readers.text import first_blank_line
from ..options import BY_NAME
from ..statement import GMAP_FLOOR
from .common import Progress, UsageError, command_runs, trec_line, trec_tag

MISSING_ZSCORE = -1000000.0  # what trec_eval prints when the -Z file has no mean for a measure and query
_NUM_RET = "NumRet"  # always evaluated: trec_eval prints a query only when the run ranks documents for it
_NUM_REL_GRADED = "NumRel(rel=1)"  # num_rel at grade > 0: trec_eval's summary with -c (see run())
_NUM_JUDGED = "NumRel(rel=0)"  # the judgments graded 0 or more: none is trec_eval's stop (_stop_at_no_grade)
# trec_eval's quirk (both versions, m_prefs_avgjg_Rnonrel(_ret).c): with more non-relevant documents than relevant
# in a judgment group of one subgroup, it cuts only the lowest grade's documents to R, keeping those graded 0 or -1
# above a lowest grade of -2; with several subgroups only grade 0 is non-relevant. `eval` cuts every grade <= 0.
_TREC_SPELLINGS = {"prefs_avgjg_Rnonrel": "PrefsAvgJGRnonrel(nonrel=trec_eval)",
                   "prefs_avgjg_Rnonrel_ret": "PrefsAvgJGRnonrelRet(nonrel=trec_eval)"}
# trec_eval's reading of a negative -l (form_res_rels.c, both versions): it lists a ranked document the qrels lack at
# -1 and one graded below 0 at -2, and its rank-by-rank measures (map, P, recall, ...) count every document listed
# at the level or above as relevant (at -1 the unjudged ones; at -2 all), while R counts the grades >= 0 (a map over
# 1 is then possible). These measures count the judged documents alone, the grades from the level up (>= 0: all):
# their value at -l 0. (evaluate(_trec_grades=True) lists the documents as trec_eval does.)
_JUDGED_RELEVANT = ("num_rel_ret", "bpref", "infAP", "gm_bpref", "utility", "set_P", "set_relative_P", "set_recall",
                    "set_map", "set_F")
# These read the ranking with trec_eval's grades (-1 without a judgment) as trec_eval does: see their grades= notes.
_TREC_GRADES = ("iprec_at_recall", "11pt_avg", "Rprec_mult", "Rprec_mult_avgjg", "infAP")
_NAN_WHEN_EMPTY = ("IPrec", "IPrec11pt")  # trec_eval prints -nan for an empty ranking: _trec_evals_nans


def _long(text: str) -> int:
    """An integer flag as trec_eval reads it into a C long (atol): a number past its range is the nearest long."""
    return max(-2 ** 63, min(int(text), 2 ** 63 - 1))


def add_parser(sub, parents) -> None:
    p = sub.add_parser("trec_eval", parents=parents, add_help=False,
                       help="trec_eval's command line and output, flag for flag (trec_eval 10.0's defaults)",
                       usage="sqlmetrics trec_eval [-h] [-q] [-m measure[.params]] [-c] [-n] [-l <num>] [-N <num>] "
                             "[-M <num>] [-J] [-R rel_format] [-T results_format] [-Z zscore_file] [-v] "
                             "rel_info_file results_file")
    p.add_argument("-h", "--help", action="store_true", help="help; with -m, describe those measures")
    p.add_argument("-v", "--version", action="store_true", help="print the version and exit")
    p.add_argument("-q", "--query_eval_wanted", action="store_true", help="also print each query's values")
    p.add_argument("-m", "--measure", action="append", default=[], metavar="measure[.params]",
                   help="a trec_eval measure or nickname (official, all_trec, set), with trec_eval's "
                        "parameters: P.5,10 iprec_at_recall..10,.20 relstring.20; repeatable")
    p.add_argument("-c", "--complete_rel_info_wanted", action="store_true",
                   help="average over every query of the qrels (missing ones score 0), not the intersection")
    p.add_argument("-n", "--nosummary", action="store_true", help="print no summary ('all') lines")
    p.add_argument("-l", "--level_for_rel", type=_long, default=1, metavar="num",
                   help="grades >= num are relevant (default 1)")
    p.add_argument("-N", "--Number_docs_in_coll", type=_long, metavar="num",
                   help="documents in the collection (only trec_eval's utility reads it, in its fourth coefficient's term)")
    p.add_argument("-M", "--Max_retrieved_per_topic", type=_long, metavar="num",
                   help="evaluate only each ranking's first num documents")
    p.add_argument("-J", "--Judged_docs_only", action="store_true",
                   help="drop unjudged documents from the rankings first")
    p.add_argument("-R", "--Rel_info_format", default="qrels", metavar="format",
                   help="qrels (default), qrels_jg (judgment groups), prefs or qrels_prefs (preferences)")
    p.add_argument("-T", "--Results_format", default="trec_results", metavar="format", help="trec_results")
    p.add_argument("-Z", "--Zscore", metavar="Zmean_file",
                   help="print z-scores against the per-query means and deviations in this file")
    p.add_argument("--compat", choices=BY_NAME["compat"].choices, default="trec_eval-10.0",
                   help="whose definitions: trec_eval 10.0 (default here) or 9.0.8")
    p.add_argument("files", nargs="*", metavar="FILE", help="rel_info_file results_file")
    p.set_defaults(func=run, output=None, parser=p)


def _stop_as_10_does(args, res) -> None:
    """trec_eval 10.0 walks the qrels' queries (trec_eval.c): without -c, one with no ranking in the run stops it
    ('result qid ... not found in qrels', exit 4). 9.0.8 walked the run's queries and skipped such a query; -c
    scores it 0. Without -J (nor -M0) the evaluation listed every judged query (queries='qrels', which, none
    missing, are the intersection's lists): one that ranks nothing is missing. With them a ranked query may keep
    no document, so the qrels' queries are read again."""
    _, rows = res.per_query
    if _may_empty(args):
        ranked = {q for _, q, *_ in rows}
        missing = sorted(q.encode() for q in _queries(args.files[0], "qrels", args) if q not in ranked)
    else:
        missing = sorted(q.encode() for _, q, num_ret, *_ in rows if not num_ret)
    if missing:  # trec_eval's qrels order: by strcmp
        first = missing[0].decode()
        raise UsageError(f"judged query {first!r} has no ranking in run file {args.files[1]!r}: trec_eval 10.0 stops "
                         f"there (\"result qid '{first}' not found in qrels\", exit 4). Pass -c to score it 0, or "
                         "--compat trec_eval-9.0.8 to skip it as 9.0.8 did.", exit_status=4)


def _may_empty(args) -> bool:
    """Whether a ranked query may be left with no document: -J drops its unjudged ones, -M0 all. trec_eval (both)
    evaluates and prints such a query, as an empty ranking."""
    return args.Judged_docs_only or args.Max_retrieved_per_topic == 0


def _queries(path: str, kind: str, args) -> list:
    """The query ids of the qrels or the run, read again (only where the evaluation cannot tell them)."""
    con = connect()
    try:
        layout = None if kind == "run" or args.Rel_info_format == "qrels" else args.Rel_info_format
        loaded = load(con, path, kind, layout=layout)
        return [r[0] for r in con.execute(f"SELECT DISTINCT CAST({quote_identifier(loaded.columns['query_id'])} "
                                          f"AS VARCHAR) FROM {loaded.view}").fetchall()]
    finally:
        con.close()


def _refuse_blank_lines(path: str) -> None:
    """trec_eval reads every line of the rel_info file as data, whatever -R says (get_qrels.c and its siblings, both
    versions): one blank or of whitespace alone stops it ("Malformed line", exit 2). Its run reader skips them, as
    every reader of ours does both files'."""
    if _split_duckdb_target(path) or file_format(Path(path)) != "trec":
        return
    number = first_blank_line(Path(path))
    if number is not None:
        raise UsageError(f"rel_info file {path!r}, line {number}: blank; trec_eval reads every line of it as a "
                         "judgment and stops there (\"Malformed line\", exit 2). Remove the line (`sqlmetrics eval` "
                         "skips blank lines).")


def _is_empty(path: str) -> bool:
    try:
        return path != "-" and os.path.getsize(path) == 0
    except OSError:
        return False


def run(args) -> tuple:
    if args.version:
        return f"sqlmetrics {importlib.metadata.version('sqlmetrics')}: trec_eval's command line ({args.compat})\n", None
    wanted = requested(args.measure or ["official"], args.compat)
    if args.help:
        return _help(args.parser, wanted, bool(args.measure)), None
    if len(args.files) != 2:
        raise UsageError("trec_eval takes two files: rel_info_file results_file (see -h).")
    formats = [f for f in BY_NAME["qrels_format"].choices if f != "subtopics"]  # trec_eval's own -R formats
    if args.Rel_info_format not in formats:
        raise UsageError(f"-R {args.Rel_info_format}: the rel_info formats are {', '.join(formats)}.")
    if args.Results_format != "trec_results":
        raise UsageError(f"-T {args.Results_format}: the only results format is 'trec_results'.")
    if args.Number_docs_in_coll is not None and args.Number_docs_in_coll < 0:
        raise UsageError("-N takes the number of documents in the collection, at least 0.")
    if args.Max_retrieved_per_topic is not None and args.Max_retrieved_per_topic < 0:  # trec_eval crashes there
        raise UsageError("-M takes the number of documents to evaluate of each ranking, at least 0.")

    printed = []  # (TrecMeasure, [(printed name, our measure string)]) in trec_eval's order
    for m in MEASURES:
        if m.name in wanted and m.kind != "runid":
            printed.append((m, m.printed_names(wanted[m.name]) if m.kind != "relstring" else
                            relstring_names(wanted[m.name])))
    printed = [(m, [(shown, _TREC_SPELLINGS.get(spelling, spelling)) for shown, spelling in names])
               for m, names in printed]
    printed = [(m, [(shown, _with_options(m, spelling, args)) for shown, spelling in names]) for m, names in printed]
    strings = list(dict.fromkeys([_NUM_RET, *(s for _, names in printed for _, spelling in names
                                              for s in (spelling if isinstance(spelling, tuple) else [spelling]))]))
    # trec_eval's quirk (both versions, m_num_rel.c): with -c the summary num_rel is a recount of the qrels lines
    # graded above 0, whatever -l says; per query (and in `eval`) it counts the documents at the level. With -c
    # every judged query is evaluated, so the same evaluation's num_rel at level 1 is that recount.
    recount = (args.complete_rel_info_wanted and args.level_for_rel != 1 and args.Rel_info_format == "qrels"
               and any(m.name == "num_rel" for m, _ in printed))
    if recount:
        strings.append(_NUM_REL_GRADED)
    if args.Rel_info_format == "qrels":
        strings.append(_NUM_JUDGED)
    calls = parse_all(strings, args.level_for_rel, args.compat)  # a measure missing from the catalogue fails here
    strings += [s for s in dict.fromkeys(_nan_inputs(calls, args)) if s not in strings]  # NumRel(rel=0): _NUM_JUDGED
    emptied = _values_of_emptied(calls, args)
    strings += [s for s in dict.fromkeys(emptied.values()) if s not in strings]

    _refuse_blank_lines(args.files[0])
    if _is_empty(args.files[1]):
        raise UsageError(f"run file {args.files[1]!r} is empty; trec_eval quits reading it (exit 2).")
    args.runs, args.name = [args.files[1]], None
    args.qrels = args.files[0]
    runs = command_runs(args)
    (name, path), = runs.items()
    # 10.0 without -c (nor -J, -M0) evaluates every judged query too, to stop where 10.0 does (_stop_as_10_does).
    stop_as_10 = args.compat == "trec_eval-10.0" and not args.complete_rel_info_wanted
    every_judged = args.complete_rel_info_wanted or (stop_as_10 and not _may_empty(args))
    # A run of blank lines only is trec_eval's run with no results (-c scores it 0); an empty file stops it, above.
    options = dict(queries="qrels" if every_judged else "intersection",
                   relevance_level=args.level_for_rel, compat=args.compat, judged_only=args.Judged_docs_only,
                   qrels_format=args.Rel_info_format, empty_run="score")
    if args.Rel_info_format in ("prefs", "qrels_prefs"):
        options["ties"] = "docid_asc"  # trec_eval's preference code orders equal scores by ascending docno
    if args.Max_retrieved_per_topic is not None:
        options["depth"] = args.Max_retrieved_per_topic
    with Progress("evaluating", quiet=args.quiet) as progress:
        try:
            res = evaluate(args.qrels, {name: path}, strings, **options, _fetch=python_rows,
                           _progress=progress.listener, _trec_grades=args.level_for_rel < 0)
        except RepeatedDocument as e:  # this command takes no --duplicates; trec_eval (both) exits 4 on a repeat
            raise UsageError(f"{e.where}. Remove the repeat: trec_eval takes each document once per query "
                             "(`sqlmetrics eval --duplicates max` keeps its highest score).", exit_status=4) from None
    if stop_as_10:
        _stop_as_10_does(args, res)
    _, rows = res.per_query
    per_query = {q: dict(zip(strings, values)) for _, q, *values in rows}
    aggregate = dict(res.aggregate[name])
    if recount:
        aggregate.update((spelling, aggregate[_NUM_REL_GRADED]) for m, names in printed if m.name == "num_rel"
                         for _, spelling in names)
    evaluated = _evaluated_queries(per_query, path, args)
    if not evaluated:  # 9.0.8's stop (10.0 stops earlier, at a judged query the run lacks, or evaluates them all)
        raise UsageError(f"run file {args.files[1]!r} ranks no query of the qrels: trec_eval 9.0.8 stops there (\"No "
                         "queries with both results and relevance info\", exit 7).", exit_status=7)
    if args.Rel_info_format == "qrels" and any(m.name != "num_q" for m, _ in printed):
        _stop_at_no_grade(per_query[evaluated[0]], evaluated[0], args.files[0])
    for spelling, evaluated_as in emptied.items():
        for q in evaluated:
            if not per_query[q][_NUM_RET]:
                per_query[q][spelling] = per_query[q][evaluated_as]
        aggregate[spelling] = math.fsum(v[spelling] or 0.0 for v in per_query.values()) / len(per_query)
    _trec_evals_nans(calls, per_query, aggregate, evaluated, args)
    printed = _means(printed, per_query, aggregate)
    zscores = _read_zscores(args.Zscore) if args.Zscore else None
    if zscores is not None:
        per_query = {q: _to_z(q, vals, printed, zscores) for q, vals in per_query.items()}
    text = _print(printed, wanted, per_query, evaluated, aggregate, trec_tag(path) or name, args, zscores is not None)
    return text, None


def _stop_at_no_grade(values: dict, query: str, qrels: str) -> None:
    """trec_eval (both versions, form_res_rels.c) sizes its table of grade counts by the query's highest grade: for
    the first query it evaluates, with no judgment graded 0 or more, that size is 0 and it stops ("Can't calculate
    measure", exit 4). (Later, such a query reuses the table of one before it, at -1; below, trec_eval crashes.)"""
    if not values[_NUM_JUDGED]:
        raise UsageError(f"qrels file {qrels!r}: query {query!r} has no judgment graded 0 or more, and is the first "
                         "trec_eval evaluates: it stops there (\"Can't calculate measure\", exit 4). Grade one of its "
                         "documents 0 or more, or remove its judgments.", exit_status=4)


def _evaluated_queries(per_query: dict, run: str, args) -> list:
    """The queries trec_eval evaluates (and prints with -q), in its order: 10.0 every one it averages (with -c, those
    missing from the run too); 9.0.8 those of the run (it walked the run's), those -J or -M0 left empty included.
    The evaluation's lists are those of the run but with -c, where a query ranking nothing may be missing or
    left empty."""
    if args.compat == "trec_eval-9.0.8" and args.complete_rel_info_wanted:
        in_run = set(_queries(run, "run", args)) if _may_empty(args) else {q for q, v in per_query.items() if v[_NUM_RET]}
        return sorted(q for q in per_query if q in in_run)
    return sorted(per_query)


def _num_rel(level) -> str:
    return f"NumRel(rel={level!r})"


def _ideal_dcg(call) -> str:
    """IDCG with the gains of `call` (an Rndcg)."""
    ideal, gains = parse("IDCG"), call.values["gains"]
    if gains is None:  # the grades as gains
        return ideal.canonical
    params = tuple((n, gains if n == "gains" else v) for n, v in ideal.params)
    return dataclasses.replace(ideal, params=params, given=ideal.given | {"gains"}).canonical


def _nan_inputs(calls: list, args) -> list:
    """The measures _trec_evals_nans reads: the R of each interpolated precision where a ranking may be left
    empty (-J, -M0); R at the level and the ideal DCG of each Rndcg."""
    out = []
    for c in calls:
        if c.measure.name in _NAN_WHEN_EMPTY and _may_empty(args):
            out.append(_num_rel(c.values["rel"]))
        elif c.measure.name == "Rndcg":
            out += [_num_rel(args.level_for_rel), _ideal_dcg(c)]
    return out


def _values_of_emptied(calls: list, args) -> dict:
    """9.0.8 with -c scores a judged query missing from the run 0 (it does not evaluate it), but evaluates a ranked
    query that -J or -M0 left empty: utility and yaap, whose empty value is not 0 (10.0's, which evaluates both),
    take that value there. {spelling: the spelling of 10.0's value} (_with_options does it without -c, where
    every query evaluated is in the run)."""
    if not (args.compat == "trec_eval-9.0.8" and args.complete_rel_info_wanted and _may_empty(args)):
        return {}
    out = {}
    for c in calls:
        if c.measure.name in ("Utility", "YAAP"):
            params = tuple((n, "trec_eval-10.0" if n == "compat" else v) for n, v in c.params)
            out[c.text] = dataclasses.replace(c, params=params, given=c.given | {"compat"}).canonical
    return out


def _trec_evals_nans(calls: list, per_query: dict, aggregate: dict, evaluated: list, args) -> None:
    """Where trec_eval divides 0 by 0 it prints -nan (a NaN, negative on x86), for the query and for the mean over
    the queries: `eval` and the rest give the plain value the contract says (0), this command trec_eval's bytes.
    - An empty ranking that -J or -M0 left is evaluated (both versions, m_iprec_at_recall.c, m_11pt_avg.c): its
      interpolated precision starts from num_rel_ret / num_ret = 0 / 0, which every recall point needing no
      relevant document keeps: those rounding to 0 of R (10.0: lround(r R); 9.0.8: (long) (r R + 0.9)), recall 0.0
      always, so 11pt_avg too.
    - Rndcg (m_Rndcg.c) averages nDCG over the R levels where the ideal DCG is positive: with relevant documents
      (at -l 0, those graded 0) but no positive gain there is none, and it divides 0 by that count, 0."""
    empty = [q for q in evaluated if not per_query[q][_NUM_RET]]
    for call in calls:
        if call.measure.name in _NAN_WHEN_EMPTY and _may_empty(args):
            for q in empty:
                rel = per_query[q][_num_rel(call.values["rel"])] or 0
                if call.measure.name == "IPrec":
                    r, nines = call.values["r"], call.values["compat"] == "trec_eval-9.0.8"
                    needed = math.floor(r * rel + 0.9) if nines else math.floor(r * rel + 0.5)
                else:
                    needed = 0  # 11pt_avg's first point, recall 0.0
                if needed == 0:
                    per_query[q][call.text] = aggregate[call.text] = math.nan
        elif call.measure.name == "Rndcg":
            ideal = _ideal_dcg(call)
            for q in evaluated:
                if per_query[q][_num_rel(args.level_for_rel)] and not per_query[q][ideal]:
                    per_query[q][call.text] = aggregate[call.text] = math.nan


def _with_options(m: TrecMeasure, spelling: str, args) -> str:
    """A measure string with what trec_eval's options say of it: utility's collection size (-N, which trec_eval's
    options hold: N); level 0 under a negative -l for the measures of judged documents (_JUDGED_RELEVANT); trec_eval's
    grades (_TREC_GRADES); under 9.0.8 without -c, 10.0's value of utility and yaap for a query whose ranking is
    empty (9.0.8 leaves a judged query missing from the run, -c, at 0, but evaluates one that -J or -M0 left empty;
    without -c every query evaluated is in the run); and 10.0's utility for a missing one under -c."""
    named = {}
    if m.name == "utility" and args.Number_docs_in_coll is not None:
        named["N"] = args.Number_docs_in_coll
    if m.name in _JUDGED_RELEVANT and args.level_for_rel < 0:
        named["rel"] = 0
    if m.name in _TREC_GRADES and args.level_for_rel < 0:
        named["grades"] = "trec_eval"
    if m.name in ("utility", "yaap") and args.compat == "trec_eval-9.0.8" and not args.complete_rel_info_wanted:
        named["compat"] = "trec_eval-10.0"
    if m.name == "utility" and args.compat == "trec_eval-10.0" and args.complete_rel_info_wanted:
        # 10.0 ranks one document the qrels lack for a judged query missing from the run (which -J or -M0 then drop:
        # an empty ranking), then prints 0 for utility by that name alone (trec_eval.c): with coefficients,
        # utility_a,b,c,d keeps that ranking's value.
        if spelling == "utility":
            named["compat"] = "trec_eval-9.0.8"  # 0
        elif not _may_empty(args):
            named["missing"] = "trec_eval"
    if not named:
        return spelling
    if isinstance(spelling, tuple):  # 11pt_avg at given points: the mean of these
        return tuple(_with_options(m, s, args) for s in spelling)
    call = parse(spelling, args.level_for_rel, args.compat)
    params = tuple((n, named.get(n, v)) for n, v in call.params)
    return dataclasses.replace(call, params=params, given=call.given | set(named)).canonical


def _relstring_text(values: dict, names: list, trec_grades: bool) -> str:
    """trec_eval's relstring: one character per ranked document, up to the list's end: the grade (0-9),
    '>' above 9, '.' for a negative grade (in the pool, unjudged), '-' without a judgment (graded -1 with
    trec_grades, which lists a negative grade at -2)."""
    chars = []
    for i, (_, spelling) in enumerate(names, start=1):
        if i > (values[_NUM_RET] or 0):
            break
        grade = values[spelling]
        grade = None if grade is None or (trec_grades and grade == -1) else math.trunc(grade)  # integers, as trec_eval
        chars.append("-" if grade is None else "." if grade < 0 else ">" if grade > 9 else str(grade))
    return "".join(chars)


def _means(printed: list, per_query: dict, aggregate: dict) -> list:
    """A value that is the mean of several measures (11pt_avg with recall points) computed per query and
    for 'all' (the mean of the per-query means, as trec_eval averages it) under its printed name."""
    out = []
    for m, names in printed:
        named = []
        for shown, spelling in names:
            if isinstance(spelling, tuple):
                for values in per_query.values():
                    values[shown] = math.fsum(values[s] or 0.0 for s in spelling) / len(spelling)
                aggregate[shown] = math.fsum(v[shown] for v in per_query.values()) / max(len(per_query), 1)
                spelling = shown
            named.append((shown, spelling))
        out.append((m, named))
    return out


def _read_zscores(path: str) -> dict:
    """{(query, measure): (mean, standard deviation)} from a -Z file: `qid measure mean stddev` lines."""
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                fields = line.split()
                if not fields:
                    continue
                try:
                    qid, measure, mean, sd = fields[0], fields[1], float(fields[2]), float(fields[3])
                except (IndexError, ValueError):
                    raise UsageError(f"-Z {path!r}, line {number}: expected `qid measure mean stddev`, got "
                                     f"{line.strip()!r}.") from None
                out[(qid, measure)] = (mean, sd)
    except OSError as e:
        raise UsageError(f"-Z {path!r}: cannot read it ({e.strerror or e}).") from None
    return out


def _to_z(qid: str, values: dict, printed: list, zscores: dict) -> dict:
    """One query's values as trec_eval's z-scores: (value - mean) / sd; MISSING_ZSCORE without a mean (or
    with sd 0 and another value). A geometric mean's per-query value is the log it averages."""
    out = dict(values)
    for m, names in printed:
        if m.kind == "relstring":
            continue
        for shown, spelling in names:
            v = values[spelling]
            if m.name.startswith("gm_"):
                v = math.log(max(v, GMAP_FLOOR))
            mean_sd = zscores.get((qid, shown))
            if mean_sd is None:
                out[spelling] = MISSING_ZSCORE
            elif mean_sd[1]:
                out[spelling] = (v - mean_sd[0]) / mean_sd[1]
            else:
                out[spelling] = 0.0 if v == mean_sd[0] else MISSING_ZSCORE
    return out


def _print(printed: list, wanted: dict, per_query: dict, evaluated: list, aggregate: dict, tag: str, args,
           z: bool) -> str:
    """trec_eval's lines: with -q each evaluated query's (`evaluated`, in order), then the summary's."""
    out = []

    def line(name: str, qid: str, value, count: bool):
        if z:  # every value a z-score, counts too
            out.append(trec_line(name, qid, float(value), "Z"))
        else:
            out.append(trec_line(name, qid, int(value) if count else float(value)))

    if args.query_eval_wanted:
        for q in evaluated:
            for m, names in printed:
                if m.summary_only:
                    continue
                if m.kind == "relstring":
                    text = _relstring_text(per_query[q], names, args.level_for_rel < 0)
                    out.append(trec_line(names[0][0], q, f"'{text}'"))
                    continue
                for shown, spelling in names:
                    line(shown, q, per_query[q][spelling] or 0.0, m.kind == "count")
    if args.nosummary:
        return "".join(out)
    if "runid" in wanted:
        out.append(trec_line("runid", "all", tag))
    queries = list(per_query.values())
    # The z-scores trec_eval sums: those of the queries it evaluated (9.0.8 with -c leaves the others out, and
    # divides by every judged query).
    chosen = set(evaluated)
    summed = [values if q in chosen else None for q, values in per_query.items()] if z else []
    for m, names in printed:
        if m.kind == "relstring":
            continue
        for shown, spelling in names:
            if m.name == "num_q":
                value = float(len(queries)) if z else aggregate[spelling]
            elif z and m.name == "num_rel" and args.complete_rel_info_wanted and args.Rel_info_format == "qrels":
                value = aggregate[spelling]  # trec_eval's recount with -c (m_num_rel.c) replaces the z-scores' sum
            elif z:
                value = _z_summary(m, [v[spelling] if v is not None else 0.0 for v in summed])
            else:
                value = aggregate[spelling]
            line(shown, "all", value or 0.0, m.kind == "count")
    return "".join(out)


def _z_summary(m: TrecMeasure, values: list) -> float:
    """The 'all' value of z-scores, aggregated as trec_eval aggregates the raw values: counts summed,
    geometric means as exp of the mean (of the z-scored logs), the rest averaged."""
    if not values:
        return 0.0
    if m.kind == "count":
        return math.fsum(values)
    if m.name.startswith("gm_"):
        return math.exp(math.fsum(values) / len(values))
    return math.fsum(values) / len(values)


def _help(parser: argparse.ArgumentParser, wanted: dict, described: bool) -> str:
    """-h: the usage; with -m, each named measure's description from the catalogue."""
    text = parser.format_help()
    if not described:
        return text
    for name, params in wanted.items():
        m = BY_TREC_NAME[name]
        if m.kind == "runid":
            text += "\nrunid\n    The run's tag, the 6th field of the results file's first line.\n"
            continue
        names = relstring_names(params) if m.kind == "relstring" else m.printed_names(params)
        try:
            measure = parse(names[0][1]).measure
        except SqlmetricsError:
            continue
        body = textwrap.fill(measure.description, width=96, initial_indent="    ", subsequent_indent="    ")
        text += f"\n{name}  (sqlmetrics {measure.name}; {measure.reference})\n{body}\n"
    return text
