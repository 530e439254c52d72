"""A RAG pipeline's rows, beside the ranked values by query: the judged statements (rows: verdicts,
verdict_values) and the generated questions' cosines with the question asked (rows: embeddings,
embedding_values)."""
from __future__ import annotations

from ..deferred import exp
from ..errors import SqlmetricsError
from ..plan import Plan
from .shape import Shape
from .sources import Embeddings, Source
from .trees import _by, _c, _parse_ours


def check_rag(plan: Plan, options: Shape, verdicts: Source | None, embeddings: Embeddings | None) -> None:
    """The RAG measures need their inputs (verdicts=, embeddings=), and one pipeline's: one run, with qrels."""
    if not plan.verdicts and not plan.embeddings:
        return
    if plan.verdicts and verdicts is None:
        raise SqlmetricsError("the RAG measures (Faithfulness, ContextRecall, ContextRelevancy) read judged statements: "
                              "pass verdicts=, a table of query_id, statement, "
                              "statement_of ('answer', 'reference' or 'context') and verdict (1 or 0).")
    if plan.embeddings and embeddings is None:
        raise SqlmetricsError("AnswerRelevancy reads question embeddings: pass embeddings=, a table of query_id, generated (0: the question asked; 1, 2, ...: the questions "
                              "generated from the answer), embedding (a list of numbers; or dimension and value, one "
                              "row per dimension) and noncommittal (1 or 0).")
    if options.run_key or options.labels or options.judgment_groups:
        raise SqlmetricsError(ONE_PIPELINE)


# The verdicts are one pipeline's answers, keyed by the query alone: two runs would share them.
ONE_PIPELINE = ("the RAG measures read one pipeline's verdicts and embeddings, keyed by query: evaluate one run at a "
                "time, with qrels (qrels_format='qrels' or 'subtopics').")
RAG_ROWS = ("verdicts", "embeddings")  # the rows the RAG measures read


def verdict_values(plan: Plan, verdicts: Source, fixed) -> list:
    """The judged statements (verdict_rows) and the RAG measures over each query's (verdict_values)."""
    rows = verdicts.select({"query_id": "VARCHAR", "statement_of": "VARCHAR", "verdict": "DOUBLE"})
    values = [exp.alias_(fixed(e, _by(["statement_of", "verdict"])), out, copy=False)
              for out, e, _ in plan.values if out in plan.verdicts]
    by_query = exp.select(_c("query_id"), *values).from_("verdict_rows", copy=False) \
        .group_by(_c("query_id"), copy=False)
    return [("verdict_rows", rows), ("verdict_values", by_query)]


# The cosine of each generated question's embedding with the question asked's (rows: embeddings), from one row per
# dimension: sums of products joined on the dimension, over the two norms.
_EMBEDDINGS_LONG = [
    ("embedding_norms", "SELECT query_id, generated, SQRT(SUM(value * value)) AS norm, "
                        "MAX(noncommittal) AS noncommittal FROM embedding_long GROUP BY query_id, generated"),
    ("embedding_dots", "SELECT g.query_id, g.generated, SUM(g.value * o.value) AS dot FROM embedding_long AS g "
                       "JOIN embedding_long AS o ON o.query_id = g.query_id AND o.dimension = g.dimension "
                       "AND o.generated = 0 WHERE g.generated <> 0 GROUP BY g.query_id, g.generated"),
    ("embedding_rows", "SELECT d.query_id, d.generated, n.noncommittal, d.dot / NULLIF(n.norm * o.norm, 0) AS cosine "
                       "FROM embedding_dots AS d JOIN embedding_norms AS n ON n.query_id = d.query_id "
                       "AND n.generated = d.generated JOIN embedding_norms AS o ON o.query_id = d.query_id "
                       "AND o.generated = 0"),
]
# The same with DuckDB's vector function, over one row per question.
_EMBEDDINGS_FUNCTION = (
    "SELECT g.query_id, g.generated, g.noncommittal, LIST_COSINE_SIMILARITY(g.embedding, o.embedding) AS cosine "
    "FROM embedding_input AS g JOIN embedding_input AS o ON o.query_id = g.query_id AND o.generated = 0 "
    "WHERE g.generated <> 0")


def embedding_values(plan: Plan, embeddings: Embeddings, fixed) -> list:
    """The generated questions' cosines with the question asked (embedding_rows: query_id, generated, noncommittal,
    cosine) and AnswerRelevancy over each query's (embedding_values)."""
    roles = {"query_id": "VARCHAR", "generated": "BIGINT", "noncommittal": "DOUBLE"}
    source = embeddings.source
    if embeddings.form == "function":
        ctes = [("embedding_input", source.select({**roles, "embedding": "DOUBLE[]"})),
                ("embedding_rows", _parse_ours(_EMBEDDINGS_FUNCTION))]
    else:
        if embeddings.form == "unnest":  # an array's elements: Source's list unnesting, doc_id the element
            lists = Source(source.table, {**source.columns, "doc_id": source.columns["embedding"]},
                           source.constants, lists=True)
            ctes = [("embedding_input", lists.select({**roles, "rank_position": "BIGINT", "doc_id": "DOUBLE"})),
                    ("embedding_long", _parse_ours("SELECT query_id, generated, noncommittal, rank_position AS "
                                                   "dimension, doc_id AS value FROM embedding_input"))]
        else:
            ctes = [("embedding_long", source.select({**roles, "dimension": "BIGINT", "value": "DOUBLE"}))]
        ctes += [(name, _parse_ours(sql)) for name, sql in _EMBEDDINGS_LONG]
    values = [exp.alias_(fixed(e, _by(["generated"])), out, copy=False)
              for out, e, _ in plan.values if out in plan.embeddings]
    by_query = exp.select(_c("query_id"), *values).from_("embedding_rows", copy=False) \
        .group_by(_c("query_id"), copy=False)
    return [*ctes, ("embedding_values", by_query)]
