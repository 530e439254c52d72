-- measure: NumQ
-- description: Number of queries averaged (summed over queries).
-- reference: trec_eval num_q
-- aliases: num_q (trec_eval)
-- aggregate: sum
-- range: 0..
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 2
CAST(1 AS DOUBLE)
