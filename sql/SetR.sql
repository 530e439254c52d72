-- measure: SetR
-- description: Set recall: relevant documents retrieved, divided by the query's relevant documents R.
-- reference: trec_eval set_recall; ranx recall (no cutoff)
-- param rel: level
-- aliases: set_recall (trec_eval), recall (ranx)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 2/3
CAST(SUM(is_rel) AS DOUBLE) / NULLIF(num_rel, 0)
