-- measure: GAUC
-- description: Group AUC of a run: each user's ROC area over their graded pairs (a grade >= the relevance level is a positive, a tied score counting 1/2), averaged over the users that have both a positive and a negative, weighted by their pairs (impressions); one value per run.
-- reference: Zhou et al., Deep Interest Network for Click-Through Rate Prediction (KDD 2018), GAUC weighted by impressions; each user's area as scikit-learn's roc_auc_score
-- rows: ratings
-- aggregate: once
-- empty: null
-- range: 0..1
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1, u2 i4 0, u2 i5 0, u1 i6 1 run: u1 i1 0.8, u1 i2 0.4, u2 i3 0.3, u2 i4 0.6, u2 i5 0.1, u2 i9 0.9 => 7/10
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1 run: u1 i1 0.5, u1 i2 0.5, u2 i3 0.2 => 1/2
-- note: Each positive adds (its rank within the user - (P_u + 1)/2) / (P_u N_u) x w_u, which sums to w_u AUC_u;
--   each pair of a user with both classes adds 1 to the weights' sum (w_u: the user's pairs). A user with one
--   class only has no area and no weight. Example 1: u1's area 1 (weight 2), u2's 1/2 (0.3 above 0.1, below
--   0.6; weight 3): 3.5 / 5. Example 2: u2 has no negative; u1's tie: 1/2.
--   The pairs of the examples: (grade, score) = (1, 0.8), (0, 0.4) for u1 and (1, 0.3), (0, 0.6), (0, 0.1) for u2
--   (i9 has no grade, i6 no score: neither is a pair).
SUM(CASE WHEN is_pos = 1 AND user_pos < user_pairs
         THEN (user_score_rank - CAST(user_pos + 1 AS DOUBLE) / 2) * user_pairs / (user_pos * (user_pairs - user_pos))
         ELSE 0 END)
  / NULLIF(SUM(CASE WHEN user_pos > 0 AND user_pos < user_pairs THEN 1 ELSE 0 END), 0)
