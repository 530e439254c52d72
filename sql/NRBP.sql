-- measure: NRBP
-- description: Novelty- and rank-biased precision: (1 - (1 - alpha) beta) / subtopics times the sum over the whole ranking of beta^(rank - 1) times the document's novelty gain (for each subtopic it is relevant to, (1 - alpha)^(the documents above it relevant to that subtopic)).
-- reference: Clarke et al. 2009 (ICTIR); ndeval (TREC Web track) NRBP; ir_measures NRBP(alpha=0.5, beta=0.5) (its pyndeval provider)
-- param alpha: prob = 0.5
-- param beta: prob = 0.5
-- rows: subtopics
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 s1 d1 1, q1 s2 d1 1, q1 s1 d2 1, q1 s2 d3 1, q1 s3 d4 0 run: q1 d2 0.9, q1 d1 0.8, q1 d5 0.7, q1 d3 0.6 => 87/128
-- example: (beta=0.8) qrels: q1 s1 d1 1, q1 s2 d1 1, q1 s1 d2 1, q1 s2 d3 1, q1 s3 d4 0 run: q1 d2 0.9, q1 d1 0.8, q1 d5 0.7, q1 d3 0.6 => 0.7368
-- note: Subtopic qrels (qrels_format='subtopics'). Example: 2 subtopics; the run gains 1, 1.5, 0, 0.5:
--   (1 + 1.5/2 + 0.5/8) * (1 - 0.5 * 0.5) / 2 = 87/128; with beta 0.8: (1 + 1.5 * 0.8 + 0.5 * 0.512) * 0.6 / 2 = 0.7368.
-- note: ndeval's collection-independent normalisation: an endless ranking relevant to every subtopic at every rank
--   would score 1. The whole ranking counts (ndeval has no cutoff for NRBP). A query with no relevant subtopic scores 0.
(1 - (1 - :alpha) * :beta) * SUM(CASE WHEN row_kind = 'run' THEN POWER(:beta, rnk - 1) * POWER(1 - :alpha, seen) ELSE 0 END)
/ NULLIF(MAX(subtopics), 0)
