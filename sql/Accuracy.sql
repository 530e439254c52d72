-- measure: Accuracy
-- description: Share of the (relevant, non-relevant) pairs among the top k retrieved documents in which the relevant one is ranked first; unjudged documents count as non-relevant.
-- reference: ir_measures Accuracy (its accuracy provider); torchmetrics RetrievalAUROC(top_k=k) on untied scores
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aliases: AUROC@{k}, AUROC
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/4
-- example: @2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/2
-- example: @1 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 0
-- note: With R' relevant and N' non-relevant documents in the top min(k, n), the value is 1 - (sum over the
--   relevant ones of the non-relevant ranked above, rnk - rel_so_far) / (R' N'). Example 1: q1 has d1, d3
--   relevant and d2, d5 not, with 2 pairs inverted (d2, d5 above d3): 1 - 2/4; q2: d8 above d7: 1 - 1/1.
-- note: Undefined pairs give 0: no relevant document in the top k (ir_measures reports nothing, and its
--   default 0 fills in), and no non-relevant one there (ir_measures raises ZeroDivisionError).
-- note: AUROC@k is this measure: torchmetrics' RetrievalAUROC takes the top k of the documents it is given
--   (here the ranked list, unjudged ones as negatives) and computes the area under their ROC curve, which is
--   the share of (positive, negative) pairs ranked in order; it scores 0 when the top k has no positive or
--   no negative, as here. It differs on tied scores: the ROC curve counts a tied pair 1/2, while this
--   measure sees the ranking, ties broken by the evaluation's tie rule (rows carry ranks, not scores).
1 - CAST(SUM(CASE WHEN rnk <= :k AND is_rel = 1 THEN rnk - rel_so_far ELSE 0 END) AS DOUBLE)
  / NULLIF(
    (CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END - SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END))
    * SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END),
    0)
