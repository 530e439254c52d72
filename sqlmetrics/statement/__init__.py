"""The statement builder: a plan (plan.py) + two sources + a shape -> ONE SQL statement, built as a sqlglot
tree (`dialects/` generates it for other engines, `local/` generates it for DuckDB and runs it). The
caller's names arrive as identifier and table nodes in the Sources; nothing here is text parsed back.

Shape of the statement (CTEs, in order):

    judgments    the qrels, columns renamed and cast              (query_id, doc_id, relevance)
    run_rows     the run(s), columns renamed and cast             (list key..., doc_id, score)
    [ideal]      judgments ranked by grade, for ideal-ranking measures (nDCG)
    query_stats  one row per judged query: R, N, ideal DCGs, ...
    [collection] one row: aggregates over all judgments (max grade)
    judged_run   each run row joined with its judgment once; only judged queries
    ranking      each list ordered once: rank and last row, the only pass over every run row
    list_ends    the judged rows, each list's first and last row; the list's length
    judged_ranking  the rows that can change a measure (judged ones, and each list's first row),
                 with running sums over them: an unjudged document adds nothing to any running value
    lists        the lists to average (queries="qrels": every run x every judged query)
    [position_*] for `rows: positions` templates: every list x positions 1..1000 with the judged rows there,
                 their windows, and position_values, one row per list (positions.py)
    [overlap_*]  for `rows: overlap` templates (Compat): every list's depths 1..D with how much its top and its
                 ideal ranking's top share (overlap.py), aggregated in overlap_values, joined beside list_values
    list_values  one GROUP BY over lists x judged_ranking: every measure is one aggregate expression

With judgment groups (Shape.judgment_groups, qrels_format='qrels_jg'), the judgments carry
`judgment_group`, and everything from query_stats to the GROUP BY is keyed by it too: judged_run repeats
each run row once per group of its query, the GROUP BY (then named group_values) gives each measure per
list and group, and list_values is their mean over the groups (trec_eval's map_avgjg, P_avgjg_k, ...).

With subtopic qrels (Shape.subtopics, qrels_format='subtopics'), the judgments are each document's highest grade
over its subtopics (subtopic_judgments holds them all), and the diversity measures (`rows: subtopics`) are one
GROUP BY over each list's subtopic rows (subtopics.py), joined beside the ranked values as the preference
measures' are.

The list key is run_key + segment columns (group_by, internally seg_1, ...) + query_id; templates never
name it. With segments and qrels, `lists` are the lists present (which judged queries a segment should
have seen is unknown). Labelled lists (Shape.labels, no qrels): run_rows carries `relevance` (a label
column or a checked relevance expression, see relevance.py) and comes first; judgments are its labelled
rows, and query_stats / ideal are keyed by the whole list key, so R and the ideal DCG come from the list.

The modules, each pointing only down (pyproject.toml's import-linter contract):

    build.py        build_statement(): the stages composed in their CTEs' order, and the checks of its inputs
    ranked.py       the chain above: judgments and run rows, ideal ranking, query_stats, ranking, judged rows
                    with running sums, lists, the GROUP BY (group_values and their mean with judgment groups)
    preferences.py  pref_* (rows: preferences; pref_closure, the one recursive CTE) -> pref_values
    positions.py    position_* (rows: positions) -> position_values
    subtopics.py    subtopic_*, greedy_* (rows: subtopics) -> subtopic_values
    overlap.py      overlap_* (rows: overlap) -> overlap_values
    recommender.py  rec_*, history_*, rating_rows (the whole run's values), item_* (rows: items) -> item_values
    rag.py          verdict_* and embedding_* (rows: verdicts, embeddings), beside the values by query
    nuggets.py      nugget_* and assignment_input (rows: nuggets), beside the values by run and query
    aggregate.py    the final SELECT: per-list rows, or each run's aggregates (GMAP_FLOOR, aggregate_sql)
    sources.py      Source, Embeddings: the input tables and their columns' roles
    trees.py        the sqlglot builders the stages share (columns, orders, windows, join conditions)
    shape.py        Shape: the evaluation options and the list key; check_subtopics
"""
from ..plan import READ
from .aggregate import GMAP_FLOOR, aggregate_sql
from .build import build_statement
from .nuggets import Nuggets
from .rag import ONE_PIPELINE, RAG_ROWS
from .shape import Shape, check_subtopics
from .sources import LISTS, Embeddings, Source
from .trees import _in_fixed_order  # fusion.py adds its sums in a fixed order too

__all__ = ["GMAP_FLOOR", "LISTS", "ONE_PIPELINE", "RAG_ROWS", "READ", "Embeddings", "Nuggets", "Shape", "Source", "aggregate_sql",
           "build_statement", "check_subtopics"]
