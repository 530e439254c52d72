-- measure: Hits
-- description: Number of relevant documents in the top k (whole run without k); a count, averaged over queries.
-- reference: ranx hits@k (note: knowledge-graph papers' "Hits@k" is a rate, our Success@k)
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aliases: hits@{k}, hits
-- aggregate: mean
-- range: 0..
CAST(SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END) AS DOUBLE)
