-- measure: INSQResid
-- description: INSQ's residual (cwl_eval's, with -r): how much INSQ could still rise if every unjudged document, and every empty position of cwl_eval's 1000, gained the most; 0 when the 1000 positions are all judged documents.
-- reference: cwl_eval 1.0.12's residual expected utility (best case minus worst case) of INSQ(T=..., min_rel=..., max_rel=...) (Moffat, Scholer & Thomas 2012)
-- param T: number = 1
-- param min_rel: level = 0
-- param max_rel: grade = max
-- rows: positions
-- aggregate: mean
-- better: lower
-- range: 0..1
-- example: (max_rel=2) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.3770943350
-- example: (max_rel=2,T=2) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.5654290253
-- example: qrels: q1 d1 1, q2 d1 1 run: q1 d2 0.5 => 1/2
-- note: cwl_eval's residual is the measure's best case minus its worst case: an unjudged document and an empty
--   position (past the run's end, up to 1000) gain 0 in the worst case, its reported value, and 1 in the
--   best case. INSQ's continuation does not depend on the gains, so the residual is the weight of those
--   positions: sum of P_i over them / sum of P_i, P_i = (2T / (i + 2T - 1))^2 (see INSQ).
-- note: Example 1 (T = 1): d1, d2 and d3 at ranks 1, 2 and 4 are judged, P_i = 4 / (i + 1)^2: 1 - (1/4 + 1/9 +
--   1/25) / (1/2^2 + ... + 1/1001^2) = 1 - 0.40111... / 0.64393... Example 2 (T = 2): P_i = 16 / (i + 3)^2,
--   1 - (1/16 + 1/25 + 1/49) / (1/4^2 + ... + 1/1003^2). Example 3: q1 ranks only unjudged d2, residual 1;
--   q2 is not ranked, 0: the mean is 1/2.
CASE WHEN MAX(num_ret) > 0 THEN
  SUM(CASE WHEN relevance IS NULL THEN POWER(CAST(2 * :T AS DOUBLE) / (rnk + 2 * :T - 1), 2) ELSE 0 END) / SUM(POWER(CAST(2 * :T AS DOUBLE) / (rnk + 2 * :T - 1), 2))
ELSE 0 END
