-- measure: FallOut
-- description: Fall-out: non-relevant documents in the top k over all the non-relevant documents retrieved for the query (1 when none is); unjudged documents count as non-relevant.
-- reference: torchmetrics RetrievalFallOut(top_k=k) (its default empty_target_action='pos')
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aggregate: mean
-- better: lower
-- empty: 1
-- range: 0..1
-- example: @2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 3/4
-- example: @1 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/2
-- example: @1 qrels: q1 d1 1, q2 d7 1 run: q1 d1 0.9, q2 d8 0.5, q2 d7 0.4 => 1
-- note: torchmetrics scores the documents it is given, each with a binary target: here the query's ranked
--   list, a document being relevant when graded >= rel (unjudged ones are not). The denominator is the
--   non-relevant documents of that list (the whole list, whatever k), not of the qrels. A list without a
--   non-relevant document scores 1 (empty_target_action='pos', torchmetrics' default), and so does a
--   qrels query with no ranked list (empty: 1). torchmetrics' own order for tied scores is unspecified.
-- note: Example 1: q1's non-relevant are d2, d5, one of them in the top 2: 1/2; q2's only one, d8, is
--   first: 1; mean 3/4. Example 2: q1 0/2, q2 1/1. Example 3: q1 retrieves only d1, relevant: 1; q2 1/1.
COALESCE(
  CAST(CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END - SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE)
    / NULLIF(MAX(num_ret) - SUM(is_rel), 0),
  1)
