-- measure: RBPResid
-- description: RBP's residual (trec_eval 10.0 rbp_resid): how much RBP could still rise if every unjudged retrieved document (no qrels row, or a negative grade) had the highest gain, plus the tail p^n past the run's end; 0 when the run holds no unjudged document.
-- reference: trec_eval 10.0 rbp_resid (Moffat & Zobel 2008)
-- param p: prob = 0.9
-- aliases: rbp_resid (trec_eval), rbp_resid_p={p} (trec_eval), rbp_resid.p={p} (trec_eval)
-- aggregate: mean
-- better: lower
-- range: 0..1
-- example: (p=0.5) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 7/32
-- example: (p=0.5) qrels: q1 d1 1, q1 d2 0 run: q1 d1 0.9, q1 d2 0.8 => 0
-- note: trec_eval adds p^(i-1) for each unjudged document at rank i, and returns p^n + (1 - p) * that sum (n =
--   the run's length). The ranked rows here are the judged ones, and the p^(i-1) of all n ranks sum to
--   (1 - p^n) / (1 - p), so the value is 1 - (1 - p) * (the sum of p^(i-1) over the documents graded >= 0).
--   First example: unjudged d5 and d6 at ranks 3 and 4: 1/32 + 1/2 * (1/4 + 1/8) = 7/32 = 1 - 1/2 * (1 + 1/2
--   + 1/16). Second: every document is judged, so 0 (trec_eval's rule, although p^n = 1/4 is still unknown).
CASE WHEN MAX(num_ret) > SUM(CASE WHEN relevance >= 0 THEN 1 ELSE 0 END)
  THEN 1 - (1 - :p) * SUM(CASE WHEN relevance >= 0 THEN POWER(:p, rnk - 1) ELSE 0 END)
  ELSE 0
END
