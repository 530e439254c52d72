-- measure: Utility
-- description: Set utility (trec_eval utility): a * relevant retrieved + b * non-relevant retrieved + c * relevant not retrieved + d * non-relevant not retrieved, where "non-relevant" is everything else (unjudged documents included) and the collection holds N documents (trec_eval -N, default 0).
-- reference: trec_eval utility (default coefficients 1,-1,0,0)
-- param a: real = 1
-- param b: real = -1
-- param c: real = 0
-- param d: real = 0
-- param N: count = 0
-- param compat: choice = trec_eval-10.0
--   trec_eval-9.0.8: 0
--   trec_eval-10.0: (CAST(:c AS DOUBLE) - CAST(:d AS DOUBLE)) * num_rel + CAST(:d AS DOUBLE) * :N
-- param missing: choice = compat
--   compat: :compat
--   trec_eval: CAST(:b AS DOUBLE) + (CAST(:c AS DOUBLE) - CAST(:d AS DOUBLE)) * num_rel + CAST(:d AS DOUBLE) * (:N - 1)
-- param rel: level
-- aliases: utility (trec_eval), utility_{a},{b},{c},{d} (trec_eval), utility.{a},{b},{c},{d} (trec_eval)
-- aggregate: mean
-- range: ..
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => -1
-- example: (a=2,b=-1,c=3,d=0.5) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 1
-- example: (c=3,compat='trec_eval-9.0.8') qrels: q1 d1 1, q2 d1 1 run: q1 d1 0.9 => 1/2
-- example: (c=3) qrels: q1 d1 1, q2 d1 1 run: q1 d1 0.9 => 2
-- example: (d=0.5,N=100) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q1 d6 -1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d6 0.65, q1 d3 0.6 => 46
-- example: (d=0.5,N=100,compat='trec_eval-10.0') qrels: q1 d1 1, q2 d1 1 run: q1 d1 0.9 => 50
-- note: First examples: 2 of R = 3 relevant documents among 5 retrieved: 1*2 - 1*3 = -1, and with 2,-1,3,0.5:
--   2*2 - 1*3 + 3*1 + 0.5*(0 + 2 - 5 - 3) = 1. The d term is d * (N + rel_ret - num_ret - R), N the collection
--   size (trec_eval's -N, 0 without it, which makes the term negative): with d = 0.5 and N = 100,
--   1*2 - 1*3 + 0.5*(100 + 2 - 5 - 3) = 46.
-- note: A judged query absent from the run (queries="qrels", trec_eval -c): 9.0.8 leaves it 0; 10.0 evaluates
--   it, and compat='trec_eval-10.0' gives it the value of an empty ranking, (c - d) * R + d * N (examples 3 and
--   4: q1 scores 1, q2 0 or 3; last example: q1 scores 1 + 0.5*(100 + 1 - 1 - 1) = 50.5, q2 (0 - 0.5)*1 +
--   0.5*100 = 49.5: mean 50). trec_eval 10.0 itself ranks one document the qrels lack there (its "bogus"
--   ranking): b + (c - d) * R + d * (N - 1), missing='trec_eval' (`sqlmetrics trec_eval -c` with coefficients;
--   without them it prints 0 there).
CASE WHEN MAX(num_ret) IS NULL THEN :missing ELSE
  CAST(:a AS DOUBLE) * SUM(is_rel)
  + CAST(:b AS DOUBLE) * (MAX(num_ret) - SUM(is_rel))
  + CAST(:c AS DOUBLE) * (num_rel - SUM(is_rel))
  + CAST(:d AS DOUBLE) * (:N + SUM(is_rel) - MAX(num_ret) - num_rel)
END
