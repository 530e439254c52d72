-- measure: SetF
-- description: trec_eval's set F: (1+beta)PR/(beta*P+R) of SetP and SetR; beta is not squared, as in trec_eval.
-- reference: trec_eval set_F
-- param beta: number = 1
-- param rel: level
-- aliases: set_F
-- aggregate: mean
-- range: 0..1
-- With P = hits/n and R = hits/num_rel the formula simplifies to (1+beta)*hits / (beta*num_rel + n).
(1 + :beta) * CAST(SUM(is_rel) AS DOUBLE) / NULLIF(:beta * num_rel + MAX(num_ret), 0)
