-- measure: AUC
-- description: Area under the ROC curve of a run's scores over all its graded pairs at once (a grade >= the relevance level is a positive): the share of (positive, negative) pairs scored in order, a tie counting 1/2; one value per run.
-- reference: Microsoft Recommenders python_evaluation.auc (scikit-learn's roc_auc_score over merge_rating_true_pred's pairs)
-- rows: ratings
-- aggregate: once
-- empty: null
-- range: 0..1
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1, u2 i4 0, u2 i5 0, u1 i6 1 run: u1 i1 0.8, u1 i2 0.4, u2 i3 0.3, u2 i4 0.6, u2 i5 0.1, u2 i9 0.9 => 2/3
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1 run: u1 i1 0.5, u1 i2 0.5, u2 i3 0.2 => 1/4
-- note: Global: every positive of the run against every negative, whatever their users (GAUC compares within
--   users). Mann-Whitney form: (sum of the positives' ranks by score, ascending, tied scores sharing their mean
--   rank, - P(P + 1)/2) / (P N). Null without a positive or a negative (scikit-learn refuses it). Example 1:
--   0.8 is above the 3 negatives, 0.3 above 1 of them: 4/6. Example 2: ranks 1 (0.2), 2.5, 2.5:
--   (1 + 2.5 - 3) / 2.
--   The pairs of the examples: (grade, score) = (1, 0.8), (0, 0.4) for u1 and (1, 0.3), (0, 0.6), (0, 0.1) for u2
--   (i9 has no grade, i6 no score: neither is a pair).
(SUM(is_pos * score_rank) - CAST(MAX(num_pos) * (MAX(num_pos) + 1) AS DOUBLE) / 2)
  / NULLIF(MAX(num_pos) * (MAX(num_pairs) - MAX(num_pos)), 0)
