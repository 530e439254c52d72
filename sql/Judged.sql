-- measure: Judged
-- description: Share of the top k documents (of min(k, run length)) that have any qrels row.
-- reference: ir_measures Judged@k
-- param k: cutoff = none
-- at: k
-- aggregate: mean
-- range: 0..1
-- example: @4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 3/4
-- example: @10 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 3/4
CAST(SUM(CASE WHEN rnk <= :k AND relevance IS NOT NULL THEN 1 ELSE 0 END) AS DOUBLE)
  / NULLIF(CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END, 0)
