-- measure: NumQ
-- description: Number of queries averaged (summed over queries).
-- reference: trec_eval num_q
-- aliases: num_q
-- aggregate: sum
-- range: 0..
CAST(1 AS DOUBLE)
