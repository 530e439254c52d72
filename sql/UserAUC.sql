-- measure: UserAUC
-- description: Per-user AUC: the user's ROC area over their graded pairs (a grade >= the relevance level is a positive, a tied score counting 1/2); the mean over the users that have both a positive and a negative, each user weighing the same (GAUC weighs them by their pairs).
-- reference: scikit-learn's roc_auc_score on each user's pairs, and their mean over users (Recommenders' auc is one area over all pairs: AUC here)
-- rows: ratings
-- empty: null
-- range: 0..1
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1, u2 i4 0, u2 i5 0, u1 i6 1 run: u1 i1 0.8, u1 i2 0.4, u2 i3 0.3, u2 i4 0.6, u2 i5 0.1, u2 i9 0.9 => 3/4
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1 run: u1 i1 0.5, u1 i2 0.5, u2 i3 0.2 => 1/2
-- note: Each positive adds (its rank within the user - (P_u + 1)/2) / (P_u N_u), which sums to the user's area.
--   A user with one class only has no area (null) and is not averaged.
--   Example 1: u1's area 1, u2's 1/2 (0.3 above 0.1, below 0.6): (1 + 1/2) / 2. Example 2: u2 has no
--   negative; u1's tie: 1/2.
--   The pairs of the examples: (grade, score) = (1, 0.8), (0, 0.4) for u1 and (1, 0.3), (0, 0.6), (0, 0.1) for u2
--   (i9 has no grade, i6 no score: neither is a pair).
CASE WHEN MAX(user_pos) > 0 AND MAX(user_pos) < MAX(user_pairs)
     THEN SUM(CASE WHEN is_pos = 1
                   THEN (user_score_rank - CAST(user_pos + 1 AS DOUBLE) / 2) / (user_pos * (user_pairs - user_pos))
                   ELSE 0 END)
END
