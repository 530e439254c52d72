-- measure: nDCGRel
-- description: nDCG averaged over the relevant documents (trec_eval ndcg_rel): each retrieved document with a positive gain scores DCG down to its rank over the ideal DCG at that rank; each one not retrieved scores the run's whole DCG over the whole ideal DCG; the mean is over the documents with a positive gain (0 when that sum is not positive).
-- reference: trec_eval ndcg_rel (experimental), same in 9.0.8 and 10.0; gains as trec_eval -m ndcg_rel.1=3,2=9
-- param gains: gains = none
-- aliases: ndcg_rel (trec_eval), ndcg_rel_{gains} (trec_eval), ndcg_rel.{gains} (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.5443405536
-- example: (gains={1:3,2:1}) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.7520223943
-- example: (gains={0:-1,2:5}) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.3171272412
-- note: Gains are the grades (>= 0), or the gains= mapping (an unlisted grade gains its grade), whatever the
--   relevance level; a document without a grade >= 0 gains 0, and the ideal ranking sorts the judgments by
--   gain. First example: the ideal is 2, 1, 1 (IDCG 2, 2 + 1/log2(3), 2 + 1/log2(3) + 1/2 = 3.1309297536 at
--   ranks 1, 2, 3 and after). d1 (rank 1): 1/2; d3 (rank 5): (1 + 2/log2(6)) / 3.1309297536 = 0.5665108304;
--   d4 is not retrieved and scores the same whole-run ratio: (1/2 + 2 * 0.5665108304) / 3 = 0.5443405536.
--   Second: gains 3, 0, 1, 3 for d1..d4, ideal 3, 3, 1: (3/3 + 2 * (3 + 1/log2(6)) / (3 + 3/log2(3) + 1/2)) / 3.
--   Third: d1 and d4 gain 1, d2 -1 (it lowers the DCG from rank 2 on), d3 5; ideal 5, 1, 1: (1/5 + 2 * (1 -
--   1/log2(3) + 5/log2(6)) / (5 + 1/log2(3) + 1/2)) / 3 (trec_eval 10.0 prints 0.7520 and 0.3171).
-- note: The ideal DCG at the row's rank comes from the ideal ranking's running sum (NULL past its end, where
--   it is the whole ideal DCG).
-- ideal_order: :gains
-- window dcg_so_far: SUM(CASE WHEN relevance >= 0 THEN :gains / (LN(rnk + 1) / LN(2)) ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- ideal idcg: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END)
-- ideal num_positive: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN 1 ELSE 0 END)
-- ideal_running idcg_at_rank: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
CASE WHEN
  SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN dcg_so_far / NULLIF(COALESCE(idcg_at_rank, idcg), 0) ELSE 0 END)
  + (num_positive - SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN 1 ELSE 0 END))
    * SUM(CASE WHEN relevance >= 0 THEN :gains / (LN(rnk + 1) / LN(2)) ELSE 0 END) / NULLIF(idcg, 0) > 0
THEN (
  SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN dcg_so_far / NULLIF(COALESCE(idcg_at_rank, idcg), 0) ELSE 0 END)
  + (num_positive - SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN 1 ELSE 0 END))
    * SUM(CASE WHEN relevance >= 0 THEN :gains / (LN(rnk + 1) / LN(2)) ELSE 0 END) / NULLIF(idcg, 0)
) / num_positive
ELSE 0 END
