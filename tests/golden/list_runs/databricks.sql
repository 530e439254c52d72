-- ties='docid_desc'
SELECT
  CAST(sqlm_lists.query_id AS STRING) AS query_id,
  CAST(sqlm_items.sqlm_doc AS STRING) AS doc_id,
  CAST(sqlm_lists.scores[sqlm_items.sqlm_pos] AS DOUBLE) AS score
FROM lists AS sqlm_lists
LATERAL VIEW
POSEXPLODE(sqlm_lists.items) sqlm_items AS sqlm_pos, sqlm_doc
-- ties='rank'
SELECT
  CAST(sqlm_lists.query_id AS STRING) AS query_id,
  CAST(sqlm_items.sqlm_doc AS STRING) AS doc_id,
  CAST((
    sqlm_items.sqlm_pos + 1
  ) AS BIGINT) AS rank_position
FROM lists AS sqlm_lists
LATERAL VIEW
POSEXPLODE(sqlm_lists.items) sqlm_items AS sqlm_pos, sqlm_doc
