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
-- note: With P = hits/n and R = hits/num_rel the formula simplifies to (1+beta)*hits / (beta*num_rel + n),
--   computed here as hits / (num_rel * beta/(1+beta) + n/(1+beta)) so that a large beta cannot overflow
--   (beta*num_rel is infinite past 1e308; as beta grows, F tends to R). beta is cast first: MariaDB divides
--   two number literals to 4 decimal places.
CAST(SUM(is_rel) AS DOUBLE) / NULLIF(num_rel * (CAST(:beta AS DOUBLE) / (1 + CAST(:beta AS DOUBLE)))
    + MAX(num_ret) / (1 + CAST(:beta AS DOUBLE)), 0)
