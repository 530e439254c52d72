-- measure: Accuracy
-- description: Share of the (relevant, non-relevant) pairs among the top k retrieved documents in which the relevant one is ranked first; unjudged documents count as non-relevant. Undefined without such a pair, and the mean skips those queries.
-- reference: ir_measures Accuracy (its accuracy provider)
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aggregate: mean
-- empty: null
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/4
-- example: @2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/2
-- example: @1 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => null
-- note: With R' relevant and N' non-relevant documents in the top min(k, n), the value is 1 - (sum over the
--   relevant ones of the non-relevant ranked above, rnk - rel_so_far) / (R' N'). Example 1: q1 has d1, d3
--   relevant and d2, d5 not, with 2 pairs inverted (d2, d5 above d3): 1 - 2/4; q2: d8 above d7: 1 - 1/1.
--   Example 3: q1's top 1 is d1 alone, q2's d8 alone: no pair, no value.
-- note: Without a pair the value is NULL and the mean skips the query: ir_measures reports no value for a
--   query with no relevant document in the top k (nor for a query with no ranking), so its mean is over the
--   others; with no non-relevant one there it raises ZeroDivisionError. AUROC is the same ratio with 0 there.
1 - CAST(SUM(CASE WHEN rnk <= :k AND is_rel = 1 THEN rnk - rel_so_far ELSE 0 END) AS DOUBLE)
  / NULLIF(
    (CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END - SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END))
    * SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END),
    0)
