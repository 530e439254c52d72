-- measure: ERR
-- description: Expected reciprocal rank: sum over the top k of (1/i) * r_i * prod_{j<i} (1 - r_j), with r = (2^grade - 1) / 2^gmax.
-- reference: Chapelle et al. 2009; ir_measures ERR@k (its gdeval provider: TREC 2010 Web track gdeval.pl, gmax = 4)
-- param k: cutoff = none
-- param gmax: grade = 4
-- at: k
-- aggregate: mean
-- range: 0..1
-- example: @4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 109/1024
-- example: (gmax='max')@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 25/64
-- example: (gmax=2)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 25/64
-- note: gmax defaults to 4, gdeval's fixed maximum grade, so that ERR@k is ir_measures' ERR@k; gmax='max' takes
--   the largest grade in the whole qrels (all queries) instead, gmax=G any other scale. Example 1: r = 1/16
--   (d1), 0 (d2), 3/16 (d3 at rank 4): 1/16 + (15/16)(3/16)/4 = 109/1024; with gmax = 2: 1/4 + (3/4)(3/4)/4 = 25/64.
-- note: gdeval's own rules, which ERR@k matches on the data it accepts: ties ordered score DESC then doc id
--   DESC (this package's default ties); negative grades count as 0. gdeval refuses a grade above 4 and a
--   non-numeric query id, and prints 5 decimals; here a grade above gmax counts as gmax. ir_measures has
--   no ERR without a cutoff (gdeval needs one); ERR without k here is the whole ranking.
-- note: The running product is exp(sum(ln(1 - r))) over the documents ranked above; grades are clamped to
--   [0, gmax] so that 1 - r stays positive.
-- window err_reach: EXP(COALESCE(SUM(LN(1 - (POWER(2, CASE WHEN relevance > :gmax THEN :gmax WHEN relevance > 0 THEN relevance ELSE 0 END) - 1) / POWER(2, :gmax))) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))
SUM(
  CASE WHEN rnk <= :k THEN
    err_reach * (POWER(2, CASE WHEN relevance > :gmax THEN :gmax WHEN relevance > 0 THEN relevance ELSE 0 END) - 1)
    / POWER(2, :gmax) / rnk
  ELSE 0 END
)
