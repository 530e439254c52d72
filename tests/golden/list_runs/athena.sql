-- ties='docid_desc'
SELECT
  CAST(sqlm_lists.query_id AS VARCHAR) AS query_id,
  CAST(sqlm_items.sqlm_doc AS VARCHAR) AS doc_id,
  CAST(sqlm_lists.scores[sqlm_items.sqlm_pos] AS DOUBLE) AS score
FROM lists AS sqlm_lists
CROSS JOIN UNNEST(sqlm_lists.items) WITH ORDINALITY AS sqlm_items(sqlm_doc, sqlm_pos)
-- ties='rank'
SELECT
  CAST(sqlm_lists.query_id AS VARCHAR) AS query_id,
  CAST(sqlm_items.sqlm_doc AS VARCHAR) AS doc_id,
  CAST(sqlm_items.sqlm_pos AS BIGINT) AS rank_position
FROM lists AS sqlm_lists
CROSS JOIN UNNEST(sqlm_lists.items) WITH ORDINALITY AS sqlm_items(sqlm_doc, sqlm_pos)
