"""Checks on loaded inputs, run before evaluation: one aggregate pass per input.

A failed check looks up the first offending line or row so the message can name it.
"""
from __future__ import annotations


from ..errors import SqlmetricsError, warn
from ..identifiers import quote_identifier as _q
from ..catalogue.templates import STATEMENTS_OF
from ..options import BY_NAME
from .readers import Loaded



def empty(column: str) -> str:
    """SQL: the id in `column` is missing, NULL or empty text (a number id is never empty)."""
    return f"{column} IS NULL OR CAST({column} AS VARCHAR) = ''"

def _locate(con, loaded: Loaded, condition: str) -> int:
    """The first line (or row) where `condition` holds."""
    return con.execute(f"SELECT line_no FROM {loaded.numbered} WHERE {condition} ORDER BY line_no LIMIT 1").fetchall()[0][0]


def _col(loaded: Loaded, role: str) -> str:
    return _q(loaded.columns[role])


# The magnitudes the statement can hold: a position is a BIGINT (below 2^63), a float32 score a FLOAT.
POSITION_LIMIT = 2 ** 63
MAX_FLOAT32 = 3.4028234663852886e38


def check(con, loaded: Loaded, kind: str, duplicates: str = "error", order_role: str = "score",
          float32: bool = False, groups: tuple = (), whole_grades: bool = True, empty_run: str = "error") -> int:
    """Empty input, missing ids, values that are not numbers, repeated documents: an error naming the line.
    Returns the input's number of rows (counted on the way, for the command line's progress line).

    Only the values evaluation reads are checked: the grade (qrels), and the run's score or, with
    ties='rank', its position (a TREC run's rank field is otherwise ignored, as trec_eval ignores it).
    Repeats are found by hashing (query, doc); only when two hashes are equal is the exact (slower) search
    run, which also rules out a hash collision. groups: the qrels' judgment-group roles, within which a
    document may be judged once (qrels_format='qrels_jg', ...); their values must not be empty either.
    whole_grades: a TREC grade must be an integer (trec_eval reads it so; its preferences' levels are any number).
    empty_run: 'error' refuses a run of no rows; 'score' lets it score every judged query 0.
    """
    BY_NAME["duplicates"].check(duplicates)
    q, d = _col(loaded, "query_id"), _col(loaded, "doc_id")
    value_role = "relevance" if kind == "qrels" else order_role
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {loaded.view})").fetchall())
    ids = [q, *(_col(loaded, g) for g in groups), d]
    problems = {"empty id": " OR ".join(empty(c) for c in ids)}
    v = _col(loaded, value_role)
    number = f"TRY_CAST({v} AS DOUBLE)"
    # isnan() alone misses a NaN in Parquet: DuckDB (2.0) folds it to false from the file's min/max statistics,
    # which leave NaN out. Its hash is not folded (and every NaN hashes alike).
    bad = [f"{v} IS NULL", f"{number} IS NULL", f"isnan({number})", f"hash({number}) = hash(CAST('nan' AS DOUBLE))",
           f"isinf({number})"]
    if types[loaded.columns[value_role]] == "VARCHAR":
        # DuckDB's cast reads `1_000` as 1000; trec_eval (strtod) stops at the underscore. Refuse it.
        bad.append(f"contains({v}, '_')")
    if value_role == "rank_position":  # a whole number that fits a BIGINT: 0.6 is not rounded to a position
        bad += [f"{number} <> floor({number})", f"abs({number}) >= {float(POSITION_LIMIT)!r}"]
    elif kind == "qrels" and loaded.integer_grades and whole_grades:
        # trec_eval reads a TREC grade as an integer: 0.5 would silently be 0 there.
        bad.append(f"{number} <> floor({number})")
    elif float32:  # score_precision='float32': a score past the float range would become infinite
        bad.append(f"abs({number}) > {MAX_FLOAT32!r}")
    problems[value_role] = " OR ".join(bad)
    # trec_eval refuses a document listed twice for one query; so do we, unless the caller chose a policy.
    # One statement: the problem counts, the repeats' count as a scalar subquery beside them, and whether
    # every score is the same (the tie rule alone would then decide the order).
    repeats = kind == "qrels" or duplicates == "error"
    counts = con.execute(
        "SELECT COUNT(*), " + ", ".join(f"SUM(CASE WHEN {c} THEN 1 ELSE 0 END)" for c in problems.values())
        + (f", ({_equal_hash_neighbours(loaded, ids)})" if repeats else ", 0")
        + f", MIN({number}) = MAX({number}), MIN({number}) FROM {loaded.view}"
    ).fetchall()[0]
    *counts, repeated, all_equal, only_score = counts
    if counts[0] == 0:
        if kind == "qrels":
            raise SqlmetricsError(f"{loaded.label}: has no rows. Qrels are needed to evaluate: pass the judgments file.")
        if empty_run == "score":
            return 0
        # A run without a single ranked document is almost always a pipeline that broke before writing (trec_eval
        # refuses an empty file too): scoring it 0 on every query would hide that behind a plausible table.
        raise SqlmetricsError(f"{loaded.label}: has no rows, not one ranked document. A run that retrieved nothing is "
                              "almost always a step that failed before writing it: check the input, and the step that "
                              "made it (empty_run='score' scores such a run 0 on every judged query).")
    for (problem, condition), count in zip(problems.items(), counts[1:]):
        if not count:
            continue
        line_no = _locate(con, loaded, condition)
        if problem == "empty id":
            roles = "".join(", " + g.replace("_", " ") for g in groups)  # judgment group, subtopic, ...
            raise SqlmetricsError(f"{loaded.at(line_no)}: the query id{roles} or document id is empty.")
        value = con.execute(f"SELECT CAST({_col(loaded, problem)} AS VARCHAR) FROM {loaded.numbered} "
                            f"WHERE line_no = {line_no}").fetchall()[0][0]
        column = loaded.columns[problem]
        what = {"relevance": "an integer relevance grade" if loaded.integer_grades else "a finite number",
                "score": "a finite number" + (" within the 32-bit float range (score_precision='float32')"
                                              if float32 else ""),
                "rank_position": "a whole number below 2^63 (a position)"}[problem]
        shown = loaded.missing_as.get(column, "None") if value is None else repr(value)
        raise SqlmetricsError(
            f"{loaded.at(line_no)}: column {column!r} holds {shown}, which is not {what} "
            f"({count} such {'row' if count == 1 else 'rows'}). Fix the value or map another column."
        )
    if repeated:
        _report_duplicate(con, loaded, kind, ids, groups)
    if kind == "run" and order_role == "score" and all_equal and counts[0] > 1:
        warn(f"{loaded.label}: every score is {_shown(only_score)}, so the order of each list is decided "
                      "by the tie rule alone (document id descending). If the rows are in rank order, pass "
                      "ties='rank' to use the rank column.")
    return counts[0]


