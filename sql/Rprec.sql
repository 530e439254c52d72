-- measure: Rprec
-- description: R-precision: relevant documents in the top R, divided by R.
-- reference: trec_eval Rprec; ranx r-precision
-- param rel: level
-- aliases: Rprec (trec_eval), r-precision (ranx), r_precision (ranx)
-- aggregate: mean
-- range: 0..1
-- example: qrels: q1 d1 1, q1 d2 0, q1 d3 2, q1 d4 1, q2 d7 1 run: q1 d1 0.9, q1 d2 0.8, q1 d5 0.7, q1 d3 0.6, q2 d8 0.5, q2 d7 0.4 => 1/6
CAST(SUM(CASE WHEN rnk <= num_rel THEN is_rel ELSE 0 END) AS DOUBLE) / NULLIF(num_rel, 0)
