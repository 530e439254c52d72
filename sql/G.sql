-- measure: G
-- description: trec_eval's normalised gain G: each document with gain g at rank i scores g / log2(2 + C(i) - S(i)), where S(i) is the run's gain down to rank i and C(i) the ideal ranking's down to rank i with each position counted at least 1; the sum is over the query's total gain.
-- reference: trec_eval G (experimental), same in 9.0.8 and 10.0 (default gains: the grades)
-- aliases: G (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.3730707174
-- note: Gains are the grades (positive ones), whatever the relevance level. C(i) = i + the ideal ranking's
--   excess over 1 (grade - 1 for grades above 1) down to rank i. Example: the ideal is 2, 1, 1, so C(1) = 2
--   and C(5) = 6; d1 (rank 1, S = 1) scores 1/log2(3), d3 (rank 5, S = 3) 2/log2(5); over the total gain 4:
--   (1/log2(3) + 2/log2(5)) / 4 = 0.3730707174.
-- window gain_so_far: SUM(CASE WHEN relevance > 0 THEN relevance ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- ideal total_gain: SUM(CASE WHEN relevance > 0 THEN relevance ELSE 0 END)
-- ideal excess: SUM(CASE WHEN relevance > 1 THEN relevance - 1 ELSE 0 END)
-- ideal_running excess_at_rank: SUM(CASE WHEN relevance > 1 THEN relevance - 1 ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
SUM(
  CASE WHEN relevance > 0 THEN
    relevance / (LN(2 + rnk + COALESCE(excess_at_rank, excess) - gain_so_far) / LN(2))
  ELSE 0 END
) / NULLIF(total_gain, 0)