def check_verdicts(con, loaded: Loaded) -> None:
    """A RAG pipeline's judged statements (verdicts=, whose columns the reader found): each row's statement_of names
    what the statement is of, and its verdict is 1 or 0; the first row that is not so is named."""
    of, verdict, query = _col(loaded, "statement_of"), _col(loaded, "verdict"), _col(loaded, "query_id")
    allowed = ", ".join(f"'{s}'" for s in STATEMENTS_OF)
    problems = (
        (empty(query), "the query id is empty"),
        (f"{of} IS NULL OR CAST({of} AS VARCHAR) NOT IN ({allowed})",
         f"statement_of is not one of {', '.join(STATEMENTS_OF)}"),
        (f"{verdict} IS NULL OR TRY_CAST({verdict} AS DOUBLE) IS NULL OR TRY_CAST({verdict} AS DOUBLE) NOT IN (0, 1)",
         "the verdict is not 1 or 0"))
    for condition, what in problems:
        found = con.execute(f"SELECT line_no, CAST({of} AS VARCHAR), CAST({verdict} AS VARCHAR) FROM {loaded.numbered} "
                            f"WHERE {condition} ORDER BY line_no LIMIT 1").fetchall()
        if found:
            line_no, of_value, verdict_value = found[0]
            raise SqlmetricsError(f"{loaded.at(line_no)}: {what} (statement_of {of_value!r}, verdict "
                                  f"{verdict_value!r}). Fix the row.")


def _not_finite_in(vector: str) -> str:
    """SQL: the list holds a NaN or an infinite value."""
    return f"len(list_filter({vector}, lambda x: NOT isfinite(x))) > 0"


