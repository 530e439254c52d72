-- measure: IPrec11pt
-- description: 11-point average: the mean of the interpolated precision (IPrec) at recall 0.0, 0.1, ..., 1.0.
-- reference: trec_eval 11pt_avg (default recall points; 10.0's rounding, 9.0.8's with compat='trec_eval-9.0.8')
-- param compat: choice = trec_eval-10.0
--   trec_eval-9.0.8: 0.9
--   trec_eval-10.0: 0.5
-- param grades: choice = ours
--   ours: rel_so_far
--   trec_eval: (rel_so_far - unjudged_rel)
-- param rel: level
-- aliases: 11pt_avg (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: (compat='trec_eval-9.0.8') qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 6/11
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 7/11
-- example: qrels: q1 d1 0, q1 d2 1 run: q1 d1 0.9, q1 d2 0.8 => 1/2
-- example: (rel=2) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/4
-- note: Each term is IPrec.sql's expression at one recall point r: the best precision at a rank where at
--   least floor(r*R + 0.9) relevant documents have been seen (10.0: floor(r*R + 0.5), see IPrec.sql) (0 when no rank gets there), r cast to a
--   double as trec_eval computes it (0.7*3 + 0.9 is just below 3). trec_eval's custom points
--   (-m 11pt_avg.0.2,0.5,0.8) are not supported: only the default eleven.
-- note: grades='trec_eval': trec_eval's reading of a ranking listed with its grades, at a negative level (see
--   IPrec.sql).
(
    COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.0 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.1 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.2 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.3 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.4 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.5 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.6 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.7 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.8 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(0.9 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
  + COALESCE(MAX(CASE WHEN :grades >= FLOOR(CAST(1.0 AS DOUBLE) * num_rel + :compat) THEN CAST(:grades AS DOUBLE) / rnk END), 0)
) / 11
