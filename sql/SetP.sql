-- measure: SetP
-- description: Set precision: relevant documents retrieved, divided by the number retrieved.
-- reference: trec_eval set_P; ranx precision (no cutoff)
-- param rel: level
-- aliases: set_P (trec_eval), precision (ranx)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/2
CAST(SUM(is_rel) AS DOUBLE) / NULLIF(MAX(num_ret), 0)