def check_items(con, loaded: Loaded) -> None:
    """Item features (items=): every row's item named, and its features given: a vector of finite numbers, one per
    item and all of one length (two vectors of one item were averaged in silence, a NULL element or a shorter
    vector left numbers out of the cosine); a category; or a dimension and a finite value, each (item, dimension)
    once. The first row that is not so is named."""
    item, c = _col(loaded, "doc_id"), loaded.columns
    problems = [(empty(item), "the item id is empty; fix the row")]
    if "vector" in c:
        v = f"CAST({_col(loaded, 'vector')} AS DOUBLE[])"
        problems += [(f"{v} IS NULL OR len({v}) = 0", "the vector is empty: give the item its numbers, or leave the "
                      "item out (an item without features is similar to none)"),
                     (f"list_count({v}) < len({v})", "the vector holds an empty (NULL) number; fix the row"),
                     (_not_finite_in(v), "the vector holds NaN or an infinite value; fix the row")]
    elif "category" in c:
        problems.append((empty(_col(loaded, 'category')),
                         "the category is empty; fix the row"))
    elif "dimension" in c and "value" in c:
        d, value = _col(loaded, "dimension"), f"TRY_CAST({_col(loaded, 'value')} AS DOUBLE)"
        problems += [(empty(d), "the dimension is empty; fix the row"),
                     (f"{value} IS NULL OR NOT isfinite({value})", "the value is not a finite number; fix the row")]
    first = con.execute("SELECT " + ", ".join(f"min(line_no) FILTER (WHERE {cond})" for cond, _ in problems)
                        + f" FROM {loaded.numbered}").fetchall()[0]
    for line_no, (_, what) in zip(first, problems):
        if line_no is not None:
            raise SqlmetricsError(f"{loaded.at(line_no)}: {what}.")
    if "vector" not in c and "value" not in c:
        return
    once = [item] if "vector" in c else [item, _col(loaded, "dimension")]
    twice = con.execute(f"SELECT {', '.join(f'CAST({k} AS VARCHAR)' for k in once)}, min(line_no), max(line_no) "
                        f"FROM {loaded.numbered} GROUP BY ALL HAVING COUNT(*) > 1 ORDER BY {len(once) + 1} LIMIT 1"
                        ).fetchall()
    if twice:
        what = ("more than one vector", "one") if "vector" in c else \
            (f"dimension {twice[0][1]!r} more than once", "one value per dimension")
        raise SqlmetricsError(f"{loaded.label}: item {twice[0][0]!r} has {what[0]} ({loaded.lines(*twice[0][-2:])}); "
                              f"give each item {what[1]}.")
    if "vector" in c:
        v = f"len(CAST({_col(loaded, 'vector')} AS DOUBLE[]))"
        odd = con.execute(f"SELECT line_no, {v}, (SELECT {v} FROM {loaded.numbered} ORDER BY line_no LIMIT 1) "
                          f"FROM {loaded.numbered} WHERE {v} <> (SELECT {v} FROM {loaded.numbered} ORDER BY line_no "
                          "LIMIT 1) ORDER BY line_no LIMIT 1").fetchall()
        if odd:
            raise SqlmetricsError(f"{loaded.at(odd[0][0])}: the vector has {odd[0][1]} numbers where the first row's "
                                  f"has {odd[0][2]}; give every item a vector of one length.")


def check_history(con, loaded: Loaded) -> None:
    """The training interactions (history=): every row names its user and its item (a NULL or empty id was counted
    as an item of its own, or as nobody's)."""
    user, item = _col(loaded, "query_id"), _col(loaded, "doc_id")
    row = con.execute(f"SELECT line_no FROM {loaded.numbered} WHERE {empty(user)} "
                      f"OR {empty(item)} ORDER BY line_no LIMIT 1").fetchall()
    if row:
        raise SqlmetricsError(f"{loaded.at(row[0][0])}: the user or the item id is empty; fix the row.")


