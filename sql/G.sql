-- measure: G
-- description: trec_eval's normalised gain G: each document with gain g at rank i scores g / log2(2 + C(i) - S(i)), where S(i) is the run's gain down to rank i and C(i) the ideal ranking's down to rank i with each position counted at least 1; the sum is over the query's total positive gain.
-- reference: trec_eval G (experimental), same in 9.0.8 and 10.0; gains as trec_eval -m G.1=3,2=9
-- param gains: gains = none
-- aliases: G (trec_eval), G_{gains} (trec_eval), G.{gains} (trec_eval)
-- aggregate: mean
-- range: ..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.3730707174
-- example: (gains={1:3,2:1}) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.4794581696
-- example: (gains={0:-1,1:0.5}) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 0.2035564977
-- note: Gains are the grades (>= 0), or the gains= mapping (an unlisted grade gains its grade), whatever the
--   relevance level; a document without a grade >= 0 gains 0. C(i) = i + the ideal ranking's excess over 1
--   (gain - 1 for gains above 1) down to rank i; the ideal ranking sorts the judgments by gain. First
--   example: the ideal is 2, 1, 1, so C(1) = 2 and C(5) = 6; d1 (rank 1, S = 1) scores 1/log2(3), d3 (rank
--   5, S = 3) 2/log2(5); over the total gain 4: (1/log2(3) + 2/log2(5)) / 4 = 0.3730707174. Second: gains 3,
--   0, 1, 3 for d1..d4; ideal 3, 3, 1: C(1) = 3, C(5) = 9: (3/log2(2 + 3 - 3) + 1/log2(2 + 9 - 4)) / 7 =
--   0.4794581696. Third: d1 and d4 gain 0.5, d2 -1, d3 2; ideal 2, 0.5, 0.5 counted 2, 1, 1: C = 2, 3, 4, 5,
--   6 and S = 0.5, -0.5, -0.5, -0.5, 1.5: (0.5/log2(3.5) - 1/log2(5.5) + 2/log2(6.5)) / 3 = 0.2035564977
--   (trec_eval 10.0 prints 0.4795 and 0.2036 for the last two).
-- ideal_order: :gains
-- window gain_so_far: SUM(CASE WHEN relevance >= 0 THEN :gains ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
-- ideal total_gain: SUM(CASE WHEN relevance >= 0 AND :gains > 0 THEN :gains ELSE 0 END)
-- ideal excess: SUM(CASE WHEN relevance >= 0 AND :gains > 1 THEN :gains - 1 ELSE 0 END)
-- ideal_running excess_at_rank: SUM(CASE WHEN relevance >= 0 AND :gains > 1 THEN :gains - 1 ELSE 0 END) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
SUM(
  CASE WHEN relevance >= 0 AND :gains <> 0 THEN
    :gains / (LN(2 + rnk + COALESCE(excess_at_rank, excess) - gain_so_far) / LN(2))
  ELSE 0 END
) / NULLIF(total_gain, 0)
