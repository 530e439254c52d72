-- measure: Success
-- description: 1 if any relevant document is in the top k (in the whole run without k), else 0.
-- reference: trec_eval success_k; ranx hit_rate@k
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aliases: success_{k}, success.{k}, hit_rate@{k}, hit_rate
-- aggregate: mean
-- range: 0..1
CAST(MAX(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE)
