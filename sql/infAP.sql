-- measure: infAP
-- description: Inferred AP (trec_eval infAP): average precision estimated from a judged sample of the pool. Documents without a qrels row are outside the pool and count as non-relevant; documents judged with a negative grade are in the pool but unjudged, and are assumed relevant in the same proportion as the judged ones above them.
-- reference: trec_eval infAP (Yilmaz & Aslam, CIKM 2006), same in 9.0.8 and 10.0; ir_measures infAP
-- param grades: choice = ours
--   ours: CASE WHEN relevance IS NOT NULL THEN 1 ELSE 0 END
--   trec_eval: CASE WHEN relevance <> -1 THEN 1 ELSE 0 END
-- param rel: level
-- aliases: infAP (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 1/2
-- example: qrels: q1 d1 0, q1 d2 1, q1 d3 1, q1 d4 -1 run: q1 d1 0.9, q1 d4 0.8, q1 d5 0.7, q1 d2 0.6, q1 d3 0.5 => 0.37500250
-- note: Each relevant document at rank r scores 1/r + (A/r) * (rel_above + 0.00001) / (rel_above + nonrel_above
--   + 0.00002), where A counts the documents above it that have a qrels row (relevant, non-relevant and
--   negatively judged alike) and the 0.00001s are trec_eval's smoothing; the sum is divided by R. First
--   example: d1 scores 1; d3 at rank 5 has A = 3 (d1, d2, d6) and 1 relevant and 1 non-relevant above:
--   1/5 + 3/5 * 1.00001/2.00002 = 1/2; (1 + 1/2) / 3 = 1/2. Second: d2 at rank 4 has A = 2 (d1, d4), 0
--   relevant and 1 non-relevant above: 1/4 + 2/4 * 0.00001/1.00002; d3 at rank 5 has A = 3, 1 relevant and 1
--   non-relevant above: 1/5 + 3/5 * 1.00001/2.00002 = 1/2; (0.2500049999 + 1/2) / 2 = 0.37500250.
-- note: grades='trec_eval' reads the ranking as `sqlmetrics trec_eval` lists it at a negative level (trec_eval's
--   grades): a document without a judgment is -1 there, out of the pool; one graded below 0, -2, in it.
-- window inpool_so_far: SUM(:grades) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
SUM(
  CASE WHEN is_rel = 1 THEN
    CAST(1 AS DOUBLE) / rnk + CAST(inpool_so_far - 1 AS DOUBLE) / rnk
      * (CAST(rel_so_far - 1 AS DOUBLE) + CAST(0.00001 AS DOUBLE)) / (CAST(rel_so_far - 1 + nonrel_so_far AS DOUBLE) + CAST(0.00002 AS DOUBLE))
  ELSE 0 END
) / NULLIF(num_rel, 0)
