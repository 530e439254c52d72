-- measure: Rndcg
-- description: nDCG averaged at the R levels (trec_eval Rndcg): the ideal ranking's positions where its gain drops (after the documents of each positive gain level, the last one where the gains reach 0), each scoring the run's DCG down to that position (or its end) over the ideal DCG there; plus the whole run over the whole ideal when the run goes on past the last positive gain by more than one document.
-- reference: trec_eval Rndcg (experimental), same in 9.0.8 and 10.0; gains as trec_eval -m Rndcg.1=3,2=9
-- param gains: gains = none
-- aliases: Rndcg (trec_eval), Rndcg_{gains} (trec_eval), Rndcg.{gains} (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.4096969716
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d3 0.9, q1 d1 0.8 => 0.9201515142
-- example: (gains={1:3,2:1}) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 0.5847227929
-- example: qrels: q1 d1 1, q1 d2 0 run: q1 d2 0.9, q1 d1 0.8, q1 d5 0.7, q1 d6 0.6 => 0.3154648768
-- example: qrels: q1 d2 0 run: q1 d2 0.9 => 0
-- note: First example: the ideal gains are 2, 1, 1, 0; its levels end at positions 1 and 3, where the ideal
--   DCG is 2 and 2 + 1/log2(3) + 1/2 = 3.1309297536. The run gains 1 at rank 1 (d1) and 2 at rank 4 (d3), so
--   its DCG is 1 at both positions; it has 4 documents, not more than one past the 3 positive gains, so there
--   is no whole-run term: (1/2 + 1/3.1309297536) / 2. Second: the run (d3, d1) ends before position 3, whose
--   term takes the whole run: (2/2 + (2 + 1/log2(3)) / 3.1309297536) / 2. Third, gains 3, 0, 1, 3 for d1..d4:
--   the levels end at 2 (ideal DCG 3 + 3/log2(3)) and 3 (that + 1/2), the run's DCG is 3 at both:
--   (3/4.8927892607 + 3/5.3927892607) / 2 (trec_eval 10.0 -m Rndcg.1=3,2=1 prints 0.5847). Fourth: one level
--   ending at 1 (ideal DCG 1, run DCG 0), and 4 documents, more than one past the one positive gain, so the
--   whole run over the whole ideal is a second term: (0 + (1/log2(3)) / 1) / 2. Fifth: nothing relevant: 0.
-- note: The SQL: the sum over the levels' ends b of DCG@min(b, n) / IDCG@b equals the sum over the ranked
--   documents of gain / log2(rank + 1) times the sum of 1 / IDCG@b over the ends b at or past the document's
--   rank (level_weights). Windows cannot nest, so the ideal's running DCG and its next gain come from one CTE
--   (ideal_running; gain_here is the position's own gain, no window) and the sum down to the end from the next
--   (ideal_suffix). LEAD rather than a one-row frame: Polars takes no frame but to or from the current row. A level ends where the next
--   ideal gain differs (or the ideal ends); equal gains from different grades make one level, as in trec_eval.
-- ideal_order: :gains
-- ideal idcg: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END)
-- ideal num_positive: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN 1 ELSE 0 END)
-- ideal num_levels: COUNT(DISTINCT CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains END)
-- ideal_running idcg_at_rank: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains / (LN(ideal_rnk + 1) / LN(2)) ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- ideal_running gain_here: CASE WHEN relevance >= 0 THEN :gains ELSE 0 END
-- ideal_running next_gain: LEAD(CASE WHEN relevance >= 0 THEN :gains ELSE 0 END) OVER ()
-- ideal_suffix level_weights: SUM(CASE WHEN gain_here > 0 AND (next_gain IS NULL OR next_gain <> gain_here) THEN 1 / idcg_at_rank ELSE 0 END) OVER (ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
CASE WHEN num_rel = 0 THEN 0 ELSE
  (SUM(CASE WHEN relevance >= 0 THEN :gains / (LN(rnk + 1) / LN(2)) * COALESCE(level_weights, 0) ELSE 0 END)
   + CASE WHEN num_positive + 1 < MAX(num_ret)
          THEN SUM(CASE WHEN relevance >= 0 THEN :gains / (LN(rnk + 1) / LN(2)) ELSE 0 END) / NULLIF(idcg, 0)
          ELSE 0 END)
  / NULLIF(num_levels + CASE WHEN num_positive + 1 < MAX(num_ret) THEN 1 ELSE 0 END, 0)
END
