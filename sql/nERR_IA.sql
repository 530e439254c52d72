-- measure: nERR_IA
-- description: Intent-aware expected reciprocal rank, ndeval's collection-dependent form: ERR-IA's sum over the top k divided by the same sum over ndeval's greedy ideal ranking.
-- reference: Chapelle et al. 2009 (CIKM); ndeval (TREC Web track) nERR-IA@k; ir_measures nERR_IA@k (its pyndeval provider, alpha 0.5)
-- param k: cutoff = 20
-- param alpha: prob = 0.5
-- at: k
-- aliases: nERR-IA@{k} (ndeval)
-- rows: subtopics
-- aggregate: mean
-- range: 0..1
-- example: @4 qrels: q1 s1 d1 1, q1 s2 d1 1, q1 s1 d2 1, q1 s2 d3 1, q1 s3 d4 0 run: q1 d2 0.9, q1 d1 0.8, q1 d5 0.7, q1 d3 0.6 => 45/58
-- note: Subtopic qrels (qrels_format='subtopics'). Example: the run's sum is 1/1 + 1.5/2 + 0/3 + 0.5/4 = 15/8
--   (see ERR_IA); the greedy ideal (d1, d3, d2; see alpha_nDCG) gains 2/1 + 0.5/2 + 0.5/3 = 29/12: 45/58.
-- note: The greedy ideal ranking is alpha_nDCG's (the same rows, `ideal_gain` for this alpha). A query with
--   no relevant subtopic scores 0. k defaults to 20, the depth ndeval evaluates.
SUM(CASE WHEN row_kind = 'run' AND rnk <= :k THEN POWER(1 - :alpha, seen) / rnk ELSE 0 END)
/ NULLIF(SUM(CASE WHEN row_kind = 'ideal' AND ideal_alpha = :alpha AND rnk <= :k THEN ideal_gain / rnk ELSE 0 END), 0)
