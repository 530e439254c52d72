-- measure: YAAP
-- description: Yet another AP (trec_eval yaap): ln((1 + S) / (1 + R - S)), where S is the sum of the precisions at the relevant retrieved documents (AP * R); positive when S > R/2.
-- reference: trec_eval yaap (experimental; not in all_trec), same in 9.0.8 and 10.0
-- param compat: choice = trec_eval-10.0
--   trec_eval-9.0.8: 0
--   trec_eval-10.0: -LN(1 + num_rel)
-- param rel: level
-- aliases: yaap (trec_eval)
-- aggregate: mean
-- range: ..
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => -0.0800427077
-- example: qrels: q1 d1 1, q1 d2 0 run: q1 d1 0.9, q1 d2 0.8 => 0.6931471806
-- note: First example: S = 1/1 + 2/5 = 1.4 with R = 3: ln(2.4 / 2.6) = -0.0800427077. Second: S = 1, R = 1: ln 2.
-- example: (compat='trec_eval-10.0') qrels: q1 d1 1, q1 d2 0, q2 d1 1 run: q1 d1 0.9, q1 d2 0.8 => 0
-- note: A judged query absent from the run (queries="qrels") scores 0 in 9.0.8, which does not evaluate it;
--   trec_eval 10.0 evaluates an empty ranking there, ln(1 / (1 + R)) (last example: q1 ln 2, q2 -ln 2).
CASE WHEN MAX(num_ret) IS NULL THEN :compat ELSE LN((1 + SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END))
   / (1 + num_rel - SUM(CASE WHEN is_rel = 1 THEN CAST(rel_so_far AS DOUBLE) / rnk ELSE 0 END))) END