def check_embeddings(con, loaded: Loaded) -> None:
    """Question embeddings (embeddings=): an `embedding` array, or `dimension` and `value` (one row per dimension),
    whichever the reader found; `generated` 0 for the question asked, 1.. for the generated ones; an optional
    `noncommittal` 0 or 1. Every query with a generated question has its question asked, each question one vector of
    the question asked's dimensions, none all zeros (no direction)."""
    query, generated = _col(loaded, "query_id"), _col(loaded, "generated")
    number = "TRY_CAST({} AS DOUBLE)"
    rows = [(empty(query), "the query id is empty"),
            (f"{number.format(generated)} IS NULL OR {number.format(generated)} < 0 OR "
             f"{number.format(generated)} <> floor({number.format(generated)})",
             "generated is not 0 (the question asked) or a positive whole number")]
    if "noncommittal" in loaded.columns:
        noncommittal = _col(loaded, "noncommittal")
        rows.append((f"{number.format(noncommittal)} IS NULL OR {number.format(noncommittal)} NOT IN (0, 1)",
                     "noncommittal is not 1 or 0"))
    if "embedding" in loaded.columns:
        embedding = _col(loaded, "embedding")
        rows.append((f"TRY_CAST({embedding} AS DOUBLE[]) IS NULL OR len({embedding}) = 0 OR "
                     f"list_count(TRY_CAST({embedding} AS DOUBLE[])) < len({embedding})",
                     "the embedding is empty or holds a value that is not a number"))
        rows.append((_not_finite_in(f"TRY_CAST({embedding} AS DOUBLE[])"),
                     "the embedding holds NaN or an infinite value (the embedding model's output is broken there)"))
    else:
        dimension, value = _col(loaded, "dimension"), _col(loaded, "value")
        rows.append((f"{number.format(dimension)} IS NULL OR {number.format(value)} IS NULL",
                     "dimension or value is not a number"))
        rows.append((f"NOT isfinite({number.format(value)})",
                     "the value is NaN or infinite (the embedding model's output is broken there)"))
    for condition, what in rows:
        found = con.execute(f"SELECT line_no FROM {loaded.numbered} WHERE {condition} "
                            "ORDER BY line_no LIMIT 1").fetchall()
        if found:
            raise SqlmetricsError(f"{loaded.at(found[0][0])}: {what}. Fix the row.")
    # One vector per question, as (query, generated, dimension, value) rows; then each question against its query's
    # question asked: the same dimensions, and a length above 0.
    long = (f"SELECT CAST({query} AS VARCHAR) AS q, CAST({generated} AS DOUBLE) AS g, "
            f"CAST({dimension} AS DOUBLE) AS d, CAST({value} AS DOUBLE) AS v FROM {loaded.view}"
            if "embedding" not in loaded.columns else
            f"SELECT CAST({query} AS VARCHAR) AS q, CAST({generated} AS DOUBLE) AS g, d, "
            f"CAST({embedding} AS DOUBLE[])[d] AS v FROM {loaded.view}, range(1, len({embedding}) + 1) AS r(d)")
    problem = con.execute(f"""
        WITH long AS ({long}),
        questions AS (SELECT q, g, COUNT(*) AS dims, COUNT(DISTINCT d) AS distinct_dims, SUM(v * v) AS sq
                      FROM long GROUP BY q, g),
        shared AS (SELECT a.q, a.g, COUNT(*) AS dims FROM long AS a JOIN long AS o ON o.q = a.q AND o.d = a.d
                   AND o.g = 0 GROUP BY a.q, a.g)
        SELECT x.q, x.g, CASE WHEN x.dims <> x.distinct_dims THEN 'has a dimension twice (or two vectors)'
            WHEN x.sq = 0 THEN 'is all zeros: it has no direction'
            WHEN o.q IS NULL THEN 'has no question asked (generated 0) beside it'
            ELSE 'has other dimensions than the question asked' END
        FROM questions AS x LEFT JOIN questions AS o ON o.q = x.q AND o.g = 0 LEFT JOIN shared AS s
            ON s.q = x.q AND s.g = x.g
        WHERE x.dims <> x.distinct_dims OR x.sq = 0 OR o.q IS NULL OR o.dims <> x.dims OR s.dims IS DISTINCT FROM x.dims
        ORDER BY x.q, x.g LIMIT 1""").fetchall()
    if problem:
        q, g, what = problem[0]
        raise SqlmetricsError(f"{loaded.label}: query {q!r}, question {int(g)} {what}. Give each question one "
                              "vector of the same dimensions.")


def _shown(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _equal_hash_neighbours(loaded: Loaded, ids: list) -> str:
    """A query counting the rows whose hash of (query, doc) equals the previous one in hash order: 0 means
    no repeats.

    Sorting the hashes and comparing neighbours is exact like COUNT(DISTINCT hash) and, in DuckDB, about
    1.5x faster over millions of rows. Equal hashes may still be a collision: _report_duplicate decides.
    """
    cols = ", ".join(f"CAST({c} AS VARCHAR)" for c in ids)
    return (f"SELECT COUNT(*) FROM (SELECT h, LAG(h) OVER (ORDER BY h) AS previous FROM (SELECT hash({cols}) AS h "
            f"FROM {loaded.view})) WHERE h = previous")


def _report_duplicate(con, loaded: Loaded, kind: str, ids: list, groups: tuple = ()) -> None:
    texts = [f"CAST({c} AS VARCHAR)" for c in ids]
    dup = con.execute(
        f"SELECT {', '.join(texts)} FROM {loaded.view} GROUP BY ALL HAVING COUNT(*) > 1 LIMIT 1"
    ).fetchall()
    if dup:  # else the hashes collided: no real repeat
        dup = dup[0]
        lines = [r[0] for r in con.execute(
            f"SELECT line_no FROM {loaded.numbered} WHERE {' AND '.join(f'{t} = ?' for t in texts)} "
            "ORDER BY line_no LIMIT 2", list(dup)).fetchall()]
        group = f" in {groups[0].replace('_', ' ')} {dup[1]!r}" if groups else ""
        dup = (dup[0], dup[-1])
        fix = ("Remove the repeated judgment." if kind == "qrels" else
               "Remove the repeat, or pass duplicates='max' (keep the highest score) or 'first' (keep the first line).")
        where = (f"{loaded.label}: document {dup[1]!r} appears more than once for query {dup[0]!r}{group} "
                 f"({loaded.lines(*lines)})")
        raise RepeatedDocument(f"{where}. {fix}", where)


class RepeatedDocument(SqlmetricsError):
    """A document twice in one query's judgments or ranking; .where says which, without the fix (a command
    that takes no duplicates= words its own)."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where
