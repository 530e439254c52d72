-- ties='docid_desc'
SELECT
  CAST(sqlm_lists.query_id AS STRING) AS query_id,
  CAST(sqlm_doc AS STRING) AS doc_id,
  CAST(sqlm_lists.scores[sqlm_pos] AS FLOAT64) AS score
FROM lists AS sqlm_lists
CROSS JOIN UNNEST(sqlm_lists.items) AS sqlm_doc WITH OFFSET AS sqlm_pos
-- ties='rank'
SELECT
  CAST(sqlm_lists.query_id AS STRING) AS query_id,
  CAST(sqlm_doc AS STRING) AS doc_id,
  CAST((
    sqlm_pos + 1
  ) AS INT64) AS rank_position
FROM lists AS sqlm_lists
CROSS JOIN UNNEST(sqlm_lists.items) AS sqlm_doc WITH OFFSET AS sqlm_pos
