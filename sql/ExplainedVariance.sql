-- measure: ExplainedVariance
-- description: Explained variance of a run's scores as predicted grades: 1 - Var(grade - score) / Var(grade), over every pair of the run that has a grade; one value per run.
-- reference: Microsoft Recommenders python_evaluation.exp_var (scikit-learn's explained_variance_score over merge_rating_true_pred's pairs)
-- rows: ratings
-- aggregate: once
-- empty: null
-- range: ..1
-- example: qrels: u1 i1 1, u1 i2 0, u2 i3 1, u2 i4 0, u2 i5 0, u1 i6 1 run: u1 i1 0.8, u1 i2 0.4, u2 i3 0.3, u2 i4 0.6, u2 i5 0.1, u2 i9 0.9 => 37/300
-- note: Global over the run's pairs; population variances. Null when every grade is the same. Example: mean
--   error -0.04, error variance 1.06 / 5 - 0.0016 = 0.2104, grade variance 0.24: 1 - 0.2104 / 0.24.
--   The pairs of the examples: (grade, score) = (1, 0.8), (0, 0.4) for u1 and (1, 0.3), (0, 0.6), (0, 0.1) for u2
--   (i9 has no grade, i6 no score: neither is a pair).
1 - AVG((rating - prediction - mean_error) * (rating - prediction - mean_error))
  / NULLIF(AVG((rating - mean_rating) * (rating - mean_rating)), 0)
