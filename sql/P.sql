-- measure: P
-- description: Precision at k: relevant documents in the top k, divided by k (by k even when the run is shorter).
-- reference: trec_eval P_k; ranx precision@k; ir_measures P@k
-- param k: cutoff
-- param rel: level
-- at: k
-- aliases: P_{k}, P.{k}, precision@{k}
-- aggregate: mean
-- range: 0..1
CAST(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE) / :k
