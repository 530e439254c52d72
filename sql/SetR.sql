-- measure: SetR
-- description: Set recall: relevant documents retrieved, divided by the query's relevant documents R.
-- reference: trec_eval set_recall; ranx recall (no cutoff)
-- param rel: level
-- aliases: set_recall, recall
-- aggregate: mean
-- range: 0..1
CAST(SUM(is_rel) AS DOUBLE) / NULLIF(num_rel, 0)
