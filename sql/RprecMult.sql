-- measure: RprecMult
-- description: Precision at a multiple of R: relevant documents in the top c divided by c, where c = floor(mult*R + 0.9) (by c even past the end of the ranking).
-- reference: trec_eval Rprec_mult_m (9.0.8 rounding), Rprec_mult_avgjg_m (10.0)
-- param mult: number = 1
-- param rel: level
-- aliases: Rprec_mult_{mult:.2f} (trec_eval), Rprec_mult.{mult:.2f} (trec_eval), Rprec_mult_avgjg_{mult:.2f} (trec_eval), Rprec_mult_avgjg.{mult:.2f} (trec_eval)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/3
-- example: (mult=0.2) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1
-- example: (mult=0.7) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/2
-- example: (mult=2) qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6 => 1/3
-- note: mult*R + 0.9 is computed in doubles as trec_eval does (0.7*3 + 0.9 is just below 3, so c = 2); mult
--   is cast first, as a decimal literal would round differently (and MariaDB divides literals to 4 places).
--   c = 0 (R = 0, or a tiny mult) leaves NULL, the empty value 0, as in trec_eval. mult=1 is Rprec.
-- note: The `_avgjg` spellings are trec_eval's -R qrels_jg measures: with qrels_format='qrels_jg' every measure
--   is computed per judgment group (the qrels' second field) and averaged over the query's groups, in the
--   statement (statement/), not here. With ordinary qrels each query is one group, and they equal this measure.
CAST(SUM(CASE WHEN rnk <= FLOOR(CAST(:mult AS DOUBLE) * num_rel + 0.9) THEN is_rel ELSE 0 END) AS DOUBLE)
  / NULLIF(FLOOR(CAST(:mult AS DOUBLE) * num_rel + 0.9), 0)
