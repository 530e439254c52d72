-- measure: NumRet
-- description: Number of documents retrieved (summed over queries).
-- reference: trec_eval num_ret
-- aliases: num_ret
-- aggregate: sum
-- range: 0..
CAST(MAX(num_ret) AS DOUBLE)
