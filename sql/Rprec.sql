-- measure: Rprec
-- description: R-precision: relevant documents in the top R, divided by R.
-- reference: trec_eval Rprec; ranx r-precision
-- param rel: level
-- aliases: r-precision, r_precision
-- aggregate: mean
-- range: 0..1
CAST(SUM(CASE WHEN rnk <= num_rel THEN is_rel ELSE 0 END) AS DOUBLE) / NULLIF(num_rel, 0)
