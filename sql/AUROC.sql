-- measure: AUROC
-- description: Area under the ROC curve of the top k retrieved documents: the share of (relevant, non-relevant) pairs there ranked in order; unjudged documents count as non-relevant; 0 without such a pair.
-- reference: torchmetrics RetrievalAUROC(top_k=k) (its default empty_target_action='neg', max_fpr=None)
-- param k: cutoff = none
-- param rel: level
-- at: k
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/4
-- example: @2 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/2
-- example: @1 qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 0
-- note: torchmetrics scores the documents it is given, each with a binary target: here the query's ranked
--   list, relevant when graded >= rel (unjudged ones are negatives). It keeps the top k and takes the ROC
--   area there, which is 1 - (sum over the relevant ones of the non-relevant ranked above, rnk -
--   rel_so_far) / (R' N') with R' relevant and N' non-relevant in the top min(k, n). It scores 0 when the
--   top k has no relevant document (and a query with none at all: empty_target_action='neg') and when it
--   has no non-relevant one (its ROC curve then has a zero false-positive rate); a qrels query with no
--   ranking scores 0 too. Example 1: q1 1 - 2/4 (d2, d5 above d3); q2 1 - 1/1 (d8 above d7).
-- note: On tied scores the ROC curve counts a tied (relevant, non-relevant) pair 1/2; the ranked rows carry
--   positions, not scores, so here ties are broken by the evaluation's tie rule (score DESC, doc id DESC by
--   default) and the pair counts 1 or 0. Equal to torchmetrics (and scikit-learn's roc_auc_score) on
--   untied scores; torchmetrics' own choice of the top k among tied scores is unspecified.
-- note: The same ratio as ir_measures' Accuracy, which has no value where this one scores 0.
1 - CAST(SUM(CASE WHEN rnk <= :k AND is_rel = 1 THEN rnk - rel_so_far ELSE 0 END) AS DOUBLE)
  / NULLIF(
    (CASE WHEN MAX(num_ret) < :k THEN MAX(num_ret) ELSE :k END - SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END))
    * SUM(CASE WHEN rnk <= :k THEN is_rel ELSE 0 END),
    0)
