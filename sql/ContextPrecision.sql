-- measure: ContextPrecision
-- description: RAGAS context precision: precision at each relevant position within the top k, averaged over the relevant documents retrieved there (not over R).
-- reference: RAGAS context_precision (without its 1e-10 smoothing)
-- param k: cutoff = none
-- param rel: level
-- at: k
-- kind: rag
-- aggregate: mean
-- range: 0..1
-- example: @4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 3/4
-- example: @2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1
SUM(CASE WHEN rnk <= :k AND is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END)
  / NULLIF(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END), 0)
