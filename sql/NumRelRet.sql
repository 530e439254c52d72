-- measure: NumRelRet
-- description: Number of relevant documents retrieved (summed over queries).
-- reference: trec_eval num_rel_ret
-- param rel: level
-- aliases: num_rel_ret
-- aggregate: sum
-- range: 0..
CAST(SUM(is_rel) AS DOUBLE)
