-- measure: Judged
-- description: Share of the top k documents (of min(k, run length)) that have any qrels row.
-- reference: ir_measures Judged@k
-- param k: cutoff = none
-- at: k
-- aggregate: mean
-- range: 0..1
CAST(SUM(CASE WHEN rnk <= :k AND relevance IS NOT NULL THEN 1 ELSE 0 END) AS DOUBLE)
  / NULLIF(CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END, 0)
