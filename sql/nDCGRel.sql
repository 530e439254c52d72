-- measure: nDCGRel
-- description: nDCG averaged over the relevant documents (trec_eval ndcg_rel): each retrieved document with a positive grade scores DCG down to its rank over the ideal DCG at that rank; each one not retrieved scores the run's whole DCG over the whole ideal DCG; the mean is over the documents with a positive grade.
-- reference: trec_eval ndcg_rel (experimental), same in 9.0.8 and 10.0
-- aliases: ndcg_rel (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.5443405536
-- note: Gains are the grades, whatever the relevance level; "relevant" here is a positive grade. Example: the
--   ideal is 2, 1, 1 (IDCG 2, 2 + 1/log2(3), 2 + 1/log2(3) + 1/2 = 3.1309297536 at ranks 1, 2, 3 and after).
--   d1 (rank 1): 1/2; d3 (rank 5): (1 + 2/log2(6)) / 3.1309297536; d4 is not retrieved and scores the same
--   whole-run ratio: (1/2 + 2 * 0.5665108304) / 3 = 0.5443405536 (trec_eval prints 0.5443).
-- note: The ideal DCG at the row's rank comes from the ideal ranking's running sum (NULL past its end, where
--   it is the whole ideal DCG).
-- window dcg_so_far: SUM(CASE WHEN relevance > 0 THEN relevance / (LN(rnk + 1) / LN(2)) ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- ideal idcg: SUM(CASE WHEN relevance > 0 THEN relevance / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END)
-- ideal num_positive: SUM(CASE WHEN relevance > 0 THEN 1 ELSE 0 END)
-- ideal_running idcg_at_rank: SUM(CASE WHEN relevance > 0 THEN relevance / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
(
  SUM(CASE WHEN relevance > 0 THEN dcg_so_far / NULLIF(COALESCE(idcg_at_rank, idcg), 0) ELSE 0 END)
  + (num_positive - SUM(CASE WHEN relevance > 0 THEN 1 ELSE 0 END))
    * SUM(CASE WHEN relevance > 0 THEN relevance / (LN(rnk + 1) / LN(2)) ELSE 0 END) / NULLIF(idcg, 0)
) / NULLIF(num_positive, 0)
