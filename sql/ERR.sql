-- measure: ERR
-- description: Expected reciprocal rank: sum over the top k of (1/i) * r_i * prod_{j<i} (1 - r_j), with r = (2^grade - 1) / 2^gmax.
-- reference: Chapelle et al. 2009; ir_measures ERR@k; gdeval with ERR(gmax=4)
-- param k: cutoff = none
-- param gmax: number = max_relevance
-- at: k
-- aggregate: mean
-- range: 0..1
-- example: @4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 25/64
-- example: (gmax=4)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 109/1024
-- note: The running product is exp(sum(ln(1 - r))) over the documents ranked above; grades are clamped to
--   [0, gmax] so that 1 - r stays positive.
-- window err_reach: EXP(COALESCE(SUM(LN(1 - (POWER(2, CASE WHEN relevance > :gmax THEN :gmax WHEN relevance > 0 THEN relevance ELSE 0 END) - 1) / POWER(2, :gmax))) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))
SUM(
  CASE WHEN rnk <= :k THEN
    err_reach * (POWER(2, CASE WHEN relevance > :gmax THEN :gmax WHEN relevance > 0 THEN relevance ELSE 0 END) - 1)
    / POWER(2, :gmax) / rnk
  ELSE 0 END
)
