-- sqlmetrics: ranked-retrieval evaluation, rendered for mysql
-- measures: contextprecision_at_5 = ContextPrecision@5, faithfulness = Faithfulness, contextrecall = ContextRecall, contextrelevancy = ContextRelevancy, answerrelevancy = AnswerRelevancy
-- qrels: rag.eval.context_judgments (query_id=question_id, doc_id=chunk_id, relevance=relevant)
-- run: rag.eval.retrieved (query_id=question_id, doc_id=chunk_id, score=similarity)
-- options: queries='qrels', ties='docid_desc', relevance_level=1, score_precision='float64'
-- one row per query_id: query_id, contextprecision_at_5, faithfulness, contextrecall, contextrelevancy, answerrelevancy
WITH judgments AS (
  SELECT
    CAST(CAST(question_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(chunk_id AS CHAR) AS BINARY) AS doc_id,
    CAST(relevant AS DOUBLE) AS relevance
  FROM rag.eval.context_judgments
  LIMIT 18446744073709551615
), run_rows AS (
  SELECT
    CAST(CAST(question_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(chunk_id AS CHAR) AS BINARY) AS doc_id,
    CAST(similarity AS DOUBLE) AS score
  FROM rag.eval.retrieved
), query_stats AS (
  SELECT
    query_id
  FROM judgments
  GROUP BY
    query_id
), judged_run AS (
  SELECT
    run_rows.query_id AS query_id,
    run_rows.doc_id AS doc_id,
    run_rows.score AS score,
    judgments.relevance AS relevance
  FROM run_rows
  LEFT JOIN judgments
    ON run_rows.query_id = judgments.query_id AND run_rows.doc_id = judgments.doc_id
  WHERE
    run_rows.query_id IN (
      SELECT
        query_id
      FROM query_stats
    )
), ranking AS (
  SELECT
    query_id,
    relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rnk,
    COALESCE(LEAD(1) OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), 0) AS has_next
  FROM judged_run
), list_ends AS (
  SELECT
    query_id,
    relevance,
    rnk,
    MAX(rnk) OVER (PARTITION BY query_id) AS num_ret
  FROM ranking
  WHERE
    NOT relevance IS NULL OR rnk = 1 OR has_next = 0
), judged_ranking AS (
  SELECT
    query_id,
    relevance,
    rnk,
    num_ret,
    CASE WHEN relevance >= 1 THEN 1 ELSE 0 END AS is_rel,
    SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) OVER (
      PARTITION BY query_id
      ORDER BY rnk ASC
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS rel_so_far
  FROM list_ends
  WHERE
    NOT relevance IS NULL OR rnk = 1
), lists AS (
  SELECT
    query_id
  FROM query_stats
), verdict_rows AS (
  SELECT
    CAST(CAST(question_id AS CHAR) AS BINARY) AS query_id,
    CAST(statement_of AS CHAR) AS statement_of,
    CAST(verdict AS DOUBLE) AS verdict
  FROM rag.eval.verdicts
), verdict_values AS (
  SELECT
    query_id,
    AVG(CASE WHEN statement_of = 'answer' THEN verdict END) AS faithfulness,
    AVG(CASE WHEN statement_of = 'reference' THEN verdict END) AS contextrecall,
    AVG(CASE WHEN statement_of = 'context' THEN verdict END) AS contextrelevancy
  FROM verdict_rows
  GROUP BY
    query_id
), embedding_long AS (
  SELECT
    CAST(CAST(question_id AS CHAR) AS BINARY) AS query_id,
    CAST(`generated` AS SIGNED) AS `generated`,
    CAST(noncommittal AS DOUBLE) AS noncommittal,
    CAST(dimension AS SIGNED) AS dimension,
    CAST(`value` AS DOUBLE) AS value
  FROM rag.eval.question_embeddings
), embedding_norms AS (
  SELECT
    query_id,
    `generated`,
    SQRT(SUM(value * value)) AS norm,
    MAX(noncommittal) AS noncommittal
  FROM embedding_long
  GROUP BY
    query_id,
    `generated`
), embedding_dots AS (
  SELECT
    g.query_id AS query_id,
    g.`generated` AS `generated`,
    SUM(g.value * o.value) AS dot
  FROM embedding_long AS g
  JOIN embedding_long AS o
    ON o.query_id = g.query_id AND o.dimension = g.dimension AND o.`generated` = 0
  WHERE
    g.`generated` <> 0
  GROUP BY
    g.query_id,
    g.`generated`
), embedding_rows AS (
  SELECT
    d.query_id AS query_id,
    d.`generated` AS `generated`,
    n.noncommittal AS noncommittal,
    d.dot / NULLIF(n.norm * o.norm, 0) AS cosine
  FROM embedding_dots AS d
  JOIN embedding_norms AS n
    ON n.query_id = d.query_id AND n.`generated` = d.`generated`
  JOIN embedding_norms AS o
    ON o.query_id = d.query_id AND o.`generated` = 0
), embedding_values AS (
  SELECT
    query_id,
    AVG(cosine) * (
      1 - MIN(noncommittal)
    ) AS answerrelevancy
  FROM embedding_rows
  GROUP BY
    query_id
), ranked_values AS (
  SELECT
    lists.query_id AS query_id,
    COALESCE(
      SUM(
        CASE WHEN rnk <= 5 AND is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END
      ) / NULLIF(SUM(CASE WHEN rnk <= 5 THEN is_rel ELSE 0 END), 0),
      0
    ) AS contextprecision_at_5
  FROM lists
  JOIN query_stats
    ON lists.query_id = query_stats.query_id
  LEFT JOIN judged_ranking
    ON lists.query_id = judged_ranking.query_id
  GROUP BY
    lists.query_id
), list_values AS (
  SELECT
    ranked_values.query_id AS query_id,
    ranked_values.contextprecision_at_5 AS contextprecision_at_5,
    verdict_values.faithfulness AS faithfulness,
    verdict_values.contextrecall AS contextrecall,
    verdict_values.contextrelevancy AS contextrelevancy,
    embedding_values.answerrelevancy AS answerrelevancy
  FROM ranked_values
  LEFT JOIN verdict_values
    ON ranked_values.query_id = verdict_values.query_id
  LEFT JOIN embedding_values
    ON ranked_values.query_id = embedding_values.query_id
)
SELECT
  CAST(list_values.query_id AS CHAR) AS query_id,
  contextprecision_at_5,
  faithfulness,
  contextrecall,
  contextrelevancy,
  answerrelevancy
FROM list_values
ORDER BY
  list_values.query_id
