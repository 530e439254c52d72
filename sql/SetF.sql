-- measure: SetF
-- description: trec_eval's set F: (1+beta)PR/(beta*P+R) of SetP and SetR; beta is not squared, as in trec_eval.
-- reference: trec_eval set_F
-- param beta: number = 1
-- param rel: level
-- aliases: set_F (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 4/7
-- example: (beta=0.5) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 6/11
-- example: (beta=1e308) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 2/3
-- note: Computed as trec_eval computes it, P = hits/n and R = hits/num_rel first, then (beta + 1) * P * R /
--   (beta * P + R) in that order: where the value sits on a printed digit's boundary (0.03125), the last bit
--   decides the digit trec_eval prints (0.0313), and the simplified (1+beta)*hits / (beta*num_rel + n) gives
--   0.03125 exactly (0.0312). P and R are at most 1, so a large beta cannot overflow. Without a hit the value
--   is 0 (trec_eval leaves it so). beta is cast first: MariaDB divides two number literals to 4 decimal places.
CASE WHEN SUM(is_rel) > 0 THEN
  (CAST(:beta AS DOUBLE) + 1.0) * (CAST(SUM(is_rel) AS DOUBLE) / MAX(num_ret)) * (CAST(SUM(is_rel) AS DOUBLE) / num_rel)
    / (CAST(:beta AS DOUBLE) * (CAST(SUM(is_rel) AS DOUBLE) / MAX(num_ret)) + CAST(SUM(is_rel) AS DOUBLE) / num_rel)
ELSE CAST(SUM(is_rel) AS DOUBLE) / NULLIF(num_rel + MAX(num_ret), 0) END
