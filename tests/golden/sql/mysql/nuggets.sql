-- sqlmetrics: ranked-retrieval evaluation, rendered for mysql
-- measures: ndcg_at_10 = nDCG@10, nuggetall = NuggetAll, nuggetvitalstrict = NuggetVitalStrict, nuggetweighted = NuggetWeighted, nuggetrecall = NuggetRecall
-- qrels: rag.eval.context_judgments (query_id=topic_id, doc_id=chunk_id, relevance=relevant)
-- run: rag.eval.retrieved_by_system (run_name=`system`, query_id=topic_id, doc_id=chunk_id, score=similarity)
-- options: queries='qrels', ties='docid_desc', relevance_level=1, score_precision='float64'
-- one row per run_name and query_id: run_name, query_id, ndcg_at_10, nuggetall, nuggetvitalstrict, nuggetweighted, nuggetrecall
WITH judgments AS (
  SELECT
    CAST(CAST(topic_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(chunk_id AS CHAR) AS BINARY) AS doc_id,
    CAST(relevant AS DOUBLE) AS relevance
  FROM rag.eval.context_judgments
  LIMIT 18446744073709551615
), run_rows AS (
  SELECT
    CAST(CAST(`system` AS CHAR) AS BINARY) AS run_name,
    CAST(CAST(topic_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(chunk_id AS CHAR) AS BINARY) AS doc_id,
    CAST(similarity AS DOUBLE) AS score
  FROM rag.eval.retrieved_by_system
), ideal AS (
  SELECT
    query_id,
    relevance,
    ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY relevance DESC, doc_id DESC) AS ideal_rnk
  FROM judgments
), query_stats AS (
  SELECT
    query_id,
    SUM(
      CASE
        WHEN ideal_rnk <= 10 AND relevance >= 0 AND relevance > 0
        THEN relevance / (
          LN(ideal_rnk + 1) / LN(2)
        )
        ELSE 0
      END
    ) AS idcg_1
  FROM ideal
  GROUP BY
    query_id
), judged_run AS (
  SELECT
    run_rows.run_name AS run_name,
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
    run_name,
    query_id,
    relevance,
    ROW_NUMBER() OVER (PARTITION BY run_name, query_id ORDER BY score DESC, doc_id DESC) AS rnk,
    COALESCE(LEAD(1) OVER (PARTITION BY run_name, query_id ORDER BY score DESC, doc_id DESC), 0) AS has_next
  FROM judged_run
), list_ends AS (
  SELECT
    run_name,
    query_id,
    relevance,
    rnk,
    MAX(rnk) OVER (PARTITION BY run_name, query_id) AS num_ret
  FROM ranking
  WHERE
    NOT relevance IS NULL OR rnk = 1 OR has_next = 0
), judged_ranking AS (
  SELECT
    run_name,
    query_id,
    relevance,
    rnk,
    num_ret
  FROM list_ends
  WHERE
    NOT relevance IS NULL OR rnk = 1
), lists AS (
  SELECT
    runs.run_name AS run_name,
    query_stats.query_id AS query_id
  FROM (
    SELECT DISTINCT
      run_name
    FROM run_rows
  ) AS runs
  CROSS JOIN query_stats
), nugget_input AS (
  SELECT
    CAST(CAST(topic_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(nugget_id AS CHAR) AS BINARY) AS nugget,
    CAST(importance AS CHAR) AS importance,
    CAST(nugget_weight AS DOUBLE) AS weight
  FROM rag.eval.nuggets
), assignment_input AS (
  SELECT
    CAST(CAST(topic_id AS CHAR) AS BINARY) AS query_id,
    CAST(CAST(`system` AS CHAR) AS BINARY) AS run_name,
    CAST(CAST(nugget_id AS CHAR) AS BINARY) AS nugget,
    CAST(assignment AS CHAR) AS assignment
  FROM rag.eval.nugget_assignments
), nugget_rows AS (
  SELECT
    r.run_name AS run_name,
    n.query_id AS query_id,
    n.nugget AS nugget,
    CASE WHEN n.importance = 'vital' THEN 1 ELSE 0 END AS vital,
    CAST(COALESCE(n.weight, CASE WHEN n.importance = 'vital' THEN 1.0 ELSE 0.5 END) AS DOUBLE) AS weight,
    CAST(CASE a.assignment WHEN 'support' THEN 1.0 WHEN 'partial_support' THEN 0.5 ELSE 0.0 END AS DOUBLE) AS support,
    CAST(CASE a.assignment WHEN 'support' THEN 1.0 ELSE 0.0 END AS DOUBLE) AS strict_support,
    CAST(CASE WHEN a.assignment IN ('support', 'partial_support') THEN 1.0 ELSE 0.0 END AS DOUBLE) AS any_support
  FROM nugget_input AS n
  CROSS JOIN (
    SELECT DISTINCT
      run_name
    FROM assignment_input
  ) AS r
  LEFT JOIN assignment_input AS a
    ON a.run_name = r.run_name AND a.query_id = n.query_id AND a.nugget = n.nugget
), nugget_values AS (
  SELECT
    run_name,
    query_id,
    AVG(support) AS nuggetall,
    COALESCE(AVG(CASE WHEN vital = 1 THEN strict_support END), 0) AS nuggetvitalstrict,
    SUM(weight * support) / SUM(weight) AS nuggetweighted,
    AVG(any_support) AS nuggetrecall
  FROM nugget_rows
  GROUP BY
    run_name,
    query_id
), ranked_values AS (
  SELECT
    lists.run_name AS run_name,
    lists.query_id AS query_id,
    COALESCE(
      SUM(
        CASE
          WHEN rnk <= 10 AND relevance >= 0
          THEN relevance / (
            LN(rnk + 1) / LN(2)
          )
          ELSE 0
        END
      ) / NULLIF(idcg_1, 0),
      0
    ) AS ndcg_at_10
  FROM lists
  JOIN query_stats
    ON lists.query_id = query_stats.query_id
  LEFT JOIN judged_ranking
    ON lists.run_name = judged_ranking.run_name
    AND lists.query_id = judged_ranking.query_id
  GROUP BY
    lists.run_name,
    lists.query_id,
    query_stats.idcg_1
), list_values AS (
  SELECT
    ranked_values.run_name AS run_name,
    ranked_values.query_id AS query_id,
    ranked_values.ndcg_at_10 AS ndcg_at_10,
    nugget_values.nuggetall AS nuggetall,
    nugget_values.nuggetvitalstrict AS nuggetvitalstrict,
    nugget_values.nuggetweighted AS nuggetweighted,
    nugget_values.nuggetrecall AS nuggetrecall
  FROM ranked_values
  LEFT JOIN nugget_values
    ON ranked_values.run_name = nugget_values.run_name
    AND ranked_values.query_id = nugget_values.query_id
)
SELECT
  CAST(list_values.run_name AS CHAR) AS run_name,
  CAST(list_values.query_id AS CHAR) AS query_id,
  ndcg_at_10,
  nuggetall,
  nuggetvitalstrict,
  nuggetweighted,
  nuggetrecall
FROM list_values
ORDER BY
  list_values.run_name,
  list_values.query_id
