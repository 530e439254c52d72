-- measure: SDCGResid
-- description: SDCG's residual (cwl_eval's, with -r): how much it could still rise if every unjudged document, and every empty position of cwl_eval's 1000, gained the most.
-- reference: cwl_eval 1.0.12's residual expected utility (best case minus worst case) of SDCG(min_rel=..., max_rel=...)@k (its NDCG-k)
-- param k: cutoff
-- param min_rel: level = 0
-- param max_rel: grade = max
-- rows: positions
-- at: k
-- aggregate: mean
-- better: lower
-- range: 0..1
-- example: (max_rel=2)@4 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.1951900250
-- example: (max_rel=2)@2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0
-- note: Gains as the measure's own (ir_measures' cwl_eval provider): grade g (negative as 0) clipped to [min_rel,
--   max_rel], gain = (g - min_rel) / (max_rel - min_rel); max_rel defaults to the qrels' largest grade.
-- note: cwl_eval's residual is the measure's best case minus its worst case, over its 1000 positions (rows:
--   positions): an unjudged document, and an empty position past the run's end, gains 0 in the worst case (the
--   measure's reported value) and 1 in the best case (cwl_gain_hi). A judged query the run does not rank scores
--   0, as for every measure (cwl_eval, reading the run, never sees it).
-- note: SDCG's continuation does not depend on the gains: the residual is the weight of the unjudged and empty
--   positions of the top min(k, 1000), sum of 1 / log2(i + 1) over them / that sum over all of them. Example 1:
--   d5 at rank 3: (1/2) / (1 + 1/log2 3 + 1/2 + 1/log2 5). Example 2: the top 2 is judged: 0.
CASE WHEN MAX(num_ret) > 0 THEN
  SUM(CASE WHEN rnk <= :k AND relevance IS NULL THEN LN(2) / LN(rnk + 1) ELSE 0 END) / SUM(CASE WHEN rnk <= :k THEN LN(2) / LN(rnk + 1) ELSE 0 END)
ELSE 0 END
