-- measure: R
-- description: Recall at k: relevant documents in the top k, divided by the query's relevant documents R.
-- reference: trec_eval recall_k; ranx recall@k; ir_measures R@k
-- param k: cutoff
-- param rel: level
-- at: k
-- aliases: recall_{k}, recall.{k}, recall@{k}
-- aggregate: mean
-- range: 0..1
CAST(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE) / NULLIF(num_rel, 0)
