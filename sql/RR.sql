-- measure: RR
-- description: Reciprocal rank of the first relevant document within the top k (whole run without k).
-- reference: trec_eval recip_rank; ranx mrr@k; ir_measures RR@k
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aliases: recip_rank, mrr@{k}, mrr
-- aggregate: mean
-- range: 0..1
1 / CAST(MIN(CASE WHEN rnk <= :k AND is_rel = 1 THEN rnk END) AS DOUBLE)
